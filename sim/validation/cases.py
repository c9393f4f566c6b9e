"""Validation cases: published figures, calibrated on some and scored on the others.

Each case builder calibrates a scenario (sim/calibration/calibrate.py, the library behind ``specsim
calibrate``) on some figures of sim/validation/data.py and scores it on the *other*
figures: every ``Case`` lists what it was calibrated on and each scored ``Row`` must name
a figure outside that set (``Case.__post_init__`` checks it). Here: the case types
(``Spread``, ``Row``, ``Case``, ``error_summary``) and the Llama-3.1-8B base the published
chain cases calibrate (``LLAMA8B_H100_PRIOR``); how a row is scored:
sim/validation/case_scoring.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

#: Base scenario for Llama-3.1-8B + EAGLE-3 on one H100, before calibration. Priors only:
#: calibration replaces what the figures determine and the report says which it kept.
LLAMA8B_H100_PRIOR: dict[str, object] = {
    "name": "llama31-8b-h100-eagle3",
    "description": "Llama-3.1-8B-Instruct + EAGLE-3 on one H100, batch 1 (validation base)",
    # meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096.
    "model": {"name": "Llama-3.1-8B-Instruct", "layers": 32, "hidden_size": 4096},
    "hardware": {"gpus": 1},
    "timing": {
        # vanilla TPOT 7.07 ms (vLLM #20780); refitted from the baseline figure.
        "decode_ms": 7.07,
        # Prior: a verify over a few tokens of an 8B model is weight-bandwidth bound like a
        # decode step; refitted.
        "verify_ms": 7.07,
        "verify_tokens": 3,
        # Prior: bandwidth-bound, extra verified tokens nearly free (Leviathan et al.'s
        # assumption). tok/s figures cannot separate it from draft_step_ms: kept.
        "verify_ms_per_extra_token": 0.0,
        # Prior: one EAGLE-3 decoder layer of 32 -> 7.07 / 32 ms; draft_step_ms is refitted.
        "draft_step_ms": 0.221,
        "draft_extend_ms": 0.221,
        "cycle_overhead_ms": 0.0,
        "verify_cuda_graph": True,
    },
    "speculation": {"num_steps": 2},
    # Prior only; refitted from the accept length. An EAGLE-3 drafter (its decay prior).
    "acceptance": {"alpha": 0.7, "method": "eagle3"},
}


@dataclass(frozen=True, slots=True)
class Spread:
    """Per-request tok/s of the calibrated scenario at the row's k, by Monte Carlo.

    ``mean`` and its 95% CI over replications; ``p5``/``p95`` over all requests.
    """

    mean: float
    ci95: tuple[float, float]
    p5: float
    p95: float
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Row:
    """One scored figure: what was predicted, from what, and the relative error."""

    quantity: str
    figure: str
    inputs: str
    measured: float
    predicted: float
    sd: float = 0.0  # standard error of the prediction from the calibrated values
    spread: Spread | None = None  # Monte Carlo of per-request tok/s (end-to-end rows)
    #: 90% interval from inputs and model (sim/uncertainty/answers.py), and for an accept
    #: length the flat extrapolation (one equal rate) beside it.
    interval90: tuple[float, float] | None = None
    flat: float | None = None
    #: A serving figure's load (users of a closed loop, requests/s of an open one), the
    #: loads its curve was calibrated on, and what it is: ``speculative`` or ``plain``
    #: (a level) or ``gain`` (a paired ratio of two policies on one server); None: not a
    #: load curve's figure (sim/validation/model_error_cases.py scores these).
    load: float | None = None
    calibrated_loads: tuple[float, ...] = ()
    side: str | None = None

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def covered(self) -> bool | None:
        """Whether the 90% interval contains the measurement (None: no interval)."""
        if self.interval90 is None:
            return None
        return self.interval90[0] <= self.measured <= self.interval90[1]

    @property
    def flat_error(self) -> float | None:
        return None if self.flat is None else (self.flat - self.measured) / self.measured

    @property
    def z(self) -> float | None:
        """(predicted - measured) / sd; None when the prediction has no uncertainty."""
        return (self.predicted - self.measured) / self.sd if self.sd > 0 else None


@dataclass(frozen=True, slots=True)
class Case:
    """A published case: the figures calibrated on, the scored rows, how it was set up."""

    title: str
    sources: tuple[str, ...]
    calibrated_on: tuple[str, ...]
    rows: tuple[Row, ...]
    setup: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    scored: bool = True

    def __post_init__(self) -> None:
        tuned = set(self.calibrated_on) & {r.figure for r in self.rows}
        if self.scored and tuned:
            raise ValueError(f"{self.title}: scored on figures it was calibrated on: {tuned}")


def error_summary(rows: Sequence[Row], digits: int = 1) -> str:
    """A curve's scored rows in one phrase: "Median |error| m%, max x%, n of N within
    10%" (``digits`` decimals)."""
    e = np.array([abs(r.error) for r in rows])
    return (
        f"Median |error| {100 * np.median(e):.{digits}f}%, max {100 * e.max():.{digits}f}%, "
        f"{int((e <= 0.10).sum())} of {e.size} within 10%"
    )


def llama8b_base() -> Scenario:
    return scenario_from_dict(LLAMA8B_H100_PRIOR, source="sim.validation.LLAMA8B_H100_PRIOR")
