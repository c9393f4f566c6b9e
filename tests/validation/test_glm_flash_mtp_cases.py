"""GLM-4.7-Flash + MTP on one H100 PCIe (SGLang), a 64-request job at max concurrency 1-32:
the source's figures, the model dict, a calibration on C = 1 only."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.glm_flash_mtp_cases import (
    GLM47_FLASH_MODEL,
    MTP,
    PLAIN,
    SCORED,
    calibrated,
    prompt_tokens,
)


@pytest.mark.parametrize(
    ("arm", "table"),
    [
        (PLAIN, (100.8, 271.5, 408.7, 626.5, 979.6)),
        (MTP, (131.4, 315.2, 474.8, 723.1, 1255.0)),
    ],
)
def test_the_stored_figures_are_the_readme_s_throughput_table(arm, table):
    """README's throughput table (one decimal) = the JSON outputs' output_throughput."""
    for users, value in zip((1, *SCORED), table, strict=True):
        assert pub.GLM47FLASH_TOK_S[arm][users] == pytest.approx(value, abs=0.05)


def test_every_run_is_the_same_job():
    """64 requests of 256 output tokens; duration x throughput = 16,384 tokens."""
    assert pub.GLM47FLASH_REQUESTS * pub.GLM47FLASH_OUTPUT_TOKENS == 16_384
    assert prompt_tokens() == pytest.approx(437.6, abs=0.05)


def test_the_model_dict_adds_up_to_the_published_30b():
    g = GLM47_FLASH_MODEL
    total = (
        46 * (g["layer_params"] + 64 * g["expert_params"])
        + g["dense_layer_params"]
        + 2 * g["lm_head_params"]
    )
    assert total == pytest.approx(29.94e9, rel=1e-3)
    # the server's 56.37 GB of weights (GiB, with its NextN layer): BF16
    assert total * 2 / 2**30 == pytest.approx(56.37, rel=0.02)
    assert g["kv_bytes_per_token"] == 576 * 2 * 47


def test_the_calibration_uses_c1_only():
    scenario, al, alpha, passes_ms, cycle_ms = calibrated()
    assert al == pub.GLM47FLASH_AL[MTP][1]
    assert alpha == pytest.approx(al - 1.0, abs=1e-9)  # a chain of 1
    assert cycle_ms == pytest.approx(pub.GLM47FLASH_TPOT_MS[MTP][1] * al)
    assert scenario.timing.decode_ms == pub.GLM47FLASH_TPOT_MS[PLAIN][1]
    assert scenario.timing.cycle_overhead_ms == pytest.approx(cycle_ms - passes_ms)
    assert scenario.timing.cycle_overhead_ms > 0
