"""Scenario files: frozen, validated pydantic models of the TOML, loading and ``--set`` overrides.

A scenario describes one server and drafter as the user measured them. Every section
forbids unknown keys and is strict about types (TOML ``"2"`` is not an integer), so a
typo is an error that names the file and the dotted field instead of a silent default.
Vocabulary follows ../shared/reference/speculative-decoding.md (section 1: the SGLang
chain cycle; section 2: the acceptance metrics).
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sim.errors import SpecsimError
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

    A pass time left out is derived by the hardware model (sim/hardware/decompose.py):
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
    #: (sim/hardware/decompose.py). ``decode`` needs decode_ms, and suits a graphed decode
    #: and an ungraphed verify measured on the same server.
    verify_compute: Literal["measured", "decode"] = "measured"
    draft_step_ms: PositiveMs | None = None
    draft_extend_ms: PositiveMs | None = None
    cycle_overhead_ms: NonNegativeMs = 0.0
    verify_cuda_graph: bool = False
    measured_on: MeasuredOn | None = None
    #: Pass-time jitter for the Monte Carlo engines: each phase of each cycle lasts a
    #: gamma-distributed time with the phase's mean and this coefficient of variation
    #: (std / mean); 0 means every cycle takes exactly its mean (see sim/cycletime.py).
    jitter_cv: Annotated[float, Field(ge=0.0, le=10.0)] = 0.0


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


def listed_rates(alpha: float | None, per_position: list[float] | None, k: int) -> np.ndarray:
    """Rates a_1..a_k, shape (k,), from one rate or a list whose last entry repeats."""
    if alpha is not None:
        return np.full(k, alpha, dtype=float)
    listed = np.asarray(per_position, dtype=float)
    if k <= len(listed):
        return listed[:k].copy()
    return np.concatenate([listed, np.full(k - len(listed), listed[-1])])


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

    def conditional_rates(self, num_steps: int) -> np.ndarray:
        """Conditional rates a_1..a_k, shape (num_steps,); the last listed rate repeats.

        For a mix or per-request heterogeneity these are the effective rates
        E[c_i] / E[c_(i-1)] (c_i = a_1 ... a_i, expectations over requests), so the closed
        forms of sim.theory fed with them give the exact per-request expectations of the
        accept length and its pmf (see sim.acceptance).
        """
        if not self.heterogeneous:
            return listed_rates(self.alpha, self.per_position, num_steps)
        from sim.acceptance import acceptance_model  # the model owns the arithmetic

        return acceptance_model(self, num_steps).effective_rates()


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
    """One validated scenario file (after overrides)."""

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


# --------------------------------------------------------------------------- overrides

#: Keys that describe the same thing in different ways: setting one drops the others, so
#: ``--set acceptance.alpha=0.8`` replaces a file's ``per_position`` or ``mix`` instead of
#: clashing (a top-level ``concentration``/``std`` stays: alpha becomes the Beta's mean).
EXCLUSIVE_KEYS: tuple[frozenset[str], ...] = (
    frozenset({"acceptance.alpha", "acceptance.per_position", "acceptance.mix"}),
    frozenset({"acceptance.concentration", "acceptance.std"}),
)
#: Keys derived from another key unless given with it: ``num_draft_tokens`` follows ``num_steps``.
DERIVED_KEYS: Mapping[str, str] = {"speculation.num_steps": "speculation.num_draft_tokens"}


def parse_value(text: str) -> Any:
    """A ``--set`` value as a TOML scalar or array; a bare word is a string (``nvlink4``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if text and all(ch.isalnum() or ch in "-_." for ch in text) and not text[0].isdigit():
            return text
        raise SpecsimError(f"cannot parse value {text!r} as TOML", source="--set") from None


def parse_assignment(text: str) -> tuple[str, Any]:
    """``'a.b=value'`` -> ``('a.b', parsed value)``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise SpecsimError(f"expected KEY=VALUE with a dotted key, got {text!r}", source="--set")
    return key, parse_value(value.strip())


def _delete(raw: dict[str, Any], dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node: Any = raw
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(leaf, None)


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``raw`` with dotted ``overrides`` set, exclusive and derived keys dropped.

    Raises SpecsimError when a dotted path runs through a value that is not a table.
    """
    out = copy.deepcopy(dict(raw))
    for dotted in overrides:
        for group in EXCLUSIVE_KEYS:
            if dotted in group:
                for other in group - {dotted}:
                    if other not in overrides:
                        _delete(out, other)
        derived = DERIVED_KEYS.get(dotted)
        if derived and derived not in overrides:
            _delete(out, derived)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = out
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parents[: i + 1])
                raise SpecsimError(f"{where} is not a table", source="--set", field=dotted)
            node = child
        node[leaf] = value
    return out


# --------------------------------------------------------------------------- validation


