"""``--draws 1`` is refused on every command that draws the inputs: one draw has no spread,
so its "90% interval from inputs and model" would be the Monte Carlo one alone. One line,
exit 2, before any run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

SCENARIO = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"


@pytest.mark.parametrize("command", ["serve", "crossover", "best-k"])
def test_one_draw_is_refused_in_one_line(command: str) -> None:
    result = CliRunner().invoke(main, [command, str(SCENARIO), "--draws", "1"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith("specsim: error: ") and "--draws: 1 draw has no spread" in lines[0]


def test_the_flags_default_is_the_librarys_draws() -> None:
    """The option's literal default (the command layer does not import the binding at
    start-up) is the library's ``DRAWS``."""
    from sim.cli.serve import serve
    from sim.uncertainty.perturb import DRAWS

    (draws,) = [p for p in serve.params if p.name == "draws"]
    assert draws.default == DRAWS
