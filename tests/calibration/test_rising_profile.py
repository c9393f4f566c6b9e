"""A fitted acceptance profile that rises with position is named in a note, not kept
silently; a falling one gets no such note."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import CumulativeObs, Measurements
from sim.cli import main
from sim.scenario.load import load_scenario

SEED = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"


def _cumulative(*rates: float) -> Measurements:
    return Measurements(
        cumulative=tuple(CumulativeObs(i + 1, c, 0.01, "test") for i, c in enumerate(rates))
    )


def _rising(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if n.startswith("the fitted acceptance rises with position")]


def test_rising_per_position_rates_are_named():
    # c = 0.6, 0.54, 0.513: conditional rates 0.6, 0.9, 0.95 rise
    cal = calibrate(load_scenario(SEED), _cumulative(0.6, 0.54, 0.513))
    (note,) = _rising(cal.notes)
    assert "0.600, 0.900, 0.950" in note and "position 2 above position 1" in note


def test_falling_per_position_rates_get_no_note():
    cal = calibrate(load_scenario(SEED), _cumulative(0.7, 0.49, 0.3))
    assert _rising(cal.notes) == []


def test_rising_shape_from_the_cli_names_the_decay():
    result = CliRunner().invoke(
        main,
        ["calibrate", "--scenario", str(SEED), "--baseline-tok-s", "82.5",
         "--point", "2:2.0:60", "--point", "4:3.2:80", "--verbose"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.output.splitlines() if "rises with position" in ln]
    assert "acceptance.decay 2 > 1, the upper end of the fit's range" in line


LLAMA = Path(__file__).parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml"


def _seam(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if "kept from the base scenario" in n and "rises" in n]


def test_base_rates_kept_past_the_measured_positions_above_the_fit_are_named():
    """A k = 5 base (flat 0.883 past its first rate) calibrated on k = 3 counters falling
    to 0.688: positions 4 and 5 keep the base's 0.883, so the written profile jumps up at
    position 4; the note names the seam."""
    cal = calibrate(load_scenario(LLAMA), _cumulative(0.74, 0.5369, 0.3692))
    rates = cal.scenario.acceptance.per_position
    assert len(rates) == 5 and rates[3] > rates[2]
    (note,) = _seam(cal.notes)
    assert "acceptance.per_position[3..4]" in note
    assert f"{rates[3]:.3f}" in note and f"{rates[2]:.3f} at position 3" in note
    assert _rising(cal.notes) == []  # the measured positions themselves fall


def test_base_rates_kept_below_the_fit_get_no_seam_note():
    cal = calibrate(load_scenario(LLAMA), _cumulative(0.95, 0.9, 0.86))
    assert cal.scenario.acceptance.per_position[3] <= cal.scenario.acceptance.per_position[2]
    assert _seam(cal.notes) == []
