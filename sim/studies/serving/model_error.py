"""The model-error term of a serving answer's 90% interval: the model's own error beyond
the decode batches a scenario measured (sim/model/model_error.py).

A serving answer at mean decode batch B of a scenario whose costs were measured at the
batches M (its ``[[timing.points]]`` and batch 1) carries a log error of standard
deviation s d, d = min over m in M of |ln(B / m)|: ``s`` is ``serving.model_error.level``
for a policy's level (tok/s, TPOT), ``serving.model_error.gain`` for a paired ratio of two
policies (a speed-up, one k over another), each by default the fit on the public
concurrency curves (``DEFAULT_LEVEL_SIGMA``, ``DEFAULT_GAIN_SIGMA``). The interval from the
drawn inputs is joined with the term's [nominal exp(-1.645 s d), nominal exp(1.645 s d)]
(``widen``): at a measured batch the term is 0 and the interval is the inputs' alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.model.model_error import (
    DEFAULT_CURVES,
    DEFAULT_GAIN_SIGMA,
    DEFAULT_LEVEL_SIGMA,
    load_distance,
    model_error_sigma,
    widen,
)
from sim.scenario.schema import Scenario

__all__ = ["ModelErrorTerm", "measured_batches", "model_error_term"]

DEFAULT_ORIGIN = f"default: model error estimated on {DEFAULT_CURVES} public curves"


def measured_batches(scenario: Scenario) -> tuple[int, ...]:
    """The decode batches the scenario's costs are measured at: 1 (its batch-1
    ``[timing]``) and its ``[[timing.points]]``' batches."""
    return tuple(sorted({1, *(p.batch for p in scenario.timing.points or ())}))


@dataclass(frozen=True, slots=True)
class ModelErrorTerm:
    """The term at one decode batch: s per unit ln(batch) for levels and gains, where they
    come from, the batch, the measured batches and the log distance between them."""

    level_per_log_batch: float
    gain_per_log_batch: float
    origin: str
    batch: float
    measured: tuple[int, ...]

    @property
    def distance(self) -> float:
        return load_distance(max(self.batch, 1.0), self.measured)

    @property
    def level_sigma(self) -> float:
        return model_error_sigma(self.level_per_log_batch, self.distance)

    @property
    def gain_sigma(self) -> float:
        return model_error_sigma(self.gain_per_log_batch, self.distance)

    @property
    def active(self) -> bool:
        return self.level_sigma > 0 or self.gain_sigma > 0

    def level(self, nominal: float, interval: Sequence[float] | None) -> list[float] | None:
        """A level's 90% interval with the term (unchanged when the nominal is not > 0)."""
        return _widened(nominal, interval, self.level_sigma)

    def gain(self, nominal: float, interval: Sequence[float] | None) -> list[float] | None:
        """A paired ratio's 90% interval with the gains' term."""
        return _widened(nominal, interval, self.gain_sigma)

    def doc(self) -> dict[str, Any]:
        """What a document says about the term."""
        return {
            "included": self.active,
            "level_per_log_batch": self.level_per_log_batch,
            "gain_per_log_batch": self.gain_per_log_batch,
            "origin": self.origin,
            "decode_batch": self.batch,
            "measured_batches": list(self.measured),
            "log_distance": self.distance,
            "level_sigma": self.level_sigma,
            "gain_sigma": self.gain_sigma,
        }


def _widened(nominal: float, interval: Sequence[float] | None, sigma: float) -> list[float] | None:
    if interval is None or not (nominal > 0 and math.isfinite(nominal)) or sigma <= 0:
        return None if interval is None else list(interval)
    return list(widen(nominal, interval, sigma))


def model_error_term(
    scenario: Scenario, batch: float, per_log_batch: tuple[float, float] | None = None
) -> ModelErrorTerm:
    """The scenario's model-error term at mean decode batch ``batch``: s from
    ``serving.model_error`` where given, else the defaults; ``per_log_batch`` (level, gain)
    replaces both (the validation's leave-one-curve-out terms, 0 to leave it out)."""
    given = scenario.serving.model_error if scenario.serving is not None else None
    level = given.level if given is not None and given.level is not None else None
    gain = given.gain if given is not None and given.gain is not None else None
    if per_log_batch is not None:
        level, gain = per_log_batch
        origin = "given by the caller"
    elif level is None and gain is None:
        origin = DEFAULT_ORIGIN
    else:
        origin = "serving.model_error" + ("" if level is not None and gain is not None else (
            f" (the other: {DEFAULT_ORIGIN})"))  # fmt: skip
    return ModelErrorTerm(
        DEFAULT_LEVEL_SIGMA if level is None else level,
        DEFAULT_GAIN_SIGMA if gain is None else gain,
        origin,
        float(batch),
        measured_batches(scenario),
    )
