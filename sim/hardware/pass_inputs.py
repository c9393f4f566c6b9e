"""What the pass model reads, once (sim/hardware/pass_model.py): the hardware asked about
and the hardware the timings were measured on, by name (``PointSpec``); the target's and
the drafter's dimensions (``ModelDims``); the batch-1 pass times as given
(``MeasuredTimes``); and all of it with the configuration's own k and the what-ifs' knobs
(``PassInputs``). Plain, typed, frozen: sim/binding/decompose.py reads a scenario into them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sim.hardware.interconnects import InlineInterconnect
from sim.hardware.passes import PASS_NAMES
from sim.model.cycle import PassTimes


@dataclass(frozen=True, slots=True)
class PointSpec:
    """A hardware point by name; ``section``: the scenario section naming it
    (``hardware`` or ``timing.measured_on``), for errors."""

    interconnect: str
    gpus: int
    gpu: str | None
    verify_cuda_graph: bool
    allreduce: str
    section: str = "hardware"


@dataclass(frozen=True, slots=True)
class ModelDims:
    """The target model's and the drafter's dimensions (None: not given)."""

    layers: int | None
    hidden_size: int | None
    draft_layers: int
    kernels_per_layer: int | None
    allreduces_per_layer: int
    activation_bytes: int
    layer_params: float | None
    lm_head_params: float
    weight_bytes_per_param: float
    dense_layers: int
    dense_layer_params: float | None
    experts: int | None
    experts_per_token: int | None
    expert_params: float | None
    expert_bytes_per_param: float | None
    draft_params: float | None
    draft_bytes_per_param: float | None


@dataclass(frozen=True, slots=True)
class MeasuredTimes:
    """The batch-1 pass times as given (ms; None: not measured) and how the verify grows."""

    decode_ms: float | None
    verify_ms: float | None
    draft_step_ms: float | None
    draft_extend_ms: float | None
    verify_tokens: int | None
    verify_ms_per_extra_token: float | None
    verify_growth: Literal["linear", "experts"]
    verify_compute: Literal["measured", "decode"]
    cycle_overhead_ms: float
    draft_step_overhead_ms: float
    draft_extend_ms_per_token: float
    draft_extend_tokens: float | None

    def extend_fields(self, num_steps: int) -> dict[str, Any]:
        """The draft extend's growth per accepted token and the tokens it was taken at (the
        configuration's own num_steps + 1 by default, whatever k a cycle is built for)."""
        tokens = self.draft_extend_tokens
        return {
            "draft_extend_ms_per_token": self.draft_extend_ms_per_token,
            "draft_extend_tokens": float(num_steps + 1 if tokens is None else tokens),
        }

    def as_pass_times(
        self, num_steps: int, draft_tokens: int | None = None, slope: float | None = None
    ) -> PassTimes:
        """Pass times as measured; ``verify_tokens`` defaults to ``draft_tokens`` (a tree's
        num_draft_tokens), else ``num_steps + 1``; the verify slope to ``slope`` (else the
        given one, else 0). Every pass time must be given (ValueError otherwise)."""
        given = {n: getattr(self, f"{n}_ms") for n in PASS_NAMES}
        missing = [n for n, v in given.items() if v is None]
        if missing:
            raise ValueError(f"timing has no {', '.join(missing)}: use scenario_pass_times")
        return PassTimes(
            decode_ms=given["decode"],
            verify_ms=given["verify"],
            verify_tokens=self.verify_tokens or draft_tokens or num_steps + 1,
            verify_ms_per_extra_token=(
                slope if slope is not None else self.verify_ms_per_extra_token or 0.0
            ),
            draft_step_ms=given["draft_step"],
            draft_extend_ms=given["draft_extend"],
            cycle_overhead_ms=self.cycle_overhead_ms,
            **self.extend_fields(num_steps),
        )


@dataclass(frozen=True, slots=True)
class PassInputs:
    """What the pass model reads, once. ``reference``: where the timings were measured
    (None: the hardware asked about); ``launch_us``: the stated per-kernel CPU cost (None:
    derived or the public default); ``launch_stated``: stated by the file itself (a
    measured ungraphed verify that fixes it then contradicts it); ``launch_overridden``:
    set afterwards as a what-if; ``draft_tokens``: tokens of the configuration's own verify
    (k + 1, a tree's num_draft_tokens); ``efficiency``: the fraction of the GPU's peak
    bandwidth derived compute assumes; ``stated_origins``: pass name -> the origin the
    scenario states for its given time when that is not a measurement (``derived``,
    ``assumed``: e.g. a calibrated file's drafter passes priced by the hardware model),
    the label its breakdown carries instead of "measured"; ``expert_efficiency``: the
    share of peak bandwidth at which a longer verify's extra routed experts are read
    through the fused-MoE kernel (sim/hardware/expert_reads.py; None: at ``efficiency``,
    as the rest of derived compute)."""

    current: PointSpec
    reference: PointSpec | None
    model: ModelDims
    times: MeasuredTimes
    num_steps: int
    draft_tokens: int
    efficiency: float = 1.0
    launch_us: float | None = None
    launch_stated: bool = False
    launch_overridden: bool = False
    interconnects: Mapping[str, InlineInterconnect] = field(default_factory=dict)
    #: A block-parallel drafter (``speculation.parallel_draft``) and the drafter pass's
    #: growth per extra token where the geometry cannot tabulate it
    #: (``timing.draft_ms_per_extra_token``).
    parallel_draft: bool = False
    draft_ms_per_extra_token: float = 0.0
    stated_origins: Mapping[str, str] = field(default_factory=dict)
    expert_efficiency: float | None = None
