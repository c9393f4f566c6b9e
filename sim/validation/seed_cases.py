"""The seed scenario's cases: its consistency with the figure its drafter split came from
(``case_seed``, not scored) and its graphed-verify what-if against a public report
(``case_graphed_verify``)."""

from __future__ import annotations

from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost
from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import baseline_measurement, point_measurement
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.validation import data as pub
from sim.validation import hardware_data as hw_data
from sim.validation.case_scoring import (
    TOK_S_REL_ERROR,
    fitted_summary,
    kept_summary,
    scored_row,
)
from sim.validation.cases import Case, Row


def _verify_ms(s: Scenario) -> float:
    """The scenario's stated verify pass (ms): the seed states it."""
    if s.timing.verify_ms is None:
        raise ValueError("the scenario states no timing.verify_ms")
    return s.timing.verify_ms


def case_seed(seed: Scenario) -> Case:
    """The seed: consistency only (its drafter split was derived from the 60 tok/s figure)."""
    baseline = sum(pub.SEED_BASELINE_TOK_S) / 2
    spec = sum(pub.SEED_SPEC_TOK_S) / 2
    data = baseline_measurement(baseline, TOK_S_REL_ERROR, "seed") + point_measurement(
        seed.num_steps, pub.SEED_ACCEPT_LENGTH, spec, TOK_S_REL_ERROR, "seed"
    )
    cal = calibrate(seed, data, fit_timing=["decode_ms", "verify_ms"], prefer="base")
    return Case(
        title="Seed: Kimi-K2.5, 8 PCIe GPUs, SGLang EAGLE-3 num_steps 2 (consistency, not scored)",
        sources=("docs/reference.md §Seed",),
        calibrated_on=("seed baseline tok/s", "seed speculative tok/s"),
        rows=(
            scored_row(
                "verify_ms implied by 60 tok/s",
                "seed profiled verify_ms",
                "k=2, AL 2.0",
                pub.SEED_VERIFY_MS,
                cal,
                _verify_ms,
            ),
        ),
        setup=(f"fitted: {fitted_summary(cal)}", f"kept: {kept_summary(cal)}"),
        notes=(
            "Not a validation: the seed scenario's drafter costs (3.3 ms per cycle) were "
            "chosen as 33.3 ms - 30 ms from this same 60 tok/s figure, so the verify time it "
            "implies agrees by construction. No held-out speculative figure exists for the "
            "seed hardware.",
        ),
        scored=False,
    )


def _graphed_verify_prediction(seed: Scenario) -> tuple[float, float, float]:
    """(ungraphed cycle ms, graphed cycle ms, the report's graphed tok/s predicted)."""
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    before_ms = bind(seed).cost.total_ms
    after_ms = bind(graphed).cost.total_ms
    return before_ms, after_ms, pub.GRAPHED_VERIFY_BEFORE_TOK_S * before_ms / after_ms


def case_graphed_verify(seed: Scenario) -> Case:
    """Graphing the seed's verify pass: the hardware model's what-if against a public report.

    Calibrated on the report's ungraphed tok/s; the prediction scales it by the seed
    scenario's cycle ungraphed / graphed (sim/hardware: launch work and eager all-reduce
    cost removed), assuming the accept length did not change.
    """
    before_ms, after_ms, predicted = _graphed_verify_prediction(seed)
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    experts = with_overrides(seed, {"timing.verify_growth": "experts"}, source="validation")
    _, experts_after_ms, experts_tok_s = _graphed_verify_prediction(experts)
    # The graphed cycle the report's 1.55x implies for the seed (same accept length).
    needed_after_ms = before_ms * pub.GRAPHED_VERIFY_BEFORE_TOK_S / pub.GRAPHED_VERIFY_AFTER_TOK_S
    return Case(
        title="Kimi on 8 PCIe GPUs, verify made CUDA-graphed: the seed's what-if against a vLLM "
        "report (hardware what-if)",
        sources=(pub.GRAPHED_VERIFY_SOURCE,),
        calibrated_on=("graphed-verify report, ungraphed tok/s",),
        rows=(
            Row(
                "tok/s (verify graphed)",
                "graphed-verify report, graphed tok/s",
                f"{pub.GRAPHED_VERIFY_BEFORE_TOK_S:g} tok/s x cycle {before_ms:.2f} ms "
                f"/ {after_ms:.2f} ms",
                pub.GRAPHED_VERIFY_AFTER_TOK_S,
                predicted,
            ),
        ),
        setup=(
            f"seed scenario's hardware model: verify {cycle_cost(seed).verify_ms:.2f} ms "
            f"ungraphed -> {cycle_cost(graphed).verify_ms:.2f} ms graphed at num_steps "
            f"{seed.num_steps} (GPU work from the graphed decode); accept length assumed "
            "unchanged by graphing",
        ),
        notes=(
            "The report is vLLM (TRITON_MLA, PIECEWISE -> FULL CUDA graphs, num_spec 3), not "
            "SGLang: its fix also routed the verify through the decode attention kernel, and "
            "its gain grows with context (1.55x at 2k, 3.5x at 10k, 4.3x at 30k), so it is "
            "not a graphing-only change; the seed scenario's num_steps and drafter stand in. "
            "The seed's graphed verify takes its GPU work from the graphed decode plus 0.7 ms "
            "per extra token (an estimate); with the expert-proportional growth "
            f"(timing.verify_growth = experts) the same case gives {experts_tok_s:.1f} tok/s "
            f"(graphed cycle {experts_after_ms:.2f} ms).",
            f"The report's 1.55x would put the seed's graphed cycle at {needed_after_ms:.1f} ms, "
            f"not {after_ms:.2f}: a graphed verify of "
            f"{cycle_cost(graphed).verify_ms + needed_after_ms - after_ms:.1f} ms against the "
            f"graphed decode's {seed.timing.decode_ms:g}. The report's ungraphed side ran "
            "PIECEWISE graphs (only attention eager), the seed's verify runs fully eager, so "
            "graphing removes more from the seed; what graphing does not remove (GPU work "
            "beyond the decode's, host work per step) is what the case says the seed "
            "scenario lacks, or the two ungraphed states are not the same class.",
            _same_server_note(seed),
        ),
    )


def _same_server_note(seed: Scenario) -> str:
    """What the report's graphing-only pair says about the class of its ungraphed side."""
    before, after = hw_data.VOIPMONITOR_NO_MTP_TOK_S
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    seed_verify_ms, graphed_verify_ms = bind(seed).cost.verify_ms, bind(graphed).cost.verify_ms
    eager_ms = seed_verify_ms - graphed_verify_ms
    return (
        "The same report measured graphing alone on that server (one user, no speculation, "
        f"PIECEWISE {before:g} -> FULL {after:g} tok/s): its eager attention op cost "
        f"{1000 / before - 1000 / after:.1f} ms, {100 * (after / before - 1):.0f}% of the "
        f"graphed step. The seed's fully eager verify carries {eager_ms:.1f} ms of eager "
        f"cost, {100 * eager_ms / graphed_verify_ms:.0f}% of its graphed verify. "
        "So the report's 1.55x measures a server that was mostly graphed already, plus a "
        "change of attention path, not the seed's lever: the case is outside the "
        "graphing-only comparison it was chosen as, and it stays scored as the issue set it "
        "(case 18 scores the report's two pairs against their own ungraphed states)."
    )
