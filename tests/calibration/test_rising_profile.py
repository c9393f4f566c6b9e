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
         "--point", "2:2.0:60", "--point", "4:3.2:80"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.output.splitlines() if "rises with position" in ln]
    assert "acceptance.decay 2 > 1, the upper end of the fit's range" in line
