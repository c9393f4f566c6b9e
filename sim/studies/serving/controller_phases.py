"""The phase-changing workload the controllers are replayed on
(sim/studies/serving/controllers.py): consecutive phases (``Phase``), each a number of
requests arriving at a constant rate (evenly spaced, as a paced load generator sends
them) with a share per acceptance class (e.g. 90% chat then 90% code); classes are
interleaved deterministically so each phase has its shares exactly (largest remainder,
request by request: ``phase_trace``). The trace has no random part: replications differ
by their acceptance draws (and per-request rate spread, if the scenario has one).
``default_phases``: the phases replayed when none are given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.errors import SpecsimError
from sim.model.acceptance import RateClass
from sim.scenario.sections.bounds import MAX_RATE_PER_S, MAX_REQUESTS, MIN_RATE_PER_S
from sim.simulation.serving.plan import ServingPlan
from sim.simulation.serving.workload import Trace

__all__ = ["Phase", "default_phases", "phase_trace", "require_mix"]


@dataclass(frozen=True, slots=True)
class Phase:
    """``requests`` arriving at ``rate_per_s``, ``shares`` of each acceptance class."""

    requests: int
    rate_per_s: float
    shares: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        if self.requests < 1 or not 0 < self.rate_per_s < math.inf:
            raise ValueError("a phase needs at least one request and a finite positive rate")
        if self.requests > MAX_REQUESTS:
            raise ValueError(
                f"a phase has at most {MAX_REQUESTS:,} requests (workload.requests' limit), "
                f"got {self.requests:,}"
            )
        if not MIN_RATE_PER_S <= self.rate_per_s <= MAX_RATE_PER_S:
            raise ValueError(
                f"a phase's rate must be in [{MIN_RATE_PER_S:g}, {MAX_RATE_PER_S:g}] "
                f"requests/s, got {self.rate_per_s:g}"
            )
        names = [name for name, _ in self.shares]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"class {', '.join(map(repr, repeated))} given twice in one phase")
        total = sum(s for _, s in self.shares)
        if any(s < 0 for _, s in self.shares) or not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"class shares must be >= 0 and sum to 1, got {self.shares}")

    def label(self) -> str:
        mix = ", ".join(f"{s:.0%} {name}" for name, s in self.shares if s > 0)
        noun = "request" if self.requests == 1 else "requests"
        return f"{self.requests} {noun} at {self.rate_per_s:.3g}/s, {mix}"


def _interleave(shares: Sequence[float], n: int) -> list[int]:
    """Class of each of n requests so that after every request each class's count is
    within one of share x requests so far (largest remainder, lowest index on ties)."""
    counts = [0] * len(shares)
    out = []
    for i in range(1, n + 1):
        c = max(range(len(shares)), key=lambda j: (shares[j] * i - counts[j], -j))
        counts[c] += 1
        out.append(c)
    return out


def phase_trace(
    phases: Sequence[Phase],
    class_names: Sequence[str],
    input_tokens: int,
    output_tokens: int,
) -> tuple[Trace, np.ndarray]:
    """The trace of ``phases`` and each request's phase index (n,)."""
    times, classes, phase_of = [], [], []
    t = 0.0
    for p_i, phase in enumerate(phases):
        names = dict(phase.shares)
        unknown = sorted(set(names) - set(class_names))
        if unknown:
            raise SpecsimError(
                f"unknown acceptance class {unknown[0]!r} (the scenario has "
                f"{', '.join(class_names)})",
                param="phases",
            )
        shares = [names.get(c, 0.0) for c in class_names]
        gap = 1000.0 / phase.rate_per_s
        for c in _interleave(shares, phase.requests):
            times.append(t)
            classes.append(c)
            phase_of.append(p_i)
            t += gap
    n = len(times)
    trace = Trace(
        np.array(times),
        np.full(n, input_tokens, dtype=np.int64),
        np.full(n, output_tokens, dtype=np.int64),
        np.array(classes, dtype=np.int64),
        source="phases",
    )
    return trace, np.array(phase_of)


def require_mix(plan: ServingPlan) -> tuple[RateClass, ...]:
    """The plan's acceptance classes, at least two of them (default phases swap the mix)."""
    classes = plan.acceptance.classes
    if len(classes) < 2:
        raise SpecsimError(
            "a phase-changing workload needs an [[acceptance.mix]] of at least two classes",
            param="phases",
        )
    return classes


def default_phases(plan: ServingPlan, one_user_req_s: float, requests: int) -> list[Phase]:
    """Four phases of ``requests``: 90% of the lowest-acceptance class (10% of the
    highest), then swapped, at about 4 users' worth of load, then both again at 16."""
    classes = require_mix(plan)
    order = sorted(classes, key=lambda c: float(np.mean(c.mean_rates)))
    low, high = order[0].name, order[-1].name
    out = []
    for users in (4, 16):
        rate = users * one_user_req_s
        out.append(Phase(requests, rate, ((low, 0.9), (high, 0.1))))
        out.append(Phase(requests, rate, ((low, 0.1), (high, 0.9))))
    return out
