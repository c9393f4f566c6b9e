"""A tree's tok/s over the draws of its uncertain inputs, its tree rebuilt in every draw:
the nominal draw is the nominal answer, the interval holds it, inputs known exactly give
a zero-width interval, a wider stated range a wider one, and the tree of topk 1 is the
chain."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.inputs import draw_inputs, nominal_row
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.analysis import analyze
from sim.uncertainty.answers import TREE_NOTE, answer_uncertainty
from sim.uncertainty.interval import SAMPLES
from sim.uncertainty.tree_sampled import sampled_tree
from tests.conftest import EXACT_UNCERTAINTY, ROOT, SEED, seed_text_without_uncertainty

TREE = {
    "speculation.topk": 4, "speculation.num_draft_tokens": 8, "speculation.num_steps": 3,
    "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
}  # fmt: skip
LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
#: Every input of the seed known exactly (flat rates: no decay prior, no shape error).
EXACT = EXACT_UNCERTAINTY


def _exact_seed(write_scenario, extra: str = "", drop: str = ""):
    """The seed tree with every input known exactly (flat rates), but for ``extra`` lines
    under [uncertainty] (replacing the exact entry of the field ``drop``)."""
    text = seed_text_without_uncertainty().replace(
        'method = "eagle3"', 'method = "eagle3"\nshape = "flat"'
    )
    exact = "\n".join(x for x in EXACT.splitlines() if not drop or not x.startswith(drop))
    return with_overrides(load_scenario(write_scenario(text + exact + "\n" + extra)), TREE)


@pytest.mark.parametrize("path", [SEED, LLAMA, MIX], ids=["seed", "llama", "mix"])
def test_the_nominal_draw_is_the_nominal_answer(path) -> None:
    tree = with_overrides(load_scenario(path), TREE)
    nominal = analyze(bind(tree))
    inputs = bind(tree).inputs
    at = sampled_tree(bind(tree), draw_inputs(tree, inputs, SAMPLES, 1)).answers(
        nominal_row(inputs)
    )
    assert at.tok_s[0] == pytest.approx(nominal.throughput_tok_s, rel=1e-12)
    assert at.accept_length[0] == pytest.approx(nominal.accept_length, rel=1e-12)


@pytest.mark.parametrize("path", [SEED, LLAMA], ids=["seed", "llama"])
def test_the_interval_holds_the_nominal_answer(path) -> None:
    tree = with_overrides(load_scenario(path), TREE)
    a = analyze(bind(tree), uncertainty=True)
    unc = a.uncertainty
    assert unc is not None and TREE_NOTE in unc.notes
    lo, hi = unc.tok_s_interval90.to_list()
    assert lo < a.throughput_tok_s < hi
    lo, hi = unc.accept_length_interval90.to_list()
    assert lo < a.accept_length < hi
    assert hi < a.tree.tree.max_depth + 1


def test_inputs_known_exactly_give_a_zero_width_interval(write_scenario) -> None:
    a = analyze(bind(_exact_seed(write_scenario)), uncertainty=True)
    unc = a.uncertainty
    assert unc is not None and unc.inputs == ()
    assert unc.tok_s_interval90.low == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.tok_s_interval90.high == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.accept_length_interval90.width == 0.0


@pytest.mark.parametrize(
    "line, widths",
    [
        ("timing.cycle_overhead_ms = {{ range = [{lo}, {hi}] }}",
         [(0.55, 0.65), (0.3, 0.9), (0.1, 1.1)]),
        ("acceptance.alpha = {{ stderr = {se} }}", [0.002, 0.01, 0.03]),
    ],
    ids=["a timing range", "the acceptance stderr"],
)  # fmt: skip
def test_a_wider_stated_range_widens_the_interval(write_scenario, line, widths) -> None:
    spans = []
    for w in widths:
        text = line.format(lo=w[0], hi=w[1]) if isinstance(w, tuple) else line.format(se=w)
        tree = _exact_seed(write_scenario, text + "\n", drop=text.split(" =")[0])
        interval = answer_uncertainty(bind(tree), []).tok_s_interval90
        spans.append(interval.high - interval.low)
    assert 0.0 < spans[0] < spans[1] < spans[2]


def test_the_tree_of_topk_1_is_the_chain() -> None:
    chain = with_overrides(load_scenario(SEED), {"speculation.num_steps": 3})
    unc = answer_uncertainty(bind(chain), [])
    inputs = bind(chain).inputs
    draws = draw_inputs(chain, inputs, SAMPLES, chain.simulation.seed)
    at = sampled_tree(bind(chain), draws).answers(draws)
    lo, hi = np.quantile(at.tok_s, [0.05, 0.95])
    assert lo == pytest.approx(unc.tok_s_interval90.low, rel=1e-12)
    assert hi == pytest.approx(unc.tok_s_interval90.high, rel=1e-12)
    lo, hi = np.quantile(at.accept_length, [0.05, 0.95])
    assert lo == pytest.approx(unc.accept_length_interval90.low, rel=1e-12)
    assert hi == pytest.approx(unc.accept_length_interval90.high, rel=1e-12)


def test_the_tree_is_solved_in_the_chains_draws() -> None:
    tree = with_overrides(load_scenario(SEED), TREE)
    chain = with_overrides(tree, {"speculation.topk": 1})
    assert bind(tree).inputs == bind(chain).inputs
    unc, chain_unc = answer_uncertainty(bind(tree), []), answer_uncertainty(bind(chain), [])
    assert unc.inputs == chain_unc.inputs and unc.seed == chain_unc.seed
    assert unc.tok_s_interval90 != chain_unc.tok_s_interval90  # the tree's own


def test_the_best_tree_gets_its_own_interval_at_or_above_sglangs() -> None:
    """The best tree of SGLang's budget, depth and width is rebuilt in the same draws: in
    every draw its E[L] is at least SGLang's tree's (SGLang's is one of the trees it is
    chosen among) on the same cycle, so each end of its intervals is at least SGLang's,
    and its interval holds its nominal answer. At 8/8/64 the two trees differ."""
    wide = {**TREE, "speculation.num_steps": 8, "speculation.topk": 8}
    tree = with_overrides(load_scenario(LLAMA), {**wide, "speculation.num_draft_tokens": 64})
    a = analyze(bind(tree), uncertainty=True)
    unc = a.uncertainty
    assert a.tree is not None and a.tree.optimal.tree != a.tree.sglang.tree
    best, sglang = unc.best_tree_tok_s_interval90, unc.tok_s_interval90
    assert best.low >= sglang.low - 1e-9 and best.high >= sglang.high - 1e-9
    assert best != sglang
    assert best.low < a.tree.tok_s("optimal") < best.high
    lo, hi = unc.best_tree_accept_length_interval90.to_list()
    assert lo < a.tree.accept_length("optimal") < hi
    assert unc.to_dict()["best_tree_tok_s_interval90"] == best.to_list()
