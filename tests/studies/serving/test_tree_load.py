"""The chain-against-tree study: crossings, the best-draft table, a small real run."""

from __future__ import annotations

import pytest

from sim.errors import SpecsimError
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.load import load_scenario
from sim.scenario.validate import scenario_from_dict
from sim.studies.serving.tree_load import tree_load_study
from sim.studies.serving.tree_load_crossings import crossing_of
from sim.studies.serving.tree_load_drafts import parse_tree, table_row
from tests.conftest import ROOT

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
SMALL = [
    "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
    "workload.output_tokens=64",
    "workload.requests=16",
    "simulation.replications=2",
]


def test_crossing_interpolates_in_log_concurrency():
    c = crossing_of("t", "c", "per_user_tok_s", [1, 4, 16], [1.2, 1.1, 0.9])
    assert (c.last_win, c.first_loss) == (4, 16)
    assert c.at == pytest.approx(8.0)  # halfway between log 4 and log 16
    never = crossing_of("t", "c", "m", [1, 4], [0.9, 0.8])
    assert never.never_wins and never.first_loss == 1 and never.at is None
    always = crossing_of("t", "c", "m", [1, 4], [1.3, 1.1])
    assert always.always_wins and always.first_loss is None
    again = crossing_of("t", "c", "m", [1, 4, 16, 64], [1.1, 0.9, 1.01, 0.95])
    assert (again.first_loss, again.wins_again) == (4, (16,))


def test_parse_tree_and_rows():
    assert parse_tree("5/4/8") == TreeDraft(5, 4, 8)
    for bad in ("5/4", "5/1/6", "5/4/200", "a/b/c"):
        with pytest.raises(SpecsimError) as err:
            parse_tree(bad)
        assert err.value.param == "trees"
    assert table_row(1, 8, 3) == [1, 8, 3, 1, 4]
    assert table_row(9, 64, TreeDraft(5, 4, 8)) == [9, 64, 5, 4, 8]
    assert table_row(65, 1024, 0) == [65, 1024, 0, 1, 1]


def test_a_wide_tree_wins_alone_and_loses_to_the_chain_at_64_users():
    """Llama-3.1-8B on one H100: the 32-token tree beats the chain of 5 at one user (its
    verify barely grows at batch 1) and loses at 64 (the verify over 64 x 32 tokens is
    compute-bound)."""
    sc = load_scenario(LLAMA, SMALL)
    result = tree_load_study(sc, [1, 64], chains=[5], trees=[TreeDraft(6, 8, 32)])
    ratios = [p.vs_chain["tree 6/8/32"]["chain 5"]["per_user_tok_s"] for p in result.points]
    assert ratios[0].ci95 is not None and ratios[0].ci95[0] > 1.0
    assert ratios[1].ci95 is not None and ratios[1].ci95[1] < 1.0
    (cross,) = [c for c in result.crossings if c.metric == "per_user_tok_s"]
    assert (cross.last_win, cross.first_loss) == (1, 64) and 1 < cross.at < 64
    table = result.best_table()
    assert table[0] == [1, 8, 6, 8, 32] and table[-1][:2] == [9, 1024]
    for p in result.points:  # the same users: plain decoding is one curve for all
        assert p.accept_length["off"].mean == 1.0


def test_a_chain_without_ranks_meets_the_default_tree_on_the_default_profile():
    """A chain scenario without a tree: SGLang's default tree 5/4/8; without a rank shape:
    the named prior's ranks below the top-1. Both are named in ``defaults`` and in the
    assumptions; the prior gives the same numbers as setting it by hand."""
    from sim.model.tree.presets import DEFAULT_RANK_PROFILE
    from sim.studies.serving.tree_load_drafts import DEFAULT_TREE

    given = load_scenario(LLAMA, SMALL)
    raw = given.model_dump(exclude_none=True)
    del raw["acceptance"]["rank_profile"]
    no_ranks = scenario_from_dict(raw, source="test")
    assert TreeDraft(5, 4, 8) == DEFAULT_TREE
    defaulted = tree_load_study(no_ranks, [1])
    assert set(defaulted.defaults) == {"tree", "acceptance.rank_profile"}
    assert defaulted.trees == ("tree 5/4/8",)
    assert DEFAULT_RANK_PROFILE in defaulted.defaults["acceptance.rank_profile"]
    assert defaulted.assumptions[0].startswith("default tree: tree 5/4/8")
    by_hand = tree_load_study(given, [1], trees=[DEFAULT_TREE])
    assert by_hand.defaults == {}
    assert defaulted.points == by_hand.points
    only_ranks = tree_load_study(no_ranks, [1], trees=[TreeDraft(5, 4, 8)])
    assert set(only_ranks.defaults) == {"acceptance.rank_profile"}


def test_a_load_whose_comparisons_are_settled_stops_at_its_first_replications():
    """Sequential replications: at one user the wide tree beats the chain of 5 by far and
    the best draft leads by far, so the load stops at its first 4 of 6 replications; those
    4 are the full run's first 4 (the same seeds), and with sequential off every load runs
    all 6. A load whose ratio sits near 1 continues the seed: its 6 are the full run's."""
    from sim.studies.serving.sequential import FIRST

    sc = load_scenario(LLAMA, [*SMALL[:-1], "simulation.replications=6"])
    kw = dict(chains=[5], trees=[TreeDraft(6, 8, 32)])
    seq = tree_load_study(sc, [1, 64], **kw)
    full = tree_load_study(sc, [1, 64], sequential=False, **kw)
    drafts = len(seq.drafts)
    assert seq.replications_run[1] == FIRST * drafts
    assert full.replications_run == {1: 6 * drafts, 64: 6 * drafts}
    assert any("replications: sequential" in a for a in seq.assumptions)
    assert not any("replications: sequential" in a for a in full.assumptions)
    # the ratio at one user on its 4 is settled, and those 4 are a run of 4's
    r = seq.points[0].vs_chain["tree 6/8/32"]["chain 5"]["per_user_tok_s"]
    assert r.ci95 is not None and r.ci95[0] > 1.0
    sc4 = load_scenario(LLAMA, [*SMALL[:-1], "simulation.replications=4"])
    four = tree_load_study(sc4, [1], sequential=False, **kw)
    assert seq.points[0].per_user_tok_s == four.points[0].per_user_tok_s
    if seq.replications_run[64] == 6 * drafts:  # continued: the same 6 replications
        a = seq.points[1].per_user_tok_s
        b = full.points[1].per_user_tok_s
        assert {n: x.mean for n, x in a.items()} == {n: x.mean for n, x in b.items()}
