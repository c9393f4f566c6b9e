"""Text reports of ``specsim search`` (acceptance) and ``specsim search --solve`` (a lever),
from their JSON documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.binding.provenance import Assumption
from sim.report.format import count, fmt_alpha
from sim.report.screen import fit_width, measure_next_lines, plain_reach, rests_on_line, wrap
from sim.report.uncertainty import (
    LISTED_ORIGINS,
    assumption_lines,
    depends_on_lines,
    fmt_interval,
    header_lines,
)
from sim.uncertainty.answers import TargetUncertainty
from sim.uncertainty.drivers import Driver, MeasureNext
from sim.uncertainty.interval import INTERVAL_LABEL, Interval

# --------------------------------------------------------------------------- text reports


def _a(x: float | None) -> str:
    return fmt_alpha(x, missing="-")


def _ci(ci: Sequence[float | None]) -> str:
    lo, hi = ci
    return f"[{_a(lo)}, {'>' + _a(None) if hi is None else _a(hi)}]".replace(">-", "open")


def _refused(doc: Mapping[str, Any]) -> str:
    """How many acceptance values a search at a rate refused without a run (above
    speculation's service bound), after the count of runs; nothing when none."""
    n = (doc.get("stability") or {}).get("not_simulated", 0)
    if not n:
        return ""
    values = "value" if n == 1 else "values"
    return f" ({n} more acceptance {values} above the service bound, refused, not simulated)"


def render_search(doc: Mapping[str, Any], verbose: bool = True) -> str:
    """The text report of ``specsim search`` (from ``SearchResult.to_dict()``); without
    ``verbose`` the first screen: every target's answer, its interval, the draft length
    it is at and what moves it (the per-k table and the inputs under ``--verbose``)."""
    if not verbose:
        return _search_screen(doc)
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    lines = [
        f"search: {doc['scenario']}: lowest acceptance for {what} >= target",
        f"  Monte Carlo: {doc['engine']} engine, {doc.get('fidelity', 'cycle')} fidelity, "
        f"{count(doc['replications'], 'replication')} x "
        f"{count(doc['requests'], 'request')} of {count(doc['output_tokens'], 'token')}, "
        f"seed {doc['seed']}; {count(doc['evaluations'], 'Monte Carlo evaluation')}"
        f"{_refused(doc)}",
        f"  {doc['acceptance_lever']}",
    ]
    if "hardware" in doc:
        lines[1:1] = header_lines(doc["hardware"], doc.get("overrides", []))
    if doc.get("load"):  # searched at a serving load (sim/studies/serving/search.py)
        lines.append(f"  load: {doc['load']['label']}; {doc['note']}")
    methods = {r.get("method") for t in doc["targets"] for r in t["per_num_steps"]}
    if "exact" in methods:
        lines.append(
            "  roots on the exact finite-N law (one shared profile, fixed cycles); one Monte "
            "Carlo run checks each root and gives its interval"
            + (" (Monte Carlo bisection elsewhere)" if "monte_carlo" in methods else "")
        )
    now = doc.get("current")
    if now:
        first = now.get("first_rate")
        draft = now.get("draft") or f"k = {now['num_steps']}"
        top1 = "top-1 " if draft.startswith("tree") else ""
        lines.append(
            f"  now: {draft}, {top1}first-position rate "
            f"{_a(first)}, mean {now['alpha']:.3f}, {now['closed_form_tok_s']:.1f} tok/s in "
            "closed form"
        )
    for t in doc["targets"]:
        lines.append("")
        plain = _plain_reaches(t, doc)
        lines += [plain[0], _headline(t)] if plain else [_headline(t)]
        unc = t.get("uncertainty")
        if unc:
            lines.append(
                f"  {INTERVAL_LABEL} (closed form, best k {_range(unc)}): first-position "
                f"rate {fmt_interval(unc['interval90'])}, mean "
                f"{fmt_interval(unc['mean_rate_interval90'])}, flat at its own best k "
                f"{fmt_interval(unc['flat_interval90'])}"
            )
        if t.get("note"):
            lines.append(f"  note: {t['note']}")
        rows = t["per_num_steps"]
        intervals = [fmt_interval(r["interval90"]) if r.get("interval90") else "-" for r in rows]
        # an interval with an unreachable end is wider than the column: widen it, header too
        width = max([18, *map(len, intervals)])
        lines.append(
            "     k   first   Monte Carlo 95% CI  mean    flat cf   "
            f"{'first: 90% in+model':<{width}} ceiling tok/s"
        )
        for r, interval in zip(rows, intervals, strict=True):
            first = _a(r.get("first_rate")) if r["reachable"] else "unreachable"
            ci = _ci(r.get("first_rate_ci95", [None, None])) if r["reachable"] else ""
            if r.get("over_cap"):  # the shape asks for a first-position rate above 1
                first, ci = "> 1", ""
            lines.append(
                f"  {r['num_steps']:>4}   {first:<11} {ci:<16}{_a(r['alpha']):>6}  "
                f"{_a(r.get('flat_alpha')):>7}   {interval:<{width}} {r['ceiling_tok_s']:>10.1f}"
            )
        if unc:
            lines += depends_on_lines(target_from_doc(unc))
    if doc.get("assumptions"):
        lines += ["", *assumption_lines(assumptions_from_doc(doc["assumptions"]), indent="")]
    return "\n".join(lines)


def _plain_reaches(t: Mapping[str, Any], doc: Mapping[str, Any]) -> tuple[str, bool] | None:
    """(the sentence, whether surely) for a mean tok/s target at or below plain decoding's
    nominal speed (``plain_reach``: with its 90% interval where inputs move it; surely
    reached, any acceptance does and the rates searched for it are 0), else None."""
    reach = None if doc.get("quantile") is not None else plain_reach(t["tok_s"], doc)
    if reach is None:
        return None
    phrase, sure = reach
    tail = ", no speculation needed" if sure else ""
    return f"target {t['tok_s']:g} tok/s: {phrase}{tail}", sure


def _headline(t: Mapping[str, Any]) -> str:
    """One target's answer in a sentence."""
    if t["reachable"]:
        return (
            f"target {t['tok_s']:g} tok/s: best k = {t['best_num_steps']}, first-position "
            f"rate {_a(t['first_rate'])} (Monte Carlo 95% CI {_ci(t['first_rate_ci95'])}), "
            f"mean {_a(t['alpha'])}, accept length {t['required_accept_length']:.2f}; "
            f"flat {_a(t.get('flat_alpha'))} at its own best k = {t.get('flat_num_steps')} "
            "(closed form)"
        )
    if t.get("needs_rates_falling_less"):
        flat = (
            f"flat rates reach it at {_a(t.get('flat_alpha'))} (k = "
            f"{t.get('flat_num_steps')}, closed form)"
            if t.get("flat_alpha") is not None
            else "flat rates do not reach it"
        )
        return (
            f"target {t['tok_s']:g} tok/s: out of reach under the shape: needs "
            f"first-position rate 1.000 (k = {t['best_num_steps']}) — not reachable; "
            f"{flat}; reachable if rates fall less than the shape"
        )
    return f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}"


