"""Capacity under SLOs: the root is where attainment crosses the share, CI around it."""

from __future__ import annotations

import math

import pytest

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.simulation.serving.metrics import SloSpec
from sim.studies.serving.capacity import capacity
from sim.studies.serving.capacity_search import policy_capacity
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, level
from sim.studies.serving.scenario_plans import BASELINE
from tests.studies.serving.helpers import CodePlans

BUILDER = CodePlans(output=16, requests=16)


TPOT_11 = SloSpec(tpot_ms=11.0)


def evaluator(slo: SloSpec = TPOT_11) -> PointEvaluator:
    return PointEvaluator(BUILDER, replications=3, seed=5, slo=slo)


def test_capacity_is_where_attainment_crosses_the_share():
    """The capacity is the mean attainment's crossing of the share, interpolated in log
    rate between the last bracket's passing and failing rates (at most rtol apart)."""
    ev = evaluator()
    cap = policy_capacity(ev, 0, 0.9, hint_per_s=5.0, rtol=0.02)
    assert cap.rate_per_s is not None
    means = {r: a.mean for r, a, _ in cap.curve}
    below = max(r for r in means if r <= cap.rate_per_s)
    above = min(r for r in means if r > cap.rate_per_s)
    assert means[below] >= 0.9 > means[above] and above <= below * 1.021
    t = (means[below] - 0.9) / (means[below] - means[above])
    assert math.log(cap.rate_per_s) == pytest.approx(
        math.log(below) + t * math.log(above / below), abs=1e-12
    )
    lo, hi = cap.ci95
    assert lo is not None and hi is not None and lo <= cap.rate_per_s <= hi
    assert not cap.at_least  # a crossing, inside the rates tried
    rates = [r for r, _, _ in cap.curve]
    assert rates == sorted(rates)


def test_capacity_document_and_errors():
    ev = evaluator()
    result = capacity(ev, [3], share=0.8, hint_per_s=5.0)
    doc = result.to_dict()
    assert [p["num_steps"] for p in doc["policies"]] == [0, 3]
    assert doc["policies"][0]["capacity_gain"] == 1.0
    k3 = doc["policies"][1]
    assert k3["capacity_gain"] == pytest.approx(k3["rate_per_s"] / doc["policies"][0]["rate_per_s"])
    assert math.isfinite(doc["hint_per_s"])
    with pytest.raises(SpecsimError, match="TTFT or TPOT"):
        capacity(evaluator(SloSpec()), [3])
    with pytest.raises(SpecsimError):
        capacity(ev, [3], share=1.5)
    assert ev(Load("rate", 1.0), FixedK(3)).replications == 3


def test_slo_attainment_levels_are_clipped_to_0_1_but_speeds_are_not():
    """``level`` of a share (SLO attainment 1.0 and 29/30 over two replications: t
    interval (0.7716, 1.1951)) is clipped to [0, 1]; the same numbers as a speed (not a
    share) keep their t interval."""
    import numpy as np

    from sim.studies.serving.paired_metrics import PolicyPoint

    values = np.array([1.0, 29 / 30])
    point = PolicyPoint({"slo_attainment": values, "per_user_tok_s": values}, np.ones(2))
    share = level(point, "slo_attainment")
    assert share.ci95 == pytest.approx((0.771563, 1.0), abs=1e-6) and share.ci95[1] == 1.0
    assert level(point, "per_user_tok_s").ci95[1] == pytest.approx(1.195103, abs=1e-6)


def test_a_share_met_at_every_rate_is_a_lower_bound_not_a_capacity():
    """With a TPOT limit no batch reaches, attainment is 1 at every rate the search tries,
    up to its end (the hint x 4096). That end is not where attainment crosses the share:
    the capacity is 'at least' it, the interval has no upper end and no gain is formed
    (the report printed it as a capacity with the interval [end, end])."""
    from sim.report.capacity import render_capacity

    ev = PointEvaluator(
        CodePlans(output=4, requests=6), replications=2, seed=5, slo=SloSpec(tpot_ms=3.6e6)
    )
    result = capacity(ev, [3], share=0.9, hint_per_s=5.0)
    for p in result.policies:
        assert p.at_least and p.rate_per_s == pytest.approx(5.0 * 4096)
        assert p.ci95[1] is None
    doc = result.to_dict()
    assert [p["capacity_gain"] for p in doc["policies"]] == [None, None]
    assert doc["policies"][1]["at_least"] is True
    text = render_capacity(doc)
    assert ">= 2.05e+04" in text and "met at every rate tried" in text


