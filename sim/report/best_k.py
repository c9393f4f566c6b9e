"""Text of a ``best_k`` document: the selection, the engine forms to paste, and the check
of the table against every fixed k at another seed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sim.report.conditioning import conditioning_lines
from sim.report.crossover import fmt_interval, held_words, settings_line
from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig
from sim.report.model_error import model_error_line
from sim.report.screen import assumptions_line, within_screen
from sim.studies.serving.best_k import table_row_k

__all__ = ["render_best_k", "render_best_k_screen"]


def _cell(r: Mapping[str, Any] | None, digits: int = 4) -> str:
    if r is None or r["mean"] is None:
        return "-"
    return sig(r["mean"], digits)


def _at(k: object, users: list[int]) -> str:
    """ "k=2 at 3, 8 users" ("user" for one user alone)."""
    return f"k={k} at {', '.join(map(str, users))} user{'' if list(users) == [1] else 's'}"


def _runs_k(doc: Mapping[str, Any], name: str, users: int) -> int | None:
    """The k policy ``name`` of the check runs at a batch of ``users`` (None: not known):
    the table's row for that batch size, or the threshold's k up to its batch limit."""
    if name == "table":
        return table_row_k(doc["vllm_table"], users)
    t = doc.get("sglang_threshold")
    if name != "threshold" or t is None:
        return None
    limit = t.get("disable_above_batch")
    return int(t["num_steps"]) if limit is None or users <= limit else 0


def _head_lines(doc: Mapping[str, Any]) -> list[str]:
    """The title, the settings and the selection table."""
    ks = doc["num_steps"]
    unit = f" ({doc['objective_unit']})" if doc["objective_unit"] else ""
    lines = [
        f"best k per batch size: {doc['scenario']}, objective {doc['objective_label']}{unit}",
        settings_line(doc),
        *conditioning_lines(doc),
        "",
        "selection (closed loop; * best, = tied with it at 95%, ~ tied within 90% from inputs "
        "and model):",
        "  users  " + "".join(f"{'k=' + str(k):>12}" for k in ks),
    ]
    for c in doc["selection"]:
        row = f"  {c['users']:>5}  "
        for k in ks:
            row += f"{_cell(c['objective'][str(k)]) + _mark(c, k):>12}"
        lines.append(row)
    terms = [c["model_error"] for c in doc["selection"] if c.get("model_error")]
    if terms:  # the widest term of the selection (the load farthest from a measured batch)
        lines.append("  " + model_error_line(max(terms, key=lambda t: t["gain_sigma"])))
    return lines + _held_lines(doc)


def _worst(pol: Mapping[str, Any]) -> str:
    worst = pol.get("worst_shortfall")
    if not worst:
        return ""
    return (
        f"{100 * worst['relative']:.2f}% below k={worst['num_steps']} at "
        f"{count(worst['users'], 'user')}"
    )


def _verdict_line(name: str, pol: Mapping[str, Any]) -> str:
    """What the check found for one policy, in a sentence: no fixed k significantly
    better, or which are, told apart from the loads where the table runs that k itself."""
    if pol["beats_every_fixed_k_within_ci"]:
        return f"  {name}: beats or ties every fixed k at every load"
    own = pol.get("worse_where_the_table_runs_that_k") or {}
    other = {
        k: [u for u in users if u not in own.get(k, ())]
        for k, users in pol["significantly_worse_at"].items()
    }
    worst = _worst(pol)
    if not any(other.values()):
        where = " and ".join(_at(k, users) for k, users in own.items())
        return (
            f"  {name}: no fixed k significantly better except where it runs that k itself: "
            f"{where} (worst {worst}: the cost of a server with speculation configured)"
        )
    text = "some fixed k is significantly better at: " + "; ".join(
        _at(k, users) for k, users in other.items() if users
    )
    if own:
        text += (
            " (and where it runs that k itself: "
            + " and ".join(_at(k, users) for k, users in own.items())
            + ")"
        )
    return f"  {name}: {text}" + (f"; worst {worst}" if worst else "")


def _held_lines(doc: Mapping[str, Any]) -> list[str]:
    """Where a difference's interval behind ``~`` is not from the inputs' draws (fewer
    than two answered), what it holds instead, a line each kind; none: nothing."""
    by: dict[str, list[str]] = {}
    for c in doc["selection"]:
        for k, held in (c.get("advantage_over_best_sources") or {}).items():
            by.setdefault(held, []).append(f"k={k} at {count(c['users'], 'user')}")
    return [f"  {held_words(held)}: {', '.join(where)}" for held, where in by.items()]


def _mark(c: Mapping[str, Any], k: int) -> str:
    """* best, = tied with it at 95%, ~ tied within 90% from inputs and model."""
    if k == c["best_num_steps"]:
        return "*"
    if k in c["tied"]:
        return "="
    return "~" if k in c.get("tied_within_inputs", ()) else " "


def _selection_screen_lines(doc: Mapping[str, Any]) -> list[str]:
    """The selection on its side for the first screen: a column per load, a row per k."""
    sel = doc["selection"]
    lines = [
        "  users " + "".join(f"{c['users']:>9}" for c in sel),
        *(
            (
                f"  {'k=' + str(k):<6}"
                + "".join(f"{_cell(c['objective'][str(k)]) + _mark(c, k):>9}" for c in sel)
            ).rstrip()
            for k in doc["num_steps"]
        ),
    ]
    terms = [c["model_error"] for c in sel if c.get("model_error")]
    if terms:  # the widest term of the selection (the load farthest from a measured batch)
        lines.append("  " + model_error_line(max(terms, key=lambda t: t["gain_sigma"])))
    return lines + _held_lines(doc)


def _engine_answer_lines(doc: Mapping[str, Any]) -> list[str]:
    """What to paste into each engine, the engines that cannot express the table in one
    line (``--verbose``: why and the schemas), and the SGLang-style threshold."""
    configs = doc["engine_configs"]
    vllm, sglang, trt = configs["vllm"], configs["sglang"], configs["trtllm"]
    lines = ["engine configs (add your draft model path; --verbose: the schemas and why not):"]
    if "speculative_config" in vllm:
        config = json.dumps(vllm["speculative_config"])
        lines.append(f"  vLLM: --speculative-config '{config}'")
    if "flags" in sglang:
        lines.append("  SGLang: " + " ".join(sglang["flags"]))
    if "speculative_config" in trt:
        lines.append("  TensorRT-LLM: speculative_config: " + json.dumps(trt["speculative_config"]))
    cannot = [
        name
        for name, form, key in (
            ("vLLM", vllm, "speculative_config"),
            ("SGLang", sglang, "flags"),
            ("TensorRT-LLM", trt, "speculative_config"),
        )
        if key not in form
    ]
    if cannot:
        lines.append(f"  {', '.join(cannot)}: cannot express this table")
    return [*lines, "SGLang-style threshold: " + doc["sglang_threshold_note"]]


def render_best_k_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim best-k``: the answer first (the selection, a column
    per load, and the engine forms to paste), then how far it holds (the check at another
    seed, a line per policy) and what it rests on (the sample, the model error, the
    assumptions in one line). ``--verbose``: the selection a row per load, the check's
    table, every engine's schema and every assumption."""
    check = doc["check"]
    unit = f" ({doc['objective_unit']})" if doc["objective_unit"] else ""
    head = [
        f"best k per batch size: {doc['scenario']}, objective {doc['objective_label']}{unit}",
        "selection (closed loop; * best, = tied with it at 95%, ~ tied within 90% from inputs "
        "and model):",
        *_selection_screen_lines(doc),
    ]
    checked = [
        "",
        f"check at seed {check['seed']}, {count(len(check['users']), 'load')}, paired against "
        "each fixed k (95%; --verbose: the table):",
        *(_verdict_line(name, pol) for name, pol in check["policies"].items()),
    ]
    sample = f"{settings_line(doc)}; {count(doc['runs'], 'policy run')}"
    rests = assumptions_line(doc.get("assumptions", ()), lead=sample)
    blocks: list[tuple[list[str], str | None]] = [
        (head, None),
        (["", *_engine_answer_lines(doc)], "engine configs to paste: --verbose"),
        (checked, f"check at seed {check['seed']} against each fixed k: --verbose"),
        (["", *conditioning_lines(doc, brief=True)], None),
        (rests, None),
    ]
    return "\n".join(within_screen(blocks))


