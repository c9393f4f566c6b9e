"""Streamed statistics equal the ones computed from the kept arrays (percentiles within
their stated error), whatever the block sizes or worker count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.simulation.simulate as simulate_mod
from sim.errors import SpecsimError
from sim.simulation.simulate import simulate
from sim.simulation.stream import LogHistogram, Moments
from sim.simulation.summary import summarize
from tests.helpers import MIXED, make

TARGETS = [40.0, 45.0, 50.0]


@given(values=st.lists(st.floats(1e-3, 1e6), min_size=1, max_size=300), q=st.floats(0, 100))
@settings(max_examples=80, deadline=None)
def test_histogram_percentile_is_within_its_stated_error(values, q):
    x = np.array(values)
    h = LogHistogram()
    for part in np.array_split(x, 3):
        if part.size:
            h.add(part)
    exact = float(np.percentile(x, q))
    assert abs(h.percentile(q) - exact) <= LogHistogram.relative_error * exact * (1 + 1e-12)


@given(parts=st.lists(st.lists(st.floats(-1e3, 1e3), max_size=40), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_moments_merge_to_the_two_pass_values(parts):
    total = Moments()
    for p in parts:
        total.merge(Moments.of(np.array(p)))
    flat = np.array([v for p in parts for v in p])
    assert total.n == flat.size
    if flat.size:
        assert total.mean == pytest.approx(flat.mean(), abs=1e-9)
    if flat.size > 1:
        assert total.std() == pytest.approx(flat.std(ddof=1), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    "acceptance,jitter",
    [({"alpha": 0.7}, 0.0), ({"alpha": 0.6, "concentration": 4.0}, 0.3), (MIXED, 0.0)],
)
def test_streamed_summary_matches_the_kept_one(monkeypatch, acceptance, jitter):
    sc = make(acceptance, k=3, tokens=200, jitter=jitter, requests=40, replications=12)
    kept = summarize(simulate(sc, stream=False), TARGETS)
    monkeypatch.setattr(simulate_mod, "BLOCK_TOKENS", 3 * 40 * 200)  # several blocks
    one = simulate(sc, stream=True, targets=TARGETS)
    two = simulate(sc, stream=True, targets=TARGETS, workers=2)
    assert one.tok_s is None and one.streamed
    s1, s2 = summarize(one, TARGETS), summarize(two, TARGETS)
    assert s1.to_dict() == s2.to_dict()  # merged in block order: workers change nothing
    assert s1.tok_s_mean == pytest.approx(kept.tok_s_mean, rel=1e-12)
    assert s1.tok_s_std == pytest.approx(kept.tok_s_std, rel=1e-9)
    for a, b in zip(s1.tok_s_ci95, kept.tok_s_ci95, strict=True):
        assert a == pytest.approx(b, rel=1e-9)
    for q in ("tok_s_p5", "tok_s_p50", "tok_s_p95"):
        exact = getattr(kept, q)
        assert abs(getattr(s1, q) - exact) <= LogHistogram.relative_error * exact * (1 + 1e-9)
    assert [t.to_dict() for t in s1.targets] == [t.to_dict() for t in kept.targets]
    assert np.array_equal(s1.accept_pmf, kept.accept_pmf)
    assert s1.accept_length_mean == kept.accept_length_mean
    for key, value in kept.cycle_ms.items():
        assert s1.cycle_ms[key] == pytest.approx(value, rel=1e-12)
    assert [c.name for c in s1.classes] == [c.name for c in kept.classes]
    for a, b in zip(s1.classes, kept.classes, strict=True):
        assert a.share == b.share and a.mean_tok_s == pytest.approx(b.mean_tok_s, rel=1e-12)


def test_streamed_run_counts_only_its_targets():
    sc = make({"alpha": 0.7}, requests=10, replications=3)
    res = simulate(sc, stream=True, targets=[40.0])
    with pytest.raises(SpecsimError, match="counted targets"):
        summarize(res, [41.0])


def test_large_runs_stream_by_default(monkeypatch):
    monkeypatch.setattr(simulate_mod, "STREAM_ABOVE", 50)
    sc = make({"alpha": 0.7}, requests=30, replications=2)
    assert simulate(sc).streamed
    assert not simulate(sc, stream=False).streamed
