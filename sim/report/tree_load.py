"""The chain-against-tree study's report: a JSON body, a text summary and its figures.

Both come from the typed result (sim/studies/serving/tree_load_result.py): per concurrency
every policy's per-user and aggregate tok/s with 95% intervals, the paired ratio of each
tree over each chain, where each tree stops beating each chain, and the best draft per load
as a ``serving.draft_table``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from sim.model.drafts import describe_draft
from sim.report.conditioning import conditioning_lines
from sim.report.crossover import held_words
from sim.report.figure_style import BASELINE_STYLE, add_footnote
from sim.report.format import count
from sim.report.model_error import model_error_line
from sim.report.plain_text import plain_text
from sim.report.screen import assumptions_line, fit_width
from sim.report.serving import finite, ratio_dict
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.draw_intervals import DRAW_REPLICATIONS, IntervalSources
from sim.studies.serving.tree_load_draws import sign_of
from sim.studies.serving.tree_load_result import METRICS, Crossing, TreeLoadResult

__all__ = [
    "render_tree_load",
    "render_tree_load_screen",
    "tree_load_figures",
    "tree_load_to_dict",
]

LABELS = {"per_user_tok_s": "per-user tok/s", "aggregate_tok_s": "aggregate tok/s"}
COLORS = ("#4C72B0", "#55A868", "#C44E52", "#8172B2", "#CCB974", "#64B5CD", "#DD8452")


def _ratio(r: Ratio) -> dict[str, Any]:
    out = ratio_dict(r)
    assert out is not None
    return out


def _crossing(c: Crossing) -> dict[str, Any]:
    return {
        "tree": c.tree,
        "chain": c.chain,
        "metric": c.metric,
        "last_win": c.last_win,
        "first_loss": c.first_loss,
        "at": finite(c.at) if c.at is not None else None,
        "never_wins": c.never_wins,
        "always_wins": c.always_wins,
        "wins_again": list(c.wins_again),
        **({"interval90": list(c.interval90)} if c.interval90 is not None else {}),
    }


def _pair_doc(r: Ratio, interval: list[float] | None) -> dict[str, Any]:
    """A tree / chain ratio: mean, Monte Carlo 95% interval, 90% interval from inputs and
    model and the sign it decides (sim/studies/serving/tree_load_draws.py ``sign_of``)."""
    return {**_ratio(r), "interval90": interval, "sign": sign_of(interval)}


def tree_load_to_dict(result: TreeLoadResult) -> dict[str, Any]:
    """The ``tree-load`` document body."""
    return {
        "scenario": result.scenario,
        "concurrencies": list(result.concurrencies),
        "policies": {n: describe_draft(d) for n, d in result.drafts.items()},
        "trees": list(result.trees),
        "chains": list(result.chains),
        "replications": result.replications,
        "replications_run": sum(result.replications_run.values()),
        "requests": result.requests,
        "seed": result.seed,
        "defaults": dict(result.defaults),
        "points": [
            {
                "concurrency": p.concurrency,
                "replications": result.replications_run.get(p.concurrency, 0)
                // max(1, len(result.drafts)),
                "mean_batch": _ratio(p.mean_batch),
                "best": p.best,
                **{m: {n: _ratio(r) for n, r in getattr(p, m).items()} for m in METRICS},
                "accept_length": {n: _ratio(r) for n, r in p.accept_length.items()},
                "tree_over_chain": {
                    t: {
                        ch: {
                            m: _pair_doc(r, p.vs_chain_interval90.get(t, {}).get(ch, {}).get(m))
                            for m, r in ms.items()
                        }
                        for ch, ms in d.items()
                    }
                    for t, d in p.vs_chain.items()
                },
                "beyond_measured_batch": p.beyond_measured,
                "decode_batch": p.decode_batch,
            }
            for p in result.points
        ],
        "crossings": [_crossing(c) for c in result.crossings],
        "best_draft_table": result.best_table(),
        "interval90": result.intervals,
        "assumptions": list(result.assumptions),
    }


def _mean_ci(r: Mapping[str, Any], digits: int = 1) -> str:
    mean, ci = r["mean"], r["ci95"]
    if mean is None:
        return "-"
    if ci is None or ci[0] is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ±{(ci[1] - ci[0]) / 2:.{digits}f}"


def _interval_notes(iv: Mapping[str, Any], beyond: bool) -> list[str]:
    """What the intervals drew, and the mark of loads beyond the measured batches."""
    out = []
    if iv.get("draws"):
        names = ", ".join(i["field"] for i in iv.get("inputs", []))
        per = sorted(
            set((iv.get("replications_per_draw_at") or {}).values())
            | ({DRAW_REPLICATIONS} if iv.get("probes_ran_two_at") else set())
        )
        each = (
            f"{per[0]}-{per[-1]}"
            if len(per) > 1
            else str(per[0] if per else iv["replications_per_draw"])
        )
        head = f"{iv['label']}: " if iv.get("sources") else ""  # not from the draws
        out.append(
            f"intervals: {head}{iv['draws_run']} of {iv['draws']} draws x {each} "
            f"replication{'' if each == '1' else 's'} on the nominal seeds; drawn: {names}"
        )
    elif iv:
        out.append("intervals: Monte Carlo 95% only (no uncertain inputs, or --draws 0)")
    if iv.get("model_error"):
        out.append(model_error_line(iv["model_error"]))
    if beyond:
        out.append(f"  * {iv.get('note', 'beyond the highest measured batch')}")
    return out


def _users(n: int) -> str:
    return f"{n} user{'' if n == 1 else 's'}"


def _crossing_text(c: Mapping[str, Any], top: int, held: str | None = None) -> str:
    """A crossing in words, its interval named by what it holds (``held``: the document's
    ``interval90.sources``, None: from the draws)."""
    head = f"{c['tree']} vs {c['chain']} ({LABELS[c['metric']]}): "
    again = c.get("wins_again") or []
    tail = f"; wins again at {', '.join(map(str, again))}" if again else ""
    if c["never_wins"]:
        text = head + f"the tree does not beat the chain from {_users(c['first_loss'])} on" + tail
    elif c["always_wins"]:
        text = head + f"the tree beats the chain at every concurrency up to {top}"
    else:
        text = (
            head
            + f"the tree beats the chain up to {_users(c['last_win'])} and loses from "
            + f"{_users(c['first_loss'])}; crossover ~{c['at']:.1f} users (log-interpolated)"
            + tail
        )
    if c.get("interval90") is not None:
        lo, hi = c["interval90"]
        low = f"{lo:.3g}" if lo is not None else f"below {min(top, c['first_loss'] or top)}"
        high = f"{hi:.3g}" if hi is not None else f"above {top}"
        text += f"; {held_words(held)} [{low}, {high}]"
    return text


def _pair_cell(r: Mapping[str, Any]) -> str:
    """``1.083 [1.02, 1.15] wins``: the mean, the 90% interval from inputs and model and its
    sign (the Monte Carlo half-width without an interval)."""
    iv = r.get("interval90")
    if iv is None:
        return _mean_ci(r, 3)
    return f"{r['mean']:.3f} [{iv[0]:.3f}, {iv[1]:.3f}] {r['sign']}"


def _replications(doc: Mapping[str, Any]) -> str:
    """The replications a load ran: R; where sequential replications stopped loads at
    their first, "4 of R replications (sequential)" (every load) or "4 or R"."""
    r = doc["replications"]
    ran = {p.get("replications", r) for p in doc["points"]}
    low = min(ran, default=r)
    if low >= r:
        return count(r, "replication")
    return f"{low} {'of' if ran == {low} else 'or'} {r} replications (sequential)"


def _head(doc: Mapping[str, Any]) -> list[str]:
    return [
        f"{doc['scenario']}: chain against tree under load; closed loops of "
        f"{', '.join(map(str, doc['concurrencies']))} "
        f"user{'' if list(doc['concurrencies']) == [1] else 's'}; "
        f"{_replications(doc)} x {count(doc['requests'], 'request')} per load, seed "
        f"{doc['seed']}",
        *conditioning_lines(doc.get("interval90") or {}),
    ]


def _defaults(doc: Mapping[str, Any]) -> list[str]:
    """One line naming what the study took as a named default (none: no line)."""
    given = doc.get("defaults") or {}
    if not given:
        return []
    return ["named defaults: " + "; ".join(given.values()) + " (--verbose: their sources)"]


def _policies(doc: Mapping[str, Any]) -> list[str]:
    return ["policies: " + "; ".join(f"{n} = {d}" for n, d in doc["policies"].items())]


def _per_user_table(doc: Mapping[str, Any]) -> list[str]:
    names = list(doc["policies"])
    lines = ["per-user tok/s (mean ±95% CI half-width)"]
    width = max(14, *(len(n) + 2 for n in names))
    lines.append("users  batch " + "".join(f"{n:>{width}}" for n in names) + "   best")
    for p in doc["points"]:
        lines.append(
            f"{p['concurrency']:>5}  {p['mean_batch']['mean']:>5.1f} "
            + "".join(f"{_mean_ci(p['per_user_tok_s'][n]):>{width}}" for n in names)
            + f"   {p['best']}"
        )
    return lines


def _ratio_table(doc: Mapping[str, Any]) -> list[str]:
    iv = doc.get("interval90") or {}
    lines = [
        "tree / chain, paired per replication (per-user tok/s; > 1: the tree wins)"
        + (f"; [{_label(iv)}] and its sign" if iv.get("draws") else "")
    ]
    pairs = [(t, ch) for t in doc["trees"] for ch in doc["chains"]]
    cell = 34 if iv else 24
    head = "".join(f"{t + ' / ' + ch:>{max(cell, len(t) + len(ch) + 5)}}" for t, ch in pairs)
    lines.append("users" + head)
    for p in doc["points"]:
        row = f"{p['concurrency']:>5}"
        for t, ch in pairs:
            r = p["tree_over_chain"][t][ch]["per_user_tok_s"]
            row += f"{_pair_cell(r):>{max(cell, len(t) + len(ch) + 5)}}"
        lines.append(row + ("  *" if p.get("beyond_measured_batch") else ""))
    return [*lines, *_notes(doc)]


def _notes(doc: Mapping[str, Any]) -> list[str]:
    """What the intervals drew and the mark of loads beyond the measured batches."""
    iv = doc.get("interval90") or {}
    return _interval_notes(iv, any(p.get("beyond_measured_batch") for p in doc["points"]))


def _label(iv: Mapping[str, Any]) -> str:
    """The label of the document's intervals: what they hold (``sources`` where fewer
    than two draws ran, sim/studies/serving/draw_intervals.py ``IntervalSources``)."""
    return IntervalSources.of(iv.get("sources")).label


def _crossings(doc: Mapping[str, Any]) -> list[str]:
    top = max(doc["concurrencies"])
    held = (doc.get("interval90") or {}).get("sources")
    return [
        "where the tree stops beating the chain:",
        *(
            "  " + _crossing_text(c, top, held)
            for c in doc["crossings"]
            if c["metric"] == "per_user_tok_s"
        ),
    ]


def _draft_table(doc: Mapping[str, Any]) -> list[str]:
    return [
        "best draft per load as serving.draft_table ([from, to users, num_steps, topk, "
        "num_draft_tokens]):",
        "  "
        + (
            str(doc["best_draft_table"]).replace(" ", "")
            if doc["best_draft_table"] is not None
            else "none: a static tree is best at some load, and a draft_table row names chains "
            "and SGLang's trees only (vLLM verifies its speculative_token_tree at every batch)"
        ),
    ]


def render_tree_load(doc: Mapping[str, Any]) -> str:
    """The text of ``specsim tree-load --verbose``: every table, the crossings, the best
    draft table and every assumption."""
    lines = [
        *_head(doc),
        *_defaults(doc),
        *_policies(doc),
        "",
        *_per_user_table(doc),
        "",
        *_ratio_table(doc),
        "",
        *_crossings(doc),
        "",
        *_draft_table(doc),
        "assumptions:",
        *(f"  - {a}" for a in doc["assumptions"]),
    ]
    return "\n".join(lines)


def render_tree_load_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim tree-load``: where each tree stops beating each chain
    (the answer), the best draft per load, the per-user tok/s with their 95% intervals
    (what it rests on, and how far it moves), one line naming the assumptions; at most
    ``WIDTH`` characters a line (``--verbose``: the paired ratios and every assumption)."""
    term = (doc.get("interval90") or {}).get("model_error")
    lines = [
        *_head(doc),
        *_defaults(doc),
        *_crossings(doc),
        *([model_error_line(term)] if term else []),
        *_draft_table(doc),
        "",
        *_per_user_table(doc),
        "",
        *assumptions_line(doc["assumptions"]),
        "(--verbose: the paired tree / chain ratios and every assumption; --json: every field)",
    ]
    return "\n".join(fit_width(lines))


