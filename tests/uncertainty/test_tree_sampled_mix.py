"""A tree's tok/s and accept length intervals under a workload mix or a per-request
spread: each draw's classes and Beta spread taken as the nominal answer takes them. The
interval holds the nominal answer when the inputs' ranges are symmetric, inputs known
exactly give the nominal answer, a one-class mix is the single class, and a draw
re-validated at the nominal acceptance inputs is the nominal answer's own population."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.acceptance_shape import acceptance_shape
from sim.binding.bound import bind
from sim.binding.inputs import draw_inputs
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.analysis import analyze
from sim.uncertainty.answers import TREE_POPULATION_NOTE, answer_uncertainty
from sim.uncertainty.perturb import is_acceptance_input
from sim.uncertainty.tree_sampled import drawn_population, sampled_tree
from tests.conftest import ROOT

MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
TREE = {
    "speculation.topk": 4, "speculation.num_draft_tokens": 8,
    "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
}  # fmt: skip
#: Symmetric ranges and errors around each nominal value (flat rates: no decay prior).
SYMMETRIC = """
[uncertainty]
timing.verify_ms = { range = [29.0, 31.0] }
timing.cycle_overhead_ms = { range = [0.3, 0.9] }
acceptance.std = { stderr = 0.005 }
"""
EXACT = """
[uncertainty]
timing.verify_ms = { stderr = 0.0 }
acceptance.std = { stderr = 0.0 }
"""
ONE_CLASS = '[[acceptance.mix]]\nname = "all"\nweight = 1.0\nalpha = 0.717\n'


def _mix_text(acceptance: str | None = None, uncertainty: str = SYMMETRIC) -> str:
    """The mix scenario with flat rates, its [acceptance] replaced by ``acceptance`` (the
    lines after the header) when given, and ``uncertainty`` for its [uncertainty]."""
    text = MIX.read_text().split("\n[uncertainty]")[0]
    text = text.replace("std = 0.05\n", 'std = 0.05\nshape = "flat"\n', 1)
    if acceptance is not None:
        head, rest = text.split("[acceptance]", 1)
        text = head + "[acceptance]\n" + acceptance + "\n[workload]" + rest.split("[workload]")[1]
    return text + "\n" + uncertainty


def one_class_texts(spread: str) -> tuple[str, str]:
    """Scenario texts of one class with ``spread`` (a std or concentration line, or ""),
    given as the scenario's alpha and as a one-class mix, geometric decay 0.95; uncertain
    verify, decay and spread."""
    uncertainty = "[uncertainty]\ntiming.verify_ms = { range = [29.0, 31.0] }\n"
    uncertainty += "acceptance.decay = { stderr = 0.02 }\n"
    if spread:
        key = spread.split(" =")[0]
        uncertainty += f"acceptance.{key} = {{ stderr = {0.005 if 'std' in key else 5.0} }}\n"
    shape = f'{spread}\nshape = "geometric"\ndecay = 0.95\n'
    single = f"alpha = 0.717\nmeasured_num_steps = 3\n{shape}"
    return _mix_text(single, uncertainty), _mix_text(shape + ONE_CLASS, uncertainty)


def _tree(write_scenario, text: str, name: str = "mix.toml", **over):
    return with_overrides(load_scenario(write_scenario(text, name)), {**TREE, **over})


def test_the_interval_holds_the_nominal_answer_under_a_mix_and_spread(write_scenario) -> None:
    tree = _tree(write_scenario, _mix_text())
    assert {i.field for i in bind(tree).inputs} == {
        "timing.verify_ms", "timing.cycle_overhead_ms", "acceptance.std",
    }  # fmt: skip
    a = analyze(bind(tree), uncertainty=True)
    unc = a.uncertainty
    assert unc is not None and a.tree is not None
    assert TREE_POPULATION_NOTE in unc.notes
    lo, hi = unc.tok_s_interval90.to_list()
    assert lo < a.throughput_tok_s < hi
    lo, hi = unc.accept_length_interval90.to_list()
    assert lo < a.accept_length < hi  # the spread's stderr moves E[L] over requests
    lo, hi = unc.best_tree_tok_s_interval90.to_list()
    assert lo < a.tree.tok_s("optimal") < hi


def test_inputs_known_exactly_give_the_nominal_answer(write_scenario) -> None:
    tree = _tree(write_scenario, _mix_text(uncertainty=EXACT))
    a = analyze(bind(tree), uncertainty=True)
    unc = a.uncertainty
    assert unc is not None and unc.inputs == ()
    assert unc.tok_s_interval90.low == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.tok_s_interval90.high == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.accept_length_interval90.low == pytest.approx(a.accept_length, rel=1e-12)
    assert unc.accept_length_interval90.width == 0.0


def test_a_zero_spread_stderr_leaves_only_the_timings_width(write_scenario) -> None:
    """The spread known exactly: every draw has the nominal population, so the accept
    length's interval is the nominal value and only the cycle moves tok/s."""
    exact_std = SYMMETRIC.replace("stderr = 0.005", "stderr = 0.0")
    tree = _tree(write_scenario, _mix_text(uncertainty=exact_std))
    a = analyze(bind(tree), uncertainty=True)
    unc = a.uncertainty
    assert unc is not None
    assert unc.accept_length_interval90.low == pytest.approx(a.accept_length, rel=1e-12)
    assert unc.accept_length_interval90.high == pytest.approx(a.accept_length, rel=1e-12)
    assert unc.tok_s_interval90.width > 0.0


