"""The vectorized engine against exact and long-run closed forms, and its invariants."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from sim.binding.acceptance_model import acceptance_model
from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
from sim.model.closed_forms import leviathan_accept_length
from sim.model.rates import accept_length_pmf
from sim.model.renewal import cycles_pmf, request_tok_s_distribution
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
from tests.helpers import make


def test_cycles_per_request_follow_the_exact_first_passage_law(seed_path):
    sc = load_scenario(seed_path)
    res = simulate(sc, replications=20, requests=100)
    pmf = cycles_pmf(accept_length_pmf([0.618, 0.618]), sc.workload.output_tokens)
    observed = np.bincount(res.cycles.ravel(), minlength=pmf.size)
    # pool the tails so every expected count is >= 5
    exp = observed.sum() * pmf
    lo, hi = np.flatnonzero(np.cumsum(exp) >= 5)[0], np.flatnonzero(np.cumsum(exp[::-1]) >= 5)[0]
    hi = pmf.size - 1 - hi
    obs_b = np.concatenate(
        [[observed[: lo + 1].sum()], observed[lo + 1 : hi], [observed[hi:].sum()]]
    )
    exp_b = np.concatenate([[exp[: lo + 1].sum()], exp[lo + 1 : hi], [exp[hi:].sum()]])
    assert stats.chisquare(obs_b, exp_b).pvalue > 1e-4
    # per-request tok/s mean against its exact finite-N value
    values, probs = request_tok_s_distribution(
        accept_length_pmf([0.618, 0.618]), 512, scenario_cycle_cost(sc).total_ms
    )
    exact_mean = float(values @ probs)
    se = res.tok_s.std(ddof=1) / math.sqrt(res.tok_s.size)
    assert abs(res.tok_s.mean() - exact_mean) < 4 * se


def test_accept_length_and_long_run_throughput_match_the_closed_forms():
    """Leviathan's E[L] and renewal-reward E[L] / E[T], with pass-time jitter."""
    sc = make({"alpha": 0.7}, k=3, tokens=2048, jitter=0.3, requests=50, replications=20)
    res = simulate(sc)
    al = leviathan_accept_length(0.7, 3)
    per_rep_al = (res.accept_counts @ np.arange(1, 5)) / res.accept_counts.sum(axis=1)
    se_al = per_rep_al.std(ddof=1) / math.sqrt(res.replications)
    assert abs(per_rep_al.mean() - al) < 4 * se_al
    # Wald: E[emitted] = E[n] E[L], E[time] = E[n] E[T]: the ratio of sums is consistent
    per_rep_rate = 1000 * res.emitted_tokens.sum(axis=1) / res.request_ms.sum(axis=1)
    se_rate = per_rep_rate.std(ddof=1) / math.sqrt(res.replications)
    long_run = 1000 * al / scenario_cycle_cost(sc).total_ms
    assert abs(per_rep_rate.mean() - long_run) < 4 * se_rate
    summ = summarize(res)
    assert summ.cycle_ms["mean"] == pytest.approx(scenario_cycle_cost(sc).total_ms, rel=0.01)


def test_heterogeneous_means_match_their_expectations():
    sc = make(
        {"per_position": [0.85, 0.7, 0.6], "concentration": 6.0},
        k=3,
        tokens=2048,
        requests=100,
        replications=20,
    )
    res = simulate(sc)
    model = acceptance_model(sc.acceptance, 3)
    cycle = scenario_cycle_cost(sc).total_ms
    rep_means = res.tok_s.mean(axis=1)
    se = rep_means.std(ddof=1) / math.sqrt(res.replications)
    assert abs(rep_means.mean() - 1000 * model.mean_accept_length() / cycle) < 4 * se
    per_rep_al = (res.accept_counts @ np.arange(1, 5)) / res.accept_counts.sum(axis=1)
    se_al = per_rep_al.std(ddof=1) / math.sqrt(res.replications)
    assert abs(per_rep_al.mean() - model.cycle_mean_accept_length()) < 4 * se_al


def test_heterogeneity_widens_the_spread():
    base = make({"alpha": 0.65}, tokens=512, requests=200, replications=4)
    wide = with_overrides(base, {"acceptance.concentration": 4.0})
    sd_base = simulate(base).tok_s.std()
    sd_wide = simulate(wide).tok_s.std()
    assert sd_wide > 3 * sd_base


@settings(max_examples=25, deadline=None)
@given(k=st.integers(0, 6), tokens=st.integers(1, 80), cv=st.sampled_from([0.0, 0.4]))
def test_alpha_one_emits_exactly_k_plus_one_per_cycle(k, tokens, cv):
    sc = make({"alpha": 1.0}, k=k, tokens=tokens, jitter=cv)
    res = simulate(sc)
    assert (res.cycles == math.ceil(tokens / (k + 1))).all()
    assert res.accept_counts[:, :-1].sum() == 0
    assert (res.emitted_tokens == res.cycles * (k + 1)).all()


acceptance_strategy = st.one_of(
    st.builds(lambda a: {"alpha": a}, st.floats(0.0, 1.0)),
    st.builds(lambda a: {"per_position": a}, st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4)),
    st.builds(
        lambda a, c: {"alpha": a, "concentration": c}, st.floats(0.01, 0.99), st.floats(0.5, 50.0)
    ),
    st.builds(
        lambda a, b, c: {
            "mix": [
                {"name": "chat", "weight": 2.0, "alpha": a},
                {"name": "code", "weight": 1.0, "per_position": [b, b], "concentration": c},
            ]
        },
        st.floats(0.0, 1.0),
        st.floats(0.01, 0.99),
        st.floats(0.5, 50.0),
    ),
)


