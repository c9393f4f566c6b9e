"""A chain's intervals under a workload mix or a per-request spread: in each distinct draw
of the acceptance inputs the scenario is re-validated and its effective conditional rates
taken as the nominal answer takes them (``conditional_rates``: every class's means and Beta
spread rebuilt), not moved by tabulated responses added up. Centred inputs give the
nominal answer, inputs known exactly collapse the interval onto it, a one-class mix is the
single class, every draw is the nominal answer re-run at its inputs, and a draw the
scenario rejects is dropped and counted as missing."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.acceptance_shape import acceptance_shape
from sim.binding.bound import bind
from sim.binding.closed_form import conditional_rates, scenario_rates
from sim.binding.inputs import draw_inputs, nominal_row
from sim.model.rates import mean_accept_length
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.analysis import analyze
from sim.uncertainty.answers import answer_uncertainty
from sim.uncertainty.sampled_draws import sampled_draws
from tests.conftest import ROOT, SEED
from tests.model.test_quadrature import DRAWN_BOUND
from tests.uncertainty.test_tree_sampled_mix import EXACT, SYMMETRIC, _mix_text, one_class_texts

MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
#: Few draws: every distinct draw rebuilds two classes' Beta quadratures over 32 positions.
FEW = 32


def _mix(write_scenario, text: str, name: str = "mix.toml"):
    return load_scenario(write_scenario(text, name))


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(lambda: load_scenario(MIX), id="mix"),
        pytest.param(
            lambda: with_overrides(load_scenario(SEED), {"acceptance.concentration": 5.0}),
            id="spread",
        ),
    ],
)
def test_the_nominal_row_is_the_nominal_answer(scenario) -> None:
    """Centred inputs: the nominal row's rates are the nominal conditional rates to the
    bit, and its tok/s and accept length at the scenario's k the nominal answer's."""
    sc = scenario()
    ss, _ = sampled_draws(bind(sc), 8, 5)  # the tables span draws; the nominal row
    model = ss.model(nominal_row(ss.inputs))
    assert np.array_equal(model.rates[0], conditional_rates(sc.acceptance, ss.max_steps))
    a = analyze(bind(sc))
    k = sc.num_steps
    assert model.accept_length(k)[0] == pytest.approx(a.accept_length, rel=1e-12)
    assert model.tok_s(k)[0] == pytest.approx(a.throughput_tok_s, rel=1e-12)


def test_each_draw_is_the_nominal_answer_at_its_inputs() -> None:
    """A draw's rates are ``conditional_rates`` of the scenario re-validated with the
    draw's acceptance inputs (hand-built overrides), and its accept length the nominal
    accept length of that scenario (within the thinned rule's bound,
    tests/model/test_quadrature.py): both inputs move together, with no added-up shift."""
    sc = with_overrides(load_scenario(SEED), {"acceptance.concentration": 5.0})
    inputs = bind(sc).inputs
    col = {i.field: j for j, i in enumerate(inputs)}
    assert {f for f in col if f.startswith("acceptance.")} == {
        "acceptance.alpha", "acceptance.decay", "acceptance.tilt",
    }  # fmt: skip
    ss, draws = sampled_draws(bind(sc), 8, 5)
    model = ss.model(draws)
    assert sc.acceptance is not None
    shape = acceptance_shape(sc.acceptance).shape  # the decay's shape, resolved
    nominal = conditional_rates(sc.acceptance, ss.max_steps)
    for row in (0, 3, 6):
        over = {
            "acceptance.shape": shape,
            "acceptance.alpha": float(draws[row, col["acceptance.alpha"]]),
            "acceptance.decay": float(draws[row, col["acceptance.decay"]]),
            "acceptance.tilt": float(draws[row, col["acceptance.tilt"]]),
        }
        at = with_overrides(sc, over)
        # a draw away from the nominal integrates by the drawn scenarios' thinned rule
        rates = conditional_rates(at.acceptance, ss.max_steps, drawn=True)
        assert np.array_equal(model.rates[row], np.clip(rates, 0.0, 1.0))
        assert np.abs(rates - nominal).max() > 1e-4
        k = sc.num_steps
        al = mean_accept_length(scenario_rates(at))  # the exact rule's
        assert model.accept_length(k)[row] == pytest.approx(al, rel=DRAWN_BOUND)
    assert len(ss.drawn) == 8  # one re-validation a distinct draw, kept


def test_inputs_known_exactly_collapse_the_interval(write_scenario) -> None:
    """No uncertain input: every interval is the nominal answer; the spread known exactly
    but timings uncertain: the accept length's interval is the nominal value."""
    sc = _mix(write_scenario, _mix_text(uncertainty=EXACT))
    assert not sc.speculation.is_tree
    a = analyze(bind(sc))
    unc = answer_uncertainty(bind(sc), [80.0], samples=FEW)
    assert unc.inputs == ()
    assert unc.tok_s_interval90.low == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.tok_s_interval90.high == pytest.approx(a.throughput_tok_s, rel=1e-12)
    assert unc.accept_length_interval90.width == 0.0
    assert unc.targets[0].interval90.width == 0.0
    exact_std = SYMMETRIC.replace("stderr = 0.005", "stderr = 0.0")
    sc = _mix(write_scenario, _mix_text(uncertainty=exact_std), "timings.toml")
    unc = answer_uncertainty(bind(sc), [], samples=FEW)
    assert unc.accept_length_interval90.low == pytest.approx(a.accept_length, rel=1e-12)
    assert unc.accept_length_interval90.high == pytest.approx(a.accept_length, rel=1e-12)
    assert unc.tok_s_interval90.width > 0.0


