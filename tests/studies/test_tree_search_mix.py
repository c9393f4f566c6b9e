"""``search --topk``'s 90% intervals under a workload mix: every draw's required top-1 rate
re-solved over the draw's classes (scaled as the nominal answer scales them, SGLang's tree
rebuilt at their mean, E[L] mixed with the class weights). The nominal row solves to the
nominal answer, the interval holds it when the inputs are centred, inputs known exactly
give a zero width, every draw's root reaches the target and a hair lower does not, a
one-class mix is the single class, and a per-request spread keeps its note."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.inputs import nominal_row
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.tree_search import NO_INTERVAL_NOTE, search_draws, search_trees
from sim.uncertainty.answers import off_centre
from sim.uncertainty.tree_required_draws import XTOL, drawn_accept_lengths, required_top1_draws
from tests.conftest import ROOT
from tests.studies.test_tree_search_intervals import refined_rows, sampled_row

MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
RANKS = {"acceptance.rank_profile": "sequoia-jf68m-llama2-7b"}
STEPS, TOPKS, TOKENS = range(3, 7), [1, 4], [8, 12]
TARGET = 100.0
#: Centred inputs: a symmetric timing range and a normal error on the decay.
CENTRED = """
[uncertainty]
timing.verify_ms = { range = [29.0, 31.0] }
acceptance.decay = { stderr = 0.02 }
"""
EXACT = """
[uncertainty]
timing.verify_ms = { stderr = 0.0 }
acceptance.decay = { stderr = 0.0 }
"""
CLASSES = """[[acceptance.mix]]
name = "chat"
weight = 0.7
alpha = 0.717

[[acceptance.mix]]
name = "code"
weight = 0.3
alpha = 0.912
"""
ONE_CLASS = '[[acceptance.mix]]\nname = "all"\nweight = 1.0\nalpha = 0.717\n'


def _scenario(write_scenario, uncertainty: str, acceptance: str = CLASSES, name="s.toml"):
    """The mix scenario without a spread, geometric rates of decay 0.95, ``acceptance``
    for its rates and ``uncertainty`` for its [uncertainty]."""
    text = MIX.read_text().split("\n[uncertainty]")[0]
    head, rest = text.split("[acceptance]", 1)
    body = 'shape = "geometric"\ndecay = 0.95\n' + acceptance
    text = head + "[acceptance]\n" + body + "\n[workload]" + rest.split("[workload]")[1]
    return with_overrides(load_scenario(write_scenario(text + uncertainty, name)), RANKS)


@pytest.fixture(scope="module")
def centred(tmp_path_factory):
    path = tmp_path_factory.mktemp("mix") / "centred.toml"

    def write(text: str, name: str):
        path.write_text(text, encoding="utf-8")
        return path

    base = _scenario(write, CENTRED)
    return base, search_trees(base, [TARGET], STEPS, TOPKS, TOKENS)


def test_the_interval_holds_the_nominal_answer_of_centred_inputs(centred) -> None:
    base, found = centred
    inputs = search_draws(base).inputs
    assert {i.field for i in inputs} == {"timing.verify_ms", "acceptance.decay"}
    assert off_centre(inputs) == ()
    assert NO_INTERVAL_NOTE not in found.notes
    assert any("the draw's classes, E[L] mixed with their weights" in n for n in found.notes)
    for row in refined_rows(found):
        iv = row.top1_interval90
        assert iv is not None and iv.unreachable == 0.0
        assert iv.low < row.top1 < iv.high


def test_the_nominal_row_solves_to_the_nominal_answer(centred) -> None:
    base, found = centred
    row0 = nominal_row(search_draws(base).inputs)
    for row in refined_rows(found):
        sampled = sampled_row(base, row, row0)
        # started far from the answer: the solve, not the start, finds it
        roots = required_top1_draws(sampled, row0, TARGET, row.cycle_ms, 0.5)
        assert roots.top1[0] == pytest.approx(row.top1, abs=1e-6)


def test_every_draws_root_reaches_the_target_and_a_lower_rate_does_not(centred) -> None:
    base, found = centred
    values = search_draws(base).values[:64]
    for row in refined_rows(found):
        sampled = sampled_row(base, row, values)
        roots = required_top1_draws(sampled, values, TARGET, row.cycle_ms, row.top1)
        ok = np.isfinite(roots.rate)
        assert ok.all()
        at = drawn_accept_lengths(sampled, values, roots.rate)
        below = drawn_accept_lengths(sampled, values, roots.rate - 2 * XTOL)
        cycle = 1000.0 * roots.need / TARGET  # the draw's cycle (ms)
        assert np.all(1000.0 * at / cycle >= TARGET * (1 - 1e-12))
        assert np.all(1000.0 * below / cycle < TARGET)


def test_inputs_known_exactly_give_a_zero_width_interval(write_scenario) -> None:
    exact = _scenario(write_scenario, EXACT)
    assert search_draws(exact).inputs == ()
    for row in refined_rows(search_trees(exact, [TARGET], STEPS, TOPKS, TOKENS)):
        iv = row.top1_interval90
        assert iv is not None and iv.width == 0.0
        assert iv.low == pytest.approx(row.top1, abs=1e-6)


def test_a_one_class_mix_is_the_single_class(write_scenario) -> None:
    """One [[acceptance.mix]] class or the scenario's alpha: the same draws, the same
    intervals (the single class solved on its drawn rates, the mix on its class), on the
    smallest grid with a tree and a chain (3 steps; topk 1 and 4 of 8 draft tokens)."""
    single = _scenario(write_scenario, CENTRED, "alpha = 0.717\n", "single.toml")
    mixed = _scenario(write_scenario, CENTRED, ONE_CLASS, "mixed.toml")
    assert search_draws(single).inputs == search_draws(mixed).inputs
    a = refined_rows(search_trees(single, [TARGET], [3], [1, 4], [8]))
    b = refined_rows(search_trees(mixed, [TARGET], [3], [1, 4], [8]))
    for ra, rb in zip(a, b, strict=True):
        assert (ra.num_steps, ra.topk, ra.num_draft_tokens) == (
            rb.num_steps, rb.topk, rb.num_draft_tokens,
        )  # fmt: skip
        assert ra.top1_interval90.width > 0.0
        assert rb.top1_interval90.low == pytest.approx(ra.top1_interval90.low, abs=1e-6)
        assert rb.top1_interval90.high == pytest.approx(ra.top1_interval90.high, abs=1e-6)


def test_a_mix_with_a_spread_keeps_its_note(write_scenario) -> None:
    spread = _scenario(write_scenario, CENTRED, "std = 0.05\n" + CLASSES)
    res = search_trees(spread, [TARGET], [3], [1, 4], [8])
    assert NO_INTERVAL_NOTE in res.notes
    assert all(r.top1_interval90 is None for r in refined_rows(res))
