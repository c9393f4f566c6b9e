"""Text of a ``crossover`` document: per metric, the gain of each k at each load, and where
speculation stops (or starts) paying, with 95% intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig
from sim.report.screen import first_screen
from sim.simulation.serving.overload import BOUND_SOURCE, NO_STEADY_STATE, above, at_most

__all__ = ["crossing_text", "fmt_interval", "load_unit", "render_crossover", "settings_line"]


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
        f"first load), {lengths_text(doc)}, {doc.get('batching')} batching"
        + (f"; SLO {' and '.join(limits)}" if limits else "")
    )


def lengths_text(doc: Mapping[str, Any]) -> str:
    """The workload's mean lengths, in whole tokens (as ``serve`` prints them)."""
    return (
        f"mean {doc.get('input_tokens_mean', 0):.0f} prompt / "
        f"{doc.get('output_tokens_mean', 0):.0f} output tokens"
    )


def _fewest(bracket: Sequence[float] | None) -> str:
    """The fewest users past a crossing bracketed by neighbouring user counts ("?": none)."""
    return "?" if bracket is None else f"{bracket[1]:.0f}"


def crossing_text(c: Mapping[str, Any], kind: str) -> str:
    """One crossing in words: for a rate the interpolated load and its 95% interval; for
    users, a whole number: the fewest users on the new side of 1 (the crossing lies
    between two neighbouring user counts), with the same for the interval's ends."""
    return _crossing_words(c, kind)


def interval90_words(c: Mapping[str, Any], kind: str) -> str | None:
    """A crossing's 90% interval from inputs and model (None without one); an open end
    lies beyond the loads the draws ran."""
    if "interval90" not in c:
        return None
    lo, hi = c["interval90"]
    low = "below the loads run" if lo is None else f"{lo:.3g}"
    high = "above the loads run" if hi is None else f"{hi:.3g}"
    return f"{c['direction']}: 90% from inputs and model [{low}, {high}] {load_unit(kind)}"


def _crossing_words(c: Mapping[str, Any], kind: str) -> str:
    unit = load_unit(kind)
    if kind != "concurrency":
        lo, hi = c["ci95"]
        ci = f"95% {'?' if lo is None else f'{lo:.3g}'} .. {'?' if hi is None else f'{hi:.3g}'}"
        return f"{c['direction']} at {c['at']:.3g} {unit} ({ci})"
    a, b = c["bracket"]
    starts = c["direction"] == "starts paying"
    new, old = ("gain >= 1", "< 1") if starts else ("gain < 1", ">= 1")
    lo, hi = (_fewest(x) for x in c.get("ci95_brackets") or (None, None))
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
    at = "; ".join(
        f"{count(int(x), 'user') if users else f'{x:g} requests/s'} ({', '.join(v)} {noun})"
        for x, v in by_load.items()
    )
    return [
        "",
        f"NOT STEADY: {at}: the requests in the system grew through the measurement window: "
        "above what the server answers, or runs too short to fill; the levels and gains "
        "there are transient (more --requests tell which)",
    ]


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


def render_crossover_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim crossover``: the first metric's gains by load and k
    with its crossings, the other metrics' crossings in a line each, one line of
    assumptions (``--verbose``: every metric's table and every assumption)."""
    first = next(iter(doc["metrics"]))
    full = render_crossover(doc, metrics=(first,))
    kind = doc["load_kind"]
    others = []
    for metric, meta in doc["metrics"].items():
        if metric == first:
            continue
        parts = []
        for c in (c for c in doc["curves"] if c["metric"] == metric):
            # each crossing without its bracket and interval (in --verbose and the JSON)
            text = (
                ", ".join(crossing_text(x, kind).split(" (")[0] for x in c["crossings"])
                if c["crossings"]
                else c["summary"]
            )
            parts.append(f"k={c['num_steps']} {text}")
        others.append(f"  {meta['label']}: " + "; ".join(parts))
    if others:
        lines = full.splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.startswith("  k=")) + len(doc["num_steps"])
        lines[at:at] = ["", "other metrics (--verbose: their tables):", *others]
        full = "\n".join(lines)
    return first_screen(full, doc.get("assumptions", ()))


def render_crossover(doc: Mapping[str, Any], metrics: Sequence[str] | None = None) -> str:
    """The text of ``specsim crossover --verbose``: every metric's gains by load and k
    (``metrics``: only these), the crossings, overloads and the assumptions."""
    kind = doc["load_kind"]
    unit = load_unit(kind)
    ks = doc["num_steps"]
    grid = doc["grid"]
    lines = [
        f"crossover: {doc['scenario']}, {'closed loop' if kind == 'concurrency' else 'Poisson'} "
        f"{fmt_load(grid[0], kind)}..{fmt_load(grid[-1], kind)} {unit}, k = "
        + ", ".join(str(k) for k in ks),
        settings_line(doc),
        "gain = speculation at k over plain decoding on the same arrivals, replication by "
        "replication (> 1: speculation pays; for latencies baseline / speculative); "
        "95% intervals over replications",
    ]
    curves = doc["curves"]
    for metric, meta in doc["metrics"].items():
        if metrics is not None and metric not in metrics:
            continue
        unit_m = f" ({meta['unit']})" if meta["unit"] else ""
        lines += ["", f"{meta['label']}{unit_m}: gain by k"]
        by_k = {c["num_steps"]: c for c in curves if c["metric"] == metric}
        loads = sorted({p["load"] for c in by_k.values() for p in c["points"]})
        header = f"  {unit:>7}  " + "".join(f"{'k=' + str(k):<22}" for k in ks)
        base_col = f"{'no speculation':>18}"
        lines.append(header + base_col)
        for x in loads:
            row = f"  {fmt_load(x, kind):>7}  "
            base = None
            for k in ks:
                pt = next((p for p in by_k[k]["points"] if p["load"] == x), None)
                if pt is None or pt["gain"]["mean"] is None:
                    row += f"{'':<22}"
                    continue
                g = pt["gain"]
                cell = f"{g['mean']:.3f} {fmt_interval(g['ci95'], decimals=3)}"
                row += f"{cell:<22}"
                base = pt["baseline"]["mean"]
            row += f"{'' if base is None else sig(base, 4):>18}"
            lines.append(row.rstrip())
        for k in ks:
            c = by_k[k]
            text = (
                "; ".join(crossing_text(x, kind) for x in c["crossings"])
                if c["crossings"]
                else c["summary"]
            )
            if c["crossings"] and c.get("overload_summary"):
                text += f"; {c['overload_summary']}"
            lines.append(f"  k={k}: {text}")
            for x in c["crossings"]:
                words = interval90_words(x, kind)
                if words:
                    lines.append(f"       {words}")
            if c.get("nearest_one") and c["nearest_one"]["gain_interval90"]:
                n = c["nearest_one"]
                lo, hi = n["gain_interval90"]
                lines.append(
                    f"       gain nearest 1 at {fmt_load(n['load'], kind)} {unit}: "
                    f"90% from inputs and model [{lo:.3f}, {hi:.3f}]"
                )
    lines += _overload_lines(doc)
    for k, configs in doc.get("engine_configs", {}).items():
        lines += ["", f"k = {k} up to the crossover, as engine configs (table {configs['table']}):"]
        lines += engine_config_lines(configs)[1:]
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    lines.append(f"({doc['runs']} policy runs)")
    return "\n".join(lines)
