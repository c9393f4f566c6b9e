"""Plain text of a load-sweep fit (sim/calibration/load_fit.py)."""

from __future__ import annotations

import math
import textwrap

from sim.calibration.load_fit_result import LoadFit
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import HOST_FIELD, SPEC_FIELD
from sim.report.screen import WIDTH, fit_width

__all__ = ["format_load_fit", "jobs_line", "outside_lines"]


def format_load_fit(fit: LoadFit, verbose: bool = True) -> str:
    """The batched terms (fitted with their 90% range, or kept with their plausible range),
    a fitted value outside its plausible range said in a line of its own, and what the
    scenario records of the fit. ``verbose``: why each term was kept, the condition of the
    fit, every run's measured and predicted TPOT, each note in full; else a first screen
    within ``WIDTH`` columns, the runs' errors in one line (the JSON has every field)."""
    why = "" if verbose else " (--verbose: why each is kept)"
    lines = [f"batched terms from the load sweep{why}:"]
    for name, value in fit.values.items():
        lo, hi = fit.ranges[name]
        if name in fit.identified:
            on = f" on {fit.spec_factor_runs}" if name == SPEC_FIELD and verbose else ""
            lines.append(
                f"  {name:32s} {value:10.4g} ± {fit.stderr[name]:.2g}   "
                f"fitted{on}, 90% range [{lo:.4g}, {hi:.4g}]"
            )
        elif verbose:
            lines.append(
                f"  {name:32s} {value:10.4g}   kept ({fit.kept.get(name, 'not fitted')}); "
                f"plausible range [{lo:.4g}, {hi:.4g}]"
            )
        else:
            lines.append(f"  {name:32s} {value:10.4g}   kept, plausible range [{lo:.4g}, {hi:.4g}]")
    lines += [f"  {line}" for line in outside_lines(fit)]
    if verbose:
        lines += _runs_table(fit)
        lines += textwrap.wrap(jobs_line(fit), WIDTH, initial_indent="  ",
                               subsequent_indent="    ")  # fmt: skip
        lines.extend(f"  note: {n}" for n in fit.notes)
    else:
        lines.append(f"  {_runs_line(fit)}")
        if fit.notes:
            leads = "; ".join(_lead(n) for n in fit.notes)
            lines.append(f"  notes (--verbose: in full): {leads}")
    lines += textwrap.wrap(recorded_line(fit), WIDTH, initial_indent="  ",
                           subsequent_indent="    ")  # fmt: skip
    return "\n".join(fit_width(lines))


def outside_lines(fit: LoadFit) -> list[str]:
    """One line for each fitted term outside its plausible range (``LoadFit.outside_plausible``):
    kept as fitted, and what that means."""
    out = []
    for name, (lo, hi) in fit.outside_plausible.items():
        unit = " us" if name == HOST_FIELD else ""
        out.append(
            f"{name} {fit.values[name]:.4g}{unit}, outside its plausible {lo:.4g}-{hi:.4g}{unit}: "
            "the figures hold something the model does not price"
        )
    return out


def _lead(note: str) -> str:
    """A note's first clause after the fit's own name (``--verbose``: in full)."""
    note = note.removeprefix("load sweep fit: ")
    cut = note.find(": ", 10)
    return note[:cut] if cut > 0 else note


def _runs_table(fit: LoadFit) -> list[str]:
    """The fit's condition and every run's measured and predicted TPOT (``--verbose``)."""
    cond = f"{fit.condition:.3g}" if math.isfinite(fit.condition) else "n/a"
    lines = [f"  condition of the scaled Jacobian: {cond}; highest load fitted: "
             f"{fit.max_load:g} (beyond it answers extrapolate)"]  # fmt: skip
    lines.append(
        f"  {'run':40s} {'load':>7s} {'spec':>5s} {'TPOT ms':>9s} {'model':>9s} {'err':>7s}"
    )
    for r in fit.rows:
        spec = {None: "?", True: "yes", False: "no"}[r.point.speculative]
        run = f"{r.point.source}:{r.point.where}"[-40:]
        lines.append(
            f"  {run:40s} {r.point.load:7.4g} {spec:>5s} {r.measured_ms:9.4g} "
            f"{r.predicted_ms:9.4g} {100 * r.relative:+6.1f}%"
        )
    return lines


def _runs_line(fit: LoadFit) -> str:
    """The runs in one line: how many, their loads, the model's TPOT error range, how they
    were priced, where answers extrapolate (``--verbose``: each run)."""
    errors = [100 * r.relative for r in fit.rows]
    loads = [r.point.load for r in fit.rows]
    own = sum(r.point.job is not None for r in fit.rows)
    priced = f"{own} priced as their own jobs" if own else "at their mean context and load"
    return (
        f"{len(fit.rows)} runs ({priced}) at loads {min(loads):g}-{max(loads):g}: model TPOT "
        f"{min(errors):+.1f}% to {max(errors):+.1f}% off; beyond load {fit.max_load:g} answers "
        "extrapolate (--verbose: each run)"
    )


def jobs_line(fit: LoadFit) -> str:
    """Which runs were priced as their own jobs (their files list each request's lengths:
    sim/calibration/run_job.py) and which at their mean context, and why."""
    own = [r.point for r in fit.rows if r.point.job is not None]
    mean = [r.point for r in fit.rows if r.point.job is None]

    def where(p: LoadPoint) -> str:
        return f"{p.source}:{p.where}" if p.where else p.source

    parts = []
    if own:
        parts.append(
            f"{len(own)} run(s) priced as their own jobs (their requests' lengths in the "
            "order listed, closed loop): "
            + ", ".join(
                f"{where(p)} ({p.job.requests} requests, {p.job.workers} "
                f"worker{'' if p.job.workers == 1 else 's'})"
                for p in own
                if p.job is not None
            )
        )
    if mean:
        reasons: dict[str, list[str]] = {}
        for p in mean:
            reasons.setdefault(p.job_note or "no request's lengths listed", []).append(where(p))
        said = [
            f"{why}: {', '.join(runs)}" if own or len(reasons) > 1 else why
            for why, runs in reasons.items()
        ]
        parts.append(
            f"{len(mean)} run(s) at their mean context and load (closed form; {'; '.join(said)})"
        )
    return "; ".join(parts)


def recorded_line(fit: LoadFit) -> str:
    """What the calibrated scenario records of the fit, and what its serving intervals do
    with it (sim/calibration/load_record.py)."""
    # a speculative host factor not fitted stays at its value, not a range (load_fit.py)
    ranges = [n for n in fit.values if n not in fit.identified and n != SPEC_FIELD]
    head = f"the scenario records the {len(fit.rows)} figures fitted ([[serving.calibrated_on]]) "
    if not fit.identified:
        return head + "but no identified term: serving intervals draw every term over its range"
    return (
        head + f"and the terms they identify (serving.calibrated_terms): serving intervals "
        f"re-fit {', '.join(fit.identified)} to them in every draw"
        + (f"; {', '.join(ranges)} stay ranges" if ranges else "")
    )
