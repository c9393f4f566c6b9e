"""Batched pass physics: one forward pass over a batch's tokens and contexts.

A pass processes ``tokens`` T (summed over the batch's requests: 1 per decode, k + 1 per
verify, a prompt chunk per prefill), reads the KV cache of ``kv_tokens`` C context tokens
(summed over requests: context + new tokens) and computes attention over ``pairs`` P
query-key pairs (summed over requests: new tokens x context). Per tensor-parallel rank:

    memory_ms = (weight bytes read over T tokens / gpus + kv_bytes_per_token x C) / bandwidth
    flop_ms   = 2 x active params x T / gpus / (GEMM_FLOP_EFFICIENCY x peak)
                + attention_flops_per_pair x P / peak
    work_ms   = memory_ms + flop_ms
    compute_ms = curve(work_ms)

Memory and compute time add (kernels do not overlap them perfectly): the form fitted
step-time models take, e.g. SpecDecode-Bench/simulator predictor.py for Llama-3.1-8B on an
H100, ``a kv_tokens + b batched_tokens + c`` with a per-KV-token coefficient (3.93e-8 s)
equal to 131,072 bytes / 3.35 TB/s and a per-token one (21 us) close to 2 x 8B FLOPs at
H100 peak. The pass is memory-bound at small batches and compute-bound beyond the roofline
knee, where flop_ms passes memory_ms (for an 8B model on an H100, a few hundred tokens).
Weights are read once per pass (not once per request); routed experts are read as the
expected union over the pass's T tokens, E (1 - (1 - e/E)^T) per MoE layer
(sim/hardware/experts.py, through ``Weights.bytes_read``); KV reads grow with context.
The pass time is the critical path of its
kernel schedule (sim/hardware/launch.py): all-reduce messages of T x hidden x bytes
(sim/hardware/allreduce.py, so communication grows with the batch's tokens), plus launch
costs when the pass is not graphed.

Calibration turns the work into real compute time: ``compute_ms = curve(work_ms)``, a
piecewise-linear curve through the measured passes. At each measured point the compute
time is the one that makes the critical path equal the measurement
(``launch.calibrate_compute_ms``); between points the curve is linear in the work
and beyond the last point it keeps the last segment's slope. With one measured point (the
batch-1 pass) the slope is ``DEFAULT_SLOPE`` = 1: the time the measurement spends above the
work is a fixed overhead and growth costs the extra bytes at peak bandwidth and the extra
weight FLOPs at the GEMMs' efficiency (``GEMM_FLOP_EFFICIENCY``, 0.75 of peak, from public
linear-layer profiles). Public measurements put the real slope on both sides of 1, so 1
stays, as the middle of the evidence rather than a bound (``DEFAULT_SLOPE``). A second
point at another batch size fixes the slope (1 / the achieved fraction of peak). A pass is
exact at every measured point. ``kv_bytes_per_token`` and ``attention_flops_per_pair`` are per
rank (MLA's latent KV is replicated on every tensor-parallel rank; GQA heads are split).

Routed experts under a fused-MoE kernel (``PassPhysics.moe_kernel``, sim/hardware/
experts.py): their reads enter the work as the kernel costs them, per distinct expert a
fixed ``expert_us`` plus its bytes at ``hbm_efficiency`` x peak, instead of bytes at peak,
and the FLOPs of their token-expert pairs at ``pair_flop_efficiency`` x peak (public
fused-MoE curves past the union's saturation: 0.22-0.80 of peak), instead of at peak;
and the union counts each sequence's consecutive tokens as overlapping
(``expert_overlap``, ``sequence_union_tokens``) when the caller says how many sequences
the tokens belong to. Beyond the last measured point a MoE pass's curve grows at most at
``max_tail_slope`` (1: the kernel's own per-expert cost): a steeper measured segment at
small batches holds costs the kernel benchmarks do not show recurring, and extending it
linearly over-prices large batches. A pass measured at batch 1 only can follow the curve
of a pass on the same weights (``calibrated_pass(follow=...)``): the same marginal cost
per unit of work, shifted through its own point.

CUDA-graph capture. An engine replays a graph only for the batch shapes it captured at
start-up; a pass beyond the largest runs eagerly, so its critical path carries the
per-kernel CPU launch work of an ungraphed pass (sim/hardware/launch.py) and eager
all-reduces, at the same compute. ``PassPhysics.graph_max_tokens`` (vLLM V1 captures by
token count: ``max_cudagraph_capture_size`` = min(max_num_seqs x (1 + k) x 2, 512,
max_num_batched_tokens), and ``cudagraph_dispatcher.py`` runs a batch of more tokens with
``CUDAGraphMode.NONE``; vllm/config/vllm.py ``_set_cudagraph_sizes``) and
``graph_max_rows`` (SGLang captures by batch size: ``cuda_graph_max_bs``, 160 on GPUs of
25 GB or more, 8 below at TP < 4, python/sglang/srt/server_args.py; a larger batch fails
``CudaGraphRunner.can_run`` and runs eagerly) say where; the defaults per engine and
version are in sim/calibration/engine_defaults.py. The step is in the pass's shape only:
work and compute are those of the same tokens, so a pass within the limits, batch 1's
included, is unchanged. Where the GPU work exceeds the launch work (a large model, many
tokens) the step costs about one kernel's launch; it matters for launch-bound passes
(small models, the drafter's one-layer passes over many rows).

Padding to captured sizes. SGLang captures a list of batch sizes and, with padding on,
replays a batch on the graph of the next captured size up: the verify and draft-step
passes run over that many rows, the padded rows' tokens through every GEMM (their
sequence lengths set to 1, so they add no KV reads). python/sglang/srt/model_executor/
cuda_graph_runner.py ``replay_prepare`` (``bisect_left(capture_bs, raw_bs)``) and
python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py ``replay``, v0.4.4.post2
and later. ``PassPhysics.graph_rows`` is that list (None: every batch size captured, no
padding); ``padded_shape`` gives the tokens and rows a pass really runs, and the pass's
weight, FLOP and launch terms are those of the padded shape. Batch 1 is captured in every
list, so the batch-1 pass is unchanged.

KV re-reads. A backend that reads each sequence's KV once for all its query rows (a
prefill-style or packed decode kernel) reads ``kv_tokens`` C; one that runs every query row
as its own decode row reads sum_j (c + j) over a sequence's rows, the pass's ``pairs`` P.
``PassPhysics.kv_rereads`` r prices the share of those re-reads that reach memory: the KV
term is kv_bytes_per_token x ((1 - r) C + r P) (0: once; 1: once a query row, none a cache
hit; a backend that tiles q rows in blocks of b re-reads (ceil(m / b) - 1) of the m - 1 a
row would, docs/studies/verify-kv-rereads.md). A one-token pass has P = C, so only a verify or an
extend moves.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from sim.errors import SpecsimError
from sim.hardware.envelope import Envelope, envelope_of
from sim.hardware.experts import (
    FusedMoeKernel,
    log_miss,
    sequence_union_tokens,
    skewed_distinct_experts,
    tile_extra_rows,
)
from sim.hardware.launch import KernelSchedule, calibrate_compute_ms
from sim.hardware.passes import (
    Geometry,
    HardwarePoint,
    PassMemo,
    PassShape,
    pass_allreduce,
    pass_kernels,
)
from sim.hardware.roofline import Weights

__all__ = [
    "DEFAULT_SLOPE",
    "GEMM_FLOP_EFFICIENCY",
    "SLOPE_RANGE",
    "BatchedPass",
    "ComputeCurve",
    "MeasuredPass",
    "PassPhysics",
    "PassTerms",
    "calibrated_pass",
    "padded_shape",
    "replays_graph",
]


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


#: Compute ms per work ms beyond the measured points when one point is all there is.
DEFAULT_SLOPE = 1.0
#: What public measurements say of that slope (growth ms per ms of work at peak), 0.1-1.35:
#:
#: * below 1 for dense GEMMs up to a few hundred tokens: microsoft/vidur's profiles of the
#:   linear layers (attention projections and MLP, data/profiling/compute/{h100,a100,a40}/,
#:   Llama-2-7B/70B, Llama-3-8B, CodeLlama-34B) grow from 1 token to 128 by 0.1-0.9 of the
#:   extra FLOPs at peak at TP 1-2 (H100 TP1 Llama-2-70B: 18 us against 220 us at peak),
#:   since the weight read covers the FLOPs until the roofline's knee;
#: * at or above 1 beyond the knee: the same profiles at 1,024-4,096 tokens take 1.0-1.35x
#:   the FLOPs at peak (a smooth roofline fitted to all 40 curves: 0.75 of peak FLOPs);
#: * about 1.3 for a whole engine step averaged over batches 1-64: SpecDecode-Bench/
#:   simulator predictor.py (Llama-3.1-8B, H100, vLLM, fitted on batch 1-64 step times)
#:   charges 21.0 us per batched token against 16.2 us of FLOPs at peak, its per-KV-token
#:   term at peak bandwidth; that step may hold host work too (vLLM before 0.14 did not
#:   overlap it), which sim/model/host_work.py prices apart.
#:
#: The plausible range that evidence spans (a load sweep that cannot identify the slope
#: carries it as this range: sim/calibration/load_fit.py).
SLOPE_RANGE: tuple[float, float] = (0.1, 1.35)
#: The fraction of the GPU's dense BF16 peak a pass's weight GEMMs reach once FLOPs bound
#: them (a prompt chunk, a verify over many tokens): the smooth roofline fitted to vidur's
#: 40 linear-layer profiles above (1,024-4,096 tokens at 1.0-1.35x the FLOPs at peak) puts
#: them at 0.75 of peak. Work counts their FLOPs at this efficiency (memory at peak
#: bandwidth, attention FLOPs at peak), so the slope above applies to both alike.
GEMM_FLOP_EFFICIENCY = 0.75
#:
#: Tried as the default, 1 / 0.77 moved the serving validation's SGLang curves toward the
#: measurements and its vLLM RTX 3090 curves away (README, "How far to trust it"), so it
#: is not used: the slope scales the extra bytes too, which those profiles do not measure.
#: The FLOPs alone take the profiles' efficiency instead (``GEMM_FLOP_EFFICIENCY``).


@dataclass(frozen=True)
class ComputeCurve:
    """Compute time against work, through measured points.

    ``work_ms`` (n,) strictly increasing, ``compute_ms`` (n,); ``slope``: used beyond
    the points when n = 1 (with n > 1 the end segments' slopes extend the curve, never
    below 0).
    """

    work_ms: np.ndarray
    compute_ms: np.ndarray
    slope: float = DEFAULT_SLOPE
    max_tail_slope: float | None = None

    def __post_init__(self) -> None:
        if self.work_ms.shape != self.compute_ms.shape or self.work_ms.size == 0:
            raise ValueError("work_ms and compute_ms need the same non-empty shape")
        if np.any(np.diff(self.work_ms) <= 0):
            raise ValueError("calibration points need distinct work times")
        if self.max_tail_slope is not None and self.max_tail_slope < 0:
            raise ValueError("max_tail_slope must be >= 0")

    @property
    def end_slopes(self) -> tuple[float, float]:
        """Slopes below the first and beyond the last point (the latter at most
        ``max_tail_slope`` when given and there are several points)."""
        r, c = self.work_ms, self.compute_ms
        if r.size == 1:
            return self.slope, self.slope
        high = max(0.0, float((c[-1] - c[-2]) / (r[-1] - r[-2])))
        if self.max_tail_slope is not None:
            high = min(high, self.max_tail_slope)
        return max(0.0, float((c[1] - c[0]) / (r[1] - r[0]))), high

    def through(self, work_ms: float, compute_ms: float) -> ComputeCurve:
        """This curve shifted in compute so that it passes through (work, compute): the
        same marginal cost per unit of work, anchored on another pass's point."""
        offset = compute_ms - float(self.at(np.array([work_ms]))[0])
        return ComputeCurve(self.work_ms, self.compute_ms + offset, self.slope, self.max_tail_slope)

    @functools.cached_property
    def _ends(self) -> tuple[float, float, float, float, float, float]:
        """(first work, last work, first compute, last compute, slope below, slope beyond)."""
        low, high = self.end_slopes
        r, c = self.work_ms, self.compute_ms
        return float(r[0]), float(r[-1]), float(c[0]), float(c[-1]), low, high

    def at_scalar(self, work_ms: float) -> float:
        """``at`` of one work time, in Python floats outside the points (the same
        operations, so the same bits) and by ``np.interp`` between them."""
        r0, rl, c0, cl, low, high = self._ends
        if work_ms < r0:
            return c0 + low * (work_ms - r0)
        if work_ms > rl:
            return cl + high * (work_ms - rl)
        return float(np.interp(work_ms, self.work_ms, self.compute_ms))

    def at(self, work_ms: np.ndarray) -> np.ndarray:
        """Compute ms at work times (any shape, same shape out)."""
        x = np.asarray(work_ms, dtype=float)
        r0, rl, c0, cl, low, high = self._ends
        r, c = self.work_ms, self.compute_ms
        if x.ndim and x.size:
            least = np.minimum.reduce(x, axis=None)
            if least > rl:  # all beyond the last point (a large batch)
                return cl + high * (x - rl)
            most = np.maximum.reduce(x, axis=None)
            if most < r0:  # all below the first point (a small batch's drafter)
                return c0 + low * (x - r0)
            # all between the points: what ``where`` keeps
            if least >= r0 and most <= rl:
                return np.interp(x, r, c)
        inside = np.interp(x, r, c)
        out = np.where(x < r0, c0 + low * (x - r0), inside)
        return np.where(x > rl, cl + high * (x - rl), out)


