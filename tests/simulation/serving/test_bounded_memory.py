"""Bounded memory: a replication's per-request rows and delivery gaps stream into exact
sums and a quantile sketch; past the keep limits only a systematic sample of rows is kept,
and the summary's means stay exact and its quantiles within the sketch's stated 0.1%."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.simulation.serving import LogNormal, Poisson, SloSpec, simulate_serving, work_out
from sim.simulation.serving import kept_rows as records_module
from sim.simulation.serving.answers import Answers
from sim.simulation.serving.metrics import (
    backlog,
    little_terms,
    little_window_terms,
    summarize_serving,
    weighted_quantiles,
)
from sim.simulation.serving.sketch import ALPHA, QuantileSketch, StreamedStat
from tests.simulation.serving.helpers import plan

QS = (0.01, 0.1, 0.5, 0.9, 0.99, 0.999)
#: The sketch's bound with room for the rounding of one logarithm at a bucket's edge.
BOUND = ALPHA * (1 + 1e-9)


def _within(got: np.ndarray, exact: np.ndarray) -> None:
    assert np.all(np.abs(got - exact) <= BOUND * np.abs(exact)), (got, exact)


@pytest.mark.parametrize("seed", range(5))
def test_sketch_quantiles_are_within_alpha_of_the_exact_ones(seed):
    """Unit and integer weights, values over six decades, zeros and negatives."""
    rng = np.random.default_rng(seed)
    values = np.concatenate(
        [rng.lognormal(2.0, 3.0, 5000), np.zeros(40), -rng.lognormal(0.0, 1.0, 300)]
    )
    weights = rng.integers(1, 50, values.size).astype(float)
    for w in (None, weights):
        sketch = QuantileSketch()
        for part in np.array_split(np.arange(values.size), 7):  # streamed in pieces
            sketch.add(values[part], None if w is None else w[part])
        exact = weighted_quantiles(values, np.ones(values.size) if w is None else w, QS)
        _within(sketch.quantiles(QS), exact)


def test_merged_sketches_are_the_sketch_of_the_pooled_sample():
    rng = np.random.default_rng(3)
    a, b = rng.exponential(5.0, 800), rng.exponential(50.0, 300)
    one, two, both = QuantileSketch(), QuantileSketch(), QuantileSketch()
    one.add(a), two.add(b), both.add(np.concatenate([a, b]))
    assert QuantileSketch.merged([one, two]) == both
    _within(both.quantiles(QS), weighted_quantiles(np.concatenate([a, b]), np.ones(1100), QS))


def test_unit_weights_fill_the_buckets_a_weighted_sample_of_ones_fills():
    """Unit weights are counted (``_Buckets.add``): the same bucket weights, bit for bit,
    as the weighted sums of ones, and mixed weights as before."""
    rng = np.random.default_rng(8)
    values = rng.lognormal(3.0, 0.5, 5000)
    counted, summed, mixed = QuantileSketch(), QuantileSketch(), QuantileSketch()
    counted.add(values), counted.add(values, np.ones(values.size))
    for sketch, w in ((summed, np.ones(values.size)), (mixed, np.full(values.size, 2.0))):
        keys = QuantileSketch._keys(values)
        sketch._positive.add(np.concatenate([keys, keys]), np.concatenate([w, w]))
    assert counted == summed
    doubled = QuantileSketch()
    doubled.add(values, np.full(values.size, 2.0)), doubled.add(values, np.full(values.size, 2.0))
    assert doubled == mixed


def test_streamed_stat_mean_is_exact_and_skips_nan():
    stat = StreamedStat()
    stat.add(np.array([1.0, np.nan, 3.0]))
    stat.add(np.array([8.0]))
    assert stat.mean == pytest.approx(4.0, rel=1e-15) and stat.weight == 3


def _run(monkeypatch, keep: int | None, gaps: int | None, live_peak: list[int]):
    if keep is not None:
        monkeypatch.setattr(records_module, "KEEP_REQUESTS", keep)
        monkeypatch.setattr(records_module, "CHUNK", 16)
    if gaps is not None:
        monkeypatch.setattr(records_module, "KEEP_GAPS", gaps)
    complete = Answers.complete

    def watched(self, req, now):
        live_peak[0] = max(live_peak[0], len(self.rec.live))
        complete(self, req, now)

    monkeypatch.setattr(Answers, "complete", watched)
    p = plan(Poisson(40.0), output=LogNormal(40.0, 0.6, 200), requests=400, warmup=20)
    policies = {"baseline": FixedK(0), "k3": FixedK(3)}
    return simulate_serving(p, work_out(p, policies), replications=2, seed=7)


def test_a_sampled_run_keeps_exact_means_and_quantiles_within_the_bound(monkeypatch):
    """The same run kept whole and kept as a sample of at most 64 rows (stride 8 of 400)
    and no gaps: identical simulation, means equal to rounding, quantiles within 0.1%,
    Little's terms and backlogs identical, the sample every stride-th request."""
    peak = [0]
    whole = _run(monkeypatch, None, None, peak)
    monkeypatch.undo()
    sampled = _run(monkeypatch, 64, 10, peak)
    slo = SloSpec(tok_s=(20.0,), ttft_ms=200.0)
    a = summarize_serving(whole.records, slo)
    b = summarize_serving(sampled.records, slo)
    for name in ("baseline", "k3"):
        for w, s in zip(whole.records[name], sampled.records[name], strict=True):
            assert not w.sampled and s.sampled and not s.itl_exact
            assert w.measured == s.measured == 400 and w.sample_index.size == 400
            assert s.sample_index.size <= 64 and np.all(s.sample_index % s.stride == 0)
            kept = s.sample_index
            np.testing.assert_array_equal(s.finish_ms, w.finish_ms[kept])
            assert little_terms(s) == pytest.approx(little_terms(w), rel=1e-12)
            assert little_window_terms(s) == little_window_terms(w)
            assert backlog(s) == backlog(w)
        pa, pb = a.policies[name], b.policies[name]
        for metric, ea in pa.metrics.items():
            eb = pb.metrics[metric]
            assert eb.mean == pytest.approx(ea.mean, rel=1e-12), metric
            _within(np.array([eb.p50, eb.p90, eb.p99]), np.array([ea.p50, ea.p90, ea.p99]))
        assert pb.preemptions_per_request.mean == pa.preemptions_per_request.mean
    assert 0 < peak[0] < 100  # requests are released: the system held at most ~tens


def test_little_and_backlog_counts_match_whole_run_arrays():
    """The streamed tally against the whole-run formulas on a busy open run (requests
    carried over the window's start, some unfinished at a horizon)."""
    p = plan(Poisson(120.0), output=LogNormal(60.0, 0.8, 300), requests=300, warmup=50)
    rec = simulate_serving(p, work_out(p, {"k3": FixedK(3)}), replications=1, seed=2).records["k3"][
        0
    ]
    lo, hi = rec.window_start_ms, rec.window_end_ms
    assert rec.window.carried > 0
    L, lam, W = little_terms(rec)
    lw, edge = little_window_terms(rec)
    assert pytest.approx(lw + edge, rel=1e-12) == L
    assert lam * (hi - lo) == pytest.approx(rec.window.arrivals_before(hi))
    assert pytest.approx(np.mean(rec.finish_ms - rec.arrival_ms)) == W
