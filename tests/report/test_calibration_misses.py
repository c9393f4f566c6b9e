"""The calibration report says when the calibrated scenario misses the user's figures:
beyond 3 standard errors, the answers there are the model's, not the server's."""

from __future__ import annotations

from sim.calibration.result import Calibration, FittedValue, Residual
from sim.report.calibrate import format_calibration
from sim.scenario.load import load_scenario
from tests.conftest import SEED


def _calibration(*residuals: Residual) -> Calibration:
    value = FittedValue("timing.decode_ms", 10.0, 0.1, 9.0, True)
    chi2 = sum(r.normalized**2 for r in residuals)
    return Calibration(load_scenario(SEED), (value,), None, residuals, chi2, 1)


def test_figures_missed_beyond_3_sigma_are_counted_on_the_chi_square_line() -> None:
    """A Qwen3-235B server's EAGLE-3 tok/s (144.9 measured) against a derived verify
    (97.7 in the model): -11.5 sigma; the baseline at +2.9 sigma is not counted."""
    missed = Residual("tok/s at num_steps 3", 144.9, 97.68, 4.1, "b.jsonl line 1")
    near = Residual("baseline tok/s", 89.29, 94.5, 1.8, "a.jsonl line 1")
    for verbose in (False, True):
        text = format_calibration(_calibration(missed, near), verbose)
        (line,) = [ln for ln in text.splitlines() if ln.startswith("chi-square")]
        assert "1 of 2 figures missed by more than 3 σ" in line, line
        assert "the model's, not the server's" in text


def test_no_word_when_every_figure_is_within_3_sigma() -> None:
    near = Residual("baseline tok/s", 89.29, 94.5, 1.8, "a.jsonl line 1")
    text = format_calibration(_calibration(near), verbose=False)
    assert "missed" not in text and "chi-square" in text
