"""The Kimi serving case's batch-1 calibration: the report's cycle, then the rate."""

from __future__ import annotations

import pytest

from sim.binding.closed_form import scenario_rates
from sim.model.rates import mean_accept_length
from sim.validation import serving_data as pub
from sim.validation.kimi_rtx6kpro_cases import RTX6KPRO_CYCLE_MS, kimi_scenario


def test_kimi_batch1_cycle_is_the_reported_interarrival_and_tok_s_follows():
    scenario, alpha, cycle_ms = kimi_scenario()
    assert cycle_ms == pytest.approx(RTX6KPRO_CYCLE_MS, rel=1e-9)
    assert scenario.timing.cycle_overhead_ms > 0
    al = mean_accept_length(scenario_rates(scenario, 3))
    assert al == pytest.approx(sum(alpha**j for j in range(4)), rel=1e-9)
    tok_s = 1000.0 * al / cycle_ms
    assert tok_s == pytest.approx(pub.RTX6KPRO_AGGREGATE_TOK_S["MTP=3"][1], rel=1e-6)


def test_kimi_case_reads_the_fp8_mla_cache_its_image_ran():
    """The report's image runs TRITON_MLA with an FP8 KV cache: the 512-wide latent and the
    64-wide RoPE key one byte each over 61 layers (the seed's BF16 bytes halved)."""
    scenario, _, _ = kimi_scenario()
    assert scenario.model.kv_bytes_per_token == (512 + 64) * 1 * scenario.model.layers
    assert scenario.model.draft_kv_bytes_per_token == 4096.0 / 2
