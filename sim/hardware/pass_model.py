"""Every pass of one configuration on its hardware: measured, re-composed or derived.

``PassModel(inputs)`` takes plain, typed inputs (``PassInputs``: the hardware asked about
and the hardware the timings were measured on, by name; the model's dimensions; the
measured times) and computes every pass inside this floor. A pass time = compute +
tensor-parallel all-reduces + kernel launch (one pass's physics: sim/hardware/passes.py):

- communication = layers x all-reduces per layer x all-reduce time for the pass's message
  (tokens x hidden_size x activation_bytes; sim/hardware/allreduce.py);
- launch = kernels per layer x layers x the CPU cost of one eager kernel, only when the
  pass is not graphed (sim/hardware/eager.py); the pass ends at the critical path of GPU
  work and CPU issue work (sim/hardware/launch.py);
- compute = the calibrated remainder: the compute time that makes the model give the
  measured time on the hardware the timings were measured on (``reference``).

Another interconnect, GPU count, GPU or verify graphing re-composes a pass from that
compute: the interconnect changes communication only; graphing removes the CPU issue
work; the GPU count divides compute by the TP degree and changes the all-reduce; the GPU
preset scales compute by the memory-bandwidth ratio (batch 1 is memory-bound). Decode and
draft passes are graphed; only the verify pass has the knob (docs/reference.md §Seed).

With ``verify_compute = "decode"`` the verify's compute comes from the graphed decode's
instead (plus its growth over the extra tokens), and an ungraphed measured verify fixes
the per-kernel CPU cost of eager execution (``launch_us``).

Passes without a measured time are derived: a missing verify from the calibrated decode
compute plus the extra weight reads (more distinct experts over more tokens), anything
else from the model's weights and the GPU preset (sim/hardware/roofline.py).

The order of the work, each lower module entered from one place: the hardware points
(interconnects.py, then gpus.py), once; the per-kernel CPU cost an ungraphed measured
verify fixes, once; then, for any pass over any token counts at once
(``_compute_table``), the measured pass it rests on calibrated where the timings were
measured (``_on_reference``: passes.py, which builds the schedule through allreduce.py,
eager.py and launch.py), then what the weights add (``_weights_table``: roofline.py and
experts.py), then the pass composed (``_composed``: passes.py).

A problem is a ``SpecsimError`` naming the scenario field behind it (``model.layers``,
``timing.verify_ms``, ...); sim/binding/decompose.py reads a scenario into the inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from sim.errors import SpecsimError, UnknownNameError
from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.gpus import gpu_preset
from sim.hardware.interconnects import InlineInterconnect, resolve_interconnect
from sim.hardware.passes import (
    PASS_NAMES,
    Geometry,
    HardwarePoint,
    PassBreakdown,
    PassMemo,
    PassShape,
    calibrate_launch_us,
    calibrate_pass,
    compose_pass,
)
from sim.model.cycle import PassTimes

if TYPE_CHECKING:
    from sim.hardware.roofline import Weights

# The roofline (sim/hardware/roofline.py) is imported where a pass is derived from the
# weights: a configuration whose passes are all measured never needs it (start-up).

#: Verify passes tabulated for the cycle model: m = 1..33 covers best-k searches k <= 32.
VERIFY_TABLE_TOKENS = 33


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


#: Query tokens a request the block-parallel drafter's table covers (the schema's most
#: draft tokens; ``draft_over_ms`` extends it linearly beyond).
PARALLEL_DRAFT_TABLE_TOKENS = 64


def hardware_points(inputs: PassInputs) -> tuple[HardwarePoint, HardwarePoint]:
    """(the hardware asked about, the hardware the timings were measured on), resolved
    (each interconnect, then its GPU preset); the reference takes the current per-kernel
    CPU cost. A name that resolves to nothing is a SpecsimError naming its section."""
    specs = [inputs.current] if inputs.reference is None else [inputs.current, inputs.reference]
    launch_us = EAGER_KERNEL_US if inputs.launch_us is None else inputs.launch_us
    points = []
    for spec in specs:
        try:
            interconnect = resolve_interconnect(spec.interconnect, inputs.interconnects)
        except (UnknownNameError, ValueError) as exc:
            raise SpecsimError(str(exc), field=f"{spec.section}.interconnect") from None
        try:
            gpu = None if spec.gpu is None else gpu_preset(spec.gpu)
        except UnknownNameError as exc:
            raise SpecsimError(str(exc), field=f"{spec.section}.gpu") from None
        points.append(
            HardwarePoint(
                interconnect=interconnect,
                gpus=spec.gpus,
                gpu=gpu,
                verify_cuda_graph=spec.verify_cuda_graph,
                launch_us=launch_us,
                allreduce=spec.allreduce,
            )
        )
    return points[0], points[-1]


def geometry(model: ModelDims) -> Geometry:
    """The model geometry; SpecsimError naming the first missing field."""
    for name in ("layers", "hidden_size"):
        if getattr(model, name) is None:
            raise SpecsimError("needed by the hardware model", field=f"model.{name}")
    assert model.layers is not None and model.hidden_size is not None
    return Geometry(
        layers=model.layers,
        draft_layers=model.draft_layers,
        hidden_size=model.hidden_size,
        kernels_per_layer=model.kernels_per_layer,
        allreduces_per_layer=model.allreduces_per_layer,
        activation_bytes=model.activation_bytes,
        moe=model.experts is not None,
    )


def target_weights(model: ModelDims) -> Weights:
    """The target model's weights; SpecsimError naming the first missing field."""
    if model.layers is None:
        raise SpecsimError("needed to derive compute", field="model.layers")
    if model.layer_params is None:
        raise SpecsimError("needed to derive compute from the model", field="model.layer_params")
    from sim.hardware.roofline import Weights  # lazy: derived passes only (start-up)

    return Weights(
        layers=model.layers,
        layer_params=model.layer_params,
        lm_head_params=model.lm_head_params,
        weight_bytes_per_param=model.weight_bytes_per_param,
        dense_layers=model.dense_layers,
        dense_layer_params=model.dense_layer_params,
        experts=model.experts,
        experts_per_token=model.experts_per_token,
        expert_params=model.expert_params,
        expert_bytes_per_param=model.expert_bytes_per_param,
    )