@pytest.mark.parametrize("spread", ["std = 0.05", "concentration = 40.0", ""])
def test_a_one_class_mix_is_the_single_class(write_scenario, spread) -> None:
    """The same rates as one [[acceptance.mix]] class or as the scenario's alpha: the
    same inputs, the same draws, the same intervals (with no spread the single class is
    drawn directly, the mix through its class: equal to float rounding)."""
    single, mixed = one_class_texts(spread)
    a = _tree(write_scenario, single, "one.toml")
    b = _tree(write_scenario, mixed, "mixed.toml")
    assert b.acceptance is not None and b.acceptance.mix is not None
    assert bind(a).inputs == bind(b).inputs
    # 16 draws (each rebuilds the chain's rates, its targets', over 32 positions too): the
    # two forms draw the same rows whatever their number, and 16 give intervals of non-zero
    # width to compare
    ua, ub = (
        answer_uncertainty(bind(a), [], samples=16),
        answer_uncertainty(bind(b), [], samples=16),
    )
    for name in ("tok_s_interval90", "accept_length_interval90", "best_tree_tok_s_interval90"):
        ia, ib = getattr(ua, name), getattr(ub, name)
        assert ib.low == pytest.approx(ia.low, rel=1e-12)
        assert ib.high == pytest.approx(ia.high, rel=1e-12)
        assert ia.width > 0.0


def test_the_nominal_row_rebuilds_the_nominal_population() -> None:
    """Re-validating the scenario at the nominal acceptance inputs (a draw equal to them
    bit for bit is the nominal population itself) gives the nominal classes."""
    tree = with_overrides(load_scenario(MIX), TREE)
    inputs = bind(tree).inputs
    sampled = sampled_tree(bind(tree), draw_inputs(tree, inputs, 16, 1))
    acc = [i for i in inputs if is_acceptance_input(i.field)]
    assert acc
    row = np.array([i.nominal for i in acc])
    nudged = np.nextafter(row, np.inf)  # not the nominal bytes: re-validated
    pop = drawn_population(tree, sampled.nominal, acc, nudged)
    assert pop is not None
    for c, n in zip(pop.top1.classes, sampled.nominal.top1.classes, strict=True):
        assert c.mean_rates == pytest.approx(n.mean_rates, rel=1e-12)


def test_a_draw_is_the_nominal_answer_at_its_acceptance_inputs() -> None:
    """A draw's accept length is the nominal answer of the scenario with its acceptance
    inputs set to the draw's values (the classes and spread re-built, E[L] over requests:
    no tabulated shift). One tok/s target, not the file's three: the accept length does not
    depend on them, and each analysis solves every target's requirements."""
    tree = with_overrides(load_scenario(MIX), {**TREE, "targets.tok_s": [100.0]})
    inputs = bind(tree).inputs
    draws = draw_inputs(tree, inputs, 16, 3)
    sampled = sampled_tree(bind(tree), draws)
    al, _ = sampled.accept_lengths(draws)
    col = {i.field: j for j, i in enumerate(inputs)}
    assert {f for f in col if is_acceptance_input(f)} == {"acceptance.decay", "acceptance.tilt"}
    assert tree.acceptance is not None
    shape = acceptance_shape(tree.acceptance).shape  # the decay's shape, resolved
    nominal = analyze(bind(tree)).accept_length
    for row in (0, 7):
        over = {
            "acceptance.shape": shape,
            "acceptance.decay": float(draws[row, col["acceptance.decay"]]),
            "acceptance.tilt": float(draws[row, col["acceptance.tilt"]]),
        }
        at = analyze(bind(with_overrides(tree, over))).accept_length
        assert al[row] == pytest.approx(at, rel=1e-12)
        assert abs(al[row] - nominal) > 1e-6
