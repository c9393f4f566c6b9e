"""Serving metrics: definitions checked on a hand-made record."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving import (
    ClosedLoop,
    Empirical,
    FixedK,
    Poisson,
    simulate_serving,
    work_out,
)
from sim.simulation.serving.metrics import (
    SloSpec,
    little_terms,
    little_window_terms,
    request_metrics,
    summarize_serving,
    weighted_quantiles,
)
from tests.simulation.serving.helpers import plan


def test_weighted_quantiles_are_the_repeated_sample_quantiles():
    v = np.array([5.0, 1.0, 3.0])
    w = np.array([1.0, 2.0, 7.0])
    repeated = np.repeat(v, w.astype(int))
    for q in (0.1, 0.2, 0.5, 0.9, 0.99):
        got = weighted_quantiles(v, w, [q])[0]
        assert got == np.sort(repeated)[int(np.ceil(q * repeated.size)) - 1]


def test_definitions_on_a_run():
    p = plan(ClosedLoop(4), input_tokens=20, output=30, requests=40, prefill="model")
    run = simulate_serving(
        p, work_out(p, {"baseline": FixedK(0), "k3": FixedK(3)}), replications=2, seed=1
    )
    rec = run.records["k3"][0]
    m = request_metrics(rec)
    np.testing.assert_allclose(m["tpot_ms"], (rec.finish_ms - rec.first_token_ms) / 29)
    # with prefill the first token starts decoding: per-user tok/s is 1000 / TPOT
    np.testing.assert_allclose(m["per_user_tok_s"], 1000.0 / m["tpot_ms"])
    assert np.all(m["ttft_ms"] >= m["queue_ms"])
    summary = summarize_serving(run.records, SloSpec(tok_s=(50.0,), ttft_ms=100.0, tpot_ms=20.0))
    k3 = summary.policies["k3"]
    assert k3.metrics["tpot_ms"].mean == pytest.approx(
        np.mean([np.nanmean(request_metrics(r)["tpot_ms"]) for r in run.records["k3"]])
    )
    assert 0.0 <= k3.p_tok_s[50.0].mean <= 1.0 and k3.slo_attainment is not None
    s = summary.speedup["k3"]
    ratio = [
        np.nanmean(request_metrics(a)["per_user_tok_s"])
        / np.nanmean(request_metrics(b)["per_user_tok_s"])
        for a, b in zip(run.records["k3"], run.records["baseline"], strict=True)
    ]
    assert s["per_user_tok_s"].mean == pytest.approx(np.mean(ratio))
    assert s["tpot_ms"].mean > 0
    # ITL: a speculative iteration delivers several tokens at once, so the mean gap exceeds TPOT
    assert k3.metrics["itl_ms"].mean > k3.metrics["tpot_ms"].mean
    in_system, _, _ = little_terms(rec)
    assert in_system == pytest.approx(4.0, rel=1e-9)


def _by_hand(lo: float, hi: float, requests: list[tuple[float, float]], measured):
    """A record-like object for the window [lo, hi] whose requests (arrival, finish) pass
    through a ``WindowTally`` in time order as the recorder feeds it (those unfinished at
    hi leave at hi); ``measured``: (arrival, finish) arrays of the measured requests."""
    from types import SimpleNamespace

    from sim.simulation.serving.serving_record import WindowTally

    events = [(a, 0, a, f) for a, f in requests] + [(min(f, hi), 1, a, f) for a, f in requests]
    tally = WindowTally()
    for _t, kind, a, f in sorted([*events, (lo, -1, lo, lo)]):
        if kind == -1:
            tally.open(lo)
        elif kind == 0:
            tally.arrive(a)
        else:
            tally.leave(a, min(f, hi))
    arrival, finish = measured
    return SimpleNamespace(
        window_start_ms=lo,
        window_end_ms=hi,
        window=tally,
        sampled=False,
        arrival_ms=np.array(arrival),
        finish_ms=np.array(finish),
    )


def test_little_terms_by_hand() -> None:
    """Window [0, 10) ms; requests arrive at 0, 5 and 10 and finish at 4, 9 and 12: 8 ms of
    request time inside the window (L = 0.8), 2 arrivals inside it (lambda = 0.2 per ms;
    the one at 10 is outside), the measured two spend 4 ms each (W = 4), and L = lambda W."""
    rec = _by_hand(0.0, 10.0, [(0.0, 4.0), (5.0, 9.0), (10.0, 12.0)], ([0.0, 5.0], [4.0, 9.0]))
    assert little_terms(rec) == pytest.approx((0.8, 0.2, 4.0))
    assert rec.window.arrivals == 3  # the backlog's count of arrivals takes [lo, hi]


def test_little_window_terms_by_hand() -> None:
    """Window [2, 10) ms; a request from 0 to 4 was there when it opened (2 ms inside it:
    the edge), one from 5 to 12 arrived in it (5 ms inside it), one from 0 to 1 left
    before it and one arriving at 10 is after it: L = 7/8 = lambda W + edge = 5/8 + 2/8,
    where the plain lambda W (1 arrival, the measured one's 7 ms) says 7/8 only by luck."""
    rec = _by_hand(2.0, 10.0, [(0.0, 1.0), (0.0, 4.0), (5.0, 12.0), (10.0, 13.0)], ([5.0], [12.0]))
    assert little_terms(rec)[0] == pytest.approx(7 / 8)
    assert little_window_terms(rec) == pytest.approx((5 / 8, 2 / 8))
    assert rec.window.carried == 1  # the backlog when the window opened


def test_mean_interval_is_students_t_by_hand() -> None:
    """Replications 1, 2, 3: mean 2, sample std 1, t(0.975, 2) = 4.302653, so the 95%
    interval is 2 -+ 4.302653 / sqrt(3) = (-0.484138, 4.484138); one value has none."""
    from sim.simulation.serving.metrics import mean_interval

    mean, ci = mean_interval(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0
    assert ci == pytest.approx((2 - 4.302653 / 3**0.5, 2 + 4.302653 / 3**0.5), abs=1e-6)
    assert mean_interval(np.array([7.0])) == (7.0, None)


def test_share_interval_is_clipped_to_0_1_by_hand() -> None:
    """SLO attainment 1.0 and 29/30 over two replications: mean 0.98333, sample std
    0.023570, t(0.975, 1) = 12.706205, so the t interval is 0.98333 -+ 0.211770 =
    (0.771563, 1.195103); a share cannot pass 1, so ``share_interval`` gives
    (0.771563, 1.0) with the same mean. Near 0 the lower end is clipped to 0; inside
    [0, 1] the interval is the t interval, and one replication still has none."""
    from sim.simulation.serving.metrics import mean_interval, share_interval

    high = np.array([1.0, 29 / 30])
    assert mean_interval(high)[1][1] == pytest.approx(1.195103, abs=1e-6)  # the bug
    mean, ci = share_interval(high)
    assert mean == pytest.approx(0.983333, abs=1e-6)
    assert ci == pytest.approx((0.771563, 1.0), abs=1e-6) and ci[1] == 1.0
    low = np.array([0.0, 1 / 30])
    assert share_interval(low)[1] == pytest.approx((0.0, 0.228437), abs=1e-6)
    middle = np.array([0.4, 0.5, 0.6])
    assert share_interval(middle) == mean_interval(middle)
    assert share_interval(np.array([0.9])) == (0.9, None)


def test_share_valued_summaries_stay_in_0_1() -> None:
    """Two replications of 8 users, speculating at k = 3 against a tight TPOT limit: 17 of
    24 and 10 of 24 requests meet it, so the t interval of SLO attainment is
    (-1.29, 2.42); clipped, it is all of [0, 1]. Every share of every policy (SLO
    attainment, the share at or above each tok/s target, KV utilisation) has its 95%
    interval inside [0, 1]."""
    p = plan(
        ClosedLoop(8), input_tokens=20, output=30, requests=24, prefill="model",
        kv_capacity_tokens=4000,
    )  # fmt: skip
    run = simulate_serving(
        p, work_out(p, {"baseline": FixedK(0), "k3": FixedK(3)}), replications=2, seed=3
    )
    slo = SloSpec(tok_s=(1.0, 88.0), ttft_ms=400.0, tpot_ms=12.0)
    policies = summarize_serving(run.records, slo).policies
    assert policies["k3"].slo_attainment.mean == pytest.approx((17 + 10) / 48)
    assert policies["k3"].slo_attainment.ci95 == (0.0, 1.0)
    for name, policy in policies.items():
        shares = [policy.slo_attainment, policy.kv_utilisation, *policy.p_tok_s.values()]
        for share in shares:
            assert share is not None and share.ci95 is not None, name
            assert 0.0 <= share.ci95[0] <= share.mean <= share.ci95[1] <= 1.0, (name, share)


def test_a_non_negative_quantity_has_no_negative_interval_by_hand() -> None:
    """Queueing delays of 20 and 700 ms over two replications: mean 360, sample std
    480.83, t(0.975, 1) = 12.706205, so the t interval is 360 -+ 4320.1, reaching far below
    0; no delay, rate, batch or paired ratio can be negative, so ``positive_interval``
    clips it at 0 and keeps its upper end and mean. Away from 0 it is the t interval."""
    from sim.simulation.serving.metrics import mean_interval, positive_interval

    skewed = np.array([20.0, 700.0])
    assert mean_interval(skewed)[1][0] == pytest.approx(-3960.1, abs=0.1)  # the bug
    mean, ci = positive_interval(skewed)
    assert mean == 360.0 and ci[0] == 0.0
    assert ci[1] == pytest.approx(4680.1, abs=0.1)
    tight = np.array([30.0, 31.0, 32.0])
    assert positive_interval(tight) == mean_interval(tight)


def test_latency_summaries_have_no_negative_interval() -> None:
    """Poisson arrivals at 5 requests/s over two replications: queueing is rare, so the
    queueing delay's t interval is (-16.4, 32.7) ms at k = 3 unclipped. Every per-request
    metric's and every ratio's interval of every policy stays at or above 0 and holds its
    mean."""
    p = plan(Poisson(5.0), input_tokens=20, output=30, requests=24, prefill="model")
    run = simulate_serving(
        p, work_out(p, {"baseline": FixedK(0), "k3": FixedK(3)}), replications=2, seed=3
    )
    summary = summarize_serving(run.records, SloSpec())
    assert summary.policies["k3"].metrics["queue_ms"].ci95[0] == 0.0
    for name, policy in summary.policies.items():
        estimates = [*policy.metrics.values(), policy.aggregate_tok_s, policy.mean_batch]
        for e in estimates:
            if e.ci95 is not None and np.isfinite(e.mean):
                assert 0.0 <= e.ci95[0] <= e.mean <= e.ci95[1], (name, e)


@pytest.mark.filterwarnings("error")
def test_a_one_token_request_has_no_decoding_speed() -> None:
    """A request of one output token ends when its prefill emits that token: it never
    decodes, so it has neither a TPOT nor a per-user decoding speed (NaN, left out of the
    means), where its decode start stayed at the -1 'not yet' mark and gave 1000 / (finish
    + 1 ms). With every request that short the means are NaN, without numpy warnings."""
    mixed = plan(
        ClosedLoop(2), input_tokens=20, output=Empirical((1, 30)),
        requests=40, prefill="model",
    )  # fmt: skip
    rec = simulate_serving(
        mixed, work_out(mixed, {"baseline": FixedK(0)}), replications=1, seed=2
    ).records["baseline"][0]
    m = request_metrics(rec)
    one = rec.output_tokens == 1
    assert one.any() and (~one).any()
    assert np.all(rec.decode_tokens[one] == 0)
    assert np.all(np.isnan(m["per_user_tok_s"][one])) and np.all(np.isnan(m["tpot_ms"][one]))
    np.testing.assert_allclose(m["per_user_tok_s"][~one], 1000.0 / m["tpot_ms"][~one])

    # a tok/s target is a share of the requests that decoded, as the mean speed is
    target = float(np.median(m["per_user_tok_s"][~one]))
    run1 = simulate_serving(mixed, work_out(mixed, {"baseline": FixedK(0)}), replications=1, seed=2)
    share = summarize_serving(run1.records, SloSpec(tok_s=(target,))).policies["baseline"]
    assert share.p_tok_s[target].mean == np.mean(m["per_user_tok_s"][~one] >= target)

    short = plan(ClosedLoop(2), input_tokens=20, output=1, requests=10, prefill="model")
    run = simulate_serving(short, work_out(short, {"baseline": FixedK(0)}), replications=2, seed=2)
    summary = summarize_serving(run.records).policies["baseline"]
    assert np.isnan(summary.metrics["per_user_tok_s"].mean)
    assert np.isnan(summary.mean_batch.mean)


def test_a_backlog_is_flagged_when_it_grows_by_a_share_of_the_arrivals() -> None:
    """Growth of at least 20% of the window's arrivals and at least 10 requests: 2 -> 78
    over 154 arrivals (76 >= 30.8) is flagged; 29 -> 112 over 639 (83 < 127.8), a system
    near its steady occupancy, is not; 0 -> 9 over 10 arrivals is below 10 requests."""
    from sim.simulation.serving.metrics import Backlog

    assert Backlog(2, 78, 154).overloaded
    assert not Backlog(29, 112, 639).overloaded
    assert not Backlog(0, 9, 10).overloaded
    assert Backlog(0, 10, 10).overloaded


def test_an_overload_is_flagged_and_a_light_load_is_not() -> None:
    """Poisson arrivals far above what two running slots answer: the requests in the system
    grow through the window in every replication. At a light rate, and in a closed loop of
    four users (never more than four in the system), nothing is flagged."""
    from sim.simulation.serving.metrics import backlog

    def flagged(arrivals, **kw) -> list[bool]:
        p = plan(arrivals, input_tokens=20, output=30, requests=30, prefill="model", **kw)
        run = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=2, seed=4)
        summary = summarize_serving(run.records, SloSpec()).policies["k3"]
        assert summary.overloaded == sum(b.overloaded for b in summary.backlogs)
        return [backlog(r).overloaded for r in run.records["k3"]]

    assert flagged(Poisson(5000.0), max_running_requests=2) == [True, True]
    assert flagged(Poisson(1.0)) == [False, False]
    assert flagged(ClosedLoop(4)) == [False, False]
