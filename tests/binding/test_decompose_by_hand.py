"""Hand-worked checks of decompose: values computed from the formulas and their sources."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim.binding.decompose import scenario_hardware
from sim.scenario.load import load_scenario
from tests.conftest import SEED


def test_breakdown_on_another_point_rescales_compute_per_rank():
    """decompose.py breakdown(hw=...): compute x compute_scale(current, hw) = current gpus / hw gpus
    (8 -> 4: x2)."""
    hw = scenario_hardware(load_scenario(SEED))
    here = hw.breakdown("decode", 1)
    half = replace(hw.current, gpus=hw.current.gpus // 2)
    there = hw.breakdown("decode", 1, half)
    assert hw.current.gpus == 8
    assert there.compute_ms == pytest.approx(2.0 * here.compute_ms, rel=1e-12)


def test_verify_slope_is_taken_at_the_measured_token_count():
    """decompose.py scenario_pass_times: slope = table[m0] - table[m0 - 1] (verify over m0 + 1 minus
    over m0); the experts table is concave, so another pair differs."""
    from sim.binding.closed_form import pass_times
    from tests.conftest import ROOT

    path = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-graphed.toml"
    p = pass_times(load_scenario(path, ['timing.verify_growth="experts"']))
    m0 = p.verify_tokens
    assert p.verify_table_ms is not None and m0 == 3
    assert p.verify_ms_per_extra_token == pytest.approx(
        p.verify_over_ms(m0 + 1) - p.verify_over_ms(m0), rel=1e-12
    )
    assert p.verify_ms_per_extra_token != pytest.approx(
        p.verify_over_ms(m0 + 2) - p.verify_over_ms(m0 + 1), rel=1e-3
    )
