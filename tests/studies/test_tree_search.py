"""The chain-or-tree search: configurations, closed-form answers that reach their need,
the chain against the chain search's closed form, Monte Carlo refinement, the CLI."""

from __future__ import annotations

import json

import pytest

from sim.binding.acceptance_model import acceptance_model, rank_shares
from sim.binding.closed_form import pass_times
from sim.binding.decompose import scenario_hardware
from sim.binding.tree_cost import tree_cost
from sim.errors import SpecsimError
from sim.model.closed_forms import answer_at_k
from sim.model.tree.acceptance import TreeAcceptance, TreeDraft
from sim.scenario.load import load_scenario
from sim.scenario.overrides import pin_verify_tokens
from sim.studies.bisection import closed_form_stats
from sim.studies.tree_search import search_trees, tree_configs
from tests.cli.test_errors import run_cli
from tests.helpers import replay_once

SETS = ["acceptance.rank_rates=[0.7, 0.15, 0.06, 0.03]"]


def test_configurations_are_the_ones_sglang_builds():
    cfgs = tree_configs([1, 2, 3], [1, 2], [2, 4, 8])
    assert (1, 1, 2) in cfgs and (3, 1, 4) in cfgs and (2, 1, 8) not in cfgs
    assert (1, 2, 4) not in cfgs  # 2 candidates at one step
    assert (2, 2, 4) in cfgs and (2, 2, 8) not in cfgs  # 6 candidates at two steps


def test_best_configurations_reach_their_need_and_the_chain_matches_the_chain_search(seed_path):
    sc = load_scenario(seed_path, SETS)
    res = search_trees(sc, [100.0], range(1, 9), [1, 2, 4], [4, 8, 16])
    target = res.targets[0]
    base = pin_verify_tokens(sc)
    shares = rank_shares(base.acceptance, 4)
    for row in (target.best_tree, target.best_chain):
        assert row is not None and row.top1 is not None
        s, k, n = row.num_steps, row.topk, row.num_draft_tokens
        top1 = acceptance_model(base.acceptance, s).with_equal_rates(row.top1)
        model = TreeAcceptance(top1, shares[: k - 1], TreeDraft(s, k, n))
        cost = tree_cost(base, s, k, n, pass_times(base), scenario_hardware(base))
        assert row.cycle_ms == pytest.approx(cost.total_ms)
        assert model.mean_accept_length() == pytest.approx(row.required_accept_length, abs=1e-5)
    chain = target.best_chain
    closed = answer_at_k(100.0, pass_times(base), chain.num_steps)
    assert chain.top1 == pytest.approx(closed.alpha, abs=1e-5)
    # the table agrees with the refined answers where they overlap (no spread here)
    cfg = (chain.num_steps, 1, chain.num_steps + 1)
    assert target.table[cfg] == pytest.approx(chain.top1, abs=5e-4)


def test_monte_carlo_refinement_brackets_the_closed_form_with_the_closed_form_simulator(
    seed_path,
):
    sc = load_scenario(seed_path, SETS)
    res = search_trees(sc, [90.0], [4, 6], [1, 2], [6, 8], simulate=closed_form_stats)
    row = res.targets[0].best_tree
    assert row.top1_monte_carlo == pytest.approx(row.top1, abs=6e-4)
    assert row.evaluations > 0


def test_a_tree_search_needs_a_rank_profile(seed_path):
    with pytest.raises(SpecsimError, match="rank profile"):
        search_trees(load_scenario(seed_path), [100.0], [2], [1, 2])


def test_cli_tree_search_json(seed_path, monkeypatch):
    import sim.studies.tree_search as study

    # the JSON and the text: one search (the hardware model's memo: a cache)
    monkeypatch.setattr(study, "search_trees", replay_once(study.search_trees, ignoring=("memo",)))
    args = ["search", str(seed_path), "--set", SETS[0], "--topk", "1,2", "--num-steps", "2:4"]
    args += ["--draft-tokens", "4,6", "--replications", "2", "--requests", "10"]
    args += ["--target", "80"]
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["kind"] == "tree-search"
    assert doc["targets"][0]["best_chain"]["topk"] == 1
    text = run_cli(*args)
    assert "chain or tree?" in text.output and "answer:" in text.output


def test_sweep_and_compare_take_topk_and_num_draft_tokens(seed_path, tmp_path):
    out = tmp_path / "sw"
    result = run_cli(
        "sweep",
        str(seed_path),
        "--set",
        SETS[0],
        "--set",
        "speculation.num_draft_tokens=6",
        "--grid",
        "speculation.topk=1,2",
        "--grid",
        "speculation.num_steps=3",
        "--replications",
        "2",
        "--requests",
        "10",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(r["topk"], r["num_draft_tokens"]) for r in rows] == [(1, 4), (2, 6)]
    cmp = run_cli(
        "compare",
        str(seed_path),
        str(seed_path),
        "--set",
        SETS[0],
        "--set",
        "speculation.topk=2",
        "--set",
        "speculation.num_draft_tokens=5",
        "--replications",
        "2",
        "--requests",
        "10",
        "--json",
    )
    assert cmp.exit_code == 0, cmp.output
    col = json.loads(cmp.output)["scenarios"][0]
    assert (col["topk"], col["num_draft_tokens"]) == (2, 5)
