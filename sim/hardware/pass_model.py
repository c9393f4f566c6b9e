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
(hardware_points.py: interconnects.py, then gpus.py), once; the per-kernel CPU cost an
ungraphed measured verify fixes (verify_launch.py), once; then, for any pass over any
token counts at once (pass_compute.py ``compute_table``), the measured pass it rests on
calibrated where the timings were measured (``on_reference``: passes.py, which builds the
schedule through allreduce.py, eager.py and launch.py), then what the weights add
(``weights_table``: roofline.py and experts.py), then the pass composed (``composed``:
passes.py). The inputs are pass_inputs.py's, the geometry and weights model_weights.py's;
the verify slope (verify_slope.py) and the pass times (pass_times.py) are found once.

A problem is a ``SpecsimError`` naming the scenario field behind it (``model.layers``,
``timing.verify_ms``, ...); sim/binding/decompose.py reads a scenario into the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sim.hardware.hardware_points import compute_scale, hardware_points
from sim.hardware.model_weights import draft_weights, geometry, target_weights
from sim.hardware.pass_compute import compute_table
from sim.hardware.pass_inputs import MeasuredTimes, ModelDims, PassInputs
from sim.hardware.pass_times import find_pass_times
from sim.hardware.passes import (
    PASS_NAMES,
    Geometry,
    HardwarePoint,
    PassBreakdown,
    PassMemo,
    PassShape,
    compose_pass,
)
from sim.hardware.verify_launch import launch_us_from_verify
from sim.hardware.verify_slope import find_verify_slope
from sim.model.cycle import PassTimes

if TYPE_CHECKING:
    from sim.hardware.roofline import Weights


#: Query tokens a request the block-parallel drafter's table covers (the schema's most
#: draft tokens; ``draft_over_ms`` extends it linearly beyond).
PARALLEL_DRAFT_TABLE_TOKENS = 64


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
    ``compute_table`` (a measured time calibrated on the reference, the decode's grown, or
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
        return compute_table(self, "verify", (tokens,), decode_on_reference=True)[0][0]

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
        once by ``pass_model`` (sim/hardware/verify_slope.py)."""
        assert self._slope is not None, "read before pass_model found it"
        return self._slope

    def compute_ms(self, name: str, tokens: int) -> tuple[float, str]:
        """(compute ms on the current hardware, origin) of a pass over ``tokens`` tokens."""
        xs, origin = compute_table(self, name, (tokens,))
        return xs[0], origin

    def composed(
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
            return self.composed(name, (m,), (x,), origin)[0]
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
        computes, origin = compute_table(self, "draft_step", tokens if derived else (1,))
        if not derived:
            computes = computes * max_tokens
        return tuple(b.total_ms for b in self.composed("draft_step", tokens, computes, origin))

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
        computes, origin = compute_table(self, "verify", tokens)
        return tuple(b.total_ms for b in self.composed("verify", tokens, computes, origin))

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
        (sim/hardware/pass_times.py)."""
        assert self._passes is not None, "read before pass_model found them"
        return self._passes


def _placed(inputs: PassInputs, memo: PassMemo) -> PassModel:
    """The pass model of ``inputs`` up to its hardware: the points resolved
    (``hardware_points``), then, where the timings fix it, the per-kernel CPU cost of an
    eager verify (sim/hardware/verify_launch.py) set on them. Its verify slope is not found
    yet (finding the cost never reads it)."""
    current, reference = hardware_points(inputs)
    at_reference = current.key() == reference.key()
    placed = PassModel(inputs, current, reference, at_reference, memo=memo)
    launch_us = launch_us_from_verify(placed)
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
    (``find_verify_slope``), then the pass times (``find_pass_times``);
    a SpecsimError names the scenario field behind a problem. ``memo``: the answers of
    sim/hardware/passes.py its binder keeps for every model it builds (None: a memo of
    the model's own)."""
    placed = _placed(inputs, PassMemo() if memo is None else memo)
    sloped = replace(placed, _slope=find_verify_slope(placed))
    passes = find_pass_times(sloped)
    if inputs.parallel_draft:
        table = sloped.parallel_draft_table_ms(passes.draft_step_ms)
        passes = replace(passes, parallel_draft_table_ms=table)
    return replace(sloped, _passes=passes)
