"""What one kind of batched pass runs on (``PassPhysics``: its weights, hardware, KV and
attention per rank, fused-MoE kernel, CUDA-graph capture, KV re-reads), the shape a
graphed pass really runs (``replays_graph``, ``padded_shape``) and one measured pass
(``MeasuredPass``). The physics they stand for: sim/hardware/batched.py's docstring
(CUDA-graph capture, padding to captured sizes, KV re-reads)."""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Literal

from sim.errors import SpecsimError
from sim.hardware.experts import FusedMoeKernel
from sim.hardware.passes import Geometry, HardwarePoint
from sim.hardware.roofline import Weights


@dataclass(frozen=True, slots=True)
class PassPhysics:
    """What one kind of pass (decode, verify, draft step, prefill, ...) runs on.

    ``layers``: decoder layers of the pass's model (target or drafter); ``graphed``: whether
    the pass runs as a CUDA graph (no launch cost, graphed all-reduce); ``moe_kernel``:
    how routed experts cost (None: their bytes at peak bandwidth); ``expert_overlap``: the
    share of a token's experts its sequence's previous token chose too (0: independent);
    ``expert_skew``: the Zipf exponent of expert popularity (0: uniform routing;
    sim/hardware/experts.py ``skewed_distinct_experts``); ``graph_max_tokens`` /
    ``graph_max_rows``: the CUDA-graph capture limit, the most tokens / rows (requests x
    beams) a graphed pass replays as a graph (None: no limit): a pass beyond either runs
    eagerly, paying the per-kernel launch costs of an ungraphed pass (module docstring,
    CUDA-graph capture); ``graph_rows``: the row counts the engine captured, ascending (None:
    every count up to the limits, no padding): a graphed pass over fewer rows than one of
    them runs padded up to it (module docstring, padding to captured sizes); ``moe_tiles``:
    "sglang-default" charges the rows SGLang's default fused-MoE config pads each expert to
    beyond the 16-row floor (sim/hardware/experts.py ``tile_extra_rows``; "none": not);
    ``kv_rereads``: the share r of the per-query-row KV re-reads the pass pays at the KV's
    bytes (module docstring, KV re-reads; 0: each sequence's KV read once).
    """

    name: str
    weights: Weights
    layers: int
    hardware: HardwarePoint
    geometry: Geometry
    graphed: bool
    kv_bytes_per_token: float = 0.0
    attention_flops_per_pair: float = 0.0
    moe_kernel: FusedMoeKernel | None = None
    expert_overlap: float = 0.0
    expert_skew: float = 0.0
    graph_max_tokens: int | None = None
    graph_max_rows: int | None = None
    graph_rows: tuple[int, ...] | None = None
    moe_tiles: Literal["none", "sglang-default"] = "none"
    kv_rereads: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.kv_rereads <= 1.0:
            raise ValueError(f"kv_rereads must be in [0, 1], got {self.kv_rereads}")
        if self.moe_tiles not in ("none", "sglang-default"):
            raise ValueError(f"moe_tiles must be 'none' or 'sglang-default', got {self.moe_tiles}")
        for name in ("graph_max_tokens", "graph_max_rows"):
            limit = getattr(self, name)
            if limit is not None and limit < 1:
                raise ValueError(f"{name} must be >= 1, got {limit}")
        rows = self.graph_rows
        if rows is not None and (
            not rows or rows[0] < 1 or any(b <= a for a, b in itertools.pairwise(rows))
        ):
            raise ValueError(f"graph_rows must be ascending counts >= 1, got {rows}")
        if self.expert_skew < 0:
            raise ValueError(f"expert_skew must be >= 0, got {self.expert_skew}")
        if not 0.0 <= self.expert_overlap < 1.0:
            raise ValueError(f"expert_overlap must be in [0, 1), got {self.expert_overlap}")
        if self.hardware.gpu is None:
            raise SpecsimError(
                f"needed for the batched {self.name} pass (roofline)", field="hardware.gpu"
            )
        if self.kv_bytes_per_token < 0 or self.attention_flops_per_pair < 0:
            raise ValueError("kv_bytes_per_token and attention_flops_per_pair must be >= 0")


def replays_graph(physics: PassPhysics, tokens: int, sequences: int | None = None) -> bool:
    """Whether a pass over ``tokens`` tokens of ``sequences`` rows (None: independent tokens,
    one row each) replays a CUDA graph: ``physics.graphed`` and within both capture limits
    (module docstring, CUDA-graph capture)."""
    rows = tokens if sequences is None else sequences
    return (
        physics.graphed
        and (physics.graph_max_tokens is None or tokens <= physics.graph_max_tokens)
        and (physics.graph_max_rows is None or rows <= physics.graph_max_rows)
    )


def padded_shape(
    physics: PassPhysics, tokens: int, sequences: int | None = None
) -> tuple[int, int | None]:
    """(tokens, sequences) a graphed pass over ``tokens`` tokens of ``sequences`` rows (None:
    one token a row) really runs: the rows padded up to the next of ``physics.graph_rows``,
    each padded row carrying the pass's tokens a row (k + 1 for a chain's verify), rounded
    up. Unchanged when the pass runs eagerly, the list is None, or no captured count is as
    large (module docstring, padding to captured sizes)."""
    rows = tokens if sequences is None else sequences
    captured = physics.graph_rows
    if captured is None or not replays_graph(physics, tokens, sequences):
        return tokens, sequences
    index = bisect.bisect_left(captured, rows)
    if index == len(captured) or captured[index] == rows:
        return tokens, sequences
    padded_rows = captured[index]
    per_row = -(-tokens // rows)
    padded_tokens = tokens + (padded_rows - rows) * per_row
    return padded_tokens, (None if sequences is None else padded_rows)


@dataclass(frozen=True, slots=True)
class MeasuredPass:
    """One measured pass: its shape (tokens, KV tokens read, attention pairs), its time in
    ms, where the number comes from (a URL, repo and path, or "scenario timing"), the
    scenario field that holds it (for errors; None: the calibration's field), the
    sequences its tokens belong to (None: independent tokens) and, where the time does not
    fix it, its compute (ms): a launch-bound eager pass whose GPU work is known from
    elsewhere (the graphed decode's, ``timing.verify_compute = "decode"``)."""

    tokens: int
    kv_tokens: float
    pairs: float
    ms: float
    source: str
    field: str | None = None
    sequences: int | None = None
    compute_ms: float | None = None
