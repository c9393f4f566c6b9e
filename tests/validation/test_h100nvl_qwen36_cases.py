"""Qwen3.6-27B on one H100 NVL (vLLM 0.21.0), plain / MTP 5, a 64-task job at 1, 4, 8
requests in flight: the source's figures, a calibration on C = 1 only, the job's lengths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.validation import serving_data as pub
from sim.validation.h100nvl_qwen36_cases import (
    MTP5,
    SCORED,
    TOKEN_BUDGET,
    accept_length,
    calibrated,
    job_lengths,
    measured,
    token_ms_at_one,
)
from sim.validation.hybrid_mtp_serving_cases import PLAIN, QWEN38_MODEL
from sim.validation.hybrid_mtp_serving_cases import _cycle_ms as cycle_ms


@pytest.mark.parametrize(
    ("route", "users", "tok_s"),
    [
        (PLAIN, 1, 53.924),
        (PLAIN, 4, 179.533),
        (PLAIN, 8, 301.867),
        (MTP5, 1, 180.409),
        (MTP5, 4, 593.215),
        (MTP5, 8, 723.719),
    ],
)
def test_the_scored_figure_is_the_group_s_tokens_over_its_wall(route, users, tok_s):
    """summary.json's execution blocks: completion_tokens / elapsed_wall_s."""
    assert measured(route, users) == pytest.approx(tok_s, abs=5e-4)


def test_the_plain_c1_answers_are_the_group_s_tokens():
    answers = pub.DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS
    assert len(answers) == pub.DAVIDSHARE_QWEN36_REQUESTS == 64
    assert sum(answers) == pub.DAVIDSHARE_QWEN36_TOKENS[PLAIN][1] == 48_139
    # the manifest's 32 code tasks come first and stay within their 4,096-token budget
    assert max(answers[:32]) <= 4096 and max(answers) <= max(pub.DAVIDSHARE_QWEN36_MAX_TOKENS)


def test_the_accept_length_is_one_plus_accepted_over_drafts():
    assert accept_length() == pytest.approx(1 + 698_279 / 179_181)
    # at most k + 1 = 6 with 5 draft tokens a cycle
    assert 1.0 < accept_length() < 6.0


@pytest.mark.parametrize(
    ("route", "wall_s", "tokens", "ttft_ms"),
    [
        (PLAIN, 892.7169264949989, 48_139, (54.0739, 51.4219)),
        (MTP5, 261.9321521, 47_255, (63.4693, 56.8838)),
    ],
)
def test_the_time_a_token_at_one_takes_each_request_s_first_token_out(
    route, wall_s, tokens, ttft_ms
):
    expected = 1e3 * (wall_s - 64 * np.mean(ttft_ms) / 1e3) / (tokens - 64)
    assert token_ms_at_one(route) == pytest.approx(expected, rel=1e-5)
    # a token of the C = 1 job without the first tokens is faster than the job's wall / tokens
    assert token_ms_at_one(route) < 1e3 * wall_s / tokens


def test_the_job_lengths_come_from_the_calibration_load_only():
    prompt, output, sigma = job_lengths()
    assert prompt == pytest.approx((119 + 72) / 2)
    assert output == pytest.approx((48_139 + 47_255) / 128)
    answers = np.asarray(pub.DAVIDSHARE_QWEN36_PLAIN_C1_ANSWERS, dtype=float)
    cv = answers.std() / answers.mean()
    # a lognormal with that log-sd has the plain C = 1 group's coefficient of variation
    assert math.sqrt(math.exp(sigma**2) - 1) == pytest.approx(cv)


def test_the_calibration_reproduces_the_c1_cycle_and_accept_length():
    sc, alpha, passes_ms, measured_ms = calibrated()
    al = accept_length()
    assert sum(alpha**i for i in range(6)) == pytest.approx(al, abs=1e-8)
    assert measured_ms == pytest.approx(token_ms_at_one(MTP5) * al)
    assert sc.timing.cycle_overhead_ms == pytest.approx(measured_ms - passes_ms)
    assert sc.timing.cycle_overhead_ms > 0.0  # the derived passes fit inside the cycle
    assert cycle_ms(sc) == pytest.approx(measured_ms, rel=1e-9)
    assert sc.timing.decode_ms == pytest.approx(token_ms_at_one(PLAIN))
    assert sc.hardware.gpu == "H100-NVL" and sc.hardware.gpus == 1
    assert sc.speculation.num_steps == 5
    assert sc.model.draft_params == QWEN38_MODEL["draft_params"]
    assert sc.serving.token_budget == TOKEN_BUDGET == 8192
    assert sc.serving.prefix_caching is False
    assert sc.workload.output_max_tokens == 8192
    assert 1 not in SCORED
