"""DeepSeek-V3 + MTP on 8x MI300X (SGLang): calibrated on one user only, every other
concurrency scored, the MTP server at SGLang's speculative admission cap."""

from __future__ import annotations

import numpy as np
import pytest

import sim.validation.mtp_serving_cases as mtp_serving_cases
from sim.simulation.serving.setup import BASELINE, SPECULATIVE
from sim.validation import serving_data as pub
from sim.validation.mtp_serving_cases import (
    MTP,
    NUM_STEPS,
    PLAIN,
    RANDOM_LENGTHS,
    SGLANG_SPEC_MAX_RUNNING,
    _scenario,
    _simulate,
)


def test_the_random_datasets_lengths_are_uniform_over_1_to_1024():
    # sglang.bench_serving: np.random.randint(max(int(1024 x 0), 1), 1024 + 1)
    assert RANDOM_LENGTHS[0] == 1 and RANDOM_LENGTHS[-1] == 1024
    assert len(set(RANDOM_LENGTHS)) == len(RANDOM_LENGTHS) == 1024
    assert np.mean(RANDOM_LENGTHS) == pytest.approx(512.5)


def test_only_the_mtp_server_is_capped_at_sglangs_48():
    sc = _scenario(34.0, 0.0, 0.7, SGLANG_SPEC_MAX_RUNNING)
    assert SGLANG_SPEC_MAX_RUNNING == 48
    assert sc.serving.max_running_requests_speculative == 48
    assert sc.serving.max_running_requests > 64  # the curve's highest load is not capped
    assert sc.speculation.num_steps == NUM_STEPS == 2


def test_a_longer_decode_step_gives_a_longer_latency_at_one_user(monkeypatch):
    # the calibration's root search needs the plain latency to rise with the decode step
    # (the same requests: common random numbers), on 100 requests a replication, not the
    # case's 400 (the rise does not need them)
    monkeypatch.setattr(mtp_serving_cases, "MIN_REQUESTS", 100)
    short, long = (_simulate(_scenario(ms, 0.0, 0.7), 1)[BASELINE][0] for ms in (30.0, 36.0))
    assert short < long
    # 511.5 more decode steps a request on average, each 6 ms longer (Monte Carlo of the
    # same draws: the difference is exact up to the requests' own mix): 3 x 90 measured
    # requests of U{1..1024} output tokens (sd 295.6) put the mean's standard error at
    # 295.6 / 511.5 / sqrt(270) = 3.5% of it; 4 of them
    assert long - short == pytest.approx(6.0 * 511.5, rel=0.14)


@pytest.mark.slow
def test_the_cap_makes_64_users_wait_for_the_mtp_server_only():
    capped = _scenario(34.0, 0.0, 0.7, SGLANG_SPEC_MAX_RUNNING)
    free = _scenario(34.0, 0.0, 0.7)
    a, b = _simulate(capped, 64), _simulate(free, 64)
    assert a[SPECULATIVE][0] > b[SPECULATIVE][0]
    assert a[BASELINE] == b[BASELINE]  # the plain server keeps its own cap


@pytest.mark.slow
def test_the_case_is_calibrated_on_one_user_and_scores_every_other_load():
    from sim.validation.mtp_serving_cases import calibrated, case_dsv3_mtp_mi300x

    sc, alpha, al = calibrated()
    measured = pub.AMD_MTP_E2E_MS
    # the root searches stop within 0.1% of the latency (xtol); the simulation at the root
    # reproduces the measured latency to that
    one = _simulate(sc, 1)
    assert one[BASELINE][0] == pytest.approx(measured[PLAIN][1], rel=5e-3)
    assert one[SPECULATIVE][0] == pytest.approx(measured[MTP][1], rel=5e-3)
    assert 1.0 < al < 1.0 + NUM_STEPS and 0.0 < alpha < 1.0
    case = case_dsv3_mtp_mi300x()
    assert len(case.rows) == 12
    assert all(r.load != 1 for r in case.rows)
    assert not set(case.calibrated_on) & {r.figure for r in case.rows}


def test_the_eager_prefill_point_moves_the_prefill_only():
    # the what-if's one-token prefill at PR #5090's eager DeepSeek-V3 step: the prefill
    # passes through it, the batch-1 cycle (decode, verify, draft) is the same to the bit
    from sim.binding.bound import bind
    from sim.model.pass_curves import PrefillLoad
    from sim.simulation.serving.setup import serving_setup, with_load
    from sim.validation.hardware_data import SGLANG_5090_TOK_S
    from sim.validation.mtp_serving_cases import eager_prefill_point

    point = eager_prefill_point()
    assert point["ms"] == pytest.approx(1000.0 / SGLANG_5090_TOK_S[0])
    costs = []
    for points in (None, [point]):
        sc = with_load(_scenario(34.0, 0.0, 0.7, points=points), concurrency=1, source="t")
        costs.append(serving_setup(bind(sc), source="t").plan.cost)
    plain, eager = costs
    assert plain.batch1 == eager.batch1
    one, prompt = PrefillLoad.of_chunks([1], [0.0]), PrefillLoad.of_chunks([512], [0.0])
    # the curve is calibrated through the measured pass (the root search's tolerance)
    assert eager.prefill_ms(one, False) == pytest.approx(point["ms"], rel=1e-6)
    assert plain.prefill_ms(one, False) < 0.2 * point["ms"]
    assert eager.prefill_ms(prompt, False) > eager.prefill_ms(one, False)
    for batch in (1, 8, 64):
        assert eager.decode_ms(batch, 2, np.array([batch * 768.0]))[0] == pytest.approx(
            plain.decode_ms(batch, 2, np.array([batch * 768.0]))[0], rel=1e-12
        )
