"""The line a serving answer's text gives the conditioning of its intervals' draws on the
figures the scenario was calibrated on (sim/calibration/load_record.py ``conditioning``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["conditioning_line", "conditioning_lines"]


def conditioning_line(cond: Mapping[str, Any], brief: bool = False) -> str:
    """``intervals conditioned on 6 calibration figures (serving.calibrated_on: tpot_ms at
    loads 1-32): serving.kernel_slope re-fitted to them in every draw``; ``brief`` (a
    command's first screen): ``intervals conditioned on 6 calibration figures (tpot_ms, loads
    1-32; re-fit: serving.kernel_slope)``."""
    n = cond["figures"]
    lo, hi = cond["loads"]
    loads = f"load {lo:g}" if lo == hi else f"loads {lo:g}-{hi:g}"
    if "not_conditioned" in cond:
        return (
            f"intervals not conditioned on the {n} calibration figure{'s' * (n != 1)} "
            f"(serving.calibrated_on): they describe the server as calibrated, and this one "
            f"is a what-if ({cond['not_conditioned']})"
        )
    figures = f"{n} calibration figure{'s' * (n != 1)}"
    if brief:
        refitted = ", ".join(cond["refitted"])
        return f"intervals conditioned on {figures} ({cond['metric']}, {loads}; re-fit: {refitted})"
    return (
        f"intervals conditioned on {figures} (serving.calibrated_on: {cond['metric']} at {loads}): "
        f"{', '.join(cond['refitted'])} re-fitted to them in every draw"
    )


def conditioning_lines(doc: Mapping[str, Any], brief: bool = False) -> list[str]:
    """The line of ``doc['conditioned_on']`` (none when the draws were not conditioned)
    and of ``doc['beyond_measured']`` (the loads above the highest calibrated one);
    ``brief`` (a command's first screen): each in one line, what the loads beyond mean
    left to ``--verbose``."""
    cond = doc.get("conditioned_on")
    lines = [conditioning_line(cond, brief)] if cond else []
    beyond = doc.get("beyond_measured")
    if beyond:
        unit = "users" if beyond["load_kind"] == "concurrency" else "req/s"
        loads = ", ".join(f"{x:g}" for x in beyond["loads"])
        note = beyond["note"]
        if brief:
            top = beyond["highest_measured_batch"]
            note = f"beyond the highest measured batch ({top:g}; --verbose: what that means)"
        lines.append(f"* {loads} {unit}: {note}")
    return lines
