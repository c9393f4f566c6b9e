"""Text of a ``capacity`` document: the highest Poisson rate meeting the SLOs, per policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.report.conditioning import conditioning_lines
from sim.report.crossover import fmt_interval, settings_line
from sim.report.format import sig
from sim.report.model_error import model_error_line
from sim.studies.serving.draw_intervals import IntervalSources, weakest

__all__ = ["render_capacity"]

#: The heading of the 90% intervals where every one is from the inputs' draws.
INPUTS_HEAD = "90% interval from inputs and model (the draws joined with the 95% CI)"
#: A policy's keys saying what its intervals hold where that is less than the draws
#: (sim/studies/serving/capacity_intervals.py).
HELD = ("capacity_interval90_sources", "capacity_gain_interval90_sources")


def _rate(x: float | None) -> str:
    return "?" if x is None else sig(x)


def _rates_word(p: Mapping[str, Any], i: int) -> str:
    """' rate' or ' rates' after the first policy's count of unstable rates, '' later."""
    return "" if i else (" rate" if len(p["unstable_rates"]) == 1 else " rates")


def _names(ks: list[int]) -> str:
    return ", ".join("plain decoding" if k == 0 else f"k = {k}" for k in ks)


def _gain_ci(p: Mapping[str, Any]) -> str:
    """The gain's paired interval (none for plain decoding, its own baseline)."""
    ci = p.get("capacity_gain_ci95")
    if p["num_steps"] == 0 or p["capacity_gain"] is None:
        return ""
    return "  [?, ?]" if ci is None else f"  [{ci[0]:.2f}, {ci[1]:.2f}]"


def render_capacity(doc: Mapping[str, Any]) -> str:
    lines = [
        f"capacity: {doc['scenario']}: highest Poisson rate at which {doc['share']:.0%} of "
        "requests meet the SLO",
        settings_line(doc),
        *conditioning_lines(doc),
        f"root finding on log rate to {doc['rtol']:.0%}, common random numbers along the rate; "
        "95% interval from the attainment's band; the ratio's paired, by the jackknife over "
        "the same replications",
        "",
        f"  {'policy':<18}{'req/s':>11}  {'95% CI':<18}{'vs plain decoding':>18}  95% CI",
    ]
    for p in doc["policies"]:
        name = "plain decoding" if p["num_steps"] == 0 else f"k = {p['num_steps']}"
        lo, hi = p["ci95"]
        gain = p["capacity_gain"]
        rate = (">= " if p.get("at_least") else "") + _rate(p["rate_per_s"])
        lines.append(
            f"  {name:<18}{rate:>11}  {f'[{_rate(lo)}, {_rate(hi)}]':<18}"
            f"{'' if gain is None else f'{gain:.2f}x':>18}{_gain_ci(p)}"
        )
    drawn = [p for p in doc["policies"] if "capacity_interval90" in p]
    if drawn:
        held = [IntervalSources(p[k]) for p in drawn for k in HELD if k in p]
        head = weakest(held).label if held else INPUTS_HEAD  # the least of what they hold
        lines += ["", f"{head}:"]
        rows = []
        for p in drawn:
            name = "plain decoding" if p["num_steps"] == 0 else f"k = {p['num_steps']}"
            lo, hi = p["capacity_interval90"]
            text = f"  {name:<18}req/s [{_rate(lo)}, {_rate(hi)}]"
            g = p.get("capacity_gain_interval90")
            if g is not None:
                text += f"; vs plain decoding {fmt_interval(g, decimals=2)}"
            rows.append(text)
        lines += rows
        if any("?" in row for row in rows):
            lines.append("  (? : beyond the rates the search tried)")
        if doc.get("model_error"):
            lines.append("  " + model_error_line(doc["model_error"]))
    if doc.get("replications") == 1:
        lines.append("  (one replication: no 95% interval; give --replications 2 or more)")
    unmet = [p["num_steps"] for p in doc["policies"] if p["rate_per_s"] is None]
    if unmet:
        lines.append(f"  ({_names(unmet)}: the share is not met at any rate tried)")
    unbounded = [p for p in doc["policies"] if p.get("at_least")]
    if unbounded:
        top = _rate(unbounded[0]["rate_per_s"])
        lines.append(
            f"  ({_names([p['num_steps'] for p in unbounded])}: the share is met at every rate "
            f"tried, up to {top} req/s: the capacity is at least that; tighten the limits)"
        )
    skipped = [p for p in doc["policies"] if p.get("unstable_rates")]
    if skipped:
        each = ", ".join(
            f"{_names([p['num_steps']])} > {_rate(p['service_bound_per_s'])}"
            + (" req/s" if i == 0 else "")
            + f" ({len(p['unstable_rates'])}{_rates_word(p, i)})"
            for i, p in enumerate(skipped)
        )
        lines.append(f"  (no steady state: fail the TTFT limit unsimulated: {each})")
    for p in doc["policies"]:
        if p.get("capped_by_service_bound"):
            lines.append(
                f"  ({_names([p['num_steps']])}: the capacity is where that bound cuts the "
                "search, not a measured crossing: runs just under it met the share, and "
                "their queues may still have been growing; more requests tell)"
            )
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    lines.append(f"({doc['runs']} policy runs)")
    return "\n".join(lines)
