"""Text of a ``controllers`` document: each policy per phase against the static best-k
table, and which wins where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.report.conditioning import conditioning_lines
from sim.report.crossover import fmt_interval
from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig
from sim.report.model_error import model_error_line
from sim.report.screen import assumptions_line, within_screen
from sim.studies.serving.draw_intervals import IntervalSources

__all__ = ["render_controllers", "render_controllers_screen"]


def _sign(ci: list[float | None] | None) -> str:
    """+ when the interval is above 0, - when below, "" otherwise."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return "+" if ci[0] > 0 else ("-" if ci[1] < 0 else "")


def _signed(x: float) -> str:
    """An advantage with its sign, three significant digits and their trailing zeros."""
    return ("-" if x < 0 else "+") + sig(abs(x))


def _drawn(doc: Mapping[str, Any]) -> bool:
    """Whether the document's intervals drew any inputs."""
    return bool((doc.get("interval90") or {}).get("draws_run"))


def _label(doc: Mapping[str, Any], inline: bool = False) -> str:
    """The label of the document's drawn intervals: what they hold (``sources`` where
    fewer than two draws ran, sim/studies/serving/draw_intervals.py ``IntervalSources``;
    ``inline``: in a few words there, where a line names the interval)."""
    held = IntervalSources.of((doc.get("interval90") or {}).get("sources"))
    return held.short if inline else held.label


def _switch_lines(doc: Mapping[str, Any]) -> list[str]:
    """Where the static best-k table switches k, with its intervals; loads beyond the
    measured batch marked."""
    out = []
    switches = doc.get("table_switches") or []
    if switches:
        out += ["", f"where the {doc['reference']} switches k (per-user tok/s):"]
    for sw in switches:
        a, b = sw["between"]
        head = f"  k {sw['from_k']} -> {sw['to_k']} between {a} and {b} users"
        if sw["at"] is None:
            out.append(head + ": no single crossing (boundary at the geometric midpoint)")
            continue
        label = _label(doc, inline=True) if _drawn(doc) else "95% interval"
        star = "  *" if sw["beyond"] else ""
        out.append(
            f"{head}: from {sig(sw['at'])} users; {label} {fmt_interval(sw['interval90'])}{star}"
        )
    return out


def _interval_lines(doc: Mapping[str, Any]) -> list[str]:
    """What the intervals drew, the model error they hold and the note of loads beyond
    the measured batch."""
    iv = doc.get("interval90") or {}
    out = []
    if iv.get("draws"):
        names = ", ".join(i["field"] for i in iv.get("inputs", []))
        out.append(
            f"intervals: {iv['draws_run']} of {iv['draws']} draws x "
            f"{iv['replications_per_draw']} replications on the nominal seeds; drawn: {names}"
        )
    if iv.get("model_error"):
        out.append(model_error_line(iv["model_error"]))
    if iv.get("note"):
        out.append(f"  * {iv['note']}")
    return out


def render_controllers(doc: Mapping[str, Any]) -> str:
    ref = doc["reference"]
    lines = [
        f"controllers replayed: {doc['scenario']}, "
        f"{count(doc['replications'], 'replication')} of "
        f"{count(doc['requests'], 'request')} ({doc['input_tokens']} prompt / "
        f"{doc['output_tokens']} output tokens), seed {doc['seed']}",
        f"paired advantage over the {ref} (> 0 better; 95% interval; + significant)"
        + (f"; then the {_label(doc)} (+ or - when it excludes 0)" if _drawn(doc) else ""),
        *conditioning_lines(doc.get("interval90") or {}),
    ]
    for i, phase in enumerate(doc["phases"]):
        lines += ["", f"phase {i + 1}: {phase['label']}"]
        for metric, meta in doc["metrics"].items():
            unit = f" ({meta['unit']})" if meta["unit"] else ""
            lines.append(f"  {meta['label']}{unit}:")
            for name, pol in doc["policies"].items():
                lv = pol["phases"][metric][i]
                adv = pol["advantage_over_reference"][metric][i]
                mark = (
                    "+"
                    if adv["ci95"] and adv["ci95"][0] is not None and adv["ci95"][0] > 0
                    else (
                        "-"
                        if adv["ci95"] and adv["ci95"][1] is not None and adv["ci95"][1] < 0
                        else ""
                    )
                )
                a = (
                    ""
                    if name == ref
                    else f"{_signed(adv['mean'])} {fmt_interval(adv['ci95'])}{mark}"
                )
                iv = (pol.get("advantage_interval90") or {}).get(metric)
                if a and iv and _drawn(doc):
                    a += f"  {fmt_interval(iv[i])}{_sign(iv[i])}"
                lines.append(f"    {name:<20}{sig(lv['mean'], 4):>10}   {a}")
    lines += ["", "policies:"]
    for name, pol in doc["policies"].items():
        agg = pol["aggregate_tok_s"]
        lines.append(
            f"  {name}: {pol['description']}; whole trace {sig(agg['mean'], 4)} tok/s "
            f"{fmt_interval(agg['ci95'], digits=4)}"
        )
    lines += ["", "winners (best mean per phase and metric):"]
    for w in doc["winners"]:
        meta = doc["metrics"][w["metric"]]
        adv = w["advantage_over_reference"]
        tail = (
            ""
            if w["best"] == ref
            else (
                f" ({sig(abs(adv['mean']))} {meta['unit']} "
                f"{'higher' if meta['higher_is_better'] else 'lower'} than the {ref}"
                + (", significant)" if w["significant"] else ", within noise)")
            )
        )
        if "interval90" in w and w["best"] != ref and _drawn(doc):
            within = "outside" if w["better_within_inputs"] else "inside"
            tail += f"; 0 {within} its {_label(doc, inline=True)} {fmt_interval(w['interval90'])}"
        lines.append(f"  phase {w['phase'] + 1}, {meta['label']}: {w['best']}{tail}")
    lines += _switch_lines(doc) + _interval_lines(doc)
    for name, configs in doc.get("engine_configs", {}).items():
        lines += ["", f"{name} {configs['table']} as engine configs:"]
        lines += engine_config_lines(configs)[1:]
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    return "\n".join(line.rstrip() for line in lines)  # the reference's row has no advantage