def draft_weights(model: ModelDims) -> Weights:
    """The drafter's weights (one layer of ``draft_params``) at its own bytes a weight
    (``draft_bytes_per_param``, else the target's); SpecsimError if not given."""
    if model.draft_params is None:
        raise SpecsimError("needed to derive drafter compute", field="model.draft_params")
    from sim.hardware.roofline import Weights  # lazy: derived passes only (start-up)

    return Weights(
        layers=1,
        layer_params=model.draft_params,
        weight_bytes_per_param=draft_bytes_per_param(model),
    )


def draft_bytes_per_param(model: ModelDims) -> float:
    """Bytes a drafter weight: its own (``model.draft_bytes_per_param``), else the
    target's (``model.weight_bytes_per_param``)."""
    own = model.draft_bytes_per_param
    return model.weight_bytes_per_param if own is None else own


def compute_scale(ref: HardwarePoint, cur: HardwarePoint) -> float:
    """Factor from calibrated compute on ``ref`` to compute on ``cur``.

    TP degree: compute per rank ~ 1 / gpus. GPU: compute ~ 1 / memory bandwidth.
    """
    scale = ref.gpus / cur.gpus
    if (ref.gpu and ref.gpu.name) != (cur.gpu and cur.gpu.name):
        if ref.gpu is None or cur.gpu is None:
            raise SpecsimError(
                "the GPU changed but the GPU the timings were measured on is not known; "
                "set it in [timing.measured_on] (or [hardware] of the file)",
                field="timing.measured_on.gpu",
            )
        scale *= ref.gpu.memory_bandwidth_gbps / cur.gpu.memory_bandwidth_gbps
    return scale


