"""``specsim search`` never fails on a valid scenario: every shipped scenario, default
options (slow: minutes), and a Beta std that caps the scaled means is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.studies.acceptance_lever import acceptance_lever, spread_note
from tests.helpers import make

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.toml"))


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_search_with_default_options_answers_every_shipped_scenario(path: Path) -> None:
    result = CliRunner().invoke(main, ["search", str(path), "--json", "--workers", "2"])
    assert result.exit_code == 0, result.output[-2000:]
    doc = json.loads(result.stdout)
    assert doc["kind"] == "search" and doc["targets"]


@pytest.mark.slow
def test_two_targets_on_the_mix_scenario() -> None:
    path = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
    args = ["search", str(path), "--target", "80", "--target", "120", "--num-steps", "2:4"]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    assert len(json.loads(result.stdout)["targets"]) == 2


def test_a_std_that_caps_the_scaled_means_is_said() -> None:
    scenario = make({"per_position": [0.6, 0.5, 0.4], "std": 0.2})
    lever = acceptance_lever(scenario, 3)
    assert lever.spread_limited
    # the cap is where the largest scaled mean m still allows the std: std^2 < m (1 - m)
    m = max(lever.model_at(lever.x_max).mean_rates())
    assert pytest.approx(m * (1 - m), rel=1e-3) == 0.2**2
    assert "concentration" in spread_note([lever])
    free = make({"per_position": [0.6, 0.5, 0.4], "concentration": 5.0})
    assert spread_note([acceptance_lever(free, 3)]) is None
