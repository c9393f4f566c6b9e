"""Text reports of ``specsim search`` (acceptance) and ``specsim search --solve`` (a lever),
from their JSON documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.report.format import fmt_alpha

# --------------------------------------------------------------------------- text reports


def _a(x: float | None) -> str:
    return fmt_alpha(x, missing="-")


def _ci(ci: Sequence[float | None]) -> str:
    lo, hi = ci
    return f"[{_a(lo)}, {'>' + _a(None) if hi is None else _a(hi)}]".replace(">-", "open")


def render_search(doc: Mapping[str, Any]) -> str:
    """The text report of ``specsim search`` (from ``SearchResult.to_dict()``)."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    lines = [
        f"search: {doc['scenario']}: lowest acceptance for {what} >= target",
        f"  Monte Carlo: {doc['engine']} engine, {doc.get('fidelity', 'cycle')} fidelity, "
        f"{doc['replications']} replications x "
        f"{doc['requests']} requests of {doc['output_tokens']} tokens, seed {doc['seed']}; "
        f"{doc['evaluations']} Monte Carlo evaluations",
        f"  {doc['acceptance_lever']}",
    ]
    if doc.get("load"):  # searched at a serving load (sim/studies/serving_search.py)
        lines.append(f"  load: {doc['load']['label']}; {doc['note']}")
    now = doc.get("current")
    if now:
        lines.append(
            f"  now: k = {now['num_steps']}, alpha {now['alpha']:.3f}, "
            f"{now['closed_form_tok_s']:.1f} tok/s in closed form"
        )
    for t in doc["targets"]:
        lines.append("")
        if t["reachable"]:
            lines.append(
                f"target {t['tok_s']:g} tok/s: best k = {t['best_num_steps']}, alpha "
                f"{_a(t['alpha'])} (95% CI {_ci(t['alpha_ci95'])}), accept length "
                f"{t['required_accept_length']:.2f}"
            )
        else:
            lines.append(f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}")
        if t.get("note"):
            lines.append(f"  note: {t['note']}")
        lines.append("     k   alpha   95% CI            closed form   ceiling tok/s")
        for r in t["per_num_steps"]:
            alpha = _a(r["alpha"]) if r["reachable"] else "unreachable"
            ci = _ci(r["alpha_ci95"]) if r["reachable"] else ""
            lines.append(
                f"  {r['num_steps']:>4}   {alpha:<11} {ci:<18}{_a(r['closed_form_alpha']):>7}"
                f"   {r['ceiling_tok_s']:>10.1f}"
            )
    return "\n".join(lines)


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def render_lever(doc: Mapping[str, Any]) -> str:
    """The text report of ``specsim search --solve FIELD``."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    field_name = doc["field"]
    lines = [
        f"solve: {doc['scenario']}: {field_name} (now {doc['current']:g}, giving "
        f"{doc['current_tok_s']:.1f} tok/s) for {what} >= target, everything else fixed",
        f"  Monte Carlo: {doc['engine']} engine, {doc.get('fidelity', 'cycle')} fidelity, "
        f"{doc['replications']} replications x "
        f"{doc['requests']} requests, seed {doc['seed']}; {doc['evaluations']} Monte Carlo "
        "evaluations",
    ]
    for t in doc["targets"]:
        if t["reachable"]:
            lo, hi = (_g(v) for v in t["value_ci95"])
            lines.append(
                f"target {t['tok_s']:g} tok/s: {field_name} {doc['direction']} "
                f"{_g(t['value'])} (95% CI [{lo}, {hi}]; closed form "
                f"{_g(t['closed_form_value'])})"
            )
        else:
            lines.append(f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}")
    lines.extend(f"warning: {w}" for w in doc.get("warnings", []))
    return "\n".join(lines)