def test_the_spread_moves_the_interval_around_the_nominal_answer(write_scenario) -> None:
    """The spread's std drawn symmetrically around its value: the accept length's
    interval straddles the nominal answer (a wider spread lowers the rates), and the
    note says the rates are re-built, not tabulated."""
    sc = _mix(write_scenario, _mix_text())
    a = analyze(bind(sc))
    unc = answer_uncertainty(bind(sc), [80.0], samples=FEW)
    lo, hi = unc.accept_length_interval90.to_list()
    assert lo < a.accept_length < hi
    assert not any("tabulated" in n for n in unc.notes)
    assert any("re-validated" in n for n in unc.notes)


@pytest.mark.parametrize("spread", ["std = 0.05", "concentration = 40.0"])
def test_a_one_class_mix_is_the_single_class(write_scenario, spread) -> None:
    """The same rates and spread as one [[acceptance.mix]] class or as the scenario's
    alpha: the same inputs and draws give the same intervals (the targets' read the same
    drawn rates; no target here: each would add the measured inputs' draws)."""
    single, mixed = one_class_texts(spread)
    a = _mix(write_scenario, single, "one.toml")
    b = _mix(write_scenario, mixed, "mixed.toml")
    assert b.acceptance is not None and b.acceptance.mix is not None
    assert bind(a).inputs == bind(b).inputs
    ua, ub = (
        answer_uncertainty(bind(a), [], samples=FEW),
        answer_uncertainty(bind(b), [], samples=FEW),
    )
    pairs = [
        (ua.tok_s_interval90, ub.tok_s_interval90),
        (ua.accept_length_interval90, ub.accept_length_interval90),
    ]
    for ia, ib in pairs:
        assert ib.low == pytest.approx(ia.low, rel=1e-12)
        assert ib.high == pytest.approx(ia.high, rel=1e-12)
        assert ia.width > 0.0


def test_a_draw_the_scenario_rejects_is_missing(write_scenario) -> None:
    """A std drawn too wide for the code class's rate 0.912 (a Beta needs std^2 < m (1 -
    m), std < 0.283) is rejected: its rates are NaN and it counts as missing in the
    tok/s interval (its quantiles over the other draws)."""
    wide = "[uncertainty]\nacceptance.std = { range = [0.01, 0.35] }\n"
    sc = _mix(write_scenario, _mix_text(uncertainty=wide))
    inputs = bind(sc).inputs
    assert [i.field for i in inputs] == ["acceptance.std"]
    draws = draw_inputs(sc, inputs, FEW, sc.simulation.seed)
    rejected = draws[:, 0] ** 2 >= 0.912 * (1 - 0.912)
    assert 0 < rejected.sum() < FEW
    ss, same = sampled_draws(bind(sc), FEW, sc.simulation.seed)
    assert np.array_equal(same, draws)
    model = ss.model(draws)
    assert np.array_equal(np.isnan(model.rates).all(axis=1), rejected)
    assert not np.isnan(model.rates[~rejected]).any()
    unc = answer_uncertainty(bind(sc), [], samples=FEW)
    assert unc.tok_s_interval90.unreachable == pytest.approx(rejected.mean())
    tok = model.tok_s(sc.num_steps)[~rejected]
    assert unc.tok_s_interval90.low == pytest.approx(np.quantile(tok, 0.05), rel=1e-12)
