"""``run``, ``serve`` and ``tree-load`` on a static tree (EAGLE-1's default tree)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

EAGLE1 = str(Path(__file__).resolve().parents[1] / "data" / "trees" / "eagle1.toml")
FAST = ["--replications", "2", "--requests", "20"]


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_run_reports_the_given_tree_beside_the_best_of_its_budget():
    doc = cli_json("run", EAGLE1, *FAST)
    tree = doc["tree"]
    assert tree["static_tree"] == "preset eagle1-default"
    assert (tree["num_steps"], tree["topk"], tree["num_draft_tokens"]) == (5, 4, 26)
    assert tree["sglang_tree"]["nodes_per_depth"] == [4, 8, 8, 3, 2]
    assert tree["optimal_tree"]["drafts"] <= 25
    # the best tree of the same budget, depth and width is never worse
    assert tree["accept_length"]["optimal"] >= tree["accept_length"]["sglang"]
    assert doc["analytic"]["accept_length"] == pytest.approx(tree["accept_length"]["sglang"])


def test_run_text_names_the_static_tree():
    result = CliRunner().invoke(main, ["run", EAGLE1, *FAST, "--verbose"])
    assert result.exit_code == 0, result.output
    assert "speculative (static tree, 25 drafts, depth 5)" in result.output
    assert "Static tree (preset eagle1-default: 25 drafts, depth 5, width 4" in result.output


def test_serve_runs_the_tree_and_says_how_it_is_costed():
    doc = cli_json("serve", EAGLE1, "--concurrency", "2", *FAST)
    assert any(a.startswith("static tree: verified as given") for a in doc["assumptions"])


def test_tree_load_compares_the_tree_with_its_depth_long_chain():
    doc = cli_json("tree-load", EAGLE1, "--concurrency", "1,4", *FAST)
    assert set(doc["policies"]) == {"off", "chain 5", "static tree (25 drafts, depth 5)"}
    assert doc["best_draft_table"] is None or all(len(r) == 5 for r in doc["best_draft_table"])
