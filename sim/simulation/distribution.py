"""The per-request distribution of a bound scenario by the method asked for: its exact law,
its Monte Carlo, or the exact law where one exists and the Monte Carlo otherwise (``auto``).

The choice, and the fallback's note, are made here once, so a command asks for a method
and renders what comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.binding.bound import Bound
from sim.errors import SpecsimError
from sim.simulation.results import MonteCarloResult
from sim.simulation.simulate import simulate
from sim.simulation.summary import Summary, summarize

if TYPE_CHECKING:
    from sim.model.renewal import RequestLaw

__all__ = ["Distribution", "request_distribution"]


@dataclass(frozen=True, slots=True)
class Distribution:
    """The per-request distribution: ``summary`` its statistics; ``law`` the exact law
    (None for a Monte Carlo); ``result`` the Monte Carlo's requests (None for the exact
    law); ``fallback`` why ``auto`` fell back to the Monte Carlo (None otherwise);
    ``unused``: the Monte Carlo options given that the exact law did not use."""

    summary: Summary
    law: RequestLaw | None = None
    result: MonteCarloResult | None = None
    fallback: str | None = None
    unused: tuple[str, ...] = ()


def request_distribution(
    bound: Bound,
    *,
    method: str = "monte-carlo",
    fidelity: str = "cycle",
    seed: int | None = None,
    monte_carlo_options: Sequence[str] = (),
    source: str | None = None,
    **sample: Any,
) -> Distribution:
    """The distribution of ``bound``'s requests by ``method``: ``monte-carlo`` simulates;
    ``exact`` gives the exact law (an error where it has none); ``auto`` the exact law where
    it exists, else the Monte Carlo.

    ``sample``: the Monte Carlo's other settings (``engine``, ``replications``,
    ``requests``, ``workers``, ``progress``: sim/simulation/simulate.py ``simulate``).
    ``monte_carlo_options``: the options given that only shape a Monte Carlo sample
    (``--replications``...): with ``method="exact"`` they are an error (the exact law draws
    no sample), with ``auto`` they are said unused. ``source``: the name a Monte Carlo
    error about a field gives the scenario (its file). A SpecsimError of ``exact`` stops
    ``method="exact"``; ``auto`` notes it and simulates."""
    fallback = None
    if method != "monte-carlo":
        from sim.simulation.exact import scenario_exact  # lazy: its renewal law, exact/auto only

        try:
            exact, law = scenario_exact(bound, fidelity=fidelity, seed=seed)
        except SpecsimError as exc:
            if method == "exact":
                raise
            fallback = f"--method auto: {exc.message}; this is the Monte Carlo"
        else:
            unused = tuple(monte_carlo_options)
            if unused and method == "exact":
                raise SpecsimError(
                    "the exact law draws no Monte Carlo sample, so "
                    f"{', '.join(unused)} would change nothing: drop "
                    f"{'them' if len(unused) > 1 else 'it'} or use --method monte-carlo",
                    source=unused[0],
                )
            return Distribution(exact, law=law, unused=unused)
    try:
        result = simulate(bound, fidelity=fidelity, seed=seed, **sample)
    except SpecsimError as exc:
        if exc.field is None or source is None:
            raise
        raise SpecsimError(exc.message, source=source, field=exc.field) from None
    return Distribution(summarize(result), result=result, fallback=fallback)
