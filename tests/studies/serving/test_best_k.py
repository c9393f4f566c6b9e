"""Best k per batch size: engine forms from a selection, and the out-of-sample check."""

from __future__ import annotations

import numpy as np
import pytest

from sim.errors import SpecsimError
from sim.model.policy import DisableAbove, FixedK, KTable
from sim.parallel import LocalExecutor
from sim.simulation.serving.metrics import Ratio, SloSpec
from sim.studies.serving.best_k import best_k
from sim.studies.serving.best_k_check import check_loads
from sim.studies.serving.best_k_forms import disable_threshold, midpoint_ends, table_rows
from sim.studies.serving.best_k_selection import LoadChoice
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.point_tasks import PointTask, run_point, same_point
from tests.studies.serving.helpers import CodePlans


def choice(users: int, best: int, levels: dict[int, float] | None = None) -> LoadChoice:
    lv = levels or {0: 1.0, best: 2.0}
    return LoadChoice(users, {k: Ratio(v, (v, v)) for k, v in lv.items()}, best, ())


def test_table_rows_merge_and_midpoints():
    cs = [choice(1, 4), choice(4, 4), choice(16, 3), choice(64, 0)]
    assert midpoint_ends(cs) == [2, 8, 32, 64]
    assert table_rows(cs) == ((1, 8, 4), (9, 32, 3), (33, 64, 0))
    assert table_rows(cs, [2, 10, 40, 64]) == ((1, 10, 4), (11, 40, 3), (41, 64, 0))
    KTable(table_rows(cs))  # a valid vLLM table
    assert check_loads([1, 4, 16, 64]) == [1, 2, 4, 8, 16, 32, 64]
    assert check_loads([1, 2]) == [1, 2]


def test_disable_threshold_forms():
    on_off = [
        choice(1, 3, {0: 1.0, 2: 1.9, 3: 2.0}),
        choice(8, 2, {0: 1.0, 2: 1.5, 3: 1.2}),
        choice(64, 0, {0: 1.0, 2: 0.8, 3: 0.7}),
    ]
    rows = table_rows(on_off)
    policy, note = disable_threshold(on_off, rows)
    # k = 2 is 0.95 / 1.0 of the best at 1 user and the best at 8: better on average than 3
    assert policy == DisableAbove(2, rows[1][1])
    assert "threshold" in note
    always = [choice(1, 3), choice(8, 3)]
    assert disable_threshold(always, table_rows(always))[0] == FixedK(3)
    late = [choice(1, 0, {0: 2.0, 3: 1.0}), choice(64, 3)]
    policy, note = disable_threshold(late, table_rows(late))
    assert policy is None and "only pays at higher load" in note
    twice = [choice(1, 3), choice(8, 0, {0: 2.0, 3: 1.0}), choice(64, 3)]
    assert disable_threshold(twice, table_rows(twice))[0] is None


def test_table_beats_every_fixed_k_out_of_sample():
    # speculation stops paying near 22 users (tests/studies/serving/helpers.py)
    ev = PointEvaluator(
        CodePlans(output=16, requests=12), replications=3, seed=3, executor=LocalExecutor(2)
    )
    result = best_k(ev, [1, 8, 32], [3])
    assert result.choices[0].best == 3 and result.choices[-1].best == 0
    (first, *_, last) = result.table
    assert first[0] == 1 and first[2] == 3 and last[2] == 0
    assert 14 <= first[1] <= 30  # the refined boundary, near the crossover
    assert isinstance(result.threshold, DisableAbove)
    assert result.check_seed == 4
    assert result.beats_every_fixed_k
    doc = result.to_dict()
    assert doc["vllm_speculative_config"]["num_speculative_tokens_per_batch_size"] == [
        list(r) for r in result.table
    ]
    assert doc["check"]["users"] == [1, 3, 8, 16, 32]
    assert set(doc["check"]["policies"]) == {"table", "threshold"}


def test_bad_objective_and_goodput_without_slo():
    ev = PointEvaluator(CodePlans(), replications=2, seed=1)
    with pytest.raises(SpecsimError, match="unknown objective"):
        best_k(ev, [1, 2], [1], objective="bogus")
    with pytest.raises(SpecsimError, match="TTFT or TPOT"):
        best_k(ev, [1, 2], [1], objective="goodput_req_s")


def test_a_fixed_k_tie_goes_to_the_shorter_draft():
    """k = 2 and k = 4 score the same at every load: the fixed k is 2."""
    tie = [choice(1, 2, {0: 1.0, 2: 2.0, 4: 2.0})]
    assert disable_threshold(tie, table_rows(tie))[0] == FixedK(2)


def test_a_shortfall_against_the_tables_own_k_is_named_as_such():
    """The seed's table runs k = 0 up to 3 users, yet the check found fixed k = 0
    significantly better at 2 and 3 users, and said only 'some fixed k is significantly
    better': read as a wrong boundary. The table runs that k there too; the gap is what a
    server with speculation configured pays while decoding plainly (its drafter's KV, its
    host work). The verdict names those loads and the text says why."""
    from sim.report.best_k import render_best_k
    from sim.studies.serving.best_k_check import Check
    from sim.studies.serving.best_k_result import BestKResult

    r = lambda m, lo, hi: Ratio(m, (lo, hi))  # noqa: E731
    checks = (
        Check(1, r(80, 79, 81), {0: r(0, 0, 0), 2: r(20, 19, 21)}),
        Check(3, r(60, 59, 61), {0: r(-0.2, -0.3, -0.1), 2: r(3, 2, 4)}),
        Check(8, r(45, 44, 46), {0: r(7, 6, 8), 2: r(-0.5, -0.7, -0.3)}),
    )
    fixed = {0: (r(80, 79, 81), r(60, 59, 61), r(38, 37, 39)), 2: (r(60, 59, 61),) * 3}
    result = BestKResult(
        scenario="s",
        objective="per_user_tok_s",
        num_steps=(2,),
        choices=(),
        table=((1, 3, 0), (4, 64, 2)),
        threshold=None,
        threshold_note="n",
        check_seed=2,
        checks={"table": checks},
        fixed=fixed,
        runs=1,
        settings={},
        assumptions=(),
    )
    verdict = result.verdict("table")
    assert verdict["worse_where_the_table_runs_that_k"] == {"0": [3], "2": [8]}
    doc = {**result.to_dict(), "selection": []}
    text = render_best_k(doc)
    assert "the table itself runs k=0 at 3 users and k=2 at 8 users" in text


