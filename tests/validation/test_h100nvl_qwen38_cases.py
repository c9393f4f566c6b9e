"""Qwen3.8-27B on one H100 NVL (vLLM 0.28.0), plain / MTP 7 / DFlash 2-7, a 64-task job at
1, 4, 8 requests in flight: the source's medians, a calibration on C = 1 only, the job."""

from __future__ import annotations

import math

import pytest

from sim.validation import serving_data as pub
from sim.validation.h100nvl_qwen38_cases import (
    ARMS,
    DFLASH,
    DFLASH2_DRAFT_PARAMS,
    DFLASH2_KV_BYTES_PER_TOKEN,
    MTP7,
    SCORED,
    calibrated,
    job_lengths,
    measured,
)
from sim.validation.hybrid_mtp_serving_cases import PLAIN, QWEN38_MODEL
from sim.validation.hybrid_mtp_serving_cases import _cycle_ms as cycle_ms


@pytest.mark.parametrize(
    ("route", "users", "table"),
    [
        (PLAIN, 1, 53.40),
        (MTP7, 1, 113.34),
        (DFLASH, 1, 150.51),
        (PLAIN, 4, 190.08),
        (MTP7, 4, 382.85),
        (DFLASH, 4, 451.74),
        (PLAIN, 8, 287.72),
        (MTP7, 8, 565.24),
        (DFLASH, 8, 741.07),
    ],
)
def test_the_scored_figure_is_the_median_of_three_seeds_as_the_source_tabulates(
    route, users, table
):
    """README result table (two decimals) = the median of the per-seed values stored."""
    assert measured(route, users) == pytest.approx(table, abs=0.005)
    values = [pub.DAVIDSHARE_QWEN38_TOK_S[s][route][users] for s in pub.DAVIDSHARE_QWEN38_SEEDS]
    assert min(values) <= measured(route, users) <= max(values)


def test_a_group_s_tokens_are_its_rate_times_its_wall():
    """groups.json's S-baseline-c1-s20260906: 184,572 completion tokens over 3,458.6 s."""
    seed = pub.DAVIDSHARE_QWEN38_SEEDS[0]
    tokens = (
        pub.DAVIDSHARE_QWEN38_TOK_S[seed][PLAIN][1] * pub.DAVIDSHARE_QWEN38_WALL_S[seed][PLAIN][1]
    )
    assert tokens == pytest.approx(184_572, abs=0.5)


def test_the_dflash2_drafter_is_its_weight_file_and_the_shared_head():
    assert 3_848_817_896 / 2 + QWEN38_MODEL["lm_head_params"] == DFLASH2_DRAFT_PARAMS
    layer = 5120 * 6144 + 2 * 5120 * 1024 + 6144 * 5120 + 3 * 5120 * 17408
    # five verifier-sized layers and an fc from 8 target layers fill the file within 1%
    assert 5 * layer + 8 * 5120 * 5120 == pytest.approx(3_848_817_896 / 2, rel=0.01)
    assert DFLASH2_KV_BYTES_PER_TOKEN == 20_480


def test_the_job_lengths_come_from_the_calibration_load_only():
    prompt, output, sigma = job_lengths()
    assert prompt == pytest.approx(10_513 / 64)
    nine = [
        pub.DAVIDSHARE_QWEN38_TOK_S[s][r][1] * pub.DAVIDSHARE_QWEN38_WALL_S[s][r][1]
        for s in pub.DAVIDSHARE_QWEN38_SEEDS
        for r in (PLAIN, MTP7, DFLASH)
    ]
    assert output == pytest.approx(sum(nine) / 9 / 64)
    cv = 4306.800806119752 / 2883.9375
    assert sigma == pytest.approx(math.sqrt(math.log(1 + cv**2)))
    # a lognormal with that log-sd has the group's coefficient of variation
    assert math.sqrt(math.exp(sigma**2) - 1) == pytest.approx(cv)


@pytest.mark.parametrize("route", [MTP7, DFLASH])
def test_the_calibration_reproduces_the_c1_cycle_and_accept_length(route):
    sc, al, alpha, passes_ms, measured_ms = calibrated(route)
    rates = sorted(
        pub.DAVIDSHARE_QWEN38_ACCEPTANCE[s][route][1] for s in pub.DAVIDSHARE_QWEN38_SEEDS
    )
    assert al == pytest.approx(1 + 7 * rates[1])
    assert sum(alpha**i for i in range(8)) == pytest.approx(al, abs=1e-8)
    assert measured_ms == pytest.approx(pub.DAVIDSHARE_QWEN38_TPOT_MS[route][1] * al)
    assert sc.timing.cycle_overhead_ms == pytest.approx(measured_ms - passes_ms)
    assert sc.timing.cycle_overhead_ms > 0.0  # the derived passes fit inside the cycle
    assert cycle_ms(sc) == pytest.approx(measured_ms, rel=1e-9)
    assert sc.timing.decode_ms == pub.DAVIDSHARE_QWEN38_TPOT_MS[PLAIN][1]
    assert sc.hardware.gpu == "H100-NVL" and sc.hardware.gpus == 1
    assert sc.speculation.num_steps == 7
    assert sc.speculation.parallel_draft == (route == DFLASH)
    assert sc.model.draft_params == ARMS[route].model.get(
        "draft_params", QWEN38_MODEL["draft_params"]
    )
    assert sc.workload.output_max_tokens == 16_384
    assert 1 not in SCORED