def _users_axis(ax: Any, x: np.ndarray) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.minorticks_off()
    ax.set_xlabel("concurrent users (closed loop)")


@plain_text
def tree_load_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """(file stem, Figure) pairs: per-user and aggregate tok/s against concurrency for every
    policy, and each tree over each chain with its 95% band."""
    x = np.array(doc["concurrencies"], dtype=float)
    points = doc["points"]
    note = (
        f"{doc['scenario']}: {_replications(doc)} x "
        f"{count(doc['requests'], 'request')} per load, seed {doc['seed']}; every policy on the "
        "same users and acceptance draws; "
        "bands: 95% CI"
    )
    fig = Figure(figsize=(11.0, 4.8), dpi=110, layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, metric in zip(axes, METRICS, strict=True):
        for i, name in enumerate(doc["policies"]):
            style: dict[str, Any] = (
                {**BASELINE_STYLE, "linewidth": 2.0}
                if name == "off"
                else {"color": COLORS[i % len(COLORS)], "linewidth": 2.0}
            )
            if name in doc["trees"]:
                style["linestyle"] = "-"
            elif name != "off":
                style["linestyle"] = "--"
            y = [p[metric][name]["mean"] for p in points]
            ax.plot(x, y, marker="o", label=f"{name}", **style)
            lo = [(p[metric][name]["ci95"] or [None])[0] for p in points]
            hi = [(p[metric][name]["ci95"] or [None, None])[1] for p in points]
            if all(v is not None for v in lo + hi):
                ax.fill_between(x, lo, hi, color=style["color"], alpha=0.12)
        _users_axis(ax, x)
        ax.set_ylabel("tok/s")
        ax.set_title(LABELS[metric])
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Chain against tree as concurrency grows")
    add_footnote(fig, note)
    out = [("tree-load-throughput", fig)]
    fig2 = Figure(figsize=(8.0, 5.0), dpi=110, layout="constrained")
    ax = fig2.add_subplot()
    i = 0
    for t in doc["trees"]:
        for ch in doc["chains"]:
            rs = [p["tree_over_chain"][t][ch]["per_user_tok_s"] for p in points]
            color = COLORS[i % len(COLORS)]
            ax.plot(x, [r["mean"] for r in rs], marker="o", color=color, label=f"{t} / {ch}")
            if all(r["ci95"] is not None for r in rs):
                ax.fill_between(
                    x,
                    [r["ci95"][0] for r in rs],
                    [r["ci95"][1] for r in rs],
                    color=color,
                    alpha=0.15,
                )
            i += 1
    ax.axhline(1.0, color="black", linewidth=1.0, linestyle="--")
    _users_axis(ax, x)
    ax.set_ylabel("per-user tok/s, tree / chain (paired)")
    ax.set_title("Where the tree stops beating the chain (below 1: the chain wins)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    add_footnote(fig2, note)
    out.append(("tree-load-ratio", fig2))
    return out