#: Physics a ``PassTerms`` keeps terms for (the oldest dropped), entries per physics
#: (emptied when full), and entries of all its physics together (the oldest physics dropped
#: while a new one would start above it; an entry is about 0.75 KB, so at most about
#: 200 MB). A study's interval draws each bring six passes of their own physics (a default
#: ``crossover``: 9 scenarios, 54 physics, 25,000 entries): with room for only 32 of them the
#: draws, visited in turn at every bisection step, found their tables dropped and computed
#: every prompt length's terms again (96,000 times, 27% of its CPU).
SHARED_PHYSICS = 1024
SHARED_ENTRIES = 1 << 16
SHARED_TERMS = 1 << 18

Terms = dict[tuple[int, int | None], tuple[float, float, Envelope]]
#: A physics' measured points -> their (work ms, calibrated compute ms).
Points = dict["MeasuredPass", tuple[float, float]]


#: ``PassPhysics`` fields but its hardware, in their order (``physics_key``).
_KEYED_FIELDS = tuple(f.name for f in fields(PassPhysics) if f.name != "hardware")
#: Hardware points whose printed form a ``PassTerms`` keeps (emptied when full).
SHARED_HARDWARE = 64


def physics_key(physics: PassPhysics, hardware: str | None = None) -> str:
    """``repr(physics.hardware)`` (or ``hardware``, that repr as printed before) followed by
    the repr of every other field's value in order: every field of its frozen dataclasses
    and pydantic models prints in full (floats round-trip, strings, tuples and dicts; no
    arrays), so equal keys are equal physics and a hit is the same computation. Unlike
    pickled bytes it does not depend on which sub-objects a copy shares. The hardware's
    repr (its interconnect's and GPU's figures) is about 95% of the cost of printing a
    physics, and every pass of a setup, and of a fit's every step, runs on one hardware
    point."""
    head = repr(physics.hardware) if hardware is None else hardware
    key = head + repr(tuple(getattr(physics, name) for name in _KEYED_FIELDS))
    if "array(" in key:  # an array's repr may elide its middle
        raise ValueError("a pass's physics must not hold arrays")
    return key


