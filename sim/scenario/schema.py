"""The scenario file format: frozen, validated pydantic models of the TOML (schema only).

A scenario describes one server and drafter as the user measured them. Every section
forbids unknown keys and is strict about types (TOML ``"2"`` is not an integer), so a
typo is an error that names the file and the dotted field instead of a silent default.
Loading and ``--set`` overrides are sim/scenario/load.py and overrides.py; what the values
mean for the model is sim/scenario/bind.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import InlineInterconnect, Library, preset_names

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveMs = Annotated[float, Field(gt=0.0)]
NonNegativeMs = Annotated[float, Field(ge=0.0)]


class Section(BaseModel):
    """Base of every section: immutable, strict types, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ModelSpec(Section):
    """The target model; optional while timings are given directly."""

    name: str = "unnamed"
    layers: Annotated[int, Field(gt=0)] | None = None
    hidden_size: Annotated[int, Field(gt=0)] | None = None
    experts: Annotated[int, Field(gt=0)] | None = None
    experts_per_token: Annotated[int, Field(gt=0)] | None = None
    # Hardware model (sim/hardware/, reference section 4): kernels one layer launches
    # (counting its all-reduces), tensor-parallel all-reduces per layer, bytes per
    # activation element in an all-reduce message, decoder layers of the drafter.
    kernels_per_layer: Annotated[int, Field(gt=0)] | None = None
    allreduces_per_layer: Annotated[int, Field(ge=0)] = 2
    activation_bytes: Annotated[int, Field(gt=0)] = 2
    draft_layers: Annotated[int, Field(gt=0)] = 1
    # Weights, for compute derived from a GPU preset when timings are missing (roofline):
    # params per layer outside the routed experts (attention, shared expert; the whole
    # layer of a dense model), per dense layer of a MoE model, per routed expert, in the
    # LM head, and in the drafter; bytes per param (experts may be quantized apart).
    dense_layers: Annotated[int, Field(ge=0)] = 0
    layer_params: Annotated[float, Field(gt=0)] | None = None
    dense_layer_params: Annotated[float, Field(gt=0)] | None = None
    expert_params: Annotated[float, Field(gt=0)] | None = None
    lm_head_params: Annotated[float, Field(ge=0)] = 0.0
    draft_params: Annotated[float, Field(gt=0)] | None = None
    weight_bytes_per_param: Annotated[float, Field(gt=0)] = 2.0
    expert_bytes_per_param: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _kernels_cover_allreduces(self) -> ModelSpec:
        segments = max(self.allreduces_per_layer, 1)
        if (
            self.kernels_per_layer is not None
            and self.kernels_per_layer < self.allreduces_per_layer + segments
        ):
            raise ValueError(
                f"kernels_per_layer ({self.kernels_per_layer}) must count the "
                f"{self.allreduces_per_layer} all-reduces and at least one compute kernel "
                "before each"
            )
        return self

    @model_validator(mode="after")
    def _experts_consistent(self) -> ModelSpec:
        if self.experts_per_token is not None:
            if self.experts is None:
                raise ValueError("experts_per_token is set but experts is not")
            if self.experts_per_token > self.experts:
                raise ValueError(
                    f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})"
                )
        return self