def _search_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim search``."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    lines = [f"search: {doc['scenario']}: lowest acceptance for {what} >= target"]
    if "hardware" in doc:
        lines += header_lines(doc["hardware"], doc.get("overrides", []))
    if doc.get("load"):
        lines.append(f"  load: {doc['load']['label']}")
    now = doc.get("current")
    if now:
        lines.append(
            f"  now: k = {now['num_steps']}, first-position rate {_a(now.get('first_rate'))}, "
            f"{now['closed_form_tok_s']:.1f} tok/s in closed form"
        )
    for t in doc["targets"]:
        plain = _plain_reaches(t, doc)
        lines += ["", *wrap(plain[0], indent="", more="  ")] if plain else [""]
        if plain and plain[1] and not t.get("first_rate"):  # any acceptance: nothing to ask
            continue
        lines += wrap(_headline(t), indent="", more="  ")
        unc = t.get("uncertainty")
        if unc:
            lines += wrap(
                f"{INTERVAL_LABEL} (closed form, best k {_range(unc)}): first-position rate "
                f"{fmt_interval(unc['interval90'])}; flat {fmt_interval(unc['flat_interval90'])}"
            )
            drivers = unc.get("drivers") or []
            if drivers:
                d = drivers[0]
                lines += wrap(
                    f"moves most with {d['field']}: {d['input_low']:.4g} .. "
                    f"{d['input_high']:.4g} -> {_a(d['low'])} .. {_a(d['high'])}"
                )
        if t.get("note"):
            lines += wrap(f"note: {t['note']}")
    lines += measure_next_lines(doc["targets"])
    if doc.get("assumptions"):
        lines += rests_on_line(doc["assumptions"], LISTED_ORIGINS)
    lines += wrap(
        f"{count(doc['evaluations'], 'Monte Carlo evaluation')} ({doc['engine']} engine, "
        f"{doc['replications']} x {count(doc['requests'], 'request')}, seed {doc['seed']}); "
        "--verbose: the table by k and every input"
    )
    return "\n".join(fit_width(lines))


