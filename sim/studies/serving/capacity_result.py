"""What ``capacity`` answers (sim/studies/serving/capacity.py): one policy's capacity
(``PolicyCapacity``: the highest Poisson rate at which the share of requests meets the
SLO limits, its 95% interval and every rate simulated), every policy's together
(``CapacityResult``, with the documents' fields), and the capacity over plain decoding's
with its paired 95% interval (``capacity_gain``, ``gain_ci95``;
sim/studies/serving/capacity_ratio.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.capacity_ratio import paired_ratio_ci95
from sim.studies.serving.draw_intervals import IntervalSources
from sim.studies.serving.paired_metrics import PolicyPoint, ratio_doc

__all__ = ["CapacityResult", "PolicyCapacity", "capacity_gain", "gain_ci95"]


@dataclass(frozen=True, slots=True)
class PolicyCapacity:
    """One policy's capacity (None: the share is not met even at the lowest rate tried)
    with its 95% interval, and every rate simulated with its attainment. ``at_least``:
    the share is met even at the highest rate tried (``rate_per_s``), so the capacity is
    that rate or more, not a crossing. ``log_rates`` (P,): every rate the search tried,
    increasing, and ``attainment`` (P, R) each replication's SLO attainment there (0 at a
    rate above the service bound, not simulated), for the paired interval of a ratio of
    capacities (sim/studies/serving/capacity_ratio.py)."""

    num_steps: int
    rate_per_s: float | None
    ci95: tuple[float | None, float | None]
    curve: tuple[tuple[float, Ratio, Ratio], ...]  # (rate, attainment, aggregate tok/s)
    at_least: bool = False
    service_bound_per_s: float = math.inf
    unstable_rates: tuple[float, ...] = ()  # rates above the bound, failing unsimulated
    capped: bool = False  # every simulated rate above the capacity passed: the bound set it
    log_rates: np.ndarray = field(default_factory=lambda: np.zeros(0), compare=False)
    attainment: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), compare=False)
    #: (P,) the point simulated at each of ``log_rates`` (None: above the bound), for the
    #: draws that complete a rate stopped early (``drawn_capacities``).
    points: tuple[PolicyPoint | None, ...] = field(default=(), compare=False)
    #: The log rate the search started from (its hint): the origin of the draws' ladder.
    origin_log_rate: float = field(default=0.0, compare=False)
    #: The lowest and highest rates the draws' ladder may run (the search's domain, and
    #: the service bound under a TTFT limit): a draw's capacity beyond them is -inf / inf.
    ladder_ends: tuple[float, float] = field(default=(0.0, math.inf), compare=False)

    @property
    def crossing(self) -> bool:
        """The capacity is a crossing of the share (not unmet, not a lower bound)."""
        return self.rate_per_s is not None and not self.at_least

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "rate_per_s": self.rate_per_s,
            "at_least": self.at_least,
            "ci95": list(self.ci95),
            "curve": [
                {"rate_per_s": r, "attainment": ratio_doc(a), "aggregate_tok_s": ratio_doc(t)}
                for r, a, t in self.curve
            ],
            "service_bound_per_s": self.service_bound_per_s,
            "unstable_rates": list(self.unstable_rates),
            "capped_by_service_bound": self.capped,
        }


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """Every policy's capacity, plain decoding first; ``gain_ci95[i]``: the paired 95%
    interval of policy i's capacity over plain decoding's (None where that ratio has none:
    no gain, one replication, or a leave-one-out capacity without a crossing)."""

    scenario: str
    share: float
    policies: tuple[PolicyCapacity, ...]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    gain_ci95: tuple[tuple[float, float] | None, ...]
    #: Per policy, the capacity's and its gain's 90% intervals from inputs and model
    #: (``capacity_intervals``; None: not drawn or no crossing).
    interval90: tuple[dict[str, list[float | None] | None], ...] = ()
    #: Per policy, what those intervals hold where it is not the inputs' draws
    #: (``capacity_interval90_sources``, ``capacity_gain_interval90_sources``:
    #: sim/studies/serving/draw_intervals.py ``IntervalSources``; empty: the draws').
    sources: tuple[dict[str, IntervalSources], ...] = ()
    #: The model-error term those intervals include, at the largest decode batch of a
    #: capacity (``ModelErrorTerm.doc``; None: no draws).
    model_error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        base = self.policies[0]
        drawn = self.interval90 or tuple({} for _ in self.policies)
        held = self.sources or tuple({} for _ in self.policies)
        return {
            "scenario": self.scenario,
            "share": self.share,
            **self.settings,
            "policies": [
                {
                    **p.to_dict(),
                    "capacity_gain": capacity_gain(p, base),
                    "capacity_gain_ci95": None if ci is None else list(ci),
                    **iv,
                    **{key: sources.value for key, sources in src.items()},
                }
                for p, ci, iv, src in zip(self.policies, self.gain_ci95, drawn, held, strict=True)
            ],
            "runs": self.runs,
            "assumptions": list(self.assumptions),
            **({"model_error": self.model_error} if self.model_error is not None else {}),
        }


def capacity_gain(p: PolicyCapacity, base: PolicyCapacity) -> float | None:
    """Capacity over plain decoding's; None unless both are crossings (a lower bound
    over a lower bound is no ratio)."""
    if not (p.crossing and base.crossing and base.rate_per_s):
        return None
    return p.rate_per_s / base.rate_per_s  # type: ignore[operator]


def gain_ci95(p: PolicyCapacity, base: PolicyCapacity, share: float) -> tuple[float, float] | None:
    """The paired 95% interval of ``capacity_gain(p, base)``
    (sim/studies/serving/capacity_ratio.py)."""
    gain = capacity_gain(p, base)
    if gain is None:
        return None
    top, bottom = (p.log_rates, p.attainment), (base.log_rates, base.attainment)
    return paired_ratio_ci95(gain, top, bottom, share)
