"""The first screen of ``specsim serve``: the paired comparison in about 20 lines of at
most 100 characters (``render_serving`` in sim/report/serving.py is the ``--verbose``
text, every row, quantile and assumption; ``--json`` keeps every field)."""

from __future__ import annotations

from typing import Any

from sim.report.screen import assumptions_line, within_screen, wrap
from sim.report.serving import (
    LOCKSTEP_LINE,
    METRICS,
    _cell,
    _digits,
    _overload_lines,
    interval90_lines,
    render_unstable,
    sample_text,
    scheduler_text,
)
from sim.simulation.serving.setup import BASELINE, SPECULATIVE

#: The rows of the first screen: the answer (speeds and latencies); queueing is in --verbose.
SCREEN_METRICS = tuple(m for m in METRICS if m[0] != "queue_ms")


def _row(cells: list[str], widths: tuple[int, ...]) -> str:
    return "".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=False)).rstrip()


def render_serving_screen(doc: dict[str, Any]) -> str:
    """The first screen of a ``serve`` document: the answer first (each metric's mean and
    95% interval for speculation and plain decoding with the paired speedup, the SLO
    attainment), how far it can move (the 90% intervals from inputs and model), any
    overload, then what it rests on (the scheduler, the assumptions in one line)."""
    if doc.get("stable") is False:
        return render_unstable(doc)
    names = [n for n in (SPECULATIVE, BASELINE) if n in doc]
    paired = "speedup" in doc
    lines = wrap(f"{doc['scenario']}: {doc['load']}", indent="", more="  ")
    widths = (18, 25, 25, 22)
    labels = [doc["policies"][n] for n in names]
    lines.append(
        _row(["mean [95% CI]", *labels, *(["speedup (paired)"] if paired else [])], widths)
    )
    for metric, label in SCREEN_METRICS:
        cells = [doc[n][metric] for n in names]
        d = _digits(cells[0]["mean"])
        row = [label, *[_cell(c["mean"], c["ci95"], d) for c in cells]]
        if paired and doc["speedup"].get(metric):
            row.append(_cell(doc["speedup"][metric]["mean"], doc["speedup"][metric]["ci95"], 3))
        lines.append(_row(row, widths))
    values = [doc[n]["slo_attainment"] for n in names]
    if any(v is not None for v in values):
        cells = [_cell(v["mean"], v["ci95"], 3) if v else "-" for v in values]
        lines.append(_row(["SLO attainment", *cells], widths))
    if paired:
        lines.append(
            "speedup: paired per replication on the same arrivals (> 1: helps; latencies: "
            "plain / speculative)"
        )
    if doc.get("lockstep"):
        lines.append(LOCKSTEP_LINE)
    lines += interval90_lines(doc, names, screen=True)
    lines += _overload_lines(doc, names)
    lines += ["", *wrap(f"{sample_text(doc)}; {scheduler_text(doc)}", indent="", more="  ")]
    lines += assumptions_line(
        doc["assumptions"], more="the quantiles, batch, accept length and Little's law"
    )
    return "\n".join(within_screen([(lines, None)]))  # over 25 lines: without blank lines