class PassTerms:
    """The token-count terms of batched passes, a table per physics (``physics_key``):
    {(tokens, sequences): terms}. What is built once holds one and hands it to every pass
    it builds (a serving setup's cost, a study's plan builder: sim/studies/serving/
    evaluator.py ``ScenarioPlans``, whose plans per load and k meet the same prompt
    lengths again), so passes of equal physics compute each token count once. At most
    ``SHARED_PHYSICS`` physics of ``SHARED_ENTRIES`` entries each, and a new physics drops
    the oldest while they hold ``SHARED_TERMS`` entries together.

    Pickled as its owner's name only (``owner``, random): every copy a process receives of
    one table (a worker's tasks, each carrying the study's table) is one table there
    (``received_terms``), so a worker's later tasks reuse what its earlier ones computed,
    as the study's own process does. The terms are a pure function of the physics and the
    token count, so which copy computed an entry never changes a number."""

    __slots__ = ("_hardware", "_kernels", "_last", "_lock", "_points", "_tables", "owner", "passes")

    def __init__(self, owner: str | None = None) -> None:
        self._tables: dict[str, Terms] = {}
        #: id(hardware point) -> (that point, its repr): held, so its id is not reused
        self._hardware: dict[int, tuple[HardwarePoint, str]] = {}
        #: the last physics asked for and its key (a calibrated pass asks for one physics
        #: once a measured point and twice more: sim/hardware/batched.py ``calibrated_pass``)
        self._last: tuple[PassPhysics, str] | None = None
        self._kernels: dict[str, dict[bool, KernelSchedule]] = {}
        self._points: dict[str, Points] = {}
        # taken while the tables change: a Dask worker with several threads builds plans
        # concurrently (two threads dropping the oldest physics at once raised KeyError)
        self._lock = threading.Lock()
        self.owner = os.urandom(8).hex() if owner is None else owner
        #: The batch-1 hardware model's answers (sim/hardware/passes.py ``PassMemo``) for
        #: every scenario the owner binds: its draws at each load and k ask them again.
        self.passes = PassMemo()

    def __reduce__(self) -> tuple[Callable[[str], PassTerms], tuple[str]]:
        return received_terms, (self.owner,)

    def of(self, physics: PassPhysics) -> tuple[Terms, dict[bool, KernelSchedule], Points]:
        """The table kept for ``physics``, the newest kept, its kernel schedules by
        whether the pass is graphed (``pass_kernels``: the same for every token count, so
        built once a physics for every pass and measured point of it) and its measured
        points' (work, compute) ms (``_point_compute``: a load fit's every step calibrates
        the same batch-1 points again)."""
        last = self._last
        if last is not None and last[0] is physics:
            key = last[1]
        else:
            key = physics_key(physics, self._hardware_repr(physics.hardware))
            self._last = (physics, key)
        with self._lock:
            terms = self._tables.pop(key, None)
            if terms is None:
                terms = {}
                tables = self._tables
                while tables and (
                    len(tables) >= SHARED_PHYSICS or sum(map(len, tables.values())) >= SHARED_TERMS
                ):
                    oldest = next(iter(tables))
                    del tables[oldest]
                    self._kernels.pop(oldest, None)
                    self._points.pop(oldest, None)
            self._tables[key] = terms  # the newest last
            kernels = self._kernels.setdefault(key, {})
            points = self._points.setdefault(key, {})
        return terms, kernels, points

    def _hardware_repr(self, hardware: HardwarePoint) -> str:
        """``repr(hardware)``, printed once a hardware point object (a frozen dataclass of
        pydantic models, so its repr never changes): at most ``SHARED_HARDWARE`` kept."""
        found = self._hardware.get(id(hardware))
        if found is None or found[0] is not hardware:
            found = (hardware, repr(hardware))
            with self._lock:
                if len(self._hardware) >= SHARED_HARDWARE:
                    self._hardware.clear()
                self._hardware[id(hardware)] = found
        return found[1]