@dataclass(frozen=True, slots=True, eq=False)
class PassModel:
    """Every pass of one configuration taken apart on its hardware (module docstring),
    built once by ``pass_model``; read-only.

    ``current`` / ``reference``: the hardware asked about and the hardware the timings
    were measured on, each with its per-kernel CPU cost; ``at_reference``: the two are the
    same (the measured passes hold as they are); ``derived_launch_us``: the per-kernel CPU
    cost the measured ungraphed verify fixes (None: not fixed; the stated ``launch_us`` or
    its default applies); ``verify_slope``: (ms per extra verified token, origin, reason);
    ``passes``: the pass times. Each pass's compute comes from one place,
    ``_compute_table`` (a measured time calibrated on the reference, the decode's grown, or
    the roofline), over any number of token counts at once; the pass times, the verify and
    drafter tables and every breakdown compose it with their all-reduces and launches.
    """

    inputs: PassInputs
    current: HardwarePoint
    reference: HardwarePoint
    at_reference: bool
    derived_launch_us: float | None = None
    # found by ``pass_model``, in this order (None only while it builds them)
    _slope: tuple[float, str, str] | None = None
    _passes: PassTimes | None = None
    #: The answers of sim/hardware/passes.py it met: its own, or its binder's (a study's,
    #: shared by every scenario it binds: ``pass_model``'s ``memo``).
    memo: PassMemo = field(default_factory=PassMemo, compare=False, repr=False)

    @property
    def times(self) -> MeasuredTimes:
        return self.inputs.times

    @property
    def model(self) -> ModelDims:
        return self.inputs.model

    @property
    def num_steps(self) -> int:
        return self.inputs.num_steps

    def with_efficiency(self, efficiency: float) -> PassModel:
        """The same configuration with derived compute at another fraction of the GPU's
        peak bandwidth (a what-if: the range of what derived compute gives)."""
        return pass_model(replace(self.inputs, efficiency=efficiency), self.memo)

    def launch_us_at_kernels(self, kernels: int) -> float:
        """The per-kernel CPU cost (us) on the hardware asked about with ``kernels`` kernels
        a layer (a what-if inside the count's stated range)."""
        model = replace(self.inputs.model, kernels_per_layer=kernels)
        return _placed(replace(self.inputs, model=model), self.memo).current.launch_us

    @property
    def verify_from_decode(self) -> bool:
        return self.times.verify_compute == "decode"

    def verify_compute_from_decode_ms(self, tokens: int) -> float:
        """The verify's compute over ``tokens`` on the reference hardware as the graphed
        decode's plus its growth (what ``verify_compute = 'decode'`` uses)."""
        return self._compute_table("verify", (tokens,), decode_on_reference=True)[0][0]

    def _launch_us_from_verify(self) -> float | None:
        """Under ``verify_compute = 'decode'`` with an ungraphed measured verify: the
        per-kernel CPU cost that makes the eager verify, with the decode-derived GPU work,
        take ``verify_ms`` on the hardware it was measured on (None otherwise).

        A file that also states ``hardware.launch_us`` says two things about one
        quantity: SpecsimError naming the field. (A what-if of it keeps the derived cost
        for the timings; the hardware asked about takes the override.)"""
        times = self.times
        if not self.verify_from_decode or times.verify_ms is None:
            return None
        if self.reference.verify_cuda_graph:
            return None
        m0 = self.measured_verify_tokens
        shape = self.shape("verify", m0, self.reference)
        compute_ms = self.verify_compute_from_decode_ms(m0)
        try:
            derived_us = calibrate_launch_us(
                shape, self.reference, self.geom, compute_ms, times.verify_ms, self.memo
            )
        except ValueError as exc:
            raise SpecsimError(
                f"{times.verify_ms:.4g} ms cannot be an ungraphed verify whose GPU work is "
                f"the graphed decode's plus its growth ({compute_ms:.4g} ms of compute): "
                f"{exc}",
                field="timing.verify_ms",
            ) from None
        stated = self.inputs.launch_us
        if stated is not None and self.inputs.launch_stated:
            raise SpecsimError(
                f"stated as {stated:g} us, but the ungraphed timing.verify_ms with "
                "timing.verify_compute = 'decode' fixes the per-kernel CPU cost at "
                f"{derived_us:.4g} us ({self.geom.kernels_per_layer} kernels a layer): leave "
                "it out, or set timing.verify_compute = 'measured' to take the verify's GPU "
                "work from its time at this cost instead",
                field="hardware.launch_us",
            )
        return derived_us

    @property
    def scale_to_current(self) -> float:
        """Factor from compute calibrated where the timings were measured to compute on the
        hardware asked about (``compute_scale``)."""
        return compute_scale(self.reference, self.current)

    @property
    def geom(self) -> Geometry:
        """The model geometry (SpecsimError naming the first missing field)."""
        return geometry(self.model)

    def target_weights(self) -> Weights:
        return target_weights(self.model)

    def draft_weights(self) -> Weights:
        return draft_weights(self.model)

    @property
    def measured_verify_tokens(self) -> int:
        return self.times.verify_tokens or self.inputs.draft_tokens

    def shape(self, name: str, tokens: int, hw: HardwarePoint) -> PassShape:
        target = name in ("decode", "verify")
        layers = self.geom.layers if target else self.geom.draft_layers
        graphed = hw.verify_cuda_graph if name == "verify" else True
        return PassShape(name, tokens, layers, graphed)

    def default_tokens(self, name: str) -> int:
        if name == "verify":
            return self.measured_verify_tokens
        if name == "draft_extend":
            return self.num_steps + 1
        return 1

    @property
    def efficiency(self) -> float:
        return self.inputs.efficiency

    @property
    def verify_slope(self) -> tuple[float, str, str]:
        """(ms per extra verified token, origin, reason) of the measured verify pass, found
        once by ``pass_model`` (``_find_verify_slope``)."""
        assert self._slope is not None, "read before pass_model found it"
        return self._slope

    def _find_verify_slope(self) -> tuple[float, str, str]:
        """(ms per extra verified token, origin, reason) of the measured verify pass.

        Given (``verify_ms_per_extra_token``): measured. Otherwise derived by the hardware
        model where the timings were measured: the verify over one more token, with the
        calibrated compute plus the extra weight reads and FLOPs (sim/hardware/roofline.py
        ``growth_ms``) and the larger all-reduces, minus the measured pass. Without the
        weights or the GPU: 0, listed as a default.
        """
        times = self.times
        if times.verify_ms_per_extra_token is not None:
            return times.verify_ms_per_extra_token, "measured", "given in the scenario"
        derived = self._derived_slope()
        if isinstance(derived, str):
            return (
                0.0,
                "default",
                (
                    f"not measured, and the hardware model cannot derive it ({derived}): extra "
                    "verified tokens are taken to cost nothing, which is optimistic"
                ),
            )
        base = (
            "the graphed decode's GPU work (timing.verify_compute = 'decode')"
            if self.verify_from_decode
            else "the calibrated verify"
        )
        return (
            derived,
            "derived",
            (
                f"hardware model: {base} plus one token's extra weight reads (its new "
                f"distinct routed experts){self._expert_words()} and FLOPs at "
                f"hardware.bandwidth_efficiency {self.efficiency:g} of the GPU's peak, and "
                "its larger all-reduces"
            ),
        )

    def _expert_words(self) -> str:
        """How the extra experts are priced, for the slope's reason ('' when at the pass's
        own efficiency)."""
        eff = self.inputs.expert_efficiency
        if eff is None or not self.model.experts:
            return ""
        return f" through the fused-MoE kernel at hardware.expert_read_efficiency {eff:g} of peak"

    def _derived_slope(self) -> float | str:
        """The derived slope (ms per token), or why it cannot be derived: the verify
        over m0 and m0 + 1 tokens on the reference, its compute the decode's grown
        (``verify_compute = 'decode'``) or the measured verify's calibrated compute plus
        one token's growth, less the time at m0."""
        times, model = self.times, self.model
        if times.verify_ms is None:
            return "no measured verify pass"
        missing = [
            f"model.{n}"
            for n in ("layers", "hidden_size", "layer_params")
            if getattr(model, n) is None
        ]
        if not self.inputs.current.verify_cuda_graph and model.kernels_per_layer is None:
            missing.append("model.kernels_per_layer")
        if self.reference.gpu is None:
            missing.append("hardware.gpu")
        if missing:
            return "needs " + ", ".join(missing)
        m0, ref = self.measured_verify_tokens, self.reference
        tokens = (m0, m0 + 1)
        try:
            if self.verify_from_decode:  # the decode's GPU work, grown, under the eager launch
                computes, _ = self._compute_table("verify", tokens, decode_on_reference=True)
            else:
                x_m0 = self._on_reference("verify", (m0,), (times.verify_ms,), None)[0]
                grow = (ref, m0, "the verify slope")
                computes = [x_m0, x_m0 + self._weights_table("verify", (m0 + 1,), grow)[0]]
            t0, t1 = (
                b.total_ms for b in self._composed("verify", tokens, computes, "derived", ref)
            )
        except SpecsimError as exc:
            return exc.message
        return max(t1 - (t0 if self.verify_from_decode else times.verify_ms), 0.0)

    def _measured_ms(self, name: str, tokens: int) -> float | None:
        times = self.times
        if name == "verify":
            if times.verify_ms is None:
                return None
            slope = self.verify_slope[0]
            return times.verify_ms + (tokens - self.measured_verify_tokens) * slope
        return getattr(times, f"{name}_ms")

    def _on_reference(
        self,
        name: str,
        tokens: Sequence[int],
        measured_ms: Sequence[float],
        launch_stated: bool | None,
    ) -> list[float]:
        """The compute (ms) that makes the pass ``name`` over each of ``tokens`` take its
        ``measured_ms`` where the timings were measured (sim/hardware/passes.py
        ``calibrate_pass``; ``launch_stated``: check an ungraphed pass's launches first)."""
        field = "timing.verify_ms" if name == "verify" else f"timing.{name}_ms"
        m0, ref = self.measured_verify_tokens, self.reference
        x_ref = []
        for m, measured in zip(tokens, measured_ms, strict=True):
            given = None
            if name == "verify" and m != m0:  # the user gave another: verify_ms is set
                given = (  # and ``measured`` came from it
                    f"{self.times.verify_ms:.4g} ms over {m0} tokens at "
                    f"{self.verify_slope[0]:.4g} ms a token, i.e. {measured:.4g} ms"
                )
            shape = self.shape(name, m, ref)
            x_ref.append(
                calibrate_pass(
                    shape, ref, self.geom, measured, field, given, launch_stated, self.memo
                )
            )
        return x_ref

    def _compute_table(
        self, name: str, tokens: Sequence[int], *, decode_on_reference: bool = False
    ) -> tuple[list[float], str]:
        """(compute ms on the current hardware of the pass ``name`` over each of
        ``tokens``, origin), in two steps: the measured pass it rests on calibrated where
        the timings were measured, then what grows with tokens (sim/hardware/roofline.py).

        - the verify under ``verify_compute = 'decode'``: the graphed decode's compute
          plus ``verify_ms_per_extra_token`` per extra token when given, else (and with
          ``verify_growth = experts``) plus the weight reads and FLOPs of the extra tokens
          (only that share of a batch-1 pass grows with tokens), on the reference, then
          rescaled (``decode_on_reference``: this, not rescaled, whatever
          ``verify_compute`` says);
        - a measured verify with ``verify_growth = 'experts'``: its compute plus the growth
          from its measured tokens on the current hardware;
        - a measured pass: its time at each token count calibrated, then rescaled;
        - an unmeasured verify with a measured decode: the decode's plus its growth;
        - anything else: the roofline of the weights on the current GPU.
        """
        times, verify, m0 = self.times, name == "verify", self.measured_verify_tokens
        origin = self.inputs.stated_origins.get(name) or (
            "measured" if self.at_reference else "recomposed"
        )
        from_decode = verify and (self.verify_from_decode or decode_on_reference)
        experts = verify and times.verify_ms is not None and times.verify_growth == "experts"
        base, at = name, tokens  # the measured pass the compute rests on, and its tokens
        grow: tuple[HardwarePoint, int, str] | None = None  # growth: where, from, why
        if from_decode:
            if times.decode_ms is None:
                raise SpecsimError(
                    "needed by timing.verify_compute = 'decode'", field="timing.decode_ms"
                )
            base, at = "decode", (1,)
            if times.verify_growth == "experts" or times.verify_ms_per_extra_token is None:
                grow = (self.reference, 1, "verify_compute = 'decode'")
        elif experts:
            base, at = "verify", (m0,)
            grow = (self.current, m0, "verify_growth = experts")
        elif self._measured_ms(name, self.default_tokens(name)) is None:
            if not verify or times.decode_ms is None:
                return self._weights_table(name, tokens, None), "derived"
            origin, base, at = "derived", "decode", (1,)
            grow = (self.current, 1, "a verify derived from decode")
        measured = [self._measured_ms(base, m) or 0.0 for m in at]  # each one measured
        stated = None if from_decode else self.inputs.launch_us is not None
        x_ref = self._on_reference(base, at, measured, stated)
        if from_decode:
            if grow is None:  # the given slope
                slope = times.verify_ms_per_extra_token or 0.0
                growth = [(m - 1) * slope for m in tokens]
            else:
                growth = self._weights_table(name, tokens, grow)
            grown = [x_ref[0] + g for g in growth]
            if decode_on_reference:
                return grown, origin
            scale = self.scale_to_current
            return [x * scale for x in grown], origin
        scale = self.scale_to_current
        if grow is None:
            return [x * scale for x in x_ref], origin
        growth = self._weights_table(name, tokens, grow)
        return [x_ref[0] * scale + g for g in growth], origin

    def _weights_table(
        self, name: str, tokens: Sequence[int], grow: tuple[HardwarePoint, int, str] | None
    ) -> list[float]:
        """What the weights read and the FLOPs done take (sim/hardware/roofline.py), for
        each of ``tokens``: ``grow`` = (hardware, tokens from, what for): the extra time of
        a target pass over more tokens there (``growth_ms``); None: the pass ``name``
        derived whole on the current GPU (``roofline_ms``)."""
        from sim.hardware.roofline import compute_table_ms  # lazy: derived passes only

        hw, tokens_from, what = grow or (self.current, None, "")
        if hw.gpu is None:
            if grow is None:
                raise SpecsimError(
                    f"needed to derive the {name} pass (no measured time)", field="hardware.gpu"
                )
            raise SpecsimError(f"needed for {what} (the GPU's bandwidth)", field="hardware.gpu")
        target = grow is not None or name in ("decode", "verify")
        weights = target_weights(self.model) if target else draft_weights(self.model)
        experts = self.inputs.expert_efficiency if grow is not None else None
        table = compute_table_ms(
            weights, tokens, hw.gpu, hw.gpus, self.efficiency, tokens_from, experts
        )
        return list(table)

    def compute_ms(self, name: str, tokens: int) -> tuple[float, str]:
        """(compute ms on the current hardware, origin) of a pass over ``tokens`` tokens."""
        xs, origin = self._compute_table(name, (tokens,))
        return xs[0], origin

    def _composed(
        self,
        name: str,
        tokens: Sequence[int],
        computes: Sequence[float],
        origin: str,
        hw: HardwarePoint | None = None,
    ) -> list[PassBreakdown]:
        """The pass ``name`` on ``hw`` (default: the current hardware) over each of
        ``tokens`` with the given compute."""
        hw = hw or self.current
        geom = self.geom
        return [
            compose_pass(self.shape(name, m, hw), hw, geom, x, origin, self.memo)
            for m, x in zip(tokens, computes, strict=True)
        ]

    def breakdown(
        self, name: str, tokens: int | None = None, hw: HardwarePoint | None = None
    ) -> PassBreakdown:
        """The pass ``name`` over ``tokens`` (default: as measured) on ``hw`` (default:
        the hardware asked about; another point keeps the compute of the current one,
        rescaled)."""
        m = self.default_tokens(name) if tokens is None else tokens
        x, origin = self.compute_ms(name, m)
        if hw is None:
            return self._composed(name, (m,), (x,), origin)[0]
        x *= compute_scale(self.current, hw)
        return compose_pass(self.shape(name, m, hw), hw, self.geom, x, origin, self.memo)

    def breakdowns(self) -> dict[str, PassBreakdown]:
        """Every pass the configuration uses (draft passes only when speculating)."""
        names = PASS_NAMES if self.num_steps > 0 else ("decode",)
        return {name: self.breakdown(name) for name in names}

    def draft_step_table_ms(self, max_tokens: int) -> tuple[float, ...]:
        """Drafter decode pass over m = 1..max_tokens tokens (a tree's beams): the compute of
        the one-token pass (calibrated or derived; at batch 1 a drafter pass is memory-bound,
        so its weight reads do not grow with the beams, and the roofline's FLOP term takes
        over only far beyond them) composed with the all-reduces and launches of m tokens.
        KV reads of the beams are left out (about 5% of the pass at topk 8 and 2k context
        for a Llama-8B-sized drafter layer)."""
        tokens = range(1, max_tokens + 1)
        derived = self.times.draft_step_ms is None
        computes, origin = self._compute_table("draft_step", tokens if derived else (1,))
        if not derived:
            computes = computes * max_tokens
        return tuple(b.total_ms for b in self._composed("draft_step", tokens, computes, origin))

    def parallel_draft_table_ms(self, draft_step_ms: float) -> tuple[float, ...]:
        """A block-parallel drafter's one pass over m = 1.. query tokens a request at batch
        1: ``draft_step_table_ms`` when the model geometry is known, else the one-token
        step ``draft_step_ms`` grown by ``draft_ms_per_extra_token`` a token (two entries,
        extended linearly by ``draft_over_ms``)."""
        model = self.model
        if model.layers is not None and model.hidden_size is not None:
            return self.draft_step_table_ms(PARALLEL_DRAFT_TABLE_TOKENS)
        return (draft_step_ms, draft_step_ms + self.inputs.draft_ms_per_extra_token)

    def verify_table_ms(self, max_tokens: int) -> tuple[float, ...]:
        """Verify pass time over m = 1..max_tokens tokens."""
        tokens = range(1, max_tokens + 1)
        computes, origin = self._compute_table("verify", tokens)
        return tuple(b.total_ms for b in self._composed("verify", tokens, computes, origin))

    def geometry_known(self) -> bool:
        """True when the launch and communication floors of the measured passes can be
        checked: layers, hidden size, and the kernel count unless the verify is graphed."""
        model = self.model
        return (
            model.layers is not None
            and model.hidden_size is not None
            and (self.inputs.current.verify_cuda_graph or model.kernels_per_layer is not None)
        )

    def grows_experts(self) -> bool:
        """True when the verify's growth over tokens comes from the weights of a MoE (its
        extra routed experts' reads: ``inputs.expert_efficiency`` matters): a verify
        derived from the decode, the experts growth, a derived slope, or the decode's GPU
        work grown (``verify_compute = 'decode'`` without a given slope)."""
        model, times = self.model, self.times
        if not (model.experts and model.experts_per_token and model.expert_params):
            return False
        if times.verify_ms is None:
            return times.decode_ms is not None
        return (
            times.verify_growth == "experts"
            or self.verify_slope[1] == "derived"
            or (self.verify_from_decode and times.verify_ms_per_extra_token is None)
        )

    def uses_derived_compute(self) -> bool:
        """True when compute comes from the weights and the GPU preset: a missing pass, the
        derived verify slope or the experts growth (the bandwidth efficiency matters)."""
        times = self.times
        missing = any(getattr(times, f"{n}_ms") is None for n in PASS_NAMES)
        derived_slope = self.verify_slope[1] == "derived"
        return missing or times.verify_growth == "experts" or derived_slope

    @property
    def passes(self) -> PassTimes:
        """The configuration's pass times on its hardware, found once by ``pass_model``
        (``_pass_times``)."""
        assert self._passes is not None, "read before pass_model found them"
        return self._passes

    def _pass_times(self) -> PassTimes:
        """The configuration's pass times on its hardware.

        At the measured hardware with every time given, the measured times come back
        unchanged (after checking each is above its modelled communication + launch floor
        when the model geometry is known). Otherwise each pass is re-composed or derived.
        """
        times, num_steps = self.times, self.num_steps
        measured: dict[str, float | None] = {n: getattr(times, f"{n}_ms") for n in PASS_NAMES}
        all_measured = all(v is not None for v in measured.values())
        m0 = self.measured_verify_tokens
        # a measured line, unless the verify's GPU work is the decode's and its growth is
        # the hardware model's: then every token count is composed (launch- to GPU-bound)
        linear = times.verify_growth == "linear" and not (
            self.verify_from_decode and times.verify_ms_per_extra_token is None
        )
        if self.at_reference and all_measured and linear:
            if self.geometry_known():
                names = PASS_NAMES if num_steps > 0 else ("decode", "verify")
                for name in names:
                    self.compute_ms(name, self.default_tokens(name))
            return times.as_pass_times(num_steps, self.inputs.draft_tokens, self.verify_slope[0])
        # m0 + 1: the slope at the measured point needs the next entry
        max_m = max(VERIFY_TABLE_TOKENS, self.inputs.draft_tokens, m0 + 1)
        table = self.verify_table_ms(max_m)

        def total(name: str) -> float:
            if num_steps == 0 and measured[name] is None:
                try:
                    return self.breakdown(name).total_ms
                except SpecsimError:
                    return float("nan")  # no drafter to derive, and none is needed at k = 0
            return self.breakdown(name).total_ms

        return PassTimes(
            decode_ms=total("decode"),
            verify_ms=table[m0 - 1],
            verify_tokens=m0,
            verify_ms_per_extra_token=table[m0] - table[m0 - 1],
            draft_step_ms=total("draft_step"),
            draft_extend_ms=total("draft_extend"),
            cycle_overhead_ms=times.cycle_overhead_ms,
            verify_table_ms=table,
            draft_step_overhead_ms=times.draft_step_overhead_ms,
            **times.extend_fields(num_steps),
        )


