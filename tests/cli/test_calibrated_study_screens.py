"""The first screens of ``crossover`` and ``best-k`` on the shipped load-calibrated scenario
at a newcomer's small run (40 requests x 2 replications): 25 lines of at most 100
characters (they took 31 and 26), the answer, the conditioning line and the loads beyond
the measured batch kept."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.report.screen import fits
from tests.conftest import ROOT

CALIBRATED = ROOT / "scenarios" / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml"


# Slow (make test-slow): two whole studies at the newcomer's size. The fast suite keeps
# their parts: the screens' layout with the conditioning and beyond-the-measured lines
# (tests/report/test_crossover_screen.py, test_best_k_screen.py
# test_a_calibrated_scenarios_screen_keeps_its_answer_and_assumptions_in_25_lines) and
# both commands on a calibrated scenario saying so (tests/cli/test_conditioned_intervals.py).
@pytest.mark.slow
@pytest.mark.parametrize("command", ["crossover", "best-k"])
def test_a_small_run_on_a_calibrated_scenario_fits_a_screen(command: str) -> None:
    args = [command, str(CALIBRATED), "--requests", "40", "--replications", "2", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert fits(result.output, lines=25), (len(lines), result.output)
    assert any(ln.startswith("intervals conditioned on 6 calibration figures") for ln in lines)
    assert any(ln.startswith("* 64 users: beyond the highest measured batch") for ln in lines)
    assert "assumptions (lengths, draft" in " ".join(lines[-4:])