def _raise(acc: dict[str, Any], t: float) -> dict[str, Any]:
    """Every rate moved a fraction t of the way to 1 (means of Betas too)."""
    up = lambda a: a + t * (1.0 - a)  # noqa: E731
    out = dict(acc)
    if "alpha" in out:
        out["alpha"] = up(out["alpha"])
    if "per_position" in out:
        out["per_position"] = [up(a) for a in out["per_position"]]
    if "mix" in out:
        out["mix"] = [_raise(c, t) for c in out["mix"]]
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    acc=acceptance_strategy,
    t=st.floats(0.0, 1.0),
    k=st.integers(1, 5),
    tokens=st.integers(1, 120),
    cv=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_common_random_numbers_tok_s_never_falls_when_rates_rise(acc, t, k, tokens, cv, seed):
    low = make(acc, k=k, tokens=tokens, jitter=cv)
    high = make(_raise(acc, t), k=k, tokens=tokens, jitter=cv)
    r_low = simulate(low, seed=seed)
    r_high = simulate(high, seed=seed)
    assert (r_high.tok_s >= r_low.tok_s * (1 - 1e-12)).all()
    # invariants: 1 <= L <= k + 1 and the overshoot is at most k tokens
    for r in (r_low, r_high):
        assert r.accept_counts.shape == (2, k + 1)
        assert (r.accept_counts.sum(axis=1) == r.cycles.sum(axis=1)).all()
        assert (r.emitted_tokens >= tokens).all() and (r.emitted_tokens <= tokens + k).all()
        assert (r.cycles <= r.emitted_tokens).all()
        assert (r.emitted_tokens <= r.cycles * (k + 1)).all()


class PerCycleOnly:
    """A cycle-time model with only the base protocol (like a future hardware model)."""

    def __init__(self, inner):
        self._inner = inner

    @property
    def deterministic(self) -> bool:
        return self._inner.deterministic

    def mean_ms(self):
        return self._inner.mean_ms()

    def var_ms(self):
        return self._inner.var_ms()

    def sample(self, rng, n):
        return self._inner.sample(rng, n)


@pytest.mark.parametrize("generic", [False, True])
def test_chunking_does_not_change_results(monkeypatch, generic):
    import sim.simulation.engines.fast as fast
    from sim.binding.bound import bind

    sc = make(
        {"alpha": 0.6, "concentration": 3.0}, tokens=300, jitter=0.2, requests=31, replications=5
    )
    times = PerCycleOnly(bind(sc).cycle_time_model()) if generic else None
    ref = simulate(sc, cycle_times=times)
    monkeypatch.setattr(fast, "ELEMENT_BUDGET", 500)  # tiny chunks, one replication a batch
    monkeypatch.setattr(fast, "SUB", 2)  # and tiny sub-blocks
    monkeypatch.setattr(fast, "CHUNK_SD", 0.0)  # chunks that end before most requests do
    small = simulate(sc, cycle_times=times)
    assert np.array_equal(ref.tok_s, small.tok_s)
    assert np.array_equal(ref.accept_counts, small.accept_counts)
    assert np.array_equal(ref.phase_ms, small.phase_ms)


@settings(max_examples=15, deadline=None)
@given(alpha=st.floats(0.0, 1.0), t=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_common_random_numbers_with_a_per_cycle_time_model(alpha, t, seed):
    from sim.binding.bound import bind

    low = make({"alpha": alpha}, jitter=0.5, tokens=50)
    high = make({"alpha": alpha + t * (1 - alpha)}, jitter=0.5, tokens=50)
    r_low = simulate(low, seed=seed, cycle_times=PerCycleOnly(bind(low).cycle_time_model()))
    r_high = simulate(high, seed=seed, cycle_times=PerCycleOnly(bind(high).cycle_time_model()))
    assert (r_high.tok_s >= r_low.tok_s).all()


def test_per_cycle_and_summed_timing_agree():
    from sim.binding.bound import bind

    sc = make({"alpha": 0.7}, tokens=128, jitter=0.5, requests=200, replications=5)
    a = simulate(sc).tok_s.ravel()
    b = simulate(sc, seed=2, cycle_times=PerCycleOnly(bind(sc).cycle_time_model())).tok_s.ravel()
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    assert stats.ks_2samp(a, b).pvalue > 1e-4


def test_long_requests_span_the_largest_chunks():
    """More cycles than the largest chunk holds (``MAX_CHUNK``): counts stay exact."""
    sc = make({"alpha": 1.0}, k=1, tokens=150_001, requests=2, replications=1)
    res = simulate(sc)
    assert (res.cycles == 75_001).all()
    assert res.accept_counts.tolist() == [[0, 150_002]]


def test_shared_law_is_the_law_of_its_rates():
    """The law of a homogeneous run (one a block): mean and variance of L from its pmf,
    the thresholds of ``bit_thresholds``, read-only."""
    from sim.model.rates import cumulative_rates
    from sim.model.samplers import bit_thresholds
    from sim.simulation.engines.fast import shared_law

    rates = (0.9, 0.7, 0.0, 0.5)
    mean_l, var_l, t_all, pos_all, depth = shared_law(rates)
    pmf = accept_length_pmf(rates)
    lengths = np.arange(1, len(rates) + 2)
    assert mean_l == pytest.approx(pmf @ lengths, rel=1e-12)
    assert var_l == pytest.approx(pmf @ lengths**2 - (pmf @ lengths) ** 2, rel=1e-12)
    t_ref, pos_ref = bit_thresholds(cumulative_rates(rates))
    assert np.array_equal(t_all, t_ref) and np.array_equal(pos_all, pos_ref)
    assert depth == 2
    assert not t_all.flags.writeable and not pos_all.flags.writeable
