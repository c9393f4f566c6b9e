"""The Qwen3-30B-A3B curves on SGLang: calibrated on batch 1 only, every other batch scored."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.simulation.serving.lengths import LogNormal
from sim.simulation.serving.setup import serving_setup
from sim.validation.moe_tree_serving_cases import (
    ANGELSLIM,
    CONVERSATIONS,
    MAX_NEW_TOKENS,
    SPECFORGE,
    TURNS,
    _simulate,
    answer_tokens,
    calibrated,
    workload,
)


@pytest.mark.parametrize("curve", [ANGELSLIM, SPECFORGE], ids=lambda c: c.label)
def test_the_batch_1_cycle_is_the_measured_one_and_batch_1_is_never_scored(curve):
    sc, _, cycle_ms, derived_ms = calibrated(curve)
    bound = bind(sc)
    cost = serving_setup(bound, source="test").plan.cost
    context = workload(curve)[1]
    got = float(cost.decode_ms(1, bound.drafting.draft, np.array([context]))[0])
    # the overhead is added to the derived cycle as it is: the sum to float precision
    assert got == pytest.approx(cycle_ms, rel=1e-9)
    assert derived_ms < cycle_ms
    assert 1 not in curve.scored()
    # the measured batch-1 cycle: accept length / tok/s
    assert cycle_ms == pytest.approx(1000 * curve.accept_length[1] / curve.tok_s[curve.arm][1])


def test_the_tree_is_sglangs_and_its_top1_gives_the_batch_1_accept_length():
    sc, top1, _, _ = calibrated(ANGELSLIM)
    bound = bind(sc)
    setup = serving_setup(bound, source="test")
    draft = bound.drafting.draft
    tree = setup.plan.tree_acceptance(draft)
    assert (sc.speculation.num_steps, sc.speculation.topk) == (4, 4)
    assert 0 < top1 < 1 and tree.depth == 4
    # the top-1 rate is solved (brentq to 1e-6 on the rate) on the tree the plan builds
    assert tree.mean_accept_length() == pytest.approx(ANGELSLIM.accept_length[1], abs=1e-4)


def test_the_benchmark_holds_no_more_than_its_20_conversations_whatever_the_batch():
    # bench_eagle3.py --benchmark-list mtbench:20: 20 two-turn programs over batch threads,
    # so batch 32 and 64 run the same job (the same users' draws, the same seed)
    sc, _, _, _ = calibrated(SPECFORGE)
    assert CONVERSATIONS[SPECFORGE.label] == 20
    at_32, at_64, at_16 = (_simulate(sc, SPECFORGE.label, b) for b in (32, 64, 16))
    assert at_32 == at_64
    assert at_16["baseline"][0] < at_32["baseline"][0]


def test_angelslims_answers_are_its_batch_1_jobs_tokens_over_its_turns_and_capped():
    # 795.87 s x 218.89 tok/s = 174,208 output tokens over 80 conversations x 2 turns
    assert answer_tokens(ANGELSLIM) == pytest.approx(795.87 * 218.89 / (80 * TURNS))
    lengths, context = workload(ANGELSLIM)
    assert lengths["output_max_tokens"] == MAX_NEW_TOKENS == 2048
    # the lognormal's mean is solved so that the capped (clipped) mean is the derived one;
    # rounding the solved mean to a whole token moves the capped mean by under a token
    capped = LogNormal(lengths["output_tokens"], lengths["output_sigma"], MAX_NEW_TOKENS)
    assert capped.mean == pytest.approx(answer_tokens(ANGELSLIM), abs=1.0)
    assert lengths["output_tokens"] > answer_tokens(ANGELSLIM)  # the cap takes some mass off
    assert context == pytest.approx(lengths["input_tokens"] + answer_tokens(ANGELSLIM) / 2)


def test_specforge_prints_no_job_time_so_its_answers_stay_the_assumed_512():
    assert answer_tokens(SPECFORGE) is None
    lengths, _ = workload(SPECFORGE)
    assert lengths["output_tokens"] == 512
    assert lengths["output_max_tokens"] == MAX_NEW_TOKENS


def test_the_host_work_per_request_is_fitted_on_one_row_that_is_never_scored():
    from sim.validation.moe_tree_serving_cases import (
        HOST_BATCH1_SHARE,
        HOST_FIT,
        _acceptance,
        _scenario,
        case_qwen3_30b,
        host_us_per_request,
    )

    label, batch = HOST_FIT
    assert (label, batch) == (SPECFORGE.label, 4) and HOST_BATCH1_SHARE == 1.0
    us = host_us_per_request()
    # the simulated job at the fit row gives the measured tok/s (brentq to 1 us; the
    # throughput moves by ~0.25 tok/s per us there, so well under a tok/s)
    acceptance, _ = _acceptance(SPECFORGE)
    got = _simulate(_scenario(SPECFORGE, acceptance, 0.0, us), label, batch)["baseline"][0]
    assert got == pytest.approx(SPECFORGE.tok_s["baseline"][batch], abs=1.0)
    # far above the public 7-38 us a request: a host-bound server, not a typical one
    assert 300.0 < us < 2000.0
    sc, _, _, _ = calibrated(ANGELSLIM)
    assert sc.serving.host_us_per_request == us and sc.serving.host_batch1_share == 1.0
    case = case_qwen3_30b(SPECFORGE)
    assert f"{label} baseline bs={batch}" not in {r.figure for r in case.rows}
    assert any("host work per request" in c for c in case.calibrated_on)
