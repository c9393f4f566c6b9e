"""Every shipped scenario can be served: ``specsim serve`` needs model data (weights, the
drafter's parameters, a GPU) beyond the batch-1 timings, and the graphed, PCIe Gen5 and mix
variants of the seed once stopped at 'model.draft_params / layer_params: needed'."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
TINY = ["--concurrency", "2", "--replications", "1", "--requests", "4", "--json"]


def test_the_scenarios_directory_is_found():
    assert len(SCENARIOS) >= 7


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_shipped_scenario_serves(path):
    result = CliRunner().invoke(main, ["serve", str(path), *TINY])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["kind"] == "serve"
    for policy in ("speculative", "baseline"):
        assert doc[policy]["per_user_tok_s"]["mean"] > 0, policy
