"""Serving decisions scored on published curves: where speculation stops paying, and
whether it should be on at each batch size.

For each published concurrency curve of the serving validation (sim/validation/
serving_cases.py: the EAGLE-3 paper's Tables 3 and 5, and the voipmonitor/rtx6kpro report
of Kimi-K2.5 on 8x RTX PRO 6000, where speculation loses at 128 users) the same calibrated
scenario (batch 1 and at most one more figure, as there) runs the crossover study
(sim/studies/serving/crossover.py) on the published batch sizes, for aggregate tok/s (the
papers' "throughput"):

* **crossover**: where the published speedup falls through 1 (linear interpolation
  between the two published batch sizes around it; none if it never does) against the
  predicted crossover with its 95% interval (band inversion; the grid is extended to
  twice the largest published batch size to look for it). A scored row where both cross;
  a note where either does not;
* **best k of {off, k}**: at each published batch size, the choice the curve implies
  (speculation if its speedup >= 1) against the one the simulation implies; the number
  of agreements in the case's notes (the two k the publications compare; no published
  table of best k per batch size with its setting was found).

The figures these cases were calibrated on are the serving cases' calibration figures;
the crossover is read off figures that were not (it is a property of the scored points).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from sim.model.host_work import US_PER_REQUEST_RANGE
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row
from sim.validation.eagle3_paper_cases import sglang_scenarios, vllm_scenarios
from sim.validation.kimi_rtx6kpro_cases import kimi_scenario
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED

__all__ = ["decision_cases", "published_crossover"]

#: Measured requests per replication of every decision run (the serving cases use
#: max(60, 3B) per batch size; one count for the whole curve keeps the loads paired).
DECISION_REQUESTS = 96


def published_crossover(curve: Mapping[int, float]) -> float | None:
    """The first batch size where a published speedup curve falls through 1, linear
    between the two published points around it (None: it never does)."""
    pts = sorted(curve.items())
    for (b0, g0), (b1, g1) in itertools.pairwise(pts):
        if g0 >= 1.0 > g1:
            return b0 + (g0 - 1.0) / (g0 - g1) * (b1 - b0)
    return None


def _study(scenario: Scenario, batches: Sequence[int]):
    sc = with_overrides(
        scenario,
        {
            "workload.requests": DECISION_REQUESTS,
            "simulation.replications": SERVING_REPLICATIONS,
            "simulation.seed": SERVING_SEED,
        },
        source="validation",
    )
    builder = ScenarioPlans.of(sc, source="validation")
    ev = PointEvaluator(builder, replications=SERVING_REPLICATIONS, seed=SERVING_SEED)
    grid = [*batches, 2 * max(batches)]
    k = sc.num_steps
    return crossover(ev, load_grid("concurrency", grid), [k], metrics=["aggregate_tok_s"]), k


def _host_ends(scenario: Scenario, batches: Sequence[int]) -> str:
    """Where speculation stops paying at the two ends of the host work's plausible range
    (sim/model/host_work.py), the rest of the calibrated scenario unchanged."""
    ends = []
    for us in US_PER_REQUEST_RANGE:
        other = with_overrides(scenario, {"serving.host_us_per_request": us}, source="validation")
        result, k = _study(other, batches)
        c = result.curve("aggregate_tok_s", k)
        stops = [x for x in c.crossings if x.direction == "stops paying"]
        ends.append(
            f"{stops[0].at:.1f} users at {us:g} us"
            if stops
            else f"none up to {max(c.loads):.0f} users at {us:g} us"
        )
    return (
        "At the ends of the host work's plausible range (a request's host work per "
        f"iteration, sim/model/host_work.py) the predicted crossover is {ends[0]} and "
        f"{ends[1]}."
    )


def _case(
    title: str,
    source: str,
    label: str,
    scenario: Scenario,
    curve: Mapping[int, float],
    calibrated_on: Sequence[str],
    baseline_curve: Mapping[int, float] | None = None,
) -> Case:
    """``curve``: published speedup by batch size (or, with ``baseline_curve``, published
    speculative tok/s to divide by the baseline's)."""
    gains = (
        {b: curve[b] / baseline_curve[b] for b in curve if b in baseline_curve}
        if baseline_curve is not None
        else dict(curve)
    )
    result, k = _study(scenario, sorted(gains))
    c = result.curve("aggregate_tok_s", k)
    by_load = dict(zip(c.loads, c.gain, strict=True))
    published = published_crossover(gains)
    stops = [x for x in c.crossings if x.direction == "stops paying"]
    if len(c.crossings) > 1:  # say all of them: the first "stops paying" is the one scored
        notes_all = "; ".join(f"{x.direction} at {x.at:.1f}" for x in c.crossings)
    else:
        notes_all = ""
    rows: list[Row] = []
    notes = []
    figure = f"{label} crossover"
    if published is not None and stops:
        x = stops[0]
        lo, hi = x.ci95
        sd = sd_from_ci95(x.ci95, SERVING_REPLICATIONS)
        rows.append(
            Row(
                "crossover concurrency (users)",
                figure,
                f"k = {k}, aggregate tok/s, closed loop {min(gains)}..{2 * max(gains)} users",
                published,
                x.at,
                sd,
            )
        )
        notes.append(
            f"Crossover: published {published:.1f} users (interpolated), predicted "
            f"{x.at:.1f} [{'?' if lo is None else f'{lo:.1f}'}, "
            f"{'?' if hi is None else f'{hi:.1f}'}]."
        )
    elif published is not None:
        top = max(c.loads)
        notes.append(
            f"Crossover: published {published:.1f} users; predicted: speculation still pays "
            f"at every simulated load up to {top:.0f} users (gain "
            f"{by_load[top].mean:.2f} there) - a miss, not scored as a number."
        )
    elif stops and stops[0].at > max(gains):
        notes.append(
            f"Crossover: the published curve never falls below 1 (up to {max(gains)} users); "
            f"predicted: stops paying at {stops[0].at:.1f} users, beyond the published range "
            "- consistent, not scored."
        )
    elif stops:
        notes.append(
            f"Crossover: the published curve never falls below 1 (up to {max(gains)} users); "
            f"predicted: stops paying at {stops[0].at:.1f} users - a miss."
        )
    else:
        notes.append(
            f"Crossover: neither the published curve (up to {max(gains)} users) nor the "
            f"prediction (up to {max(c.loads):.0f}) falls below 1 - they agree."
        )
    if notes_all:
        notes.append(
            f"Every predicted crossing: {notes_all} users (the first that stops paying "
            "is the one compared)."
        )
    if stops and scenario.serving is not None and scenario.serving.host_overlap != "both":
        notes.append(_host_ends(scenario, sorted(gains)))
    agree, misses = 0, []
    for b, g in sorted(gains.items()):
        predicted = by_load[float(b)].mean
        if (g >= 1.0) == (predicted >= 1.0):
            agree += 1
        else:
            misses.append(
                f"{b} users (published {g:.2f}x -> {'k' if g >= 1 else 'off'}, predicted "
                f"{predicted:.2f}x -> {'k' if predicted >= 1 else 'off'})"
            )
    notes.append(
        f"Best of {{off, k = {k}}} per batch size: agrees at {agree} of {len(gains)} published "
        "batch sizes" + (f"; disagrees at {'; '.join(misses)}" if misses else "") + "."
    )
    return Case(
        title,
        (source,),
        tuple(calibrated_on),
        tuple(rows),
        setup=(
            f"the calibrated scenario of the serving case of the same curve; crossover study "
            f"on the published batch sizes and {2 * max(gains)}, k = {k}, aggregate tok/s, "
            f"{SERVING_REPLICATIONS} replications x {DECISION_REQUESTS} requests, seed "
            f"{SERVING_SEED}, bisected to neighbouring user counts",
        ),
        notes=tuple(notes),
        scored=bool(rows),
    )


def decision_cases() -> tuple[Case, ...]:
    """Every decision case of the validation report."""
    sg_eagle3, sg_eagle = sglang_scenarios()
    vl_eagle3, vl_eagle = vllm_scenarios()
    kimi, _, _ = kimi_scenario()
    t3, t5 = pub.EAGLE3_SGLANG_TABLE3, pub.EAGLE3_VLLM_TABLE5
    paper = pub.EAGLE3_PAPER_URL
    cal_t3 = ("Table 4 SGLang bs=1 tok/s", "EAGLE-3 paper T3 EAGLE-3 bs=2")
    cal_t5 = ("EAGLE-3 paper T5 EAGLE-3 bs=2",)
    rtx = pub.RTX6KPRO_AGGREGATE_TOK_S
    return (
        _case(
            "Crossover and best k: EAGLE on SGLang, H100, chain 3 (EAGLE-3 paper Table 3)",
            paper,
            "EAGLE-3 paper T3 EAGLE",
            sg_eagle,
            t3["EAGLE"],
            (*cal_t3, "EAGLE-3 paper T3 EAGLE bs=2"),
        ),
        _case(
            "Crossover and best k: EAGLE-3 on SGLang, H100, chain 3 (EAGLE-3 paper Table 3)",
            paper,
            "EAGLE-3 paper T3 EAGLE-3",
            sg_eagle3,
            t3["EAGLE-3"],
            cal_t3,
        ),
        _case(
            "Crossover and best k: EAGLE on vLLM, RTX 3090, chain 2 (EAGLE-3 paper Table 5)",
            paper,
            "EAGLE-3 paper T5 EAGLE",
            vl_eagle,
            t5["EAGLE"],
            (*cal_t5, "EAGLE-3 paper T5 EAGLE bs=2"),
        ),
        _case(
            "Crossover and best k: EAGLE-3 on vLLM, RTX 3090, chain 2 (EAGLE-3 paper Table 5)",
            paper,
            "EAGLE-3 paper T5 EAGLE-3",
            vl_eagle3,
            t5["EAGLE-3"],
            cal_t5,
        ),
        _case(
            "Crossover and best k: Kimi-K2.5 on 8x RTX PRO 6000, vLLM, 3 speculative tokens "
            "(voipmonitor/rtx6kpro: speculation loses at 128 users)",
            pub.RTX6KPRO_URL,
            "rtx6kpro MTP=3",
            kimi,
            {b: v for b, v in rtx["MTP=3"].items() if b > 1},
            (
                "rtx6kpro no MTP conc=1",
                "rtx6kpro MTP=3 conc=1",
                "rtx6kpro MTP=3 interarrival conc=1",
                "rtx6kpro no MTP conc=8",
            ),
            baseline_curve=rtx["no MTP"],
        ),
    )
