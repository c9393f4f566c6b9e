"""``search --topk``'s 90% intervals from inputs and model: every draw's required top-1
rate re-solved with SGLang's tree rebuilt at each trial rate (the answers had none). The
nominal row's root is the nominal answer, the interval holds it, inputs known exactly give
a zero width, each draw's root reaches the target and a hair lower does not, and the best
chain's interval is the chain search's at its k."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sim.studies.tree_search as tree_search
from sim.binding.bound import bind
from sim.binding.inputs import nominal_row
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.bisection import closed_form_stats
from sim.studies.search import search_acceptance
from sim.studies.tree_search import NO_INTERVAL_NOTE, search_draws, search_trees
from sim.uncertainty.answers import off_centre
from sim.uncertainty.tree_required_draws import XTOL, drawn_accept_lengths, required_top1_draws
from sim.uncertainty.tree_sampled import sampled_tree
from tests.cli.test_errors import run_cli
from tests.conftest import EXACT_UNCERTAINTY, SEED, seed_text_without_uncertainty
from tests.helpers import replay_once

RANKS = "acceptance.rank_profile"
FLAT = {RANKS: "sequoia-jf68m-llama2-7b", "acceptance.shape": "flat"}
STEPS, TOPKS, TOKENS = range(10, 16), [1, 2, 4], [12, 16]


@pytest.fixture(scope="module")
def flat():
    return with_overrides(load_scenario(SEED), FLAT)


@pytest.fixture(scope="module")
def found(flat):
    return search_trees(flat, [150.0], STEPS, TOPKS, TOKENS)


def refined_rows(found):
    """The first target's best tree and best chain, both refined to a top-1 rate."""
    t = found.targets[0]
    rows = [r for r in (t.best_tree, t.best_chain) if r is not None]
    assert len(rows) == 2 and all(r.top1 is not None for r in rows)
    return rows


def sampled_row(base, row, values):
    """``base`` at ``row``'s configuration, sampled at ``values`` with the search's inputs."""
    over = {"speculation.num_steps": row.num_steps, "speculation.topk": row.topk}
    if row.topk > 1:
        over["speculation.num_draft_tokens"] = row.num_draft_tokens
    draws = search_draws(base)
    return sampled_tree(bind(with_overrides(base, over)), values, inputs=draws.inputs)


def test_the_nominal_row_solves_to_the_nominal_answer(flat, found) -> None:
    draws = search_draws(flat)
    row0 = nominal_row(draws.inputs)
    for row in refined_rows(found):
        sampled = sampled_row(flat, row, row0)
        # started far from the answer: the solve, not the start, finds it
        roots = required_top1_draws(sampled, row0, 150.0, row.cycle_ms, 0.5)
        assert roots.top1[0] == pytest.approx(row.top1, abs=1e-6)
        assert roots.need[0] == pytest.approx(row.required_accept_length, rel=1e-12)


def _seed_with(write_scenario, uncertainty: str):
    """The seed at flat rates with the Sequoia rank profile and ``uncertainty`` as its
    [uncertainty] table."""
    text = seed_text_without_uncertainty().replace(
        'method = "eagle3"', 'method = "eagle3"\nshape = "flat"'
    )
    path = write_scenario(text + uncertainty)
    return with_overrides(load_scenario(path), {"acceptance.rank_profile": FLAT[RANKS]})


#: The exact seed with two symmetric input errors: every input centred in its range.
CENTRED = EXACT_UNCERTAINTY.replace(
    "timing.verify_ms = { stderr = 0.0 }", "timing.verify_ms = { stderr = 0.6 }"
).replace("[1.2, 1.2]", "[1.0, 1.4]")


def test_the_interval_holds_the_nominal_answer_of_centred_inputs(write_scenario) -> None:
    centred = _seed_with(write_scenario, CENTRED)
    inputs = search_draws(centred).inputs
    assert len(inputs) == 2 and off_centre(inputs) == ()
    for row in refined_rows(search_trees(centred, [150.0], STEPS, TOPKS, TOKENS)):
        iv = row.top1_interval90
        assert iv is not None and iv.unreachable == 0.0
        assert iv.low < row.top1 < iv.high
        assert iv.high - iv.low > 0.005  # 2% on the verify, 17% on the draft step


def test_every_draws_root_reaches_the_target_and_a_lower_rate_does_not(flat, found) -> None:
    draws = search_draws(flat)
    for row in refined_rows(found):
        sampled = sampled_row(flat, row, draws.values)
        u0 = row.top1  # below the cap here: u is the top-1 rate
        roots = required_top1_draws(sampled, draws.values, 150.0, row.cycle_ms, u0)
        ok = np.isfinite(roots.rate)
        assert ok.mean() > 0.9
        vals = draws.values[ok]
        at = drawn_accept_lengths(sampled, vals, roots.rate[ok])
        below = drawn_accept_lengths(sampled, vals, roots.rate[ok] - 2 * XTOL)
        cycle = 1000.0 * roots.need[ok] / 150.0  # the draw's cycle (ms)
        assert np.all(1000.0 * at / cycle >= 150.0 * (1 - 1e-12))
        assert np.all(1000.0 * below / cycle < 150.0)
        assert np.array_equal(at, roots.accept_length[ok])


def test_inputs_known_exactly_give_a_zero_width_interval(write_scenario) -> None:
    exact = _seed_with(write_scenario, EXACT_UNCERTAINTY)
    assert search_draws(exact).inputs == ()
    res = search_trees(exact, [150.0], STEPS, TOPKS, TOKENS)
    for row in refined_rows(res):
        iv = row.top1_interval90
        assert iv is not None and iv.width == 0.0
        assert iv.low == pytest.approx(row.top1, abs=1e-6)


def test_the_best_chains_interval_is_the_chain_searchs(flat, found) -> None:
    """The tree solve of a chain (topk 1) and the chain search's closed forms, in the same
    draws, give the same interval at the best chain's k."""
    row = found.targets[0].best_chain
    assert row is not None and row.top1_interval90 is not None
    k = row.num_steps
    chain = search_acceptance(flat, [150.0], [k], simulate=closed_form_stats)
    lo, hi = chain.targets[0].per_num_steps[0].interval90
    assert row.top1_interval90.low == pytest.approx(lo, abs=1e-5)
    assert row.top1_interval90.high == pytest.approx(hi, abs=1e-5)


def test_a_spread_says_it_has_no_interval(flat) -> None:
    spread = with_overrides(flat, {"acceptance.concentration": 50.0})
    res = search_trees(spread, [150.0], [13], [1])
    assert NO_INTERVAL_NOTE in res.notes
    row = res.targets[0].best_chain
    assert row is not None and row.top1_interval90 is None


def test_the_cli_prints_and_lists_the_interval(monkeypatch) -> None:
    # one search rendered as text and as JSON (the hardware model's memo: a cache)
    once = replay_once(tree_search.search_trees, ignoring=("memo",))
    monkeypatch.setattr(tree_search, "search_trees", once)
    args = ["search", str(SEED), *[a for k, v in FLAT.items() for a in ("--set", f"{k}={v}")]]
    args += ["--topk", "1,2", "--num-steps", "12:14", "--draft-tokens", "16", "--target", "150"]
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "no 90% interval" not in out
    assert out.count("    90% interval from inputs and model: top-1 [") == 2
    res = run_cli(*args, "--json")
    assert res.exit_code == 0, res.output
    target = json.loads(res.output)["targets"][0]
    for key in ("best_tree", "best_chain"):
        lo, hi = target[key]["top1_interval90"]
        assert lo < target[key]["top1"] < hi
        assert target[key]["top1_unreachable_share"] == 0.0