#: The tables this process keeps of other processes' owners (``PassTerms`` pickled by
#: their owner's name): at most this many owners, the least recently received dropped.
RECEIVED_TABLES = 4


@functools.lru_cache(maxsize=RECEIVED_TABLES)
def received_terms(owner: str) -> PassTerms:
    """This process's one copy of ``owner``'s table (empty when first received): a memo of
    pure results per process. A pool or Dask worker runs many tasks of one study, and each
    task's passes would otherwise compute every token count's terms again (measured: a
    40-point serving sweep's tasks, pickled one by one, took 1.5x the CPU)."""
    return PassTerms(owner)


class BatchedPass:
    """A pass kind with its calibration curve: ``pass_ms(tokens, kv_tokens, pairs)``.

    Everything that depends only on the token count (weight bytes read, which involves the
    expert union; FLOPs; the all-reduce; the critical-path envelope) is computed once per
    token count and physics, in ``terms`` (a ``PassTerms`` its builder shares with the
    other passes it builds; None: a table of its own); the per-call work is a few array
    operations over the KV-dependent terms, so a serving engine can evaluate many
    iterations at once.
    """

    def __init__(self, physics: PassPhysics, curve: ComputeCurve, terms: PassTerms | None = None):
        self.physics = physics
        self.curve = curve
        self._terms = PassTerms() if terms is None else terms
        gpu = physics.hardware.gpu
        assert gpu is not None
        gpus = physics.hardware.gpus
        self._bytes_per_ms = gpu.memory_bandwidth_gbps * 1e9 / 1e3
        self._flops_per_ms = gpu.bf16_tflops * 1e12 / 1e3
        self._gpus = gpus
        self._bandwidth_gbps = gpu.memory_bandwidth_gbps
        self._per_tokens, self._kernels, self._points = self._terms.of(physics)
        self._kv_ms, self._pair_ms = self._attention_coefficients()
        self._log_miss = self._expert_log_miss()

    def _expert_log_miss(self) -> np.ndarray | None:
        """The routed experts' ``log_miss`` (E,) under ``expert_skew``, built once for
        every token count this pass prices; None where ``_weight_terms`` takes no skewed
        union (no fused-MoE kernel, dense weights, or uniform routing)."""
        p, w = self.physics, self.physics.weights
        if p.moe_kernel is None or not w.is_moe or p.expert_skew == 0.0:
            return None
        assert w.experts and w.experts_per_token
        return log_miss(w.experts, w.experts_per_token, p.expert_skew)

    def _attention_coefficients(self) -> tuple[float, float]:
        """(ms a KV token, ms a pair): the KV bytes at peak bandwidth and the attention
        FLOPs at peak; with ``kv_rereads`` r > 0 the KV term becomes (1 - r) kv + r pairs
        (a query row's read of its sequence's KV is one pair's worth of KV a key), so the
        KV coefficient is scaled by 1 - r and r x it joins the pair's."""
        p = self.physics
        kv_ms = p.kv_bytes_per_token / self._bytes_per_ms
        pair_ms = p.attention_flops_per_pair / self._flops_per_ms
        r = p.kv_rereads
        if r:
            return kv_ms * (1.0 - r), pair_ms + r * kv_ms
        return kv_ms, pair_ms

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its token-count terms (its ``PassTerms`` pickles as its owner's
        name), kernel schedules and measured points: the copy reads the receiving process's
        table of that owner and builds its schedules again."""
        state = dict(self.__dict__)
        del state["_per_tokens"], state["_kernels"], state["_points"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._per_tokens, self._kernels, self._points = self._terms.of(self.physics)

    def _weight_terms(self, tokens: int, sequences: int | None) -> tuple[float, float]:
        """(weight-read ms per rank, FLOPs in peak-equivalents) of a pass over ``tokens``
        tokens of ``sequences`` sequences (None: independent tokens). FLOPs: 2 x active
        params x tokens (all ranks together) at ``GEMM_FLOP_EFFICIENCY``, the routed
        experts' share (the token-expert pairs) at the fused-MoE kernel's
        ``pair_flop_efficiency`` instead when one runs them, with the rows its blocks pad
        beyond the 16-row floor under ``moe_tiles`` "sglang-default" (2 x expert params x
        MoE layers a row, ``tile_extra_rows``); reads: the routed experts' through that
        kernel (their union over the sequences, skewed), else every weight the tokens use."""
        p, w = self.physics, self.physics.weights
        flops = w.flops(tokens)
        if p.moe_kernel is None or not w.is_moe:
            memory_ms = w.bytes_read(tokens) / self._gpus / self._bytes_per_ms
            return memory_ms, flops / GEMM_FLOP_EFFICIENCY
        assert w.experts and w.experts_per_token and w.expert_params
        union = float(tokens)
        if sequences is not None and p.expert_overlap:
            union = float(sequence_union_tokens(sequences, tokens / sequences, p.expert_overlap))
        distinct = float(
            skewed_distinct_experts(
                w.experts, w.experts_per_token, union, p.expert_skew, self._log_miss
            )
        )
        kernel = p.moe_kernel
        per_expert_us = kernel.per_expert_us(w.expert_bytes / self._gpus, self._bandwidth_gbps)
        experts_ms = w.moe_layers * distinct * per_expert_us / 1e3
        memory_ms = w.dense_bytes / self._gpus / self._bytes_per_ms + experts_ms
        pairs = 2.0 * w.moe_layers * w.experts_per_token * w.expert_params * tokens
        gemm = (flops - pairs) / GEMM_FLOP_EFFICIENCY
        padding = 0.0
        if p.moe_tiles == "sglang-default":
            rows = tile_extra_rows(w.experts, w.experts_per_token, tokens, p.expert_skew)
            padding = 2.0 * w.moe_layers * w.expert_params * rows
        return memory_ms, gemm + (pairs + padding) / p.moe_kernel.pair_flop_efficiency

    def kernels(self, shape: PassShape) -> KernelSchedule:
        """``pass_kernels`` of this pass run as ``shape`` (its all-reduces at 0 ms): the
        same for every token count, built once a physics (its ``PassTerms``)."""
        kernels = self._kernels.get(shape.graphed)
        if kernels is None:
            p = self.physics
            kernels = self._kernels[shape.graphed] = pass_kernels(shape, p.hardware, p.geometry)
        return kernels

    def graphed(self, tokens: int, sequences: int | None = None) -> bool:
        """``replays_graph`` of this pass's physics."""
        return replays_graph(self.physics, tokens, sequences)

    def _token_terms(
        self, tokens: int, sequences: int | None = None
    ) -> tuple[float, float, Envelope]:
        """(weight memory ms, weight flop ms, critical-path envelope) for ``tokens`` tokens
        of ``sequences`` sequences, at the shape the pass runs (``padded_shape``)."""
        if sequences is not None and not 1 <= sequences <= tokens:
            raise ValueError(f"need 1 <= sequences <= tokens, got {sequences}, {tokens}")
        key = (tokens, sequences)
        terms = self._per_tokens.get(key)
        if terms is None:
            p = self.physics
            graphed = self.graphed(tokens, sequences)
            tokens, sequences = padded_shape(p, tokens, sequences)
            memory_ms, flops = self._weight_terms(tokens, sequences)
            flop_ms = flops / self._gpus / self._flops_per_ms
            shape = PassShape(p.name, tokens, p.layers, graphed)
            allreduce, _ = pass_allreduce(shape, p.hardware, p.geometry)
            schedule = self.kernels(shape).with_allreduce_ms(allreduce.us / 1000.0)
            terms = (memory_ms, flop_ms, envelope_of(schedule))
            if len(self._per_tokens) >= SHARED_ENTRIES:
                self._per_tokens.clear()
            self._per_tokens[key] = terms
        return terms

    def work_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """The work per rank (ms): memory time + FLOP time of passes over ``tokens`` (of
        ``sequences`` sequences, None: independent tokens); array of the broadcast shape of
        ``kv_tokens`` and ``pairs``."""
        if tokens < 1:
            raise ValueError(f"a pass covers at least 1 token, got {tokens}")
        memory_ms, flop_ms, _ = self._token_terms(tokens, sequences)
        mem = memory_ms + np.asarray(kv_tokens, dtype=float) * self._kv_ms
        flo = flop_ms + np.asarray(pairs, dtype=float) * self._pair_ms
        return mem + flo

    def compute_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """Calibrated compute time: the curve at the work."""
        return self.curve.at(self.work_ms(tokens, kv_tokens, pairs, sequences))

    def scalar_pass(
        self, tokens: int, sequences: int | None = None
    ) -> Callable[[float, float], float]:
        """``pass_ms`` over ``tokens`` tokens as a function of one (kv tokens, pairs), in
        Python floats: the same operations in the same order, so the same bits, for the
        few values a serving block evaluates (an array costs more than the arithmetic)."""
        if tokens < 1:
            raise ValueError(f"a pass covers at least 1 token, got {tokens}")
        memory_ms, flop_ms, envelope = self._token_terms(tokens, sequences)
        kv_ms, pair_ms = self._kv_ms, self._pair_ms
        compute, path = self.curve.at_scalar, envelope.at_scalar

        def ms(kv_tokens: float, pairs: float) -> float:
            return path(compute((memory_ms + kv_tokens * kv_ms) + (flop_ms + pairs * pair_ms)))

        return ms

    def pass_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """Pass time (ms): the critical path at the calibrated compute time."""
        envelope = self._token_terms(tokens, sequences)[2]
        return envelope.at(self.compute_ms(tokens, kv_tokens, pairs, sequences))


