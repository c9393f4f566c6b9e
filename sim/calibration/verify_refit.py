"""The verify pass fitted to the figures when the hardware model's misses them (a MoE's
extra experts priced at an assumed efficiency), and its growth over tokens written as the
line through the measured decode and verify (``specsim init``'s second fit)."""

from __future__ import annotations

from dataclasses import replace

from sim.binding.closed_form import pass_times
from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import Measurements
from sim.calibration.result import Calibration
from sim.hardware.passes import PassMemo
from sim.scenario.overrides import with_overrides
from sim.scenario.validate import scenario_from_dict

#: The drafter's passes a first fit writes from the hardware model when its figures cannot
#: fix them (sim/calibration/efficiency_range.py ``unidentified_drafter``).
DRAFTER_PASSES = ("draft_step_ms", "draft_extend_ms")

#: A speculative figure missed by more than this many standard errors (a normal error
#: falls beyond 3 sigma 0.27% of the time) with the hardware model's verify pass.
VERIFY_MISS_SIGMAS = 3.0


def refit_verify(
    data: Measurements, cal: Calibration, prefer: str | None, memo: PassMemo
) -> Calibration:
    """``cal``, or, when the base's verify pass is the hardware model's and the calibrated
    scenario misses a speculative tok/s figure by more than ``VERIFY_MISS_SIGMAS`` (the
    intercept it fits, ``cycle_overhead_ms``, cannot go below 0), the calibration with
    the verify pass over the measured tokens fitted to the figures instead (a MoE's
    derived verify prices its extra experts' reads through the fused-MoE kernel at
    ``hardware.expert_read_efficiency``, an assumed share of peak with a range:
    docs/studies/moe-verify-reads.md). The other token counts' verify then takes the
    slope ``_measured_slope`` writes. ``memo``: the command's hardware answers."""
    passes = pass_times(cal.scenario, memo)  # the derived verify
    missed = [
        r
        for r in cal.residuals
        if r.what.startswith("tok/s at") and abs(r.normalized) > VERIFY_MISS_SIGMAS
    ]
    if passes.verify_table_ms is None or not missed or any(p.is_tree for p in data.points):
        return cal
    # the first fit's scenario (its decode measured: the verify's slope is the experts'
    # growth) with its verify pass given; the intercept that fit left at its bound and
    # the errors and correlations of what it fitted dropped (the refit writes its own);
    # the drafter passes' ranges kept, correlated with each other as they were
    start = cal.scenario.model_dump(exclude_none=True)
    start["timing"] = {**start["timing"], "verify_ms": passes.verify_ms, "cycle_overhead_ms": 0.0}
    drawn = start.get("uncertainty", {})
    for section, entries in list(drawn.items()):
        if isinstance(entries, dict) and section != "correlation":
            drawn[section] = {k: e for k, e in entries.items() if e.get("origin") != "calibrated"}
    corr = drawn.pop("correlation", None)
    if corr is not None:
        keep = [i for i, f in enumerate(corr["fields"]) if f.split(".", 1)[1] in DRAFTER_PASSES]
        if len(keep) > 1:
            drawn["correlation"] = {
                "fields": [corr["fields"][i] for i in keep],
                "matrix": [[corr["matrix"][i][j] for j in keep] for i in keep],
            }
    measured = scenario_from_dict(start, source="the first fit's scenario, its verify given")
    fit = ("decode_ms", "verify_ms")
    refit = calibrate(measured, data, fit_timing=fit, prefer=prefer, memo=memo)
    named = {"name": cal.scenario.name, "description": cal.scenario.description}
    refit = replace(refit, scenario=with_overrides(refit.scenario, named, source="specsim init"))
    refit = _measured_slope(refit, memo)
    # each value's base is the scenario init wrote (the first fit's), not the refit's start
    # (the first fit's own values: its decode read as the base scenario's pass)
    bases = {v.field: v.base for v in cal.values}
    values = tuple(replace(v, base=bases.get(v.field)) for v in refit.values)
    refit = replace(refit, values=values)
    worst = max(missed, key=lambda r: abs(r.normalized))
    note = (
        f"timing.verify_ms fitted to the figures: with the hardware model's verify pass "
        f"({passes.verify_ms:.4g} ms over {passes.verify_tokens} tokens) the scenario missed "
        f"{worst.what} by {100 * worst.relative:+.1f}% ({worst.normalized:+.1f} σ)"
    )
    return replace(refit, notes=(*refit.notes, note))


def _measured_slope(cal: Calibration, memo: PassMemo) -> Calibration:
    """``cal`` with ``timing.verify_ms_per_extra_token`` the line through its measured decode
    (1 token) and verify (``verify_tokens``), over a range to the hardware model's slope
    at peak bandwidth. The hardware model's own slope, above the line, would put a
    2-token verify below the decode. A MoE's distinct experts grow concavely with the
    tokens, so past the measured verify each token adds at most the line's slope, and at
    least the extra experts' reads at peak bandwidth; short of it the pass lies at or
    above the line. A line below those reads (consecutive tokens of a sequence share
    experts, which the union law leaves out) is taken as measured, the range up to them.
    ``memo``: the command's hardware answers."""
    s = cal.scenario
    tokens = pass_times(s, memo).verify_tokens
    if s.timing.decode_ms is None or s.timing.verify_ms is None or tokens < 2:
        return cal
    line = (s.timing.verify_ms - s.timing.decode_ms) / (tokens - 1)
    at_peak = {"hardware.bandwidth_efficiency": 1.0}
    if s.hardware.expert_read_efficiency is not None:
        at_peak["hardware.expert_read_efficiency"] = 1.0
    at_peak_passes = pass_times(with_overrides(s, at_peak, source="peak bandwidth"), memo)
    peak = at_peak_passes.verify_ms_per_extra_token
    if line <= 0.0 or peak == line:
        return cal
    why = (
        f"the line through the measured decode ({s.timing.decode_ms:.4g} ms) and verify "
        f"({s.timing.verify_ms:.4g} ms over {tokens} tokens); range to the hardware "
        f"model's extra experts' reads at peak bandwidth ({peak:.3g} ms a token)"
    )
    ends = [round(min(peak, line), 6), round(max(peak, line), 6)]
    entry = {"range": ends, "origin": "derived", "reason": why}
    overrides = {
        "timing.verify_ms_per_extra_token": round(line, 6),
        "uncertainty.timing.verify_ms_per_extra_token": entry,
    }
    scenario = with_overrides(s, overrides, source="specsim init")
    written = (*cal.written, ("timing.verify_ms_per_extra_token", f"derived: {why}"))
    values = tuple(
        replace(v, value=round(line, 6), reason=f"derived: {why}")
        if v.field == "timing.verify_ms_per_extra_token"
        else v
        for v in cal.values
    )
    return replace(cal, scenario=scenario, written=written, values=values)
