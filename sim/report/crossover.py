"""Text of a ``crossover`` document: per metric, the gain of each k at each load, and where
speculation stops (or starts) paying, with 95% intervals."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sim.report.conditioning import conditioning_lines
from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig
from sim.report.model_error import model_error_line
from sim.report.screen import assumptions_line, prompt_text, within_screen
from sim.simulation.serving.overload import BOUND_SOURCE, NO_STEADY_STATE, above, at_most
from sim.studies.serving.draw_intervals import IntervalSources

__all__ = [
    "crossing_text",
    "fmt_interval",
    "held_words",
    "load_unit",
    "render_crossover",
    "settings_line",
]

#: Width of a gain cell: "1.191 [1.188, 1.194]" (four k fit 100 columns beside the users
#: and plain decoding's level).
CELL = 20


def load_unit(kind: str) -> str:
    return "users" if kind == "concurrency" else "req/s"


def fmt_interval(
    ci: Sequence[float | None] | None, digits: int = 3, decimals: int | None = None
) -> str:
    """``[lo, hi]`` with None ends as "?"; "" when there is no interval. Its ends to
    ``digits`` significant digits, trailing zeros kept (``format.sig``), or to ``decimals``
    places (as the estimate beside it), so that an interval never reads narrower than it
    is ("[1.2, 1.2]" for 1.196 .. 1.200, "[1, 1.01]" for 1.001 .. 1.011)."""
    if ci is None:
        return ""
    lo, hi = (
        "?" if v is None else (sig(v, digits) if decimals is None else f"{v:.{decimals}f}")
        for v in ci
    )
    return f"[{lo}, {hi}]"


def fmt_load(x: float, kind: str) -> str:
    return f"{x:.0f}" if kind == "concurrency" else sig(x)


def settings_line(doc: Mapping[str, Any]) -> str:
    """Seed, sample size and lengths of a serving study document."""
    slo = doc.get("slo") or {}
    limits = [f"{k.split('_')[0].upper()} <= {v:g} ms" for k, v in slo.items() if v is not None]
    return (
        f"seed {doc.get('seed')}, {count(doc.get('replications'), 'replication')} x "
        f"{count(doc.get('requests'), 'request')} (after {doc.get('warmup_requests')} warm-up "
        "at the "
        f"first load), {lengths_text(doc, screen=True)}, {doc.get('batching')} batching"
        + (f"; SLO {' and '.join(limits)}" if limits else "")
    )


def lengths_text(doc: Mapping[str, Any], screen: bool = False) -> str:
    """The workload's mean lengths, in whole tokens (as ``serve`` prints them); on a
    ``screen``, the prompt's left out when none was given (its assumption is a line of its
    own there, sim/report/screen.py ``assumptions_line``)."""
    mean = doc.get("input_tokens_mean", 0)
    prompt = prompt_text(doc, mean) if screen else f"{mean:.0f} prompt / "
    return f"mean {prompt}{doc.get('output_tokens_mean', 0):.0f} output tokens"


def _fewest(bracket: Sequence[float] | None) -> str:
    """The fewest users past a crossing bracketed by neighbouring user counts ("?": none)."""
    return "?" if bracket is None else f"{bracket[1]:.0f}"


def _ends95(c: Mapping[str, Any]) -> tuple[str, str]:
    """A user-count crossing's 95% interval: each end the fewest users past its band's
    crossing (``_fewest``); an early end whose bracket was not refined to neighbouring
    counts (its bisection stopped inside the 90% interval) the fewest it may be, one past
    its bracket's lower load."""
    early, late = c.get("ci95_brackets") or (None, None)
    if early is not None and early[1] - early[0] > 1:
        return f"{early[0] + 1:.0f}", _fewest(late)
    return _fewest(early), _fewest(late)


def crossing_text(c: Mapping[str, Any], kind: str) -> str:
    """One crossing in words: for a rate the interpolated load and its 95% interval; for
    users, a whole number: the fewest users on the new side of 1 (the crossing lies
    between two neighbouring user counts), with the same for the interval's ends."""
    return _crossing_words(c, kind)