def test_an_engine_form_drafting_one_k_at_every_batch_a_load_reaches_is_that_k_point():
    """A closed loop of C users decodes at most C requests together: a k table or a
    threshold that drafts k at every batch 1..C (its largest k) is fixed k there, the
    same simulation replication by replication; the evaluator runs it once."""
    table = KTable(((1, 6, 3), (7, 64, 0)))
    threshold = DisableAbove(3, 8)
    four, twelve = Load("concurrency", 4), Load("concurrency", 12)
    assert same_point(four, table) == same_point(four, threshold) == FixedK(3)
    assert same_point(twelve, table) is table and same_point(twelve, threshold) is threshold
    two_ks = KTable(((1, 2, 3), (3, 64, 2)))  # k = 3 up to batch 2, then 2
    assert same_point(Load("concurrency", 2), two_ks) == FixedK(3)
    assert same_point(four, two_ks) is two_ks
    # one k at every batch, but not the form's largest: another plan, not the same point
    mixed = KTable(((1, 6, 2), (7, 64, 3)))
    assert same_point(four, mixed) is mixed
    assert same_point(Load("rate", 1.0), threshold) is threshold  # no bound on the batch
    plans, slo = CodePlans(), SloSpec()
    for policy in (table, threshold):
        alone = run_point(PointTask(plans, four, policy, 3, 7, slo))
        fixed = run_point(PointTask(plans, four, FixedK(3), 3, 7, slo))
        for m, v in alone.values.items():
            np.testing.assert_array_equal(v, fixed.values[m])
    ev = PointEvaluator(plans, replications=3, seed=7, same=same_point)
    keys = [(four, table), (four, threshold), (four, FixedK(3)), (twelve, table)]
    ev.ensure(keys)
    assert ev.memo[keys[0]] is ev.memo[keys[1]] is ev.memo[keys[2]]
    assert ev.runs == 2 and ev.replications_run == 6
    plain = PointEvaluator(plans, replications=3, seed=7)
    plain.ensure(keys)
    for key in keys:
        for m, v in plain.memo[key].values.items():
            np.testing.assert_array_equal(v, ev.memo[key].values[m])


def test_the_check_runs_an_engine_form_once_where_it_is_a_fixed_k():
    """best-k's check at seed + 1: where the table and the threshold draft one k at every
    batch a load reaches, their rows are the fixed k's, not simulated again; the
    document is the one simulating them gives, but for what it counts."""
    kw = dict(replications=3, seed=3)
    plans = CodePlans(output=16, requests=12)
    ran = best_k(PointEvaluator(plans, **kw), [1, 8, 32], [3])
    apart = PointEvaluator(plans, seed=4, replications=3)  # no alias: every form runs
    alone = best_k(PointEvaluator(plans, **kw), [1, 8, 32], [3], check=apart)
    got, want = ran.to_dict(), alone.to_dict()
    for doc in (got, want):
        doc.pop("runs"), doc.pop("replications_run", None)
    assert got == want
    assert ran.runs < alone.runs


def test_the_check_asks_its_rule_first_at_two_replications():
    """best-k's check at seed + 1 (sequential): every point runs 2 replications first and
    stops there where its pairs are settled on the stricter bound of 2 values
    (sequential.py ``settled_se``); its verdicts are those of asking first at 4. The
    boundaries' bisections look early too; the document says which parts did."""
    plans = CodePlans(output=40, requests=24)
    kw = dict(replications=6, seed=3)
    early = best_k(PointEvaluator(plans, **kw), [1, 8, 32], [3])
    at_four = PointEvaluator(plans, replications=6, seed=4, same=same_point)
    late = best_k(PointEvaluator(plans, **kw), [1, 8, 32], [3], check=at_four)
    assert early.settings["replications_run"] < late.settings["replications_run"]
    for name, checks in early.checks.items():
        for mine, theirs in zip(checks, late.checks[name], strict=True):
            assert mine.worse_than() == theirs.worse_than()
            assert mine.better_than() == theirs.better_than()
    (line,) = [a for a in early.assumptions if a.startswith("early looks: ")]
    assert "the check at seed + 1, replications: sequential, 2 at every point first" in line
    assert "the boundaries' bisections and the check" in line
    (theirs,) = [a for a in late.assumptions if a.startswith("early looks: ")]
    assert theirs.startswith("early looks: the boundaries' bisections, replications")
    fresh = PointEvaluator(plans, replications=6, seed=4, same=same_point)
    flat = best_k(PointEvaluator(plans, **kw), [1, 8, 32], [3], check=fresh, refine=False)
    assert not any(a.startswith("early looks: ") for a in flat.assumptions)
