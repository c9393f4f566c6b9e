"""Text and JSON of what an answer rests on: assumptions, intervals, drivers, next step.

Shared by run, search, solve and compare: the header lines (effective hardware and
overrides), the per-target ``uncertainty`` JSON block
(``TargetUncertainty.to_dict``), the "depends on" text block and the assumptions table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sim.binding.provenance import Assumption
from sim.uncertainty.answers import TargetUncertainty
from sim.uncertainty.interval import INTERVAL_LABEL, Interval

#: Origins that the text report lists (values measured exactly are in --json only).
LISTED_ORIGINS = ("assumed", "default", "derived", "calibrated", "override")


def fmt_rate(x: float | None) -> str:
    return "unreachable" if x is None else f"{x:.3f}"


def off_centre_text(inputs: Iterable[Mapping[str, Any]]) -> str:
    """Inputs specified outside the 5-95% of their ranges (``OffCentre.to_dict`` each), as
    one clause: ``field nominal (5-95% of its range low-high)`` joined by '; '."""
    return "; ".join(
        f"{o['field']} {o['nominal']:.4g} (5-95% of its range {o['range90'][0]:.4g}-"
        f"{o['range90'][1]:.4g})"
        for o in inputs
    )


def fmt_interval(interval: Interval | Sequence[float | None], fmt: str = ".3f") -> str:
    lo, hi = interval.to_list() if isinstance(interval, Interval) else interval
    lo_s = "unreachable" if lo is None else format(lo, fmt)
    hi_s = "unreachable" if hi is None else format(hi, fmt)
    return f"[{lo_s}, {hi_s}]"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def hardware_line(hardware: Mapping[str, Any]) -> str:
    """One line for report headers: the effective hardware and what it was measured on
    (an ``effective_hardware`` document, sim/binding/provenance.py)."""

    def text(h: Mapping[str, Any]) -> str:
        gpu = h["gpu"] or "GPUs (model not given)"
        graph = "graphed" if h["verify_cuda_graph"] else "ungraphed"
        return f"{h['gpus']}x {gpu} on {h['interconnect']}, verify {graph}"

    line = f"hardware: {text(hardware)}"
    if hardware["recomposed"]:
        line += f" (timings measured on {text(hardware['measured_on'])}; passes re-composed)"
    return line


def header_lines(
    hardware: Mapping[str, Any], overrides: Sequence[Mapping[str, Any]], indent: str = "  "
) -> list[str]:
    """The effective hardware and the overrides (``effective_hardware``,
    ``override_entries``), for every report's header."""
    lines = [indent + hardware_line(hardware)]
    if overrides:
        parts = [f"{o['field']} = {_value(o['value'])} ({o['via']})" for o in overrides]
        lines.append(indent + "overrides: " + "; ".join(parts))
    return lines


def answer_line(t: TargetUncertainty, indent: str = "  ") -> str:
    """The answer for one target in a sentence, with its interval and the flat answer."""
    if t.best_num_steps is None:
        return f"{indent}{t.tok_s:g} tok/s: out of reach at every num_steps searched"
    if t.first_rate is not None and t.first_rate >= 1.0:
        return (
            f"{indent}{t.tok_s:g} tok/s: not reachable under this shape (at best num_steps "
            f"{t.best_num_steps} it needs a first-position rate of 1.000 and later rates above "
            f"the shape's); reachable if rates fall less than the shape ({INTERVAL_LABEL} "
            f"{fmt_interval(t.interval90)}); flat rates: {fmt_rate(t.flat_alpha)} "
            f"{fmt_interval(t.flat_interval90)}"
        )
    return (
        f"{indent}{t.tok_s:g} tok/s: best num_steps {t.best_num_steps}, first-position rate "
        f"{fmt_rate(t.first_rate)} ({INTERVAL_LABEL} {fmt_interval(t.interval90)}), "
        f"mean {fmt_rate(t.mean_rate)} over the chain; flat rates: {fmt_rate(t.flat_alpha)} "
        f"{fmt_interval(t.flat_interval90)}"
    )


def depends_on_lines(
    t: TargetUncertainty, what: str = "answer", fmt: str = ".3f", indent: str = "  "
) -> list[str]:
    """The "depends on" block: each driver's input ends and the answer at each, and the
    measurement to take next."""
    if not t.drivers and t.measure_next is None:
        return [f"{indent}depends on: no uncertain input moves it"]
    lines = [f"{indent}depends on (the {what} with one input at its 5% / 95% end):"]
    width = max([len(d.field) for d in t.drivers] + [10])
    for d in t.drivers:

        def a(x: float | None) -> str:
            return "unreachable" if x is None else format(x, fmt)

        lines.append(
            f"{indent}  {d.field:<{width}}  {d.input_low:.4g} .. {d.input_high:.4g}"
            f"  ->  {a(d.low)} .. {a(d.high)}"
        )
    if t.measure_next is not None:
        m = t.measure_next
        lines.append(
            f"{indent}measure next: {m.what}; if it comes out at today's estimate the "
            f"interval narrows to {fmt_interval(m.interval90_after, fmt)}"
        )
    return lines


def assumption_lines(assumptions: Iterable[Assumption], indent: str = "  ") -> list[str]:
    """The inputs that are not exact measurements: assumed, default, derived, calibrated,
    overridden, or given with an error or a range."""
    rows = [
        a
        for a in assumptions
        if a.origin in LISTED_ORIGINS or a.stderr is not None or a.range is not None
    ]
    if not rows:
        return []
    width = max(len(a.field) for a in rows)
    lines = [f"{indent}what it rests on (not exact measurements; --json lists every input):"]
    for a in rows:
        spread = ""
        if a.range is not None:
            low, high = a.range
            sep = " to " if min(low, high) < 0 else "-"  # "-0.07 to -0.003", not "-0.07--0.003"
            spread = f"range {low:.4g}{sep}{high:.4g}"
        elif a.stderr is not None:
            spread = f"± {_value(a.stderr)}"
        lines.append(
            f"{indent}  {a.field:<{width}}  {_value(a.value):<10} {a.origin:<10} "
            f"{spread:<18} {a.reason}".rstrip()
        )
    return lines


def assumptions_doc(assumptions: Iterable[Assumption]) -> list[dict[str, Any]]:
    return [a.to_dict() for a in assumptions]


def interval_note(doc: Mapping[str, Any]) -> str:
    """One line naming how the intervals were computed (for report footers)."""
    return f"  ({doc['label']}: {doc['method']})"
