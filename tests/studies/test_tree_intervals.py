"""A tree scenario's 90% intervals: its targets are a chain's questions and get the chain's
intervals; the tree's own tok/s gets none, and every command says so (run, compare and the
hardware levers printed '-' without a word, and the levers gave the chain's interval, plain
decoding 'not available' and 'nanx')."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario, with_overrides
from sim.studies.analysis import analyze
from sim.studies.levers import lever_table
from tests.conftest import SEED

TREE = {
    "speculation.topk": 4, "speculation.num_draft_tokens": 8, "speculation.num_steps": 3,
    "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
}  # fmt: skip
SETS = [arg for key, value in TREE.items() for arg in ("--set", f"{key}={value}")]


@pytest.fixture(scope="module")
def tree():
    return with_overrides(load_scenario(SEED), TREE)


def test_the_targets_get_the_chains_intervals_and_the_tree_none(tree) -> None:
    unc = analyze(tree, uncertainty=True).uncertainty
    chain = analyze(with_overrides(tree, {"speculation.topk": 1}), uncertainty=True).uncertainty
    assert unc is not None and chain is not None
    assert [t.interval90 for t in unc.targets] == [t.interval90 for t in chain.targets]
    assert unc.tok_s_interval90 is None and unc.accept_length_interval90 is None
    assert chain.tok_s_interval90 is not None
    assert any("not re-solved per draw" in n for n in unc.notes)


def test_run_says_the_tree_has_no_interval(tmp_path) -> None:
    res = CliRunner().invoke(main, ["run", str(SEED), *SETS, "--method", "exact"])
    assert res.exit_code == 0, res.output
    assert "90% interval from inputs and model: none for a tree: the per-draw closed" in res.output
    assert "tree rebuilt from every draw's rates" in res.output
    assert "[0.720, 1.000]" in res.output  # the chain answer's interval, was '-'
    doc = json.loads(
        CliRunner().invoke(main, ["run", str(SEED), *SETS, "--method", "exact", "--json"]).output
    )
    assert doc["uncertainty"]["tok_s_interval90"] is None
    assert doc["targets"][0]["uncertainty"]["interval90"] is not None


def test_the_hardware_levers_of_a_tree(tree) -> None:
    table = lever_table(tree).to_dict()
    rows = {r["name"]: r for r in table["levers"]}
    assert rows["plain decoding"]["tok_s"] == pytest.approx(1000 / 12.12)  # was not available
    assert rows["as is"]["interval90"] is None  # was the chain's, 59.3-65.4 around 66.2
    assert any("not re-solved per draw" in n for n in table["notes"])
    res = CliRunner().invoke(main, ["hardware", str(SEED), *SETS])
    assert res.exit_code == 0 and "nan" not in res.output and "not available" not in res.output


def test_compare_says_a_column_is_a_tree() -> None:
    small = ["--replications", "2", "--requests", "5", "-q"]
    res = CliRunner().invoke(main, ["compare", str(SEED), str(SEED), *SETS, *small])
    assert res.exit_code == 0, res.output
    assert res.output.count("drafts a tree 3/4/8: its required acceptance is a chain's") == 2
