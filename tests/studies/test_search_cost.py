"""What the acceptance search costs: validations per draft length, no acceptance model
rebuilt per evaluation, and the per-search binding equal to the binding at each k.

Issue 9's goal (a closed-form search of the seed over k = 1..16 and three targets in at
most 20 scenario validations) is timed in ``make bench``; these tests count the work, so a
regression that re-validates or re-binds per evaluation fails here, not only in the bench.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sim.binding.closed_form as bind
import sim.studies.acceptance_lever as lever_module
import sim.studies.search as search
from sim.binding.acceptance_model import acceptance_model
from sim.binding.acceptance_shape import anchored_factors
from sim.binding.bound import Bound
from sim.binding.bound import bind as bind_scenario
from sim.binding.closed_form import pass_times
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import answer_at_k
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.studies.acceptance_lever import acceptance_lever, acceptance_levers
from sim.studies.bisection import ALPHA_XTOL, closed_form_stats
from sim.studies.search import search_acceptance
from sim.uncertainty.answers import answer_uncertainty
from sim.uncertainty.perturb import is_acceptance_input

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.toml"))
KS = range(1, 17)
TARGETS = [100.0, 150.0, 200.0]


@pytest.fixture
def validations(monkeypatch):
    """A counter of ``Scenario.model_validate`` calls (every load and override)."""
    calls = [0]
    validate = Scenario.model_validate

    def counted(*args, **kwargs):
        calls[0] += 1
        return validate(*args, **kwargs)

    monkeypatch.setattr(Scenario, "model_validate", staticmethod(counted))
    return calls


def test_closed_form_search_validates_once_per_draft_length(seed_path, validations) -> None:
    """Issue 9: the seed's closed-form search over k = 1..16 and three targets validates the
    scenario once per k (16 <= 20), however many closed-form evaluations it makes."""
    seed = load_scenario(seed_path)
    validations[0] = 0
    res = search_acceptance(seed, TARGETS, KS, simulate=closed_form_stats, uncertainty=False)
    assert validations[0] == len(KS)
    assert res.evaluations > 10 * len(KS)  # many evaluations, none of them validating


def test_the_intervals_validate_per_uncertain_input_not_per_k(seed_path, validations) -> None:
    """With the 90% intervals the search adds exactly what ``answer_uncertainty`` costs on
    its own: a few response nodes per non-acceptance uncertain input (NODE_QUANTILES less
    the nominal), nothing per draft length or per draw."""
    seed = load_scenario(seed_path)
    validations[0] = 0
    search_acceptance(seed, TARGETS, KS, simulate=closed_form_stats)
    with_intervals = validations[0]
    base = search.pin_verify_tokens(seed)
    validations[0] = 0
    answer_uncertainty(bind_scenario(base), TARGETS, num_steps=list(KS))
    alone = validations[0]
    inputs = [u for u in bind_scenario(base).inputs if not is_acceptance_input(u.field)]
    assert with_intervals == len(KS) + alone
    assert 0 < alone <= 3 * len(inputs)


def test_closed_form_evaluations_bind_no_acceptance_model(seed_path, monkeypatch) -> None:
    """The acceptance is bound once per search (at the longest k) and scaled in the model
    layer: the number of ``acceptance_model`` calls does not grow with the evaluations."""
    calls = [0]
    original = bind.acceptance_model

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    for module in (bind, lever_module):  # a closed-form point without its acceptance binds
        monkeypatch.setattr(module, "acceptance_model", counted)
    seed = load_scenario(seed_path)
    res = search_acceptance(seed, TARGETS, KS, simulate=closed_form_stats, uncertainty=False)
    assert res.evaluations > 100
    # the search's binding at k = 16, and the current point's closed-form tok/s
    assert calls[0] <= 2


def test_each_draft_length_is_bound_once_with_the_search_hardware_answers(seed_path) -> None:
    """Every evaluation at one k runs on one bound model (the lever's base bound once, not
    re-bound per evaluation), and every k's binding shares the hardware answers handed to
    the search (one ``PassMemo``); the answers are those of a fresh binding."""
    seen: dict[int, list[Bound]] = {}

    def recording(model, acceptance, targets):
        assert isinstance(model, Bound)
        seen.setdefault(model.num_steps, []).append(model)
        return closed_form_stats(model, acceptance, targets)

    seed = load_scenario(seed_path)
    memo = PassMemo()  # the command's check binding's, handed down
    res = search_acceptance(
        seed, TARGETS, range(2, 6), simulate=recording, uncertainty=False, memo=memo
    )
    want = search_acceptance(
        seed, TARGETS, range(2, 6), simulate=closed_form_stats, uncertainty=False
    )
    assert res.to_dict() == want.to_dict()
    assert sorted(seen) == [2, 3, 4, 5]
    assert sum(len(models) for models in seen.values()) > 20  # many evaluations a k
    assert all(len({id(m) for m in models}) == 1 for models in seen.values())
    assert all(models[0].hardware.memo is memo for models in seen.values())


VARIANTS = [
    {},
    {"acceptance.per_position": [0.9, 0.7, 0.6], "acceptance.shape": "geometric"},
    {"acceptance.per_position": [0.9, 0.7], "acceptance.shape": "step", "acceptance.decay": 0.8},
    {"acceptance.alpha": 0.7, "acceptance.shape": "geometric", "acceptance.decay": 0.9},
    {"acceptance.first_rate": 0.8, "acceptance.tilt": -0.05},
    {"acceptance.std": 0.1},
    {"acceptance.concentration": 12.0},
]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_binding_at_the_longest_k_cut_to_k_is_the_binding_at_k(path) -> None:
    """The search binds the acceptance once at K and cuts it to each k: for every shipped
    scenario (and profile variants of the seed's), mean rates, concentrations and anchored
    factors at each k are exactly those of the binding at that k."""
    scenarios = [load_scenario(path)]
    if path.stem == "kimi-k25-8xpcie-eagle3":
        scenarios += [with_overrides(scenarios[0], v) for v in VARIANTS[1:]]
    for sc in scenarios:
        spec = sc.acceptance
        top = acceptance_model(spec, KS[-1])
        anchored = spec.mix is None and spec.per_position is None
        for k in KS:
            cut, at_k = top.truncated(k), acceptance_model(spec, k)
            for a, b in zip(cut.classes, at_k.classes, strict=True):
                assert np.array_equal(a.mean_rates, b.mean_rates)
                assert (a.concentration is None) == (b.concentration is None)
                if a.concentration is not None:
                    assert np.array_equal(a.concentration, b.concentration)
            if anchored:
                assert np.array_equal(anchored_factors(spec, KS[-1])[:k], anchored_factors(spec, k))


@pytest.mark.parametrize("overrides", [{}, VARIANTS[1], VARIANTS[5]], ids=["seed", "listed", "std"])
def test_the_levers_of_a_search_are_the_levers_bound_at_each_k(seed_path, overrides) -> None:
    sc = with_overrides(load_scenario(seed_path), overrides)
    levers = acceptance_levers(sc, [2, 5, 9])
    for k, lever in levers.items():
        alone = acceptance_lever(sc, k)
        assert (lever.kind, lever.x_max, lever.spread_limited) == (
            alone.kind,
            alone.x_max,
            alone.spread_limited,
        )
        assert np.array_equal(lever.factors, alone.factors)
        assert np.array_equal(lever.model.mean_rates(), alone.model.mean_rates())


def test_a_plain_decoding_scenario_binds_its_searched_alpha_at_each_k(seed_path) -> None:
    """With no [acceptance] the searched alpha is measured at each k (its own binding)."""
    sc = with_overrides(load_scenario(seed_path), {"speculation.num_steps": 0})
    sc = sc.model_copy(update={"acceptance": None})
    levers = acceptance_levers(sc, [1, 3])
    for k, lever in levers.items():
        assert lever.base.acceptance.measured_num_steps == k
        assert np.array_equal(lever.factors, acceptance_lever(sc, k).factors)


def test_closed_form_search_takes_the_extend_at_the_scaled_accept_length(seed_path) -> None:
    """With a draft extend growing per accepted token the closed-form 'simulation' runs the
    cycle at the scaled acceptance's own E[L] (renewal-reward), so the search lands on
    answer_at_k, which solves target = 1000 L / (F + s L)."""
    sc = with_overrides(
        load_scenario(seed_path),
        {"timing.draft_extend_ms_per_token": 0.5, "timing.draft_extend_tokens": 3.0},
    )
    assert pass_times(sc).draft_extend_ms_per_token == 0.5
    res = search_acceptance(sc, [110.0], [3, 5, 8], simulate=closed_form_stats, uncertainty=False)
    rows = res.targets[0].per_num_steps
    assert any(r.reachable for r in rows)
    for r in rows:
        cf = answer_at_k(110.0, pass_times(sc), r.num_steps, bind_scenario(sc).factors)
        assert r.reachable == (cf.first_rate is not None)
        if r.reachable:
            assert r.first_rate == pytest.approx(cf.first_rate, abs=ALPHA_XTOL)


@pytest.mark.parametrize(
    "overrides", [{}, VARIANTS[1], VARIANTS[6]], ids=["seed", "listed", "kappa"]
)
def test_the_levers_closed_form_rates_are_the_models(seed_path, overrides) -> None:
    """The lever's direct closed-form rates are exactly the scaled model's."""
    sc = with_overrides(load_scenario(seed_path), overrides)
    lever = acceptance_lever(sc, 6)
    for x in np.linspace(0.0, lever.x_max, 23):
        direct = lever.closed_form_rates(float(x))
        assert np.array_equal(direct, lever.model_at(float(x)).closed_form_rates())


def test_closed_form_stats_runs_the_cycle_at_the_scaled_accept_length(seed_path) -> None:
    """With the scenario's cycle bound once, the closed-form 'simulation' is still
    renewal-reward for the scaled acceptance: 1000 E[L] / E[T(E[L])], the extend at that
    acceptance's own E[L]."""
    sc = with_overrides(
        load_scenario(seed_path),
        {"timing.draft_extend_ms_per_token": 0.5, "timing.draft_extend_tokens": 3.0},
    )
    lever = acceptance_lever(sc, 5)
    for x in (0.3, 0.6, 0.9):
        model = lever.model_at(x)
        al = lever.expected_accept_length(x)
        cycle = chain_cycle_cost(pass_times(lever.base), 5).at_accept_length(al)
        stats = closed_form_stats(lever.base, model, ())
        assert stats.tok_s_mean == pytest.approx(1000.0 * al / cycle.total_ms, rel=1e-12)