def held_words(held: str | None) -> str:
    """The words before an interval of a serving document: what it holds (its
    ``*_sources`` value, sim/studies/serving/draw_intervals.py ``IntervalSources``;
    None: the inputs' draws)."""
    return IntervalSources.of(held).short


def interval90_words(c: Mapping[str, Any], kind: str) -> str | None:
    """A crossing's 90% interval from inputs and model (None without one; what it holds
    where that is less: ``held_words``); an open end lies beyond the loads the draws
    ran."""
    if "interval90" not in c:
        return None
    lo, hi = c["interval90"]
    low = "below the loads run" if lo is None else f"{lo:.3g}"
    high = "above the loads run" if hi is None else f"{hi:.3g}"
    words = held_words(c.get("interval90_sources"))
    return f"{c['direction']}: {words} [{low}, {high}] {load_unit(kind)}"


def _crossing_words(c: Mapping[str, Any], kind: str) -> str:
    unit = load_unit(kind)
    if kind != "concurrency":
        lo, hi = c["ci95"]
        ci = f"95% {'?' if lo is None else f'{lo:.3g}'} .. {'?' if hi is None else f'{hi:.3g}'}"
        return f"{c['direction']} at {c['at']:.3g} {unit} ({ci})"
    a, b = c["bracket"]
    starts = c["direction"] == "starts paying"
    new, old = ("gain >= 1", "< 1") if starts else ("gain < 1", ">= 1")
    lo, hi = _ends95(c)
    if b - a > 1:  # not refined to neighbouring user counts
        where = f"between {a:.0f} and {b:.0f} {unit} (not refined)"
    else:
        where = f"from {b:.0f} {unit} ({new} there, {old} at {a:.0f})"
    return f"{c['direction']} {where}; 95% from {lo} .. {hi} {unit}"


def _policy_label(name: str) -> str:
    """A policy of an overload check, named by its k."""
    return "plain decoding" if name == "0" else f"k = {name}"


def _not_steady_lines(doc: Mapping[str, Any]) -> list[str]:
    """serve's NOT STEADY for the simulated loads (user counts or rates) whose backlog grew
    through the window."""
    rows = doc.get("not_steady") or []
    if not rows:
        return []
    by_load: dict[float, list[str]] = {}
    for r in rows:
        by_load.setdefault(r["load"], []).append(
            f"{_policy_label(str(r['num_steps']))} in {r['replications']} of {r['of']}"
        )
    noun = "replication" if {r["of"] for r in rows} == {1} else "replications"
    users = doc.get("load_kind") == "concurrency"
    # loads with the same policies and counts share one entry: "10, 48, 64 users (...)"
    by_what: dict[str, list[float]] = {}
    for x, v in by_load.items():
        by_what.setdefault(", ".join(v), []).append(x)
    at = "; ".join(f"{_loads_text(xs, users)} ({what} {noun})" for what, xs in by_what.items())
    return [
        "",
        f"NOT STEADY: {at}: the backlog grew through the window (overload, or runs too short): "
        "transient; more --requests tell which",
    ]


def _loads_text(loads: list[float], users: bool) -> str:
    """'1 user', '10, 48, 64 users' or '2.5, 3 requests/s' (the unit once, after the last)."""
    if users and len(loads) == 1:
        return count(int(loads[0]), "user")
    numbers = ", ".join(f"{int(x)}" if users else f"{x:g}" for x in loads)
    return f"{numbers} {'users' if users else 'requests/s'}"


def _overload_lines(doc: Mapping[str, Any]) -> list[str]:
    """The rates above a bound (serve's words), each policy's bound, and where it is from."""
    checks = doc.get("overloads") or []
    if not checks:
        return _not_steady_lines(doc)
    lines = [*_not_steady_lines(doc), ""]
    for c in checks:
        rate = c["offered_rate_per_s"]
        lines.append(
            f"UNSTABLE: {above(rate, [_policy_label(n) for n in c['unstable']])}: {NO_STEADY_STATE}"
        )
    bounds = checks[0]["service_bounds"]
    lines.append(
        "  service bounds: "
        + "; ".join(f"{_policy_label(n)} {at_most(b['rate_per_s'])}" for n, b in bounds.items())
    )
    lines.append(f"  {BOUND_SOURCE}")
    return lines


