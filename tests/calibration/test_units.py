"""Figures an order of magnitude off the stated server's physics, or contradicting each
other, are refused with one line naming the likely unit mix-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import baseline_measurement, point_measurement
from sim.calibration.physics import LEAST_EFFICIENCY, decode_roofline_ms, implied_efficiency
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario

SCENARIOS = Path(__file__).parents[2] / "scenarios"
SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"
H200 = SCENARIOS / "kimi-k25-8xh200-nvlink-eagle3.toml"
LLAMA = SCENARIOS / "llama31-8b-1xh100-eagle3.toml"


def test_a_tpot_typed_for_tok_s_beside_a_point_is_named() -> None:
    """Issue 31: --baseline-tok-s 22 (a TPOT in ms) silently fitted a 45 ms decode; the
    point's cycle (1000 x 4.68 / 150 = 31 ms) cannot be shorter than the decode."""
    data = baseline_measurement(22.0, 0.02, "--baseline-tok-s") + point_measurement(
        5, 4.68, 150.0, 0.02, "--point 5:4.68:150"
    )
    with pytest.raises(SpecsimError, match=r"TPOT in ms \(then give 45.45 tok/s\)"):
        calibrate(load_scenario(LLAMA), data)


def test_a_decode_slower_than_any_measured_server_is_named() -> None:
    with pytest.raises(SpecsimError, match=r"if 1\.5 is a TPOT in ms, give 666\.7 tok/s"):
        calibrate(load_scenario(LLAMA), baseline_measurement(1.5, 0.02, "--baseline-tok-s"))


def test_a_decode_faster_than_the_weights_can_be_read_is_named() -> None:
    roof = decode_roofline_ms(load_scenario(LLAMA))  # 4.48 ms on one H100
    tok_s = 2.0 * 1000.0 / roof
    with pytest.raises(SpecsimError, match="faster than 1x H100"):
        calibrate(load_scenario(LLAMA), baseline_measurement(tok_s, 0.02, "--baseline-tok-s"))


def test_the_shipped_measured_decodes_pass() -> None:
    """Every decode measured in the repository is above the least efficiency (the slowest,
    Kimi-K2.5 on 8x H200, reaches about 0.1 of peak)."""
    for path in (SEED, H200):
        s = load_scenario(path)
        assert implied_efficiency(s, s.timing.decode_ms) > 4 * LEAST_EFFICIENCY
    data = baseline_measurement(158.34, 0.02, "b") + point_measurement(5, 4.68, 361.7, 0.02, "p")
    calibrate(load_scenario(LLAMA), data)  # no error


def test_a_tpot_typed_for_tok_s_against_the_measured_verify_is_named() -> None:
    """Issue 31: the seed's verify is measured (30 ms over 3 tokens); --baseline-tok-s 22
    alone means a 45 ms decode, longer than that verify."""
    with pytest.raises(SpecsimError, match=r"measured verify \(30 ms.*give 45\.45 tok/s"):
        calibrate(load_scenario(SEED), baseline_measurement(22.0, 0.02, "--baseline-tok-s"))