def _dotted(loc: Iterable[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors(include_url=False)[0]
    loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "missing":
        msg = "required key is missing"
    extra = len(exc.errors()) - 1
    if extra:
        msg += f" (and {extra} more error{'s' if extra > 1 else ''})"
    return _dotted(loc), msg


def scenario_from_dict(
    raw: Mapping[str, Any], *, source: str, overridden: Iterable[str] = ()
) -> Scenario:
    """Validate a raw mapping; errors name ``source`` (or ``--set`` for an overridden field)."""
    try:
        scenario = Scenario.model_validate(dict(raw))
    except ValidationError as exc:
        field, msg = _first_error(exc)
        from_set = any(field == k or field.startswith(k + ".") for k in overridden)
        where = f"{source} (--set)" if from_set else source
        raise SpecsimError(msg, source=where, field=field or None) from None
    missing = underivable_pass_time(scenario)
    if missing is not None:
        field, needs = missing
        from_set = any(field == k or k.startswith(("model.", "hardware.")) for k in overridden)
        where = f"{source} (--set)" if from_set else source
        raise SpecsimError(
            f"required key is missing (or give {', '.join(needs)} to derive it)",
            source=where,
            field=field,
        )
    _check_hardware_model(scenario, source=source, overridden=overridden)
    return scenario


def _check_hardware_model(scenario: Scenario, *, source: str, overridden: Iterable[str]) -> None:
    """Run the hardware model once so that a measured time below its modelled
    communication + launch floor, or a missing model field, is reported against the file."""
    from sim.hardware.decompose import scenario_pass_times  # it imports this module

    try:
        scenario_pass_times(scenario)
    except SpecsimError as exc:
        touched = any(k.startswith(("hardware.", "model.", "timing.")) for k in overridden)
        where = f"{source} (--set)" if touched else source
        raise SpecsimError(exc.message, source=where, field=exc.field) from None


def underivable_pass_time(scenario: Scenario) -> tuple[str, list[str]] | None:
    """The first missing pass time the hardware model cannot derive, with what it needs.

    A missing verify is derived from a measured decode and the model's weights; any other
    missing pass from the model's weights (drafter: ``draft_params``) and ``hardware.gpu``
    (sim/hardware/decompose.py).
    """
    timing, model = scenario.timing, scenario.model
    geometry = [f"model.{n}" for n in ("layers", "hidden_size") if getattr(model, n) is None]
    weights = ["model.layer_params"] if model.layer_params is None else []
    gpu = ["hardware.gpu"] if scenario.hardware.gpu is None else []
    checks = [("decode_ms", geometry + weights + gpu)]
    verify_needs = geometry + weights + (gpu if timing.decode_ms is None else [])
    checks.append(("verify_ms", verify_needs))
    if timing.verify_growth == "experts" and geometry + weights:
        return "timing.verify_growth", geometry + weights
    if scenario.num_steps > 0:
        drafter = ["model.draft_params"] if model.draft_params is None else []
        checks += [(n, geometry + drafter + gpu) for n in ("draft_step_ms", "draft_extend_ms")]
    for name, needs in checks:
        if getattr(timing, name) is None and needs:
            return f"timing.{name}", needs
    return None


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """The raw TOML mapping of a scenario file; SpecsimError if missing or not TOML."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecsimError("no such file", source=str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecsimError(f"cannot read: {exc.__class__.__name__}", source=str(path)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecsimError(f"invalid TOML: {exc}", source=str(path)) from None


def fill_measured_on(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with ``timing.measured_on`` completed from the file's own hardware values.

    Keys the file gives in ``[timing.measured_on]`` stay; missing ones come from
    ``[hardware]`` / ``timing.verify_cuda_graph`` (or their defaults). Values that are not
    of the right type are left for validation to report.
    """
    out = copy.deepcopy(dict(raw))
    timing = out.get("timing")
    hardware = out.get("hardware", {})
    if not isinstance(timing, dict) or not isinstance(hardware, dict):
        return out
    measured = timing.setdefault("measured_on", {})
    if not isinstance(measured, dict):
        return out
    hw_fields = HardwareSpec.model_fields
    measured.setdefault(
        "interconnect", hardware.get("interconnect", hw_fields["interconnect"].default)
    )
    measured.setdefault("gpus", hardware.get("gpus", hw_fields["gpus"].default))
    if hardware.get("gpu") is not None:
        measured.setdefault("gpu", hardware["gpu"])
    measured.setdefault("verify_cuda_graph", timing.get("verify_cuda_graph", False))
    measured.setdefault("allreduce", hardware.get("allreduce", hw_fields["allreduce"].default))
    return out


def load_scenario(path: str | Path, sets: Iterable[str] = ()) -> Scenario:
    """Read, override (``--set`` strings ``'a.b=v'``) and validate a scenario file."""
    raw = fill_measured_on(read_scenario_file(path))
    overrides = dict(parse_assignment(s) for s in sets)
    merged = apply_overrides(raw, overrides)
    return scenario_from_dict(merged, source=str(path), overridden=overrides)


def with_overrides(
    scenario: Scenario, overrides: Mapping[str, Any], *, source: str = "override"
) -> Scenario:
    """A new scenario with dotted overrides applied and re-validated (used by sweeps/search)."""
    raw = scenario.model_dump(exclude_none=True)
    merged = apply_overrides(raw, overrides)
    return scenario_from_dict(merged, source=source, overridden=overrides)