def _crossing_lines(c: Mapping[str, Any], kind: str, k: int) -> list[str]:
    """One k's crossings in words, each with its 90% interval from inputs and model, and
    the gain nearest 1 (``--verbose``)."""
    unit = load_unit(kind)
    text = (
        "; ".join(crossing_text(x, kind) for x in c["crossings"])
        if c["crossings"]
        else c["summary"]
    )
    if c["crossings"] and c.get("overload_summary"):
        text += f"; {c['overload_summary']}"
    lines = [f"  k={k}: {text}"]
    for x in c["crossings"]:
        words = interval90_words(x, kind)
        if words:
            lines.append(f"       {words}")
    if c.get("nearest_one") and c["nearest_one"]["gain_interval90"]:
        n = c["nearest_one"]
        lo, hi = n["gain_interval90"]
        lines.append(
            f"       gain nearest 1 at {fmt_load(n['load'], kind)} {unit}: "
            f"{held_words(n.get('gain_interval90_sources'))} [{lo:.3f}, {hi:.3f}]"
        )
    return lines


def _short_crossing(x: Mapping[str, Any], kind: str) -> str:
    """A crossing in a few words for the first screen: where, its 95% interval and its 90%
    interval from inputs and model (the bracket of user counts is in the table above)."""
    unit = load_unit(kind)
    end = lambda v: "?" if v is None else f"{v:.3g}"  # noqa: E731
    if kind != "concurrency":
        lo, hi = x["ci95"]
        text = f"{x['direction']} at {x['at']:.3g} {unit} (95%: {end(lo)} .. {end(hi)}"
    else:
        a, b = x["bracket"]
        lo, hi = _ends95(x)
        where = f"between {a:.0f} and {b:.0f}" if b - a > 1 else f"from {b:.0f}"
        text = f"{x['direction']} {where} {unit} (95%: {lo} .. {hi}"
    if "interval90" in x:
        lo90, hi90 = x["interval90"]
        text += f"; {held_words(x.get('interval90_sources'))}: {end(lo90)} .. {end(hi90)}"
    return text + ")"


def _short_crossing_lines(c: Mapping[str, Any], kind: str, k: int) -> list[str]:
    """One k's crossings on the first screen, one line each k (wrapped when long)."""
    if not c["crossings"]:
        return [f"  k={k}: {c['summary']}"]
    text = "; ".join(_short_crossing(x, kind) for x in c["crossings"])
    if c.get("overload_summary"):
        text += f"; {c['overload_summary']}"
    return [f"  k={k}: {text}"]


def _metric_lines(
    doc: Mapping[str, Any], metric: str, crossings: Callable[..., list[str]]
) -> list[str]:
    """One metric's table (a row per load: plain decoding's level, then each k's gain and
    its 95% interval) and each k's crossings (``crossings``: in full or short)."""
    kind = doc["load_kind"]
    unit = load_unit(kind)
    ks = doc["num_steps"]
    meta = doc["metrics"][metric]
    by_k = {c["num_steps"]: c for c in doc["curves"] if c["metric"] == metric}
    loads = sorted({p["load"] for c in by_k.values() for p in c["points"]})
    level = f"k=0 in {meta['unit']}" if meta["unit"] else "k=0 level"
    lines = [
        "",
        f"{meta['label']}: {level}, each k's gain over it and its 95% interval",
        (f"  {unit:>5}  {'k=0':>6}  " + " ".join(f"{'k=' + str(k):<{CELL}}" for k in ks)).rstrip(),
    ]
    for x in loads:
        base = None
        cells = []
        for k in ks:
            pt = next((p for p in by_k[k]["points"] if p["load"] == x), None)
            if pt is None or pt["gain"]["mean"] is None:
                cells.append(" " * CELL)
                continue
            g = pt["gain"]
            cells.append(f"{g['mean']:.3f} {fmt_interval(g['ci95'], decimals=3)}".ljust(CELL))
            base = pt["baseline"]["mean"]
        level_cell = "" if base is None else sig(base, 4)
        lines.append(f"  {fmt_load(x, kind):>5}  {level_cell:>6}  {' '.join(cells)}".rstrip())
    for k in ks:
        lines += crossings(by_k[k], kind, k)
    return lines