def _point_compute(
    physics: PassPhysics, point: MeasuredPass, field: str, terms: PassTerms
) -> tuple[float, float]:
    """(work ms, calibrated compute ms) of a measured point: a pure function of the
    physics and the point, kept in ``terms`` once computed (``PassTerms.of``)."""
    bare = BatchedPass(physics, ComputeCurve(np.array([0.0]), np.array([0.0])), terms)
    found = bare._points.get(point)
    if found is not None:
        return found
    work = bare.work_ms(point.tokens, point.kv_tokens, point.pairs, point.sequences)
    context = float(work - bare.work_ms(point.tokens, 0.0, 0.0, point.sequences))
    graphed = replays_graph(physics, point.tokens, point.sequences)
    ran_tokens, _ = padded_shape(physics, point.tokens, point.sequences)
    shape = PassShape(physics.name, ran_tokens, physics.layers, graphed)
    allreduce, _ = pass_allreduce(shape, physics.hardware, physics.geometry)
    schedule = bare.kernels(shape).with_allreduce_ms(allreduce.us / 1000.0)
    try:
        compute = (
            calibrate_compute_ms(schedule, point.ms)
            if point.compute_ms is None
            else point.compute_ms
        )
    except ValueError as exc:
        raise SpecsimError(
            f"{point.ms:.4g} ms for the {physics.name} pass over {point.tokens} tokens is "
            f"{exc.args[0]} of communication and launch ({point.source})",
            field=point.field or field,
        ) from None
    # the GPU work of its context alone (KV reads and attention at peak) must fit the GPU
    # time the measurement leaves: a pass "measured" faster extrapolated to negative
    # compute at shorter contexts (a serving run failed on a negative SimPy delay)
    if context > compute:
        raise SpecsimError(
            f"{point.ms:.4g} ms for the {physics.name} pass leaves {compute:.4g} ms of GPU work, "
            f"below the {context:.4g} ms that reading and attending its {point.kv_tokens:.4g} "
            f"context tokens alone take at the GPU's peak ({point.source}): the time cannot "
            "hold at that context",
            field=point.field or field,
        )
    found = bare._points[point] = (float(work), compute)
    return found