def lever_depends_on(unc: Mapping[str, Any], field_name: str) -> list[str]:
    """The "depends on" block of a solved lever (values in the lever's units)."""
    drivers = unc.get("drivers", [])
    lines = []
    if drivers:
        lines.append(f"  depends on ({field_name} with one input at its 5% / 95% end):")
        width = max(len(d["field"]) for d in drivers)
        for d in drivers:
            lines.append(
                f"    {d['field']:<{width}}  {d['input_low']:.4g} .. {d['input_high']:.4g}"
                f"  ->  {_g(d['low'])} .. {_g(d['high'])}"
            )
    m = unc.get("measure_next")
    if m:
        lines.append(
            f"  measure next: {m['what']}; if it comes out at today's estimate the interval "
            f"narrows to {fmt_interval(m['interval90_after'], '.4g')}"
        )
    return lines


def _range(unc: Mapping[str, Any]) -> str:
    r = unc.get("best_num_steps_range")
    return "-" if not r else (str(r[0]) if r[0] == r[1] else f"{r[0]}-{r[1]}")


def target_from_doc(u: Mapping[str, Any]) -> TargetUncertainty:
    """A ``TargetUncertainty`` back from its ``to_dict`` document (for the text)."""

    def iv(v: Sequence[float | None]) -> Interval:
        return Interval(v[0], v[1])

    m = u.get("measure_next")
    return TargetUncertainty(
        tok_s=u["tok_s"],
        best_num_steps=u["best_num_steps"],
        first_rate=u["first_rate"],
        mean_rate=u["mean_rate"],
        flat_alpha=u["flat_alpha"],
        interval90=iv(u["interval90"]),
        mean_rate_interval90=iv(u["mean_rate_interval90"]),
        flat_interval90=iv(u["flat_interval90"]),
        num_steps_range=tuple(u["best_num_steps_range"]) if u["best_num_steps_range"] else None,
        drivers=tuple(
            Driver(d["field"], d["input_low"], d["input_high"], d["low"], d["high"])
            for d in u["drivers"]
        ),
        measure_next=(MeasureNext(m["what"], m["field"], iv(m["interval90_after"])) if m else None),
        per_num_steps=(),
    )


def assumptions_from_doc(rows: Sequence[Mapping[str, Any]]) -> list[Assumption]:
    return [
        Assumption(
            r["field"],
            r["value"],
            r["origin"],
            r.get("stderr"),
            tuple(r["range"]) if r.get("range") else None,
            r.get("reason", ""),
        )
        for r in rows
    ]


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def render_lever(doc: Mapping[str, Any], verbose: bool = True) -> str:
    """The text report of ``specsim search --solve FIELD`` (not ``verbose``: the inputs it
    rests on counted in a line, every line within ``WIDTH``)."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    field_name = doc["field"]
    lines = [
        f"solve: {doc['scenario']}: {field_name} (now {doc['current']:g}, giving "
        f"{doc['current_tok_s']:.1f} tok/s) for {what} >= target, everything else fixed",
        f"  Monte Carlo: {doc['engine']} engine, {doc.get('fidelity', 'cycle')} fidelity, "
        f"{count(doc['replications'], 'replication')} x "
        f"{count(doc['requests'], 'request')}, seed {doc['seed']}; "
        f"{count(doc['evaluations'], 'Monte Carlo evaluation')}",
    ]
    if "hardware" in doc:
        lines[1:1] = header_lines(doc["hardware"], doc.get("overrides", []))
    for t in doc["targets"]:
        if t["reachable"]:
            lo, hi = (_g(v) for v in t["value_ci95"])
            lines.append(
                f"target {t['tok_s']:g} tok/s: {field_name} {doc['direction']} "
                f"{_g(t['value'])} (Monte Carlo 95% CI [{lo}, {hi}]; closed form "
                f"{_g(t['closed_form_value'])})"
            )
        else:
            lines.append(f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}")
        unc = t.get("uncertainty")
        if unc:
            lines.append(
                f"  {INTERVAL_LABEL} (closed form): {fmt_interval(unc['interval90'], '.4g')}"
            )
            lines += lever_depends_on(unc, field_name)
    lines.extend(f"warning: {w}" for w in doc.get("warnings", []))
    if not verbose:
        rests = rests_on_line(doc.get("assumptions") or [], LISTED_ORIGINS)
        return "\n".join(fit_width([*lines, "", *(r.removeprefix("  ") for r in rests)]))
    if doc.get("assumptions"):
        lines += ["", *assumption_lines(assumptions_from_doc(doc["assumptions"]), indent="")]
    return "\n".join(lines)
