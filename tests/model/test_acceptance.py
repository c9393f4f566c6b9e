"""Acceptance models: schema, samplers against exact pmfs, theory against Beta moments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sim.binding.acceptance_model import acceptance_model
from sim.binding.closed_form import conditional_rates
from sim.errors import SpecsimError
from sim.model.acceptance import beta_raw_moments
from sim.model.closed_forms import leviathan_accept_length
from sim.model.rates import accept_length_pmf, cumulative_rates, mean_accept_length
from sim.model.samplers import (
    accept_length_sequential,
    accept_lengths_from_bits,
    accept_lengths_inverse_cdf,
    bit_thresholds,
)
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.sections.acceptance import AcceptanceSpec

rates_strategy = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6)


def chi2_pvalue(counts: np.ndarray, pmf: np.ndarray) -> float:
    keep = pmf > 0
    assert counts[~keep].sum() == 0
    return float(stats.chisquare(counts[keep], counts.sum() * pmf[keep]).pvalue)


# --------------------------------------------------------------------------- samplers


@pytest.mark.parametrize("rates", [[0.618, 0.618], [0.9, 0.7, 0.4, 0.2], [0.3]])
def test_both_samplers_follow_the_chain_pmf(rates):
    rng = np.random.default_rng(1)
    k = len(rates)
    pmf = accept_length_pmf(rates)
    fast = accept_lengths_inverse_cdf(rng.random(40_000), cumulative_rates(rates))
    seq = [accept_length_sequential(u, rates) for u in rng.random((40_000, k)).tolist()]
    assert chi2_pvalue(np.bincount(fast, minlength=k + 2)[1:], pmf) > 1e-4
    assert chi2_pvalue(np.bincount(seq, minlength=k + 2)[1:], pmf) > 1e-4


def test_inverse_cdf_per_row_thresholds_match_rows():
    cum = cumulative_rates(np.array([[1.0, 1.0], [0.0, 0.5]]))  # (Q=2, k=2)
    u = np.full((3, 2), 0.25)  # (C, Q) cycle-major
    lengths = accept_lengths_inverse_cdf(u, cum.T[:, None, :])
    assert lengths.tolist() == [[3, 1]] * 3


@settings(max_examples=60, deadline=None)
@given(rates=rates_strategy, bump=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_samplers_stay_in_range_and_are_monotone_in_rates(rates, bump, seed):
    rng = np.random.default_rng(seed)
    k = len(rates)
    higher = [a + bump * (1.0 - a) for a in rates]
    u = rng.random(200)
    low = accept_lengths_inverse_cdf(u, cumulative_rates(rates))
    high = accept_lengths_inverse_cdf(u, cumulative_rates(higher))
    assert low.min() >= 1 and high.max() <= k + 1
    assert (high >= low).all()
    us = rng.random((50, k)).tolist()
    seq_low = [accept_length_sequential(row, rates) for row in us]
    seq_high = [accept_length_sequential(row, higher) for row in us]
    assert all(1 <= a <= b <= k + 1 for a, b in zip(seq_low, seq_high, strict=True))


def test_alpha_one_and_zero_are_exact():
    u = np.random.default_rng(0).random(1000)
    assert (accept_lengths_inverse_cdf(u, cumulative_rates([1.0] * 4)) == 5).all()
    assert (accept_lengths_inverse_cdf(u, cumulative_rates([0.0] * 4)) == 1).all()
    assert accept_length_sequential([0.999999] * 3, [1.0] * 3) == 4
    assert accept_length_sequential([0.0] * 3, [0.0] * 3) == 1


# --------------------------------------------------------------------------- theory


def spec(**kw) -> AcceptanceSpec:
    return AcceptanceSpec.model_validate(kw)


def test_homogeneous_model_is_the_closed_form():
    m = acceptance_model(spec(per_position=[0.8, 0.6], shape="repeat"), 4)
    rates = [0.8, 0.6, 0.6, 0.6]
    assert np.allclose(m.request_pmf(), accept_length_pmf(rates))
    assert np.allclose(m.cycle_pmf(), accept_length_pmf(rates))
    assert m.mean_accept_length() == pytest.approx(mean_accept_length(rates))
    assert not m.heterogeneous


def test_beta_moments_match_quadrature_and_scipy():
    mean, conc = 0.62, 7.0
    moments = beta_raw_moments(mean, conc, 5)
    dist = stats.beta(mean * conc, (1 - mean) * conc)
    assert np.allclose(moments, [dist.moment(j) for j in range(6)], rtol=1e-10)
    # the per-position (quadrature) path with equal means must give the same numbers
    m = acceptance_model(
        spec(per_position=[mean, mean + 1e-13], concentration=conc, shape="repeat"), 5
    )
    assert np.allclose(m.expected_cumulative(), moments, rtol=1e-7)


def test_heterogeneous_theory_is_an_expectation():
    """E[AL(a)] > AL(E[a]) for a convex-in-a chain, and the pooled mean is the harmonic one."""
    model = acceptance_model(spec(alpha=0.618, concentration=4.0), 2)
    rng = np.random.default_rng(3)
    _, rates = model.sample_requests(rng, 200_000)
    al = 1.0 + cumulative_rates(rates).sum(axis=1)
    se = al.std(ddof=1) / np.sqrt(al.size)
    assert abs(al.mean() - model.mean_accept_length()) < 4 * se
    assert model.mean_accept_length() > leviathan_accept_length(0.618, 2)
    harmonic = 1.0 / np.mean(1.0 / al)
    assert model.cycle_mean_accept_length() == pytest.approx(harmonic, rel=2e-3)
    assert model.cycle_mean_accept_length() < model.mean_accept_length()


def test_effective_rates_reproduce_the_expected_pmf():
    model = acceptance_model(spec(per_position=[0.9, 0.7, 0.5], std=0.12), 3)
    rates = model.effective_rates()
    assert np.allclose(accept_length_pmf(rates), model.request_pmf())
    assert np.allclose(conditional_rates(spec(per_position=[0.9, 0.7, 0.5], std=0.12), 3), rates)


def test_std_gives_the_requested_spread():
    model = acceptance_model(spec(alpha=0.6, std=0.1), 1)
    _, rates = model.sample_requests(np.random.default_rng(5), 100_000)
    assert rates.mean() == pytest.approx(0.6, abs=4 * 0.1 / np.sqrt(1e5))
    assert rates.std() == pytest.approx(0.1, rel=0.02)


def test_mix_weights_and_class_rates():
    mix = [
        {"name": "chat", "weight": 3.0, "alpha": 0.5},
        {"name": "code", "weight": 1.0, "per_position": [0.9, 0.8]},
    ]
    model = acceptance_model(spec(mix=mix, shape="flat"), 2)
    cls, rates = model.sample_requests(np.random.default_rng(2), 40_000)
    share = (cls == 1).mean()
    assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 40_000)
    assert np.allclose(rates[cls == 0], 0.5) and np.allclose(rates[cls == 1], [0.9, 0.8])
    expected = 0.75 * mean_accept_length([0.5, 0.5]) + 0.25 * mean_accept_length([0.9, 0.8])
    assert model.mean_accept_length() == pytest.approx(expected)
    assert model.class_names == ("chat", "code")


def test_mix_classes_inherit_top_level_spread():
    s = spec(mix=[{"name": "a", "weight": 1.0, "alpha": 0.5}], concentration=3.0)
    assert acceptance_model(s, 2).classes[0].varies


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"alpha": 0.5, "concentration": 2.0, "std": 0.1}, "at most one"),
        ({"alpha": 0.5, "std": 0.5}, "less than 0.5"),
        ({"alpha": 0.9, "std": 0.31}, "too large"),
        ({"alpha": 0.5, "mix": [{"name": "a", "weight": 1.0, "alpha": 0.5}]}, "exactly one"),
        ({"mix": [{"name": "a", "weight": 1.0}]}, "exactly one of alpha or per_position"),
        ({"mix": [{"name": "a", "weight": 0.0, "alpha": 0.5}]}, "greater than 0"),
        (
            {"mix": [{"name": "a", "weight": 1.0, "alpha": 0.5}] * 2},
            "unique",
        ),
        ({"alpha": 0.5, "concentration": 0.0}, "greater than 0"),
    ],
)
def test_bad_acceptance_is_rejected(kw, words):
    with pytest.raises(ValueError, match=words):
        spec(**kw)


MIX_FILE = """\
name = "mixed"
[timing]
decode_ms = 10.0
verify_ms = 20.0
draft_step_ms = 1.0
draft_extend_ms = 2.0
[speculation]
num_steps = 2
[acceptance]
std = 0.1
[[acceptance.mix]]
name = "chat"
weight = 0.7
alpha = 0.55
[[acceptance.mix]]
name = "code"
weight = 0.3
per_position = [0.9, 0.8]
concentration = 20.0
"""


def test_mix_file_loads_and_alpha_override_replaces_it(write_scenario):
    path = write_scenario(MIX_FILE)
    sc = load_scenario(path)
    assert [c.name for c in sc.acceptance.mix] == ["chat", "code"]
    over = load_scenario(path, ["acceptance.alpha=0.7"])
    assert over.acceptance.mix is None and over.acceptance.alpha == 0.7
    assert over.acceptance.std == 0.1  # the spread stays: alpha becomes the Beta mean
    conc = with_overrides(over, {"acceptance.concentration": 5.0})
    assert conc.acceptance.std is None and conc.acceptance.concentration == 5.0


def test_bad_mix_field_names_file_and_field(write_scenario):
    path = write_scenario(MIX_FILE.replace("weight = 0.3", "weight = -1.0"))
    with pytest.raises(SpecsimError) as err:
        load_scenario(path)
    assert str(path) in str(err.value) and "acceptance.mix[1].weight" in str(err.value)


@pytest.mark.parametrize("rates", [[0.618, 0.618], [0.9, 0.7, 0.4, 0.2], [1.0, 0.5]])
def test_bit_sampler_follows_the_chain_pmf(rates):
    bits = np.random.default_rng(8).bit_generator.random_raw(20_000).view(np.uint32)
    t, pos = bit_thresholds(cumulative_rates(rates))
    lengths = accept_lengths_from_bits(bits, t, pos)
    pmf = accept_length_pmf(rates)
    assert chi2_pvalue(np.bincount(lengths, minlength=len(rates) + 2)[1:], pmf) > 1e-4


def test_bit_thresholds_are_exact_at_0_and_1_and_monotone():
    extremes = np.array([0, 1, 2**31, 2**32 - 1], dtype=np.uint32)
    t, pos = bit_thresholds(np.array([[1.0, 0.0]]).T)  # (k=2, 1)
    lengths = accept_lengths_from_bits(extremes, t, pos)
    assert lengths.tolist() == [2, 2, 2, 2]  # c_1 = 1 always, c_2 = 0 never
    c = np.sort(np.random.default_rng(1).random(1000))
    tc, _ = bit_thresholds(c)
    assert (np.diff(tc.astype(np.int64)) >= 0).all()
    assert np.abs((tc.astype(float) + 1) / 2**32 - c).max() <= 2.0**-32


def test_mix_set_on_the_command_line_replaces_alpha(seed_path):
    sc = load_scenario(
        seed_path,
        [
            'acceptance.mix=[{name="chat", weight=2.0, alpha=0.6}, '
            '{name="code", weight=1.0, per_position=[0.9, 0.8], concentration=10.0}]'
        ],
    )
    assert sc.acceptance.alpha is None and len(sc.acceptance.mix) == 2
    rates = conditional_rates(sc.acceptance, 2)
    assert np.allclose(rates, acceptance_model(sc.acceptance, 2).effective_rates())
    model = acceptance_model(sc.acceptance, 2)
    _, sampled = model.sample_requests(np.random.default_rng(0), 100_000)
    al = 1 + cumulative_rates(sampled).sum(axis=1)
    assert abs(al.mean() - model.mean_accept_length()) < 4 * al.std() / np.sqrt(al.size)


@pytest.mark.parametrize("conc", [0.3, 1.623, 50.0])
def test_extreme_uniforms_give_finite_rates_and_theory(conc):
    model = acceptance_model(spec(alpha=0.618, concentration=conc), 2)
    u = np.array([0.0, 1e-300, 2.4e-17, 1e-12, 0.5, 1 - 1e-16, np.nextafter(1.0, 0.0)])
    rates = model.classes[0].rates_from_uniform(u)
    assert np.isfinite(rates).all() and (np.diff(rates[:, 0]) >= -1e-12).all()
    assert np.isfinite(model.cycle_pmf()).all()
    assert model.cycle_pmf().sum() == pytest.approx(1.0)


def test_a_spread_given_as_std_has_the_beta_concentration_of_its_variance() -> None:
    """Beta(m c, (1 - m) c) has variance m (1 - m) / (c + 1), so std 0.1 around 0.6 is
    c = 0.24 / 0.01 - 1 = 23, exactly (a concentration off by one moves the std 2%)."""
    from sim.model.acceptance import RateClass, Spread

    rc = RateClass("c", 1.0, np.array([0.6]), Spread(std=0.1))
    assert rc.concentration[0] == pytest.approx(23.0, rel=1e-12)