def test_with_a_ttft_limit_rates_above_the_service_bound_fail_unsimulated():
    """A TTFT limit no short run misses (1000 s): a finite run meets it at any rate, and the
    search would report the end of its range. Above the most the server can answer the
    queue grows without end, so those rates fail without being simulated: the capacity is
    at most the bound, and the evaluator never ran a rate above it."""
    from sim.report.capacity import render_capacity
    from sim.simulation.serving.stability import service_bound

    ev = PointEvaluator(BUILDER, replications=2, seed=5, slo=SloSpec(ttft_ms=1e6))
    cap = policy_capacity(ev, 0, 0.9, hint_per_s=5.0, rtol=0.02)
    plan = BUILDER(Load("rate", 5.0), 3)
    bound = service_bound(plan, plan.drafting(BASELINE)).rate_per_s
    assert cap.service_bound_per_s == bound
    assert cap.unstable_rates and min(cap.unstable_rates) > bound
    assert cap.rate_per_s is not None and bound / 1.03 <= cap.rate_per_s <= bound
    assert not cap.at_least and cap.capped
    assert all(r <= bound for r, _, _ in cap.curve)
    assert all(load.value <= bound for load, _ in ev.memo)
    doc = capacity(ev, [3], share=0.9, hint_per_s=5.0).to_dict()
    assert doc["policies"][0]["unstable_rates"] == list(cap.unstable_rates)
    assert doc["policies"][0]["capped_by_service_bound"] is True
    text = render_capacity(doc)
    assert "fail the TTFT limit unsimulated" in text and "not a measured crossing" in text


def test_with_a_tpot_limit_alone_every_rate_is_simulated():
    ev = PointEvaluator(
        CodePlans(output=4, requests=6), replications=2, seed=5, slo=SloSpec(tpot_ms=3.6e6)
    )
    cap = policy_capacity(ev, 0, 0.9, hint_per_s=5.0, rtol=0.02)
    assert cap.unstable_rates == () and cap.rate_per_s > cap.service_bound_per_s
    assert not cap.capped


def test_one_replication_gives_a_capacity_without_an_interval():
    """One replication has no band of attainment: the capacity is found, its interval is
    (None, None) (printed '[?, ?]'), not the capacity at both ends."""
    ev = PointEvaluator(BUILDER, replications=1, seed=5, slo=TPOT_11)
    cap = policy_capacity(ev, 0, 0.9, hint_per_s=5.0, rtol=0.02)
    assert cap.rate_per_s is not None and cap.ci95 == (None, None)


def test_the_gain_has_a_paired_interval_inside_the_ratio_of_the_ends():
    """capacity_gain carries its 95% interval (the jackknife over the same replications of
    both policies, sim/studies/serving/capacity_ratio.py): around the gain, plain decoding's own
    is [1, 1], and it is narrower than dividing the capacities' interval ends (which
    ignores that both policies ran on the same arrivals)."""
    from sim.report.capacity import render_capacity

    result = capacity(evaluator(), [3], share=0.8, hint_per_s=5.0)
    doc = result.to_dict()
    base, k3 = doc["policies"]
    assert base["capacity_gain_ci95"] == [1.0, 1.0]
    lo, hi = k3["capacity_gain_ci95"]
    assert lo < k3["capacity_gain"] < hi
    naive = (k3["ci95"][0] / base["ci95"][1], k3["ci95"][1] / base["ci95"][0])
    assert hi - lo < naive[1] - naive[0]
    text = render_capacity({**doc, "kind": "capacity"})
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("k = 3"))
    assert row.endswith(f"{k3['capacity_gain']:.2f}x  [{lo:.2f}, {hi:.2f}]"), row


def test_searches_stepping_together_on_two_workers_give_the_one_worker_document():
    """Two workers run every policy's search at once, each rate's replications in blocks
    through the one kept pool (``_together``): the same rates, replications and answer
    as the searches run one after the other in this process."""
    from sim.parallel import LocalExecutor

    def run(executor: LocalExecutor) -> dict:
        ev = PointEvaluator(BUILDER, replications=6, seed=5, slo=TPOT_11, executor=executor)
        return capacity(ev, [1, 3], share=0.8, hint_per_s=5.0).to_dict()

    with LocalExecutor(2, keep_pool=True) as two:
        assert run(two) == run(LocalExecutor(1))
