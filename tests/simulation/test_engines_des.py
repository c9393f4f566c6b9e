"""The SimPy engine: an exact event trace of a deterministic case, and the closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.acceptance_model import acceptance_model
from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
from sim.model.closed_forms import leviathan_accept_length
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.engines.common import EnginePlan
from sim.simulation.engines.des import run_replication
from sim.simulation.simulate import replication_rngs, simulate
from sim.simulation.summary import summarize
from tests.helpers import make


def traced(alpha: float):
    """Run one replication of 2 requests x 4 tokens at k = 2 with a trace callback.

    Timings (tests.helpers.make): draft step 1 ms, verify 20 ms, extend 2 ms, overhead
    0.5 ms, no jitter: a cycle is 23.5 ms.
    """
    sc = make({"alpha": alpha}, k=2, tokens=4, requests=2, replications=1)
    plan = EnginePlan(acceptance_model(sc.acceptance, 2), bind(sc).cycle_time_model(), 4, 2)
    events: list[tuple[float, int, int, str]] = []
    out = run_replication(
        plan,
        replication_rngs(np.random.SeedSequence(0)),
        trace=lambda *e: events.append(e),
    )
    return events, out


def cycle_events(t0: float, req: int, cyc: int, length: int) -> list[tuple[float, int, int, str]]:
    # draft (k - 1 = 1 step, 1 ms) -> verify (20 ms) -> accept -> extend (2 ms) -> overhead
    return [
        (t0 + 1.0, req, cyc, "draft"),
        (t0 + 21.0, req, cyc, "verify"),
        (t0 + 21.0, req, cyc, f"accept L={length}"),
        (t0 + 23.0, req, cyc, "extend"),
        (t0 + 23.5, req, cyc, "overhead"),
    ]


def expected_trace(length: int, cycles: int) -> list[tuple[float, int, int, str]]:
    """Two requests back to back, each ``cycles`` cycles of 23.5 ms emitting ``length``."""
    expected = []
    t = 0.0
    for req in range(2):
        expected.append((t, req, 0, "start"))
        for cyc in range(cycles):
            expected += cycle_events(t, req, cyc, length)
            t += 23.5
        expected.append((t, req, cycles, "done"))
    return expected


def test_exact_trace_all_rejected():
    events, out = traced(0.0)
    assert events == expected_trace(1, 4)  # half-ms steps: exact in binary floating point
    assert out.cycles.tolist() == [[4, 4]]
    assert out.request_ms.tolist() == [[94.0, 94.0]]
    assert np.allclose(out.tok_s, 4000 / 94.0)
    assert out.accept_counts.tolist() == [[8, 0, 0]]
    assert out.phase_ms.tolist() == [[8.0, 160.0, 16.0, 4.0]]


def test_exact_trace_all_accepted_overshoots():
    events, out = traced(1.0)
    assert events == expected_trace(3, 2)  # 3 + 3 = 6 >= 4 tokens
    assert out.cycles.tolist() == [[2, 2]]
    assert out.accept_counts.tolist() == [[0, 0, 4]]
    assert out.emitted_tokens.tolist() == [[6, 6]]  # emitted, overshoot included
    assert np.allclose(out.tok_s, 4000 / 47.0)  # only the 4 needed tokens count


def test_des_matches_the_closed_forms(seed_path):
    sc = load_scenario(seed_path)
    res = simulate(sc, engine="des", replications=4, requests=40)
    summ = summarize(res)
    counts = res.accept_counts.sum(axis=0)
    n = counts.sum()
    lengths = np.repeat(np.arange(1, 4), counts)
    se = lengths.std(ddof=1) / np.sqrt(n)
    assert abs(summ.accept_length_mean - leviathan_accept_length(0.618, 2)) < 4 * se
    assert summ.cycle_ms["mean"] == pytest.approx(33.3)


@settings(max_examples=15, deadline=None)
@given(k=st.integers(0, 4), tokens=st.integers(1, 40), alpha=st.sampled_from([0.0, 0.5, 1.0]))
def test_des_invariants(k, tokens, alpha):
    res = simulate(make({"alpha": alpha}, k=k, tokens=tokens), engine="des")
    assert res.accept_counts.shape == (2, k + 1)
    assert (res.emitted_tokens >= tokens).all() and (res.emitted_tokens <= tokens + k).all()
    assert (res.accept_counts.sum(axis=1) == res.cycles.sum(axis=1)).all()
    if alpha == 1.0:  # exactly k + 1 tokens every cycle
        assert (res.cycles == -(-tokens // (k + 1))).all()
    if alpha == 0.0 or k == 0:  # one token a cycle
        assert (res.cycles == tokens).all()


def test_plain_decoding_runs_at_the_baseline(seed_path):
    sc = with_overrides(load_scenario(seed_path), {"speculation.num_steps": 0})
    for engine in ("fast", "des"):
        res = simulate(sc, engine=engine, replications=2, requests=3)
        assert np.allclose(res.tok_s, 1000 / 12.12)


@pytest.mark.slow
def test_des_matches_the_heterogeneous_expectations():
    sc = make({"alpha": 0.7, "concentration": 6.0}, k=3, tokens=1024, requests=50, replications=10)
    res = simulate(sc, engine="des")
    model = acceptance_model(sc.acceptance, 3)
    rep_means = res.tok_s.mean(axis=1)
    se = rep_means.std(ddof=1) / np.sqrt(res.replications)
    expected = 1000 * model.mean_accept_length() / scenario_cycle_cost(sc).total_ms
    # long-run value vs N = 1024-token requests: allow 4 SE plus the O(1/N) finite-request
    # bias (the uncounted overshoot is at most k tokens of N, plus a Jensen term ~Var L/(N AL))
    assert abs(rep_means.mean() - expected) < 4 * se + 2 * (3 / 1024) * expected
    per_rep_al = (res.accept_counts @ np.arange(1, 5)) / res.accept_counts.sum(axis=1)
    se_al = per_rep_al.std(ddof=1) / np.sqrt(res.replications)
    assert abs(per_rep_al.mean() - model.cycle_mean_accept_length()) < 4 * se_al


@settings(max_examples=15, deadline=None)
@given(
    alpha=st.floats(0.0, 1.0),
    t=st.floats(0.0, 1.0),
    conc=st.sampled_from([None, 4.0]),
    cv=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_des_common_random_numbers(alpha, t, conc, cv, seed):
    def acc(a: float) -> dict:
        return {"alpha": a} if conc is None else {"alpha": a, "concentration": conc}

    low = make(acc(alpha), k=3, tokens=60, jitter=cv)
    high = make(acc(alpha + t * (1 - alpha)), k=3, tokens=60, jitter=cv)
    r_low = simulate(low, engine="des", seed=seed)
    r_high = simulate(high, engine="des", seed=seed)
    assert (r_high.tok_s >= r_low.tok_s * (1 - 1e-12)).all()
