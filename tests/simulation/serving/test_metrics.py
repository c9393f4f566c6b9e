"""Serving metrics: definitions checked on a hand-made record."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving import ClosedLoop, FixedK, simulate_serving
from sim.simulation.serving.metrics import (
    SloSpec,
    little_terms,
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
    run = simulate_serving(p, {"baseline": FixedK(0), "k3": FixedK(3)}, replications=2, seed=1)
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
