"""The serving engine against exact laws: batch 1, closed loops, Little, vanishing load."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.model.rates import accept_length_pmf
from sim.model.renewal import cycles_pmf, request_tok_s_distribution
from sim.simulation.serving import ClosedLoop, FixedK, Poisson, simulate_serving, work_out
from sim.simulation.serving.metrics import (
    little_terms,
    little_window_terms,
    request_metrics,
    summarize_serving,
)
from sim.simulation.simulate import simulate
from tests.helpers import MIXED
from tests.simulation.serving.helpers import WITH_KV, plan, scenario


def _pooled(run, name, metric="per_user_tok_s"):
    return np.concatenate([request_metrics(r)[metric] for r in run.records[name]])


@pytest.mark.parametrize(
    ("acceptance", "engine"),
    [({"alpha": 0.7}, "fast"), (MIXED, "fast"), (MIXED, "des")],
    ids=["alpha-fast", "mix-fast", "mix-des"],
)
def test_concurrency_one_without_prefill_is_the_batch_one_engine(acceptance, engine):
    """Same model, different streams: equal in distribution (KS) and in mean (4 SE)."""
    p = plan(ClosedLoop(1), acceptance=acceptance, requests=400)
    run = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=2, seed=5)
    serving = _pooled(run, "k3")
    batch1 = simulate(scenario(acceptance), engine=engine, replications=4, requests=200, seed=9)
    fast = batch1.tok_s.ravel()
    assert stats.ks_2samp(serving, fast).pvalue > 1e-3
    se = np.hypot(
        serving.std(ddof=1) / np.sqrt(serving.size), fast.std(ddof=1) / np.sqrt(fast.size)
    )
    assert abs(serving.mean() - fast.mean()) < 4 * se


@pytest.mark.parametrize(("users", "k"), [(4, 3), (16, 2), (16, 0)])
def test_closed_loop_per_user_rate_is_the_finite_n_renewal_law(users, k):
    """Equal lengths, no prefill, passes without a KV term: every iteration runs at batch C
    and costs T_C, so a request of N tokens lasting n cycles runs at 1000 N / (n T_C) with n
    the first passage of the accept lengths (sim/model/renewal.py): exact, not asymptotic."""
    n_tok = 60
    p = plan(ClosedLoop(users), k=k, output=n_tok, requests=300, warmup=users)
    run = simulate_serving(p, work_out(p, {"policy": FixedK(k)}), replications=3, seed=11)
    t_c = float(p.cost.decode_ms(users, k, np.array([0.0]))[0])
    pmf = accept_length_pmf(np.full(k, 0.7))
    values, probs = request_tok_s_distribution(pmf, n_tok, t_c)
    law = float(values @ probs)
    got = _pooled(run, "policy")
    assert abs(got.mean() - law) < 4 * got.std(ddof=1) / np.sqrt(got.size) + 1e-9
    summary = summarize_serving(run.records, baseline=None).policies["policy"]
    assert summary.mean_batch.mean == pytest.approx(users, rel=1e-12)
    # aggregate: C requests in flight, each N tokens per E[n] cycles of T_C (renewal-reward;
    # the long-N limit is the C x E[L] / E[T_C])
    e_n = float(np.arange(n_tok + 1) @ cycles_pmf(pmf, n_tok))
    agg = run_aggregate(run, "policy")
    assert (
        abs(agg.mean() - users * 1000.0 * n_tok / (e_n * t_c))
        < 4 * agg.std(ddof=1) / np.sqrt(agg.size) + 1e-6 * agg.mean()
    )


def run_aggregate(run, name):
    return np.array([1000.0 * r.tokens_delivered / r.window_ms for r in run.records[name]])


@pytest.mark.parametrize(
    "arrivals", [ClosedLoop(8), ClosedLoop(8, think_ms=200.0), Poisson(20.0)], ids=str
)
def test_littles_law_on_every_run(arrivals):
    p = plan(
        arrivals,
        input_tokens=50,
        output=40,
        requests=200,
        warmup=20,
        curves=WITH_KV,
        prefill="model",
    )
    run = simulate_serving(
        p, work_out(p, {"k0": FixedK(0), "k3": FixedK(3)}), replications=2, seed=3
    )
    for records in run.records.values():
        for rec in records:
            in_system, rate, time_in = little_terms(rec)
            assert in_system == pytest.approx(rate * time_in, rel=0.1)
            # over the finite window, with its edge, the identity is exact
            in_window, edge = little_window_terms(rec)
            assert in_system == pytest.approx(in_window + edge, rel=1e-12, abs=1e-12)


@pytest.mark.slow
def test_littles_law_holds_across_replications_on_a_long_run():
    """The long-run check, L against lambda x the measured requests' mean time in system:
    on long runs the window's edges are small, and the two agree within 4 standard errors
    of their paired difference across replications (Poisson arrivals; 2000 requests)."""
    p = plan(Poisson(20.0), input_tokens=50, output=40, requests=2000, warmup=50, curves=WITH_KV)
    run = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=6, seed=11)
    terms = np.array([little_terms(rec) for rec in run.records["k3"]])  # (R, 3)
    diff = terms[:, 0] - terms[:, 1] * terms[:, 2]
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert abs(diff.mean()) < 4 * se, (diff.mean(), se)


def test_closed_loop_without_think_time_holds_exactly_c_requests():
    p = plan(ClosedLoop(8), output=40, requests=200, warmup=8)
    rec = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=1, seed=2).records["k3"][
        0
    ]
    in_system, _, _ = little_terms(rec)
    assert in_system == pytest.approx(8.0, rel=1e-9)


def test_poisson_at_vanishing_load_is_batch_one():
    """At 0.2 requests/s and ~1 s requests, almost every request runs alone."""
    p = plan(Poisson(0.05), output=60, requests=300, curves=WITH_KV)
    run = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=2, seed=4)
    summary = summarize_serving(run.records, baseline=None).policies["k3"]
    assert 1.0 <= summary.mean_batch.mean < 1.02
    got = _pooled(run, "k3")
    single = plan(ClosedLoop(1), output=60, requests=300, curves=WITH_KV)
    alone = _pooled(
        simulate_serving(single, work_out(single, {"k3": FixedK(3)}), replications=2, seed=4),
        "k3",
    )
    se = np.hypot(got.std(ddof=1) / np.sqrt(got.size), alone.std(ddof=1) / np.sqrt(alone.size))
    assert abs(got.mean() - alone.mean()) < 4 * se
    queue = np.concatenate([request_metrics(r)["queue_ms"] for r in run.records["k3"]])
    assert np.mean(queue > 0) < 0.05


def test_more_drafts_never_need_more_cycles_for_the_same_request():
    """Common random numbers: a request's c-th cycle uses one draw whatever k, and L is
    monotone in k for a fixed draw."""
    p = plan(ClosedLoop(1), output=80, requests=100)
    run = simulate_serving(
        p, work_out(p, {"k1": FixedK(1), "k2": FixedK(2), "k3": FixedK(3)}), replications=1, seed=8
    )
    c1, c2, c3 = (run.records[n][0].cycles for n in ("k1", "k2", "k3"))
    assert np.all(c3 <= c2) and np.all(c2 <= c1) and np.any(c3 < c1)