def calibrated_pass(
    physics: PassPhysics,
    points: Sequence[MeasuredPass],
    *,
    field: str = "timing",
    slope: float = DEFAULT_SLOPE,
    max_tail_slope: float | None = None,
    follow: ComputeCurve | None = None,
    terms: PassTerms | None = None,
) -> BatchedPass:
    """The pass calibrated to ``points`` (at least one); ``slope`` beyond a single point,
    ``max_tail_slope`` the steepest growth beyond the last of several. ``follow``: with a
    single point, take this curve (a pass on the same weights) shifted through it instead
    of a straight line at ``slope``. ``terms``: the token-count terms it shares
    (``PassTerms``; None: a table of its own).

    SpecsimError naming ``field`` when a point is below the modelled communication and
    launch floor, or two points have the same work.
    """
    if not points:
        raise ValueError("calibration needs at least one measured point")
    terms = PassTerms() if terms is None else terms
    pairs = sorted(_point_compute(physics, p, field, terms) for p in points)
    roof = np.array([r for r, _ in pairs])
    if np.any(np.diff(roof) <= 0):
        raise SpecsimError(
            f"two measured {physics.name} passes have the same work (bytes and FLOPs): "
            "give one per batch shape",
            field=field,
        )
    if follow is not None and len(pairs) == 1:
        curve = follow.through(*pairs[0])
    else:
        curve = ComputeCurve(roof, np.array([c for _, c in pairs]), slope, max_tail_slope)
    # the least work any pass of this kind does (one token, no context) must keep a
    # compute time >= 0: points whose slope, extended down, crosses 0 before it made a
    # serving run fail on a negative SimPy delay
    bare = BatchedPass(physics, ComputeCurve(np.array([0.0]), np.array([0.0])), terms)
    least = float(bare.work_ms(1, 0.0, 0.0)[()])
    if float(curve.at(np.array([least]))[0]) < 0.0:
        lowest = min(points, key=lambda p: _point_compute(physics, p, field, terms)[0])
        raise SpecsimError(
            f"the measured {physics.name} passes ({len(points)}: "
            + ", ".join(f"{p.ms:.4g} ms over {p.tokens} token(s) reading {p.kv_tokens:.4g} "
                        "KV tokens" for p in points)
            + ") extend to a negative compute time for one token without context: their "
            "growth is too steep for where the first one lies (were the batch-1 times taken "
            "at the context timing.context_tokens says?)",
            field=lowest.field or field,
        )  # fmt: skip
    return BatchedPass(physics, curve, terms)