class HardwareSpec(Section):
    """Tensor-parallel degree, interconnect and GPU presets, launch cost, jitter.

    ``interconnect`` names a preset (``specsim hardware --list``) or an inline
    ``[hardware.interconnects.NAME]`` table; ``launch_us`` is the CPU time one kernel costs
    without a CUDA graph, all-in (framework Python, PyTorch dispatch, launch; default
    18.9 us, calibrated on a public graphed-vs-eager pair: sim/hardware/eager.py);
    ``allreduce`` picks ``nccl`` alone, the engine's ``custom`` all-reduce where it applies,
    or ``auto`` (the faster; sim/hardware/allreduce.py); ``rank_jitter_cv`` the coefficient
    of variation of one rank's compute per layer segment (layer-level pass only; 0 =
    deterministic).
    """

    interconnects: dict[str, InlineInterconnect] = Field(default_factory=dict)
    gpus: Annotated[int, Field(gt=0)] = 1
    interconnect: str = "pcie-gen4"
    gpu: str | None = None
    launch_us: Annotated[float, Field(ge=0.0)] = EAGER_KERNEL_US
    allreduce: Library = "auto"
    rank_jitter_cv: Annotated[float, Field(ge=0.0)] = 0.0

    @field_validator("interconnect")
    @classmethod
    def _known_interconnect(cls, value: str, info: ValidationInfo) -> str:
        known = preset_names(info.data.get("interconnects"))
        if value not in known:
            raise ValueError(f"unknown interconnect {value!r}; known: {', '.join(known)}")
        return value

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str | None) -> str | None:
        if value is not None and value not in GPU_PRESETS:
            raise ValueError(f"unknown gpu {value!r}; known: {', '.join(GPU_PRESETS)}")
        return value


class MeasuredOn(Section):
    """The hardware the [timing] figures were measured on (filled from the file itself).

    ``load_scenario`` copies the file's own ``hardware.*`` and ``timing.verify_cuda_graph``
    here before ``--set`` overrides apply, so an override describes a what-if and the pass
    times are re-composed from this reference point (sim/hardware/decompose.py).
    """

    interconnect: str
    gpus: Annotated[int, Field(gt=0)]
    gpu: str | None = None
    verify_cuda_graph: bool
    allreduce: Library = "auto"


class TimingSpec(Section):
    """Pass times in milliseconds, as measured on the user's server (batch 1).

    The verify pass over ``m`` tokens costs
    ``verify_ms + (m - verify_tokens) * verify_ms_per_extra_token``; the line must stay
    positive down to ``m = 1``.

    A pass time left out is derived by the hardware model (sim/scenario/decompose.py):
    verify from the calibrated decode compute scaled by the weights it reads, anything
    else from the model's weights and the GPU preset.
    """

    decode_ms: PositiveMs | None = None
    verify_ms: PositiveMs | None = None
    verify_tokens: Annotated[int, Field(gt=0)] | None = None
    verify_ms_per_extra_token: NonNegativeMs = 0.0
    #: How the measured verify pass grows with tokens: ``linear`` (verify_ms_per_extra_token)
    #: or ``experts``: its calibrated compute scales with the weight bytes read, i.e. with
    #: the distinct routed experts E(1 - (1 - e/E)^m) (needs the model's weights).
    verify_growth: Literal["linear", "experts"] = "linear"
    #: Where the verify pass's GPU work comes from: ``measured`` (calibrated from verify_ms
    #: on the hardware it was measured on) or ``decode``: the graphed decode's calibrated
    #: compute plus the growth over the extra tokens (verify_growth), with an ungraphed
    #: verify_ms then fixing the per-kernel CPU cost of eager execution instead
    #: (sim/scenario/decompose.py). ``decode`` needs decode_ms, and suits a graphed decode
    #: and an ungraphed verify measured on the same server.
    verify_compute: Literal["measured", "decode"] = "measured"
    draft_step_ms: PositiveMs | None = None
    draft_extend_ms: PositiveMs | None = None
    #: The draft extend runs over the L tokens a cycle accepted: it grows by
    #: ``draft_extend_ms_per_token`` per token, ``draft_extend_ms`` being its time at
    #: ``draft_extend_tokens`` (default num_steps + 1). The closed forms take it at E[L]
    #: (exact, the growth is linear); the Monte Carlo at each cycle's L.
    draft_extend_ms_per_token: NonNegativeMs = 0.0
    draft_extend_tokens: Annotated[float, Field(gt=0.0)] | None = None
    #: Per-step drafter cost beyond a derived drafter pass (sampling, tree bookkeeping,
    #: host work): added to every drafter step the hardware model derives. A measured
    #: ``draft_step_ms`` already contains it, so giving both is an error.
    draft_step_overhead_ms: NonNegativeMs = 0.0
    cycle_overhead_ms: NonNegativeMs = 0.0
    verify_cuda_graph: bool = False
    measured_on: MeasuredOn | None = None
    #: Pass-time jitter for the Monte Carlo engines: each phase of each cycle lasts a
    #: gamma-distributed time with the phase's mean and this coefficient of variation
    #: (std / mean); 0 means every cycle takes exactly its mean (see sim/cycletime.py).
    jitter_cv: Annotated[float, Field(ge=0.0, le=10.0)] = 0.0

    @model_validator(mode="after")
    def _overhead_only_for_derived_steps(self) -> TimingSpec:
        if self.draft_step_overhead_ms > 0 and self.draft_step_ms is not None:
            raise ValueError(
                "draft_step_overhead_ms is added to a derived drafter step; a measured "
                "draft_step_ms already contains it (give one of the two)"
            )
        return self