def _crossing_brief(c: Mapping[str, Any], kind: str) -> str:
    """A crossing without its bracket's sides and its intervals (those are in --verbose and
    the JSON), as the first screen's other metrics write it: for a rate its interpolated
    load; for users the fewest on the new side of 1, or "at a-b" where the bracket was not
    refined to neighbouring user counts."""
    unit = load_unit(kind)
    if kind != "concurrency":
        return f"{c['direction']} at {c['at']:.3g} {unit}"
    a, b = c["bracket"]
    where = f"at {a:.0f}-{b:.0f}" if b - a > 1 else f"from {b:.0f}"
    return f"{c['direction']} {where} {unit}"


#: A curve without a crossing in the other metrics' lines, whose heading says "at the loads
#: simulated" once.
_BRIEF_SUMMARY = {
    "pays at every load simulated": "pays at every load",
    "never pays at the loads simulated": "never pays",
}


def _other_metric_line(doc: Mapping[str, Any], metric: str) -> str:
    """A metric's crossings in one line (``_crossing_brief``; a curve without one as
    ``_BRIEF_SUMMARY`` words it): the k with the same crossings together."""
    kind = doc["load_kind"]
    groups: dict[str, list[str]] = {}
    for c in (c for c in doc["curves"] if c["metric"] == metric):
        text = (
            ", ".join(_crossing_brief(x, kind) for x in c["crossings"])
            if c["crossings"]
            else _BRIEF_SUMMARY.get(c["summary"], c["summary"])
        )
        groups.setdefault(text, []).append(str(c["num_steps"]))
    parts = [f"k={','.join(ks)} {text}" for text, ks in groups.items()]
    return f"  {doc['metrics'][metric]['label']}: " + "; ".join(parts)


def _header_lines(doc: Mapping[str, Any]) -> list[str]:
    kind = doc["load_kind"]
    grid = doc["grid"]
    return [
        f"crossover: {doc['scenario']}, {'closed loop' if kind == 'concurrency' else 'Poisson'} "
        f"{fmt_load(grid[0], kind)}..{fmt_load(grid[-1], kind)} {load_unit(kind)}, k = "
        + ", ".join(str(k) for k in doc["num_steps"]),
        settings_line(doc),
        *conditioning_lines(doc),
        "gain = k over plain decoding (k=0), paired on the same arrivals (> 1: pays; "
        "latencies: k=0 / k)",
    ]


def _tail_lines(doc: Mapping[str, Any]) -> list[str]:
    """Overloads, engine configs, assumptions and the count of runs."""
    lines = _overload_lines(doc)
    if doc.get("model_error"):
        lines += ["", model_error_line(doc["model_error"])]
    for k, configs in doc.get("engine_configs", {}).items():
        lines += ["", f"k = {k} up to the crossover, as engine configs (table {configs['table']}):"]
        lines += engine_config_lines(configs)[1:]
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    lines.append(f"({doc['runs']} policy runs)")
    return lines


def _gain_grid_lines(doc: Mapping[str, Any], metric: str) -> list[str]:
    """One metric's table turned on its side for the first screen: a column per load, a
    row for plain decoding's level and a row of gains per k (the 95% intervals are in
    ``--verbose``); a blank cell where that k did not run the load."""
    kind = doc["load_kind"]
    meta = doc["metrics"][metric]
    by_k = {c["num_steps"]: c for c in doc["curves"] if c["metric"] == metric}
    loads = sorted({p["load"] for c in by_k.values() for p in c["points"]})
    base: dict[float, float] = {}
    rows: list[str] = []
    for k, c in by_k.items():
        cells = {p["load"]: p for p in c["points"] if p["gain"]["mean"] is not None}
        base |= {x: p["baseline"]["mean"] for x, p in cells.items()}  # the last k's, as --verbose
        row = "".join(f"{cells[x]['gain']['mean']:>7.3f}" if x in cells else " " * 7 for x in loads)
        rows.append(f"  {'k=' + str(k):<12}{row}".rstrip())
    level = f"k=0 {meta['unit']}" if meta["unit"] else "k=0"
    head = "".join(f"{fmt_load(x, kind):>7}" for x in loads)
    return [
        f"{meta['label']} by load: k=0's level and each k's gain (--verbose: 95% intervals)",
        f"  {load_unit(kind):<12}{head}",
        f"  {level:<12}"
        + "".join(f"{sig(base[x], 4):>7}" if x in base else " " * 7 for x in loads),
        *rows,
    ]


