"""Text of a ``best_k`` document: the selection, the engine forms to paste, and the check
of the table against every fixed k at another seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.report.crossover import fmt_interval, settings_line
from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig

__all__ = ["render_best_k"]


def _cell(r: Mapping[str, Any] | None, digits: int = 4) -> str:
    if r is None or r["mean"] is None:
        return "-"
    return sig(r["mean"], digits)


def _at(k: object, users: list[int]) -> str:
    """ "k=2 at 3, 8 users" ("user" for one user alone)."""
    return f"k={k} at {', '.join(map(str, users))} user{'' if list(users) == [1] else 's'}"


def render_best_k(doc: Mapping[str, Any]) -> str:
    ks = doc["num_steps"]
    unit = f" ({doc['objective_unit']})" if doc["objective_unit"] else ""
    lines = [
        f"best k per batch size: {doc['scenario']}, objective {doc['objective_label']}{unit}",
        settings_line(doc),
        "",
        "selection (closed loop; * best, = tied with the best within the 95% interval, "
        "~ within the 90% interval from inputs and model):",
        "  users  " + "".join(f"{'k=' + str(k):>12}" for k in ks),
    ]
    for c in doc["selection"]:
        row = f"  {c['users']:>5}  "
        for k in ks:
            mark = (
                "*"
                if k == c["best_num_steps"]
                else "="
                if k in c["tied"]
                else "~"
                if k in c.get("tied_within_inputs", ())
                else " "
            )
            row += f"{_cell(c['objective'][str(k)]) + mark:>12}"
        lines.append(row)
    lines += ["", *engine_config_lines(doc["engine_configs"])]
    lines.append("SGLang-style threshold: " + doc["sglang_threshold_note"])
    check = doc["check"]
    lines += [
        "",
        f"check at seed {check['seed']} (grid and midpoints): advantage of each policy over "
        "each fixed k, paired, 95% interval (+ significantly better, - significantly worse)",
    ]
    for name, pol in check["policies"].items():
        lines.append(f"  {name}:")
        lines.append("    users  objective  " + "".join(f"{'vs k=' + str(k):>26}" for k in ks))
        for p in pol["points"]:
            row = f"    {p['users']:>5}  {_cell(p['objective']):>9}  "
            for k in ks:
                a = p["advantage_over"][str(k)]
                sign = (
                    "+"
                    if k in p["significantly_better_than"]
                    else ("-" if k in p["significantly_worse_than"] else " ")
                )
                text = f"{_cell(a, 3)} {fmt_interval(a['ci95'])}{sign}"
                row += f" {text:>25}"  # a wide interval still leaves a space before it
            lines.append(row)
        verdict = (
            "beats or ties every fixed k at every load (no fixed k significantly better)"
            if pol["beats_every_fixed_k_within_ci"]
            else "some fixed k is significantly better at: "
            + "; ".join(
                _at(k, users) for k, users in pol["significantly_worse_at"].items() if users
            )
        )
        worst = pol.get("worst_shortfall")
        if worst:
            verdict += (
                f" (worst: {100 * worst['relative']:.2f}% below k={worst['num_steps']} at "
                f"{count(worst['users'], 'user')})"
            )
        lines.append(f"    -> {verdict}")
        own = pol.get("worse_where_the_table_runs_that_k") or {}
        if own:
            where = " and ".join(_at(k, users) for k, users in own.items())
            lines.append(
                f"       (the table itself runs {where}: there the gap is no boundary to move "
                "but a cost of the table's server: decoding plainly it still builds its "
                "drafter's KV and, unless serving.host_overlap hides it, does its host work "
                "serially, and its batch moves across rows as requests come and go)"
            )
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    lines.append(f"({count(doc['runs'], 'policy run')})")
    return "\n".join(line.rstrip() for line in lines)  # a last cell without its mark
