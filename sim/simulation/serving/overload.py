"""The words every report uses for an open load above what a policy can answer.

``serve`` says it first (sim/report/serving.py ``render_unstable``); ``crossover``,
``search --rate`` and ``sweep`` say the same of the points they did not simulate
(sim/simulation/serving/stability.py ``LoadCheck``: an offered Poisson rate above a
policy's service bound has no steady state).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["BOUND_SOURCE", "NO_STEADY_STATE", "above", "at_most"]

#: Why a rate above the bound is not simulated, after the verdict.
NO_STEADY_STATE = (
    "such a load has no steady state (its queue grows every second, and every latency "
    "with the run's length). Not simulated."
)
#: Where the bound comes from, for a report's notes.
BOUND_SOURCE = (
    "The bounds are upper bounds from the cost model (sim/simulation/serving/stability.py): "
    "decode tokens at the batch where a token costs least, with the shortest contexts, "
    "and with prefill-first batching each prompt's prefill at the cheapest per-token "
    "cost."
)


def above(rate_per_s: float, labels: Sequence[str]) -> str:
    """``R requests/s is more than the server answers with A or B``."""
    return f"{rate_per_s:g} requests/s is more than the server answers with {' or '.join(labels)}"


def at_most(bound_per_s: float) -> str:
    """``at most B requests/s`` (three significant digits)."""
    return f"at most {bound_per_s:.3g} requests/s"
