"""Text of a finished ``sweep``: where its tables are, and the points whose latencies the
tables cannot be read as steady-state figures for (not steady, or above a service bound)."""

from __future__ import annotations

from sim.report.format import count
from sim.simulation.serving.overload import NO_STEADY_STATE, above
from sim.studies.sweep import NOT_STEADY, SweepOutcome

__all__ = ["render_sweep"]


def render_sweep(outcome: SweepOutcome, out_dir: str) -> str:
    """The summary line, then a NOT STEADY line for the points where the requests in the
    system grew through the measurement window in some replications, and an UNSTABLE line
    for the points offered more than a policy's service bound (not simulated)."""
    lines = [
        f"sweep: {count(outcome.total, 'point')} ({outcome.computed} computed, "
        f"{outcome.reused} reused) -> {out_dir}/sweep.csv, {out_dir}/sweep.json"
    ]
    not_steady = [r for r in outcome.rows if any(k.endswith(NOT_STEADY) for k in r)]
    if not_steady:
        lines.append(
            f"NOT STEADY: {len(not_steady)} point{'s' if len(not_steady) > 1 else ''} (a "
            f"policy's *{NOT_STEADY} in the tables) where the requests in the system grew "
            "through the measurement window in some replications: above what the server "
            "answers, or a run too short to fill; their latencies are transient (more "
            "--requests tell which)"
        )
    unstable = [r for r in outcome.rows if r.get("stable") is False]
    if unstable:
        rates = sorted({float(r["offered_rate_per_s"]) for r in unstable})
        names = sorted({n for r in unstable for n in str(r["unstable"]).split(";")})
        lines.append(
            f"UNSTABLE: {len(unstable)} point{'s' if len(unstable) > 1 else ''} (stable = "
            f"false in the tables, with each policy's service bound): "
            f"{above(rates[0], names)}"
            + (f" (and {', '.join(f'{x:g}' for x in rates[1:])} requests/s)" if rates[1:] else "")
            + f": {NO_STEADY_STATE}"
        )
    return "\n".join(lines)
