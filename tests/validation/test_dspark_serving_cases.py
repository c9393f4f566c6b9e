"""Qwen3.8-27B + DSpark (7 block-parallel tokens) on one B200: cases 39/40's model and
server, the drafter's size from its parts, calibrated on one stream only."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.dspark_serving_cases import (
    DSPARK,
    DSPARK_ARM,
    DSPARK_DRAFT_PARAMS,
    DSPARK_KV_BYTES_PER_TOKEN,
)
from sim.validation.hybrid_mtp_serving_cases import HUMANEVAL, PLAIN, QWEN38_MODEL, calibrated
from sim.validation.hybrid_mtp_serving_cases import _calibration_lengths as lengths
from sim.validation.hybrid_mtp_serving_cases import _cycle_ms as cycle_ms
from sim.validation.hybrid_mtp_serving_cases import _scenario as scenario


def test_the_drafter_is_five_verifier_sized_layers_the_fc_the_shared_head_and_markov():
    layer = 5120 * 6144 + 2 * 5120 * 1024 + 6144 * 5120 + 3 * 5120 * 17408
    assert layer == 340_787_200
    fc, head, markov = 8 * 5120 * 5120, QWEN38_MODEL["lm_head_params"], 256 * 248_320
    parts = 5 * layer + fc + head + markov
    assert parts == DSPARK_DRAFT_PARAMS
    assert parts == pytest.approx(3.2486e9, rel=1e-4)
    assert DSPARK_KV_BYTES_PER_TOKEN == 20_480


def test_the_scenario_is_the_mtp_cases_with_the_drafter_and_one_drafter_pass():
    sc = scenario(HUMANEVAL, DSPARK_ARM)
    assert sc.speculation.num_steps == 7 and sc.speculation.parallel_draft
    assert sc.model.draft_params == DSPARK_DRAFT_PARAMS
    assert sc.model.state_bytes_per_request == QWEN38_MODEL["state_bytes_per_request"]
    assert sc.model.layer_params == QWEN38_MODEL["layer_params"]
    n = pub.SPECULATORS_QWEN38_COMPLETED[HUMANEVAL]
    assert n[DSPARK].keys() == {1}  # nothing from a scored load
    _, output = lengths(HUMANEVAL, DSPARK)
    assert sc.workload.output_tokens == round(output)


@pytest.mark.parametrize("subset", pub.SPECULATORS_QWEN38_SUBSETS)
def test_the_calibration_reproduces_the_one_stream_cycle_and_accept_length(subset):
    sc, alpha, passes_ms, measured_ms = calibrated(subset, DSPARK_ARM)
    al = pub.SPECULATORS_QWEN38_AL[subset][DSPARK][1]
    assert sum(alpha**i for i in range(8)) == pytest.approx(al, abs=1e-8)
    assert measured_ms == pytest.approx(pub.SPECULATORS_QWEN38_ITL_MS[subset][DSPARK][1] * al)
    assert sc.timing.cycle_overhead_ms == pytest.approx(measured_ms - passes_ms)
    assert sc.timing.cycle_overhead_ms > 0.0  # the derived passes fit inside the measured cycle
    assert cycle_ms(sc) == pytest.approx(measured_ms, rel=1e-9)
    assert sc.timing.decode_ms == pub.SPECULATORS_QWEN38_ITL_MS[subset][PLAIN][1]
