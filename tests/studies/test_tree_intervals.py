"""A tree scenario's 90% intervals: its targets are a chain's questions and get the chain's
intervals; the tree's own tok/s gets its own, its tree rebuilt in every draw (run, compare
and the hardware levers printed '-' for it, and the levers once gave the chain's interval,
plain decoding 'not available' and 'nanx')."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.binding.closed_form import closed_form_tok_s
from sim.cli import main
from sim.report.hardware import render_hardware
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.analysis import analyze
from sim.studies.bisection import closed_form_stats
from sim.studies.solve import solve_lever
from tests.conftest import ROOT, SEED

TREE = {
    "speculation.topk": 4, "speculation.num_draft_tokens": 8, "speculation.num_steps": 3,
    "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
}  # fmt: skip
LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
SETS = [arg for key, value in TREE.items() for arg in ("--set", f"{key}={value}")]


@pytest.fixture(scope="module")
def tree():
    return with_overrides(load_scenario(SEED), TREE)


@pytest.fixture(scope="module")
def tree_analysis(tree):
    """The tree's analysis with its intervals (frozen: shared by the tests that read it)."""
    return analyze(bind(tree), uncertainty=True)


def test_the_targets_get_the_chains_intervals_and_the_tree_its_own(tree, tree_analysis) -> None:
    unc = tree_analysis.uncertainty
    chain = analyze(
        bind(with_overrides(tree, {"speculation.topk": 1})), uncertainty=True
    ).uncertainty
    assert unc is not None and chain is not None
    assert [t.interval90 for t in unc.targets] == [t.interval90 for t in chain.targets]
    assert unc.tok_s_interval90 is not None and unc.accept_length_interval90 is not None
    assert unc.tok_s_interval90 != chain.tok_s_interval90
    assert any("re-solved in the same draws, SGLang's tree rebuilt" in n for n in unc.notes)


def test_run_gives_the_tree_its_interval(tmp_path) -> None:
    res = CliRunner().invoke(main, ["run", str(SEED), *SETS, "--method", "exact", "--verbose"])
    assert res.exit_code == 0, res.output
    assert "none for a tree" not in res.output and "not re-solved" not in res.output
    line = next(ln for ln in res.output.splitlines() if "90% interval from inputs" in ln)
    assert "tok/s, accept length [" in line
    assert "[0.720, 1.000]" in res.output  # the chain answer's interval, was '-'
    doc = json.loads(
        CliRunner().invoke(main, ["run", str(SEED), *SETS, "--method", "exact", "--json"]).output
    )
    lo, hi = doc["uncertainty"]["tok_s_interval90"]
    assert lo < doc["analytic"]["throughput_tok_s"] < hi
    assert doc["targets"][0]["uncertainty"]["interval90"] is not None


def test_the_hardware_levers_of_a_tree(tree_analysis) -> None:
    # one levers study: `hardware --json` (its "levers" are ``lever_table(...).to_dict()``),
    # its screen rendered from that document as the command renders it
    res = CliRunner().invoke(main, ["hardware", str(SEED), *SETS, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    table = doc["levers"]
    rows = {r["name"]: r for r in table["levers"]}
    assert rows["plain decoding"]["tok_s"] == pytest.approx(1000 / 12.12)  # was not available
    lo, hi = rows["as is"]["interval90"]  # once the chain's, 59.3-65.4 around 66.2
    assert lo < rows["as is"]["tok_s"] < hi
    assert lo == pytest.approx(tree_analysis.uncertainty.tok_s_interval90.low)
    assert any("SGLang's tree rebuilt" in n for n in table["notes"])
    text = render_hardware(doc, verbose=False)
    assert "levers for" in text and "nan" not in text and "not available" not in text


def test_compare_says_a_column_is_a_tree() -> None:
    small = ["--replications", "2", "--requests", "5", "-q"]
    res = CliRunner().invoke(main, ["compare", str(SEED), str(SEED), *SETS, *small, "--verbose"])
    assert res.exit_code == 0, res.output
    assert res.output.count("drafts a tree 3/4/8: its required acceptance is a chain's") == 2
    assert "no 90% interval" not in res.output
    row = next(ln for ln in res.output.splitlines() if ln.startswith("  90% inputs+model"))
    assert row.count("[") == 2  # both trees' tok/s intervals, were '-'


def test_solve_on_a_tree_has_the_trees_closed_form_and_interval() -> None:
    """search --solve on a tree: the closed-form lever value reaches the target with the
    tree's own accept length (it took the chain's E[L] on the tree's cycle), and its 90%
    interval, the tree rebuilt in every draw, holds it (it had none)."""
    llama = with_overrides(load_scenario(LLAMA), TREE)
    res = solve_lever(
        llama, "timing.cycle_overhead_ms", [400.0], simulate=closed_form_stats, quantile=None
    )
    t = res.targets[0]
    assert t.reachable and t.closed_form_value is not None
    at = with_overrides(llama, {"timing.cycle_overhead_ms": t.closed_form_value})
    assert closed_form_tok_s(at) == pytest.approx(400.0, rel=1e-3)
    assert t.uncertainty is not None
    lo, hi = t.uncertainty.interval90.to_list()
    assert lo < t.uncertainty.value < hi
    assert t.uncertainty.value == pytest.approx(t.closed_form_value, rel=2e-3)
