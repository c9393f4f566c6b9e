"""GLM-4.7-Flash + the Thoughtworks EAGLE-3 head on one H100 PCIe (SGLang), case 45's job at
max concurrency 1-32: the source's figures, the drafter's size, a calibration on C = 1 only."""

from __future__ import annotations

import pytest

from sim.model.closed_forms import leviathan_accept_length
from sim.validation import serving_data as pub
from sim.validation.glm_flash_eagle3_cases import (
    EAGLE3,
    EAGLE3_ARM,
    EAGLE3_DRAFT_KV_BYTES_PER_TOKEN,
    EAGLE3_DRAFT_PARAMS,
)
from sim.validation.glm_flash_mtp_cases import (
    GLM47_FLASH_MODEL,
    MTP_ARM,
    PLAIN,
    SCORED,
    calibrated,
)


def test_the_stored_figures_are_the_readme_s_tables():
    """README (1dddbf81): throughput and TPOT tables (one or two decimals), accept length 2.02
    = the JSON outputs' output_throughput, mean_tpot_ms and accept_length."""
    tok_s = (135.1, 308.9, 483.1, 740.3, 1090.3)
    for users, value in zip((1, *SCORED), tok_s, strict=True):
        assert pub.GLM47FLASH_TOK_S[EAGLE3][users] == pytest.approx(value, abs=0.05)
    for users, value in ((1, 7.05), (8, 15.84), (16, 19.40), (32, 25.07)):
        assert pub.GLM47FLASH_TPOT_MS[EAGLE3][users] == pytest.approx(value, abs=0.005)
    assert pub.GLM47FLASH_AL[EAGLE3][1] == pytest.approx(2.02, abs=0.005)
    assert set(pub.GLM47FLASH_TTFT_MS) == {PLAIN, "MTP", EAGLE3}


def test_the_drafter_adds_up_to_its_published_sizes():
    """145,235,968 BF16 parameters and the d2t (int64) / t2d (bool) maps: the model card's
    277.4 MiB and the source README's 291 MB."""
    assert EAGLE3_DRAFT_PARAMS == 145_235_968
    file_bytes = EAGLE3_DRAFT_PARAMS * 2 + 32_000 * 8 + 154_880
    assert file_bytes / 2**20 == pytest.approx(277.4, abs=0.05)
    assert file_bytes / 1e6 == pytest.approx(291, abs=0.5)
    assert EAGLE3_DRAFT_KV_BYTES_PER_TOKEN == 2048


def test_the_calibration_uses_c1_only():
    scenario, al, alpha, passes_ms, cycle_ms = calibrated(EAGLE3_ARM)
    assert scenario.num_steps == 3
    assert al == pub.GLM47FLASH_AL[EAGLE3][1]
    assert leviathan_accept_length(alpha, 3) == pytest.approx(al, abs=1e-9)
    assert cycle_ms == pytest.approx(pub.GLM47FLASH_TPOT_MS[EAGLE3][1] * al)
    assert scenario.timing.decode_ms == pub.GLM47FLASH_TPOT_MS[PLAIN][1]
    assert scenario.timing.cycle_overhead_ms == pytest.approx(max(0.0, cycle_ms - passes_ms))
    assert scenario.model.draft_params == EAGLE3_DRAFT_PARAMS
    assert scenario.model.draft_kv_bytes_per_token == EAGLE3_DRAFT_KV_BYTES_PER_TOKEN


def test_the_arms_share_the_server_and_differ_in_the_drafter_only():
    mtp, eagle3 = calibrated(MTP_ARM)[0], calibrated(EAGLE3_ARM)[0]
    assert mtp.model.draft_params == GLM47_FLASH_MODEL["draft_params"]
    assert eagle3.model.draft_params != mtp.model.draft_params
    assert eagle3.serving == mtp.serving
    assert eagle3.workload == mtp.workload
    assert eagle3.hardware == mtp.hardware
    assert eagle3.model.layer_params == mtp.model.layer_params