class SpeculationSpec(Section):
    """Chain drafting (SGLang ``--speculative-num-steps``/``-eagle-topk``/``-num-draft-tokens``)."""

    num_steps: Annotated[int, Field(ge=0)]
    topk: Annotated[int, Field(gt=0)] = 1
    num_draft_tokens: Annotated[int, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _chain_only(self) -> SpeculationSpec:
        if self.topk != 1:
            raise ValueError(
                f"topk = {self.topk}: tree drafting (topk > 1) is not modelled yet; use topk = 1"
            )
        if self.num_draft_tokens is not None and self.num_draft_tokens != self.num_steps + 1:
            raise ValueError(
                f"num_draft_tokens = {self.num_draft_tokens}: with topk = 1 it is num_steps + 1 "
                f"= {self.num_steps + 1} (SGLang adjusts it so)"
            )
        return self

    @property
    def draft_tokens(self) -> int:
        """Tokens in one verify pass: the last accepted token plus ``num_steps`` drafts."""
        return self.num_steps + 1


class Heterogeneity(Section):
    """Per-request spread of acceptance: a Beta distribution around each mean rate.

    Each request draws its rate from Beta(m * c, (1 - m) * c) with mean m (the class's
    ``alpha`` or each ``per_position`` entry) and concentration c, given directly
    (``concentration``) or through a standard deviation (``std``, giving
    c = m (1 - m) / std^2 - 1). Neither set: every request has exactly the mean rates.
    """

    concentration: Annotated[float, Field(gt=0.0)] | None = None
    std: Annotated[float, Field(ge=0.0, lt=0.5)] | None = None

    @model_validator(mode="after")
    def _one_spread(self) -> Heterogeneity:
        if self.concentration is not None and self.std is not None:
            raise ValueError("give at most one of concentration or std")
        return self

    def _check_std(self, means: list[float]) -> None:
        """std must leave a proper Beta: std^2 < m (1 - m) for every mean strictly in (0, 1)."""
        if not self.std:
            return
        for m in means:
            if 0.0 < m < 1.0 and self.std**2 >= m * (1.0 - m):
                raise ValueError(
                    f"std {self.std:g} is too large for mean rate {m:g}: a Beta distribution "
                    f"with that mean has std below {(m * (1.0 - m)) ** 0.5:.4g}"
                )


class AcceptanceClass(Heterogeneity):
    """One class of a workload mix (``[[acceptance.mix]]``): e.g. chat or code."""

    name: str
    weight: Annotated[float, Field(gt=0.0)]
    alpha: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _exactly_one_rate(self) -> AcceptanceClass:
        given = [n for n in ("alpha", "per_position") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"mix class {self.name!r}: give exactly one of alpha or per_position")
        self._check_std([self.alpha] if self.alpha is not None else list(self.per_position or []))
        return self


class AcceptanceSpec(Heterogeneity):
    """Conditional per-position acceptance.

    One of: ``alpha`` (one rate), ``per_position`` (a list of k conditional rates; the last
    repeats when k is longer), or ``mix`` (weighted classes, each with its own rates).
    ``concentration`` or ``std`` make the rates vary per request (Beta around the mean); at
    the top level of a mix they are the default of classes that set neither.
    """

    alpha: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1)] | None = None
    mix: Annotated[list[AcceptanceClass], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> AcceptanceSpec:
        given = [n for n in ("alpha", "per_position", "mix") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of alpha, per_position or mix")
        if self.mix is not None:
            names = [c.name for c in self.mix]
            if len(set(names)) != len(names):
                raise ValueError(f"mix class names must be unique, got {names}")
            if self.std:
                for cls in self.mix:
                    if cls.concentration is None and cls.std is None:
                        cls_rates = [cls.alpha] if cls.alpha is not None else cls.per_position
                        self._check_std(list(cls_rates or []))
        else:
            self._check_std(
                [self.alpha] if self.alpha is not None else list(self.per_position or [])
            )
        return self

    @property
    def heterogeneous(self) -> bool:
        """True when rates vary from request to request (a mix or a Beta spread)."""
        if self.mix is not None:
            return True
        return bool(self.concentration is not None or self.std)


class WorkloadSpec(Section):
    """Output tokens per request and requests per replication."""

    output_tokens: Annotated[int, Field(gt=0)] = 512
    requests: Annotated[int, Field(gt=0)] = 100


class SimulationSpec(Section):
    """Monte Carlo replications and the root seed."""

    replications: Annotated[int, Field(gt=0)] = 20
    seed: Annotated[int, Field(ge=0)] = 0


class TargetsSpec(Section):
    """Throughput targets in tokens per second (per request, batch 1)."""

    tok_s: Annotated[list[Annotated[float, Field(gt=0.0)]], Field(min_length=1)]


class Scenario(Section):
    """One validated scenario file (after overrides).

    ``_derived`` memoizes what sim/scenario/bind.py derives from the (immutable) fields,
    such as the pass times, so a study that asks many times pays once.
    """

    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)

    name: str
    description: str = ""
    model: ModelSpec = ModelSpec()
    hardware: HardwareSpec = HardwareSpec()
    timing: TimingSpec = TimingSpec()
    speculation: SpeculationSpec
    acceptance: AcceptanceSpec | None = None
    workload: WorkloadSpec = WorkloadSpec()
    simulation: SimulationSpec = SimulationSpec()
    targets: TargetsSpec | None = None

    @model_validator(mode="after")
    def _acceptance_when_speculating(self) -> Scenario:
        if self.acceptance is None and self.speculation.num_steps > 0:
            raise ValueError("[acceptance] is required when speculation.num_steps > 0")
        timing = self.timing
        if timing.draft_extend_ms is not None and timing.draft_extend_ms_per_token > 0:
            tokens = timing.draft_extend_tokens or self.num_steps + 1
            at_one = timing.draft_extend_ms - (tokens - 1) * timing.draft_extend_ms_per_token
            if at_one < 0:
                raise ValueError(
                    "timing.draft_extend_ms_per_token is too large for timing.draft_extend_ms: "
                    f"the draft extend over 1 token would take {at_one:.3g} ms"
                )
        if timing.verify_ms is None:
            return self
        measured_tokens = timing.verify_tokens or self.num_steps + 1
        at_one = timing.verify_ms - (measured_tokens - 1) * timing.verify_ms_per_extra_token
        if at_one <= 0:
            raise ValueError(
                "timing.verify_ms_per_extra_token is too large for timing.verify_ms: the verify "
                f"pass over 1 token would take {at_one:.3g} ms"
            )
        return self

    @property
    def num_steps(self) -> int:
        return self.speculation.num_steps

    @property
    def target_tok_s(self) -> tuple[float, ...]:
        return tuple(self.targets.tok_s) if self.targets else ()
