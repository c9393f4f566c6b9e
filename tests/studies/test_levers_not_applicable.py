"""A lever that changes nothing on a scenario is shown as not applicable, never ranked."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sim.binding.bound import bind
from sim.cli import main
from sim.scenario.load import load_scenario
from sim.studies.levers import lever_scenarios, lever_table

SCENARIOS = Path(__file__).parents[2] / "scenarios"
LLAMA = SCENARIOS / "llama31-8b-1xh100-eagle3.toml"
H200 = SCENARIOS / "kimi-k25-8xh200-nvlink-eagle3.toml"
SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"


def _rows(path: Path) -> dict[str, dict]:
    table = lever_table(bind(load_scenario(path))).to_dict()
    return {r["name"]: r for r in table["levers"]} | {"_ranked": table["ranked"]}


def test_graphed_one_gpu_scenario_has_no_lever_to_rank():
    rows = _rows(LLAMA)
    assert "already graphed" in rows["graph the verify"]["not_applicable"]
    assert "one GPU" in rows["NVLink"]["not_applicable"]
    assert rows["graph + NVLink"]["not_applicable"]
    assert rows["graph the verify"]["tok_s"] is None
    assert rows["_ranked"] == []


def test_nvlink_scenario_ranks_graphing_but_not_nvlink():
    rows = _rows(H200)
    assert "already on nvlink4" in rows["NVLink"]["not_applicable"]
    assert "NVLink" not in rows["_ranked"] and "graph the verify" in rows["_ranked"]
    assert "not_applicable" not in rows["graph the verify"]


def test_seed_levers_all_apply():
    rows = _rows(SEED)
    assert not any(r.get("not_applicable") for k, r in rows.items() if k != "_ranked")


def test_compare_levers_leaves_out_columns_identical_to_as_is():
    names = [n for n, _ in lever_scenarios(load_scenario(LLAMA))]
    assert names == ["plain decoding", "as is"]


def test_hardware_text_says_not_applicable_and_ranks_none():
    out = CliRunner().invoke(main, ["hardware", str(LLAMA)]).output
    assert "graph the verify         -  not applicable: the verify is already graphed" in out
    assert "each lever alone: none applies here" in out
    verbose = CliRunner().invoke(main, ["hardware", str(LLAMA), "--verbose"]).output
    assert "ranked (one lever at a time): none applies here" in verbose
    doc = json.loads(CliRunner().invoke(main, ["hardware", str(LLAMA), "--json"]).output)
    assert doc["levers"]["ranked"] == []