def render_controllers_screen(doc: Mapping[str, Any]) -> str:
    """The first screen of ``specsim controllers``: the headline metric (the document's
    first) a column per phase, the reference's level and every other policy's advantage
    over it, marked + or - where its interval (90% from inputs and model when drawn, else
    95%) excludes 0; the best policy per phase, the table's switches, the model error, and
    the intervals' sample with the assumptions in one paragraph. ``--verbose``: every
    metric's table with its intervals, the policies, every winner and the engine configs."""
    ref = doc["reference"]
    metric, meta = next(iter(doc["metrics"].items()))
    unit = f" ({meta['unit']})" if meta["unit"] else ""
    drawn = _drawn(doc)
    label = _label(doc, inline=True) if drawn else "95% interval"
    phases = range(len(doc["phases"]))
    lines = [
        f"controllers replayed: {doc['scenario']}, {count(doc['replications'], 'replication')}"
        f" of {count(doc['requests'], 'request')}, seed {doc['seed']}",
        f"{meta['label']}{unit} by phase: each policy's advantage over the {ref} (its own row:"
        f" its level), + or - where its {label} excludes 0",
        f"  {'':<20}" + "".join(f"{f'phase {i + 1}':>11}" for i in phases),
    ]
    for name, pol in doc["policies"].items():
        cells = []
        for i in phases:
            if name == ref:
                cells.append(sig(pol["phases"][metric][i]["mean"], 4))
                continue
            adv = pol["advantage_over_reference"][metric][i]
            band = (pol.get("advantage_interval90") or {}).get(metric) if drawn else None
            cells.append(_signed(adv["mean"]) + _sign(band[i] if band else adv["ci95"]))
        lines.append(f"  {name:<20}" + "".join(f"{c:>11}" for c in cells))
    table = lines
    phases_said = [
        "phases: " + "; ".join(f"{i + 1} = {p['label']}" for i, p in enumerate(doc["phases"]))
    ]
    lines = []
    best = [w for w in doc["winners"] if w["metric"] == metric]
    lines.append(
        f"best {meta['label']} (mean): "
        + "; ".join(f"phase {w['phase'] + 1} {w['best']}" for w in best)
    )
    lines += [line for line in _switch_lines(doc) if line]
    iv = doc.get("interval90") or {}
    if iv.get("model_error"):
        lines.append(model_error_line(iv["model_error"]))
    if iv.get("note"):
        lines.append("  * beyond the highest measured batch (--verbose: what that means)")
    sample = (
        f"intervals: {iv['draws_run']} of {iv['draws']} draws x "
        f"{iv['replications_per_draw']} replications, "
        f"{count(len(iv.get('inputs', [])), 'input')} drawn"
        if iv.get("draws")
        else None
    )
    conditioning = conditioning_lines(iv)
    if sample and conditioning:
        lines.append(sample)
        sample = None
    lines += conditioning
    lines += assumptions_line(
        doc.get("assumptions", ()),
        more="every table and winner, the engine configs",
        lead=sample,
    )
    # over a screen, the phases' description is the first to go (--verbose has it)
    pointer = "phases: --verbose describes each"
    return "\n".join(within_screen([(table, None), (phases_said, pointer), (lines, None)]))