def render_crossover_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim crossover``: the answer first (where each k's paired
    gain in the first metric crosses 1, with its 95% interval and 90% interval from inputs
    and model; the other metrics' crossings in a line each), then what it rests on (the
    first metric's gains by load, the sample, the model error, the assumptions in one
    line). ``--verbose``: every metric's table with 95% intervals, every crossing's
    bracket and every assumption."""
    kind = doc["load_kind"]
    grid = doc["grid"]
    first, *rest = doc["metrics"]
    by_k = {c["num_steps"]: c for c in doc["curves"] if c["metric"] == first}
    lines = [
        f"crossover: {doc['scenario']}, {'closed loop' if kind == 'concurrency' else 'Poisson'} "
        f"{fmt_load(grid[0], kind)}..{fmt_load(grid[-1], kind)} {load_unit(kind)}, k = "
        + ", ".join(str(k) for k in doc["num_steps"]),
        f"{doc['metrics'][first]['label']}: where each k's paired gain over plain decoding (k=0) "
        "crosses 1",
    ]
    for k in doc["num_steps"]:
        lines += _short_crossing_lines(by_k[k], kind, k)
    others = (
        [
            "other metrics at the loads simulated (latencies' gain: k=0 / k; --verbose: tables):",
            *(_other_metric_line(doc, m) for m in rest),
        ]
        if rest
        else []
    )
    labels = ", ".join(doc["metrics"][m]["label"] for m in rest)
    grid = ["", *_gain_grid_lines(doc, first)]
    basis = conditioning_lines(doc, brief=True)
    if doc.get("model_error"):
        basis.append(model_error_line(doc["model_error"]))
    configs_by_k = doc.get("engine_configs", {})
    if len(configs_by_k) > 1:  # ten lines a k would push the answer off the screen
        lines.append(
            f"engine configs of k = {', '.join(configs_by_k)} up to their crossovers: --verbose"
        )
    for k, configs in configs_by_k.items() if len(configs_by_k) == 1 else ():
        lines += [f"k = {k} up to the crossover, as engine configs (table {configs['table']}):"]
        lines += engine_config_lines(configs)[1:]
    sample = f"{settings_line(doc)}; {count(doc['runs'], 'policy run')}"
    rests = assumptions_line(doc.get("assumptions", ()), lead=sample)
    head = lines[: 2 + len(doc["num_steps"])]  # the title, the metric and its crossings
    configs = lines[len(head) :]
    blocks: list[tuple[list[str], str | None]] = [
        (head, None),
        (others, f"other metrics ({labels}): their crossings with --verbose" if rest else None),
        (_overload_lines(doc), None),
        (grid, f"{doc['metrics'][first]['label']} by load, each k's gain: --verbose"),
        (basis, None),
        (configs, None),
        (rests, None),
    ]
    return "\n".join(within_screen(blocks))


def render_crossover(doc: Mapping[str, Any], metrics: Sequence[str] | None = None) -> str:
    """The text of ``specsim crossover --verbose``: every metric's gains by load and k
    (``metrics``: only these), the crossings, overloads and the assumptions."""
    lines = _header_lines(doc)
    for metric in doc["metrics"]:
        if metrics is None or metric in metrics:
            lines += _metric_lines(doc, metric, _crossing_lines)
    return "\n".join(lines + _tail_lines(doc))
