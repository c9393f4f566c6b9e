"""Monte Carlo: seeds and workers, summary statistics, fast vs SimPy agreement."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from sim.cli.group import cli_error
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.simulation.simulate import simulate
from sim.simulation.summary import mean_ci95, summarize, wilson_ci95
from tests.helpers import MIXED, make


def as_json(result) -> str:
    return json.dumps(summarize(result).to_dict(), allow_nan=False)


def test_same_seed_same_json_and_seed_matters():
    sc = make(MIXED, tokens=200, jitter=0.2, requests=20, replications=3)
    assert as_json(simulate(sc, seed=7)) == as_json(simulate(sc, seed=7))
    assert as_json(simulate(sc, seed=7)) != as_json(simulate(sc, seed=8))


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_workers_do_not_change_results(engine):
    sc = make(MIXED, tokens=100, jitter=0.3, requests=10, replications=4)
    one = simulate(sc, engine=engine, workers=1)
    two = simulate(sc, engine=engine, workers=2)
    assert as_json(one) == as_json(two)
    assert np.array_equal(one.tok_s, two.tok_s)


def test_fast_engine_batching_across_workers_is_exact(monkeypatch):
    """Blocks of several replications (fast engine) split differently over workers."""
    import sim.simulation.simulate as mc

    sc = make(MIXED, tokens=100, jitter=0.3, requests=10, replications=6)
    ref = simulate(sc)
    blocks = [range(0, 1), range(1, 4), range(4, 6)]
    monkeypatch.setattr(mc, "_blocks", lambda *args: blocks)
    assert np.array_equal(simulate(sc, workers=2).tok_s, ref.tok_s)


def test_more_replications_extend_the_same_stream():
    sc = make({"alpha": 0.6}, tokens=100, jitter=0.2, requests=10)
    three = simulate(sc, replications=3)
    five = simulate(sc, replications=5)
    assert np.array_equal(five.tok_s[:3], three.tok_s)


def test_result_shapes_and_progress(seed_path):
    calls = []
    res = simulate(
        load_scenario(seed_path),
        replications=3,
        requests=7,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert res.tok_s.shape == res.request_ms.shape == res.cycles.shape == (3, 7)
    assert res.accept_counts.shape == (3, 3) and res.phase_ms.shape == (3, 4)
    assert (res.request_tokens == 512).all()
    assert res.request_tokens.shape == (3, 7) and res.request_tokens.dtype == np.int64
    assert calls[-1] == (3, 3) and all(d <= t for d, t in calls)
    for array in (res.tok_s, res.request_tokens):
        with pytest.raises(ValueError):
            array[0, 0] = 1  # read-only


@pytest.mark.parametrize(
    ("kw", "where"),
    [
        ({"engine": "warp"}, "--engine"),
        ({"replications": 0}, "--replications"),
        ({"workers": 0}, "--workers"),
        ({"seed": -1}, "--seed"),
    ],
)
def test_bad_arguments(seed_path, kw, where):
    """simulate names its own parameter; the CLI maps it to the flag in one place."""
    with pytest.raises(SpecsimError) as err:
        simulate(load_scenario(seed_path), **kw)
    assert err.value.param == where.removeprefix("--")
    assert str(cli_error(err.value)).startswith(where)


def test_summary_keys_and_values(seed_path):
    sc = load_scenario(seed_path)
    res = simulate(sc, replications=10, requests=50)
    d = summarize(res, targets=[55.0, 60.0, 150.0]).to_dict()
    tp = d["throughput_tok_s"]
    assert set(tp) == {"mean", "std", "ci95", "p5", "p50", "p95"}
    assert tp["ci95"][0] < tp["mean"] < tp["ci95"][1]
    assert tp["p5"] < tp["p50"] < tp["p95"]
    assert tp["mean"] == pytest.approx(res.tok_s.mean())
    assert len(d["accept_length"]["pmf"]) == len(d["accept_length"]["theory_pmf"]) == 3
    assert sum(d["accept_length"]["pmf"]) == pytest.approx(1.0)
    cyc = d["cycle_ms"]
    assert cyc["mean"] == pytest.approx(
        cyc["draft"] + cyc["verify"] + cyc["extend"] + cyc["overhead"]
    )
    t55, t60, t150 = d["targets"]
    assert t55["p_at_least"] >= t60["p_at_least"] >= t150["p_at_least"] == 0.0
    for t in d["targets"]:
        lo, hi = t["p_at_least_ci95"]
        assert lo <= t["p_at_least"] <= hi
    p60 = (res.tok_s >= 60.0).mean()
    assert t60["p_at_least"] == pytest.approx(p60)
    assert {"engine", "seed", "replications", "requests"} <= set(d)


def test_mix_summary_reports_classes():
    res = simulate(make(MIXED, tokens=100, requests=200, replications=2))
    classes = summarize(res).to_dict()["classes"]
    assert [c["name"] for c in classes] == ["chat", "code"]
    share = classes[1]["share"]
    assert abs(share - 0.4) < 4 * math.sqrt(0.24 / 400)
    assert classes[1]["mean_tok_s"] > classes[0]["mean_tok_s"]


def test_confidence_intervals():
    assert mean_ci95(np.array([1.0, 1.0, 1.0])) == (1.0, 1.0, 1.0)
    m, lo, hi = mean_ci95(np.array([1.0, 2.0, 3.0]))
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)
    assert (lo, hi) == pytest.approx((m - half, m + half))
    lo, hi = wilson_ci95(0, 100)
    assert lo == 0.0 and 0.03 < hi < 0.04


def test_ci95_covers_the_exact_mean_at_the_nominal_rate(seed_path):
    """Coverage of the t interval over 60 seeds: ~95%, so 49..60 (binomial 4 SE-ish)."""
    from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
    from sim.model.rates import accept_length_pmf
    from sim.model.renewal import request_tok_s_distribution

    sc = with_overrides(load_scenario(seed_path), {"workload.output_tokens": 64})
    values, probs = request_tok_s_distribution(
        accept_length_pmf([0.618, 0.618]), 64, scenario_cycle_cost(sc).total_ms
    )
    exact = float(values @ probs)
    hits = 0
    for seed in range(60):
        s = summarize(simulate(sc, replications=5, requests=20, seed=seed))
        hits += s.tok_s_ci95[0] <= exact <= s.tok_s_ci95[1]
    assert 49 <= hits <= 60


def _agree(sc, replications: int, requests: int) -> None:
    fast = simulate(sc, engine="fast", replications=replications, requests=requests)
    des = simulate(sc, engine="des", replications=replications, requests=requests, seed=99)
    a, b = fast.tok_s.ravel(), des.tok_s.ravel()
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    assert stats.ks_2samp(a, b).pvalue > 1e-4
    # one rate for every request: cycles are i.i.d., so a contingency test on the pmfs holds
    table = np.stack([fast.accept_counts.sum(axis=0), des.accept_counts.sum(axis=0)])
    assert stats.chi2_contingency(table).pvalue > 1e-4


def test_fast_and_des_agree(seed_path):
    sc = with_overrides(load_scenario(seed_path), {"workload.output_tokens": 128})
    _agree(sc, 4, 100)


@pytest.mark.slow
def test_fast_and_des_agree_on_a_jittered_mix():
    sc = make(MIXED, k=3, tokens=256, jitter=0.25)
    fast = simulate(sc, engine="fast", replications=20, requests=100)
    des = simulate(sc, engine="des", replications=20, requests=100, seed=5)
    a, b = fast.tok_s.ravel(), des.tok_s.ravel()
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    with warnings.catch_warnings():  # scipy >= 1.17 renames the variant argument
        warnings.simplefilter("ignore")
        ad = stats.anderson_ksamp([a, b])
    assert getattr(ad, "pvalue", ad.significance_level) > 0.002
    assert stats.ks_2samp(a, b).pvalue > 1e-4
    # cycles cluster by request here: compare replication accept lengths, not pooled cycles
    al = [(r.accept_counts @ np.arange(1, 5)) / r.accept_counts.sum(axis=1) for r in (fast, des)]
    se_al = math.sqrt(sum(x.var(ddof=1) / x.size for x in al))
    assert abs(al[0].mean() - al[1].mean()) < 4 * se_al


def test_pooled_accept_length_is_k_plus_one_when_every_draft_is_accepted():
    """alpha = 1 at k = 3: every cycle emits 4 tokens (the last one of a request too, as
    60 is a multiple of 4), so the pooled accept length is 4 exactly."""
    from sim.simulation.summary import pooled_accept_length

    res = simulate(make({"alpha": 1.0}, k=3), engine="fast", replications=2, requests=6, seed=1)
    assert pooled_accept_length(res) == 4.0


def test_constant_ints_are_a_full_array_seen_through_zero_strides():
    from sim.simulation.simulate import constant_ints

    for shape in ((3, 4), (0, 5), (6,)):
        out = constant_ints(7, shape)
        assert np.array_equal(out, np.full(shape, 7, dtype=np.int64))
        assert out.dtype == np.int64 and not out.flags.writeable
    copied = np.ascontiguousarray(constant_ints(9, (2, 3)))
    assert copied.flags.c_contiguous and (copied == 9).all()
