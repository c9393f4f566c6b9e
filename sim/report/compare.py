"""Text of a comparison document (``Comparison.to_dict()``): one column per scenario."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.model.cycle import PHASES
from sim.report.format import fmt_alpha
from sim.report.uncertainty import fmt_interval, off_centre_text


def _cell(value: float | None, fmt: str, ratio: float | None, first: bool) -> str:
    if value is None:
        return "-"
    text = format(value, fmt)
    return text if first or ratio is None else f"{text} (x{ratio:.2f})"


def render_comparison(doc: Mapping[str, Any]) -> str:
    """A text table: one column per scenario, ratios to the first in parentheses."""
    cols = doc["scenarios"]
    header = ["", *[c["label"] for c in cols]]
    lines: list[list[str]] = []

    def add(name: str, key: str, fmt: str, ratio: str | None = None) -> None:
        lines.append(
            [
                name,
                *[
                    _cell(c[key], fmt, c["ratios"].get(ratio or key), i == 0)
                    for i, c in enumerate(cols)
                ],
            ]
        )

    lines.append(["hardware", *[_hardware(c) for c in cols]])
    lines.append(["overrides", *[_overrides(c) for c in cols]])
    lines.append(["num_steps (k)", *[str(c["num_steps"]) for c in cols]])
    add("baseline tok/s", "baseline_tok_s", ".1f")
    add("speculative tok/s", "tok_s_mean", ".1f")
    lines.append(
        [
            "  Monte Carlo 95% CI",
            *[f"[{c['tok_s_ci95'][0]:.1f}, {c['tok_s_ci95'][1]:.1f}]" for c in cols],
        ]
    )
    add("  closed form", "analytic_tok_s", ".1f", "none")
    lines.append(
        [
            "  90% inputs+model",
            *[
                fmt_interval(c["tok_s_interval90"], ".1f") if c.get("tok_s_interval90") else "-"
                for c in cols
            ],
        ]
    )
    add("speedup", "speedup", ".2f")
    add("accept length", "accept_length", ".2f")
    add("cycle ms", "cycle_ms_mean", ".2f")
    for phase in PHASES:
        lines.append([f"  {phase}", *[f"{c['cycle_ms'].get(phase, 0.0):.2f}" for c in cols]])
    for i, t in enumerate(doc["targets"]):
        lines.append(
            [
                f"P(>= {t:g} tok/s)",
                *[
                    "-"
                    if c["targets"][i]["p_at_least"] is None
                    else f"{c['targets'][i]['p_at_least']:.2f}"
                    for c in cols
                ],
            ]
        )
        lines.append(
            ["  alpha at k", *[fmt_alpha(c["targets"][i]["alpha_at_num_steps"]) for c in cols]]
        )
        lines.append(
            [
                "  best k: first rate",
                *[
                    _best(c["targets"][i]) if c["targets"][i]["reachable"] else "unreachable"
                    for c in cols
                ],
            ]
        )
        lines.append(["    90% inputs+model", *[_interval(c["targets"][i]) for c in cols]])
        lines.append(
            [
                "    flat alpha",
                *[fmt_alpha(c["targets"][i].get("flat_alpha_at_best")) for c in cols],
            ]
        )
    widths = [max(len(r[j]) for r in [header, *lines]) for j in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in lines]
    out.append(
        f"(Monte Carlo: {doc.get('engine', 'fast')} engine, {doc.get('fidelity', 'cycle')} "
        f"fidelity; ratios to {cols[0]['label']}; {doc['alpha_meaning']})"
    )
    for c in cols:
        if c.get("topk", 1) > 1:
            out.append(
                f"({c['label']} drafts a tree {c['num_steps']}/{c['topk']}/"
                f"{c['num_draft_tokens']}: its required acceptance is a chain's at its top-1 "
                "rates; its tok/s interval rebuilds the tree from every draw's rates)"
            )
    for c in cols:
        if c.get("off_centre"):
            lo, hi = c["tok_s_interval90"]
            out.append(
                f"({c['label']}: closed form {c['analytic_tok_s']:.1f} lies outside its 90% "
                f"interval [{lo:.1f}, {hi:.1f}]: inputs specified outside the 5-95% of their "
                f"ranges: {off_centre_text(c['off_centre'])})"
            )
    for hidden in doc.get("targets_not_shown", []):
        own = ", ".join(f"{t:g}" for t in hidden["tok_s"])
        out.append(
            f"(targets are {cols[0]['label']}'s; {hidden['scenario']}'s own {own} tok/s "
            "are not shown: give them with --target)"
        )
    return "\n".join(out)


def _best(row: Mapping[str, Any]) -> str:
    first = row.get("first_rate_at_best", row["alpha_at_best"])
    return f"{row['best_num_steps']}: {fmt_alpha(first)}"


def _hardware(col: Mapping[str, Any]) -> str:
    h = col.get("hardware")
    if not h:
        return "-"
    text = f"{h['gpus']}x {h['gpu'] or ''} {h['interconnect']}".replace("  ", " ")
    return text + (" (re-composed)" if h.get("recomposed") else "")


#: Overrides every column shares by construction (Monte Carlo settings, targets).
_SETTINGS = ("simulation.", "workload.", "targets.")


def _overrides(col: Mapping[str, Any]) -> str:
    over = [o for o in col.get("overrides") or [] if not o["field"].startswith(_SETTINGS)]
    return ", ".join(f"{o['field']}={_short(o['value'])}" for o in over) or "-"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _interval(row: Mapping[str, Any]) -> str:
    unc = row.get("uncertainty")
    return fmt_interval(unc["interval90"]) if unc else "-"