def _check_lines(doc: Mapping[str, Any], name: str, pol: Mapping[str, Any]) -> list[str]:
    """One policy's check: its objective and its advantage over each fixed k at each load,
    marked + / - where significant, = where the policy runs that k itself."""
    ks = doc["num_steps"]
    rows = []
    for p in pol["points"]:
        cells = []
        for k in ks:
            a = p["advantage_over"][str(k)]
            sign = (
                "="
                if _runs_k(doc, name, p["users"]) == k
                else "+"
                if k in p["significantly_better_than"]
                else "-"
                if k in p["significantly_worse_than"]
                else " "
            )
            cells.append(f"{_cell(a, 3)} {fmt_interval(a['ci95'])}{sign}")
        rows.append((p, cells))
    width = max([12, *(len(c) for _, cells in rows for c in cells)])
    lines = [
        f"  {name}:",
        "    users  objective " + "".join(f" {'vs k=' + str(k):>{width}}" for k in ks),
    ]
    for p, cells in rows:
        # a wide interval still leaves a space before it
        lines.append(
            f"    {p['users']:>5}  {_cell(p['objective']):>9} "
            + "".join(f" {c:>{width}}" for c in cells)
        )
    return lines


def render_best_k(doc: Mapping[str, Any]) -> str:
    """The text of ``specsim best-k --verbose``: the selection, every engine form with its
    schema, the check's table per policy with its verdict, and every assumption."""
    lines = [*_head_lines(doc), "", *engine_config_lines(doc["engine_configs"])]
    lines.append("SGLang-style threshold: " + doc["sglang_threshold_note"])
    check = doc["check"]
    lines += [
        "",
        f"check at seed {check['seed']} (grid and midpoints): advantage of each policy over "
        "each fixed k, paired, 95% interval (+ significantly better, - significantly worse, "
        "= the policy runs that k there: the difference is its server's own cost)",
    ]
    for name, pol in check["policies"].items():
        lines += _check_lines(doc, name, pol)
        verdict = (
            "beats or ties every fixed k at every load (no fixed k significantly better)"
            if pol["beats_every_fixed_k_within_ci"]
            else "some fixed k is significantly better at: "
            + "; ".join(
                _at(k, users) for k, users in pol["significantly_worse_at"].items() if users
            )
        )
        worst = _worst(pol)
        if worst:
            verdict += f" (worst: {worst})"
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
