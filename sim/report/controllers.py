"""Text of a ``controllers`` document: each policy per phase against the static best-k
table, and which wins where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.report.crossover import fmt_interval
from sim.report.engine_configs import engine_config_lines
from sim.report.format import count, sig

__all__ = ["render_controllers"]


def _sign(ci: list[float | None] | None) -> str:
    """+ when the interval is above 0, - when below, "" otherwise."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return "+" if ci[0] > 0 else ("-" if ci[1] < 0 else "")


def _signed(x: float) -> str:
    """An advantage with its sign, three significant digits and their trailing zeros."""
    return ("-" if x < 0 else "+") + sig(abs(x))


def render_controllers(doc: Mapping[str, Any]) -> str:
    ref = doc["reference"]
    lines = [
        f"controllers replayed: {doc['scenario']}, "
        f"{count(doc['replications'], 'replication')} of "
        f"{count(doc['requests'], 'request')} ({doc['input_tokens']} prompt / "
        f"{doc['output_tokens']} output tokens), seed {doc['seed']}",
        f"paired advantage over the {ref} (> 0 better; 95% interval; + significant)",
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
        lines.append(f"  phase {w['phase'] + 1}, {meta['label']}: {w['best']}{tail}")
    for name, configs in doc.get("engine_configs", {}).items():
        lines += ["", f"{name} {configs['table']} as engine configs:"]
        lines += engine_config_lines(configs)[1:]
    if doc.get("assumptions"):
        lines += ["", "assumptions:"] + [f"  - {a}" for a in doc["assumptions"]]
    return "\n".join(line.rstrip() for line in lines)  # the reference's row has no advantage