def _placed(inputs: PassInputs, memo: PassMemo) -> PassModel:
    """The pass model of ``inputs`` up to its hardware: the points resolved
    (``hardware_points``), then, where the timings fix it, the per-kernel CPU cost of an
    eager verify (``_launch_us_from_verify``) set on them. Its verify slope is not found
    yet (finding the cost never reads it)."""
    current, reference = hardware_points(inputs)
    at_reference = current.key() == reference.key()
    placed = PassModel(inputs, current, reference, at_reference, memo=memo)
    launch_us = placed._launch_us_from_verify()
    if launch_us is None:
        return placed
    if inputs.launch_overridden:  # a what-if (another host CPU): the measured passes re-compose
        reference = reference.with_launch_us(launch_us)
        return PassModel(inputs, current, reference, False, launch_us, memo=memo)
    current, reference = current.with_launch_us(launch_us), reference.with_launch_us(launch_us)
    return PassModel(inputs, current, reference, at_reference, launch_us, memo=memo)


def pass_model(inputs: PassInputs, memo: PassMemo | None = None) -> PassModel:
    """The pass model of ``inputs``, built once, in order: the hardware points, the
    per-kernel CPU cost an ungraphed measured verify fixes (``_placed``), the verify slope
    (``PassModel._find_verify_slope``), then the pass times (``PassModel._pass_times``);
    a SpecsimError names the scenario field behind a problem. ``memo``: the answers of
    sim/hardware/passes.py its binder keeps for every model it builds (None: a memo of
    the model's own)."""
    placed = _placed(inputs, PassMemo() if memo is None else memo)
    sloped = replace(placed, _slope=placed._find_verify_slope())
    passes = sloped._pass_times()
    if inputs.parallel_draft:
        table = sloped.parallel_draft_table_ms(passes.draft_step_ms)
        passes = replace(passes, parallel_draft_table_ms=table)
    return replace(sloped, _passes=passes)
