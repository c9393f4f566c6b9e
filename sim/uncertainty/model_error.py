"""The model-error term of a serving answer's 90% interval: the model's own error beyond
the decode batches a scenario measured (sim/model/model_error.py).

A serving answer at mean decode batch B of a scenario whose costs were measured at the
batches M (batch 1, its ``[[timing.points]]`` and its ``[[serving.calibrated_on]]``
loads) carries a log error whose standard deviation grows with d = min over m in M of
|ln(B / m)|, M counted per arm (a decode point measures plain decoding, a verify or draft
point and a speculative figure the speculative iteration; batch 1 both) and d the farther
of the two arms' (a level whose arm is named, its own). The forms are the ones the
pre-registered rule selected (docs/serving-intervals.md, "The form of the error"):

- a policy's level (tok/s, TPOT): s sqrt(d), s = ``serving.model_error.level_per_sqrt_log_load``;
- a paired ratio of two policies (a speed-up, one k over another): a (1 - exp(-d / d0)),
  a = ``serving.model_error.gain_ceiling``, d0 = ``serving.model_error.gain_log_load_scale``;

each by default the fit on the public concurrency curves (``DEFAULT_LEVEL``,
``DEFAULT_GAIN_CEILING``, ``DEFAULT_GAIN_SCALE``). The interval from the drawn inputs is
joined with the term's [nominal exp(-1.645 sigma), nominal exp(1.645 sigma)] (``widen``):
at a measured batch the term is 0 and the interval is the inputs' alone. The gains' a and
d0 are identified to 18% and 47% (standard errors of the jackknife over curves): the term
states the gains' sigma at the ends of their 90% range (``gain_sigma_range``,
``DEFAULT_GAIN_LAW``) beside the point it uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim.model.model_error import (
    DEFAULT_CURVES,
    DEFAULT_GAIN_CEILING,
    DEFAULT_GAIN_LAW,
    DEFAULT_GAIN_SCALE,
    DEFAULT_LEVEL,
    Z90,
    GainParameterLaw,
    level_sigma,
    load_distance,
    widen,
)
from sim.scenario.schema import Scenario
from sim.scenario.sections.calibrated_on import CalibrationFigure
from sim.scenario.sections.timing import TimingPoint

__all__ = [
    "ModelErrorTerm",
    "TermOrigin",
    "beyond_measured_note",
    "crossing_band",
    "join_ends",
    "measured_batches",
    "measured_loads",
    "model_error_term",
]

DEFAULT_ORIGIN = f"default: model error estimated on {DEFAULT_CURVES} public curves"

#: Where a term's parameters come from: the shipped defaults, the scenario's
#: ``[serving.model_error]`` (all three keys, or some with the rest the defaults), or the
#: code that built the term (the validation's leave-one-curve-out terms, a plan without a
#: scenario).
ORIGIN_KINDS = ("default", "scenario", "scenario_and_default", "caller")


@dataclass(frozen=True, slots=True)
class TermOrigin:
    """Where a term's parameters come from, as fields: ``kind`` one of ``ORIGIN_KINDS``
    and ``label`` the short name an answer's line prints for it (the defaults' is
    "default"; the scenario's "serving.model_error"). ``text`` is the sentence JSON's
    ``model_error.origin`` has always carried."""

    kind: str
    label: str

    def __post_init__(self) -> None:
        if self.kind not in ORIGIN_KINDS:
            raise ValueError(f"origin kind must be one of {ORIGIN_KINDS} (got {self.kind!r})")

    @property
    def text(self) -> str:
        if self.kind == "default":
            return DEFAULT_ORIGIN
        if self.kind == "scenario_and_default":
            return f"{self.label} (the rest: {DEFAULT_ORIGIN})"
        return self.label

    @staticmethod
    def caller(label: str) -> TermOrigin:
        """Parameters the code that builds the term gives (``label`` says which)."""
        return TermOrigin("caller", label)


_SCENARIO_LABEL = "serving.model_error"


#: The measured passes that calibrate each arm: plain decoding's pass, and the speculative
#: iteration's passes (the target's verify over k + 1 tokens a request, the drafter's).
_ARM_PASSES = {
    "plain": frozenset({"decode"}),
    "speculative": frozenset({"verify", "draft_step", "draft_extend"}),
}


def measured_loads(scenario: Scenario, arm: str | None = None) -> tuple[float, ...]:
    """The decode batches the scenario's costs are measured at, ascending: 1 (the batch-1
    ``[timing]``, both arms), its ``[[timing.points]]``' batches and the loads of the
    figures a load sweep calibrated it on (``[[serving.calibrated_on]]``: requests decoding
    together). ``arm`` ``"plain"`` or ``"speculative"``: only what measures that arm (a
    decode point measures plain decoding's pass; a verify or draft point, the speculative
    iteration's; a calibration figure its own arm, both when it does not say); None: all."""
    figures: Sequence[CalibrationFigure] = (
        scenario.serving.calibrated_on if scenario.serving else None
    ) or ()
    points: Sequence[TimingPoint] = scenario.timing.points or ()
    if arm is not None:
        if arm not in _ARM_PASSES:
            raise ValueError(f"arm must be 'plain' or 'speculative' (got {arm!r})")
        points = tuple(p for p in points if p.kind in _ARM_PASSES[arm])
        spec = arm == "speculative"
        figures = tuple(f for f in figures if f.speculative is None or f.speculative == spec)
    found = {1, *(p.batch for p in points), *(f.load for f in figures)}
    return tuple(sorted(found))


def measured_batches(scenario: Scenario, arm: str | None = None) -> tuple[float, ...]:
    """``measured_loads`` as floats (the model-error term's distances)."""
    return tuple(float(b) for b in measured_loads(scenario, arm))


@dataclass(frozen=True, slots=True)
class ModelErrorTerm:
    """The term at one decode batch: the levels' s per unit sqrt(ln batch)
    (``level_per_sqrt_log_batch``), the gains' ceiling a and scale d0 in ln batch with their
    uncertainty (``gain_law``: the standard deviations of ln a and ln d0 and their
    correlation; zeros: the parameters taken as given), where they come from (``origin``),
    the batch, the batches measured for plain decoding (``measured``) and for the
    speculative iteration (``measured_speculative``; None: the same), and the log distance
    between them; ``highest_measured``: the largest batch any of the scenario's costs is
    measured at (``measured_loads``), beyond which an answer says it extrapolates
    (``beyond_note``). ``at`` gives the same scenario's term at another batch, without
    reading the scenario again."""

    level_per_sqrt_log_batch: float
    gain_law: GainParameterLaw
    origin: TermOrigin
    batch: float
    measured: tuple[float, ...]
    measured_speculative: tuple[float, ...] | None = None
    highest_measured: float = 1.0

    def at(self, batch: float) -> ModelErrorTerm:
        """The term at decode batch ``batch``: the same parameters and measured batches."""
        return replace(self, batch=float(batch))

    def beyond_note(self) -> str | None:
        """The note of an answer at this batch when it is above the highest measured one
        (``beyond_measured_note``; None: it is not), saying whether the term is in its
        interval."""
        return beyond_measured_note(self.highest_measured, self.batch, self.active)

    def _distance(self, measured: tuple[float, ...]) -> float:
        if not math.isfinite(self.batch):
            return 0.0
        return load_distance(max(self.batch, 1.0), measured)

    @property
    def plain_distance(self) -> float:
        """The log distance of the batch to the nearest batch plain decoding was measured
        at (0 without a decode batch: answers of one-token requests)."""
        return self._distance(self.measured)

    @property
    def speculative_distance(self) -> float:
        """The same for the speculative iteration's measured batches."""
        return self._distance(self.measured_speculative or self.measured)

    @property
    def distance(self) -> float:
        """The farther of the two arms' distances: a gain (and a level of either arm) is
        exact only where both arms are measured."""
        return max(self.plain_distance, self.speculative_distance)

    @property
    def level_sigma(self) -> float:
        """The levels' s sqrt(d) at the farther arm's distance."""
        return level_sigma(self.level_per_sqrt_log_batch, self.distance)

    def arm_level_sigma(self, speculative: bool) -> float:
        """The level term of one arm, at that arm's own distance."""
        d = self.speculative_distance if speculative else self.plain_distance
        return level_sigma(self.level_per_sqrt_log_batch, d)

    @property
    def gain_sigma(self) -> float:
        """The gains' a (1 - exp(-d / d0)) at the farther arm's distance."""
        return self.gain_law.sigma(self.distance)

    @property
    def gain_sigma_range(self) -> tuple[float, float]:
        """The gains' sigma at the two ends of the parameters' 90% range, at the farther
        arm's distance (``GainParameterLaw.sigma_range``; both the point where the
        parameters carry no uncertainty)."""
        return self.gain_law.sigma_range(self.distance)

    @property
    def active(self) -> bool:
        return self.level_sigma > 0 or self.gain_sigma > 0

    def level(
        self, nominal: float, interval: Sequence[float] | None, speculative: bool | None = None
    ) -> list[float] | None:
        """A level's 90% interval with the term (unchanged when the nominal is not > 0):
        at the arm's own distance when ``speculative`` says which, else the farther."""
        sigma = self.level_sigma if speculative is None else self.arm_level_sigma(speculative)
        return _widened(nominal, interval, sigma)

    def gain(self, nominal: float, interval: Sequence[float] | None) -> list[float] | None:
        """A paired ratio's 90% interval with the gains' term."""
        return _widened(nominal, interval, self.gain_sigma)

    def difference(
        self,
        nominal: float,
        interval: Sequence[float] | None,
        reference: float,
        higher_is_better: bool = True,
    ) -> list[float] | None:
        """A paired difference's 90% interval with the gains' term: the advantage d of a
        policy over a ``reference`` level on one server (> 0: better; ``paired_difference``)
        is the ratio policy / reference = 1 + d / reference where more is better, and
        1 - d / reference for a latency; the ratio's interval is widened (``gain``) and
        mapped back. Unchanged at a measured batch and where the ratio is not > 0."""
        sign = 1.0 if higher_is_better else -1.0
        if self.gain_sigma <= 0 or not reference > 0 or not 1.0 + sign * nominal / reference > 0:
            return None if interval is None else list(interval)
        if interval is None:
            return None
        ratios = [max(1.0 + sign * e / reference, 1e-12) for e in interval]
        widened = self.gain(1.0 + sign * nominal / reference, sorted(ratios))
        assert widened is not None
        lo, hi = sorted(sign * reference * (r - 1.0) for r in widened)
        # the band only widens: an end the round trip through the ratio moved by its last
        # bits stays the interval's own
        return [min(lo, min(interval)), max(hi, max(interval))]

    def doc(self) -> dict[str, Any]:
        """What a document says about the term."""
        return {
            "included": self.active,
            "level_form": "s sqrt(d)",
            "level_per_sqrt_log_batch": self.level_per_sqrt_log_batch,
            "gain_form": "a (1 - exp(-d / d0))",
            "gain_ceiling": self.gain_law.ceiling,
            "gain_log_batch_scale": self.gain_law.scale,
            "origin": self.origin.text,
            "origin_kind": self.origin.kind,
            "origin_label": self.origin.label,
            "decode_batch": self.batch if math.isfinite(self.batch) else None,
            "measured_batches": list(self.measured),
            "measured_batches_speculative": list(self.measured_speculative or self.measured),
            "log_distance": self.distance,
            "level_sigma": self.level_sigma,
            "gain_sigma": self.gain_sigma,
            "gain_sigma_range": list(self.gain_sigma_range),
            "gain_parameter_law": {
                "form": "(ln a, ln d0) normal",
                "log_ceiling_sd": self.gain_law.log_ceiling_sd,
                "log_scale_sd": self.gain_law.log_scale_sd,
                "correlation": self.gain_law.correlation,
            },
        }


def _widened(nominal: float, interval: Sequence[float] | None, sigma: float) -> list[float] | None:
    if interval is None or not (nominal > 0 and math.isfinite(nominal)) or sigma <= 0:
        return None if interval is None else list(interval)
    return list(widen(nominal, interval, sigma))


def model_error_term(
    scenario: Scenario, batch: float, params: tuple[float, float, float] | None = None
) -> ModelErrorTerm:
    """The scenario's model-error term at mean decode batch ``batch``: each parameter from
    ``serving.model_error`` where given, else its default; ``params`` (level s, gain
    ceiling a, gain scale d0) replaces them all (the validation's leave-one-curve-out
    terms; s = a = 0 leaves it out). The gains' a and d0 carry the shipped fit's
    uncertainty (``DEFAULT_GAIN_LAW``) when both are the defaults; a scenario's own a or
    d0 states none, and the caller's params none."""
    given = scenario.serving.model_error if scenario.serving is not None else None
    own = (
        (None, None, None)
        if given is None
        else (given.level_per_sqrt_log_load, given.gain_ceiling, given.gain_log_load_scale)
    )
    defaults = (DEFAULT_LEVEL, DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE)
    if params is not None:
        values, origin = params, TermOrigin.caller("given by the caller")
    else:
        level, ceiling, scale = (d if x is None else x for x, d in zip(own, defaults, strict=True))
        values = (level, ceiling, scale)
        n_own = sum(x is not None for x in own)
        origin = (
            TermOrigin("default", "default")
            if n_own == 0
            else TermOrigin("scenario" if n_own == 3 else "scenario_and_default", _SCENARIO_LABEL)
        )
    given_law = params is None and own[1:] == (None, None)
    law = DEFAULT_GAIN_LAW if given_law else GainParameterLaw(
        float(values[1]), float(values[2]), 0.0, 0.0, 0.0)  # fmt: skip
    return ModelErrorTerm(
        float(values[0]),
        law,
        origin,
        float(batch),
        measured_batches(scenario, "plain"),
        measured_batches(scenario, "speculative"),
        measured_loads(scenario)[-1],
    )


def beyond_measured_note(top: float, batch: float, model_error: bool = False) -> str | None:
    """The note of an answer at a decode batch above the highest measured one ``top``
    (None: not above it): the batched costs there are the hardware model's, their spread
    drawn only where the scenario states it (``model_error``: and the interval holds the
    model's error there as the public curves measure it)."""
    if batch <= top:
        return None
    holds = (
        "the spread the scenario states for them and the model's error there as public "
        "curves measure it"
        if model_error
        else "the spread the scenario states for them"
    )
    return (
        f"beyond the highest measured batch ({top:g}): at batch {batch:.3g} the batched costs "
        f"are the hardware model's extrapolation; the interval holds {holds}, not a "
        "measurement there"
    )


#: Points per grid interval at which ``crossing_band`` reads the interpolated band.
_BAND_STEPS = 64


def crossing_band(
    loads: Sequence[float], gains: Sequence[float], sigmas: Sequence[float], at: float
) -> tuple[float | None, float | None]:
    """The loads around a crossing at ``at`` where the gain's model-error band holds 1:
    the connected set of loads x with |ln g(x)| <= Z90 sigma(x), ln g and sigma
    interpolated linearly in ln x between the grid ``loads`` (n,) (their nominal ``gains``
    and the term's ``sigmas`` there). An end that reaches the first or last load is open
    (None: the band may hold 1 beyond the loads run)."""
    xs = np.log(np.asarray(loads, dtype=float))
    lg = np.log(np.asarray(gains, dtype=float))
    m = Z90 * np.asarray(sigmas, dtype=float)
    fine = np.concatenate(
        [np.linspace(xs[j], xs[j + 1], _BAND_STEPS, endpoint=False) for j in range(xs.size - 1)]
        + [xs[-1:]]
    )
    inside = np.abs(np.interp(fine, xs, lg)) <= np.interp(fine, xs, m) + 1e-12
    j = int(np.clip(np.searchsorted(fine, math.log(at)), 0, fine.size - 1))
    if not inside[j] and j > 0 and inside[j - 1]:
        j -= 1
    if not inside[j]:
        return (at, at)
    lo = hi = j
    while lo > 0 and inside[lo - 1]:
        lo -= 1
    while hi < fine.size - 1 and inside[hi + 1]:
        hi += 1
    return (
        None if lo == 0 else float(math.exp(fine[lo])),
        None if hi == fine.size - 1 else float(math.exp(fine[hi])),
    )


def join_ends(
    a: tuple[float | None, float | None], b: tuple[float | None, float | None], integer: bool
) -> tuple[float | None, float | None]:
    """Two intervals joined (None: an open end, which stays open); for users each end the
    fewest users on its side (rounded up)."""
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    if integer:
        lo, hi = (None if x is None else float(math.ceil(x - 1e-9)) for x in (lo, hi))
    return (lo, hi)
