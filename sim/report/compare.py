"""Text of a comparison document (``Comparison.to_dict()``): one column per scenario."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.model.cycle import PHASES
from sim.report.format import fmt_alpha
from sim.report.screen import fit_width
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


#: Scenarios a first screen lists one by one (``--verbose``: every one).
SCREEN_SCENARIOS = 4


def render_comparison_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim compare``: each scenario's speculative tok/s with its
    ratio to the first and its 90% interval (the answer and how far it moves), what it
    rests on (hardware, k, accept length, the cycle's largest phase, overrides), each
    target in a line per scenario, and the notes in a line each; at most
    ``SCREEN_SCENARIOS`` scenarios (the best, the first kept), ``--verbose`` for the
    full table."""
    cols = doc["scenarios"]
    shown = [cols[0], *sorted(cols[1:], key=lambda c: -c["tok_s_mean"])[: SCREEN_SCENARIOS - 1]]
    shown = [c for c in cols if any(c is s for s in shown)]  # in the given order
    width = min(32, max(len(c["label"]) for c in shown))

    def name(c: Mapping[str, Any]) -> str:
        label = c["label"] if len(c["label"]) <= width else c["label"][: width - 3] + "..."
        return label.ljust(width)

    cells = []
    for c in shown:
        ratio = "" if c is cols[0] else f" (x{c['ratios']['tok_s_mean']:.2f})"
        unc = c.get("tok_s_interval90")
        moves = f"{unc[0]:.1f}-{unc[1]:.1f}" if unc and None not in unc else "-"
        cells.append((f"{c['tok_s_mean']:.1f}{ratio}", moves))
    w_tok = max(len(a) for a, _ in cells)
    w_unc = max(len(b) for _, b in cells)
    lines = [f"speculative tok/s, ratio to {cols[0]['label']}, 90% from inputs and model:"]
    for c, (tok, moves) in zip(shown, cells, strict=True):
        lines.append(
            f"  {name(c)}  {tok:<{w_tok}}  90% {moves:<{w_unc}}  speedup {c['speedup']:.2f} "
            f"over plain {c['baseline_tok_s']:.1f}"
        )
    if len(shown) < len(cols):
        lines.append(f"  ({len(cols) - len(shown)} more scenarios: --verbose)")
    hw = {id(c): _hardware(c).removesuffix(" (re-composed)") for c in shown}
    w_hw = max(len(h) for h in hw.values())
    lines += [
        "",
        f"rests on:{'':<{width - 5}}{'hardware':<{w_hw}}    k  accept  cycle ms  largest part",
    ]
    for c in shown:
        phase, ms = max(c["cycle_ms"].items(), key=lambda kv: kv[1])
        over = _overrides(c)
        lines.append(
            f"  {name(c)}  {hw[id(c)]:<{w_hw}}  {c['num_steps']:>3}  {c['accept_length']:>6.2f}"
            f"  {c['cycle_ms_mean']:>8.1f}  {phase} {ms:.1f}" + ("" if over == "-" else f"; {over}")
        )
    if doc["targets"]:
        targets = {
            id(c): [
                (f"k={_best(row)}" if row["reachable"] else "unreachable")
                + f" (flat {fmt_alpha(row.get('flat_alpha_at_best'))})"
                for row in c["targets"]
            ]
            for c in shown
        }
        w_t = max(14, *(len(x) for row in targets.values() for x in row))
        heads = "".join(f"  {f'{t:g} tok/s':<{w_t}}" for t in doc["targets"])
        lines += ["", "first-position rate needed at the best k (flat rates):"]
        lines.append(f"  {'':<{width}}{heads}")
        for c in shown:
            lines.append(f"  {name(c)}" + "".join(f"  {x:<{w_t}}" for x in targets[id(c)]))
    full = render_comparison(doc).splitlines()
    notes = full[next(i for i, n in enumerate(full) if n.startswith("(Monte Carlo")) + 1 :]
    notes = [n for n in notes if not n.startswith("(targets are ")]  # in one line, below
    hidden = doc.get("targets_not_shown", [])
    if notes or hidden:
        lines.append("")
    for note in notes:
        text = note.strip("()")
        cut = text.find(": ", text.find(" ") + 1)  # the note's claim, not its reasons
        lines.append(text if cut < 0 else text[:cut])
    if hidden:
        own = "; ".join(
            f"{h['scenario']}'s own {', '.join(f'{t:g}' for t in h['tok_s'])}" for h in hidden
        )
        lines.append(f"targets are {cols[0]['label']}'s; not shown: {own} tok/s (--target)")
    lines.append("(--verbose: the full table, intervals' reasons and notes; --json: every field)")
    return "\n".join(ln.rstrip() for ln in fit_width(lines))


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
