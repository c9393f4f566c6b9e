"""Trees under batching: the serving engine against the batch-1 tree engines and exact laws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sim.model.policy import FixedK, KTable
from sim.model.renewal import request_tok_s_distribution
from sim.model.tree.acceptance import TreeDraft
from sim.simulation.serving import ClosedLoop, simulate_serving, work_out
from sim.simulation.serving.metrics import request_metrics, summarize_serving
from sim.simulation.simulate import simulate
from tests.helpers import MIXED
from tests.simulation.serving.helpers import tree_plan, tree_scenario

TREE = TreeDraft(3, 2, 6)
PROFILE = {"rank_profile": "sequoia-jf68m-llama2-7b"}
ALPHA = {"alpha": 0.7, **PROFILE}
MIX = {**MIXED, **PROFILE}


def _pooled(run, name, metric="per_user_tok_s"):
    return np.concatenate([request_metrics(r)[metric] for r in run.records[name]])


def _within_4se(a: np.ndarray, b: np.ndarray) -> bool:
    se = np.hypot(a.std(ddof=1) / np.sqrt(a.size), b.std(ddof=1) / np.sqrt(b.size))
    return bool(abs(a.mean() - b.mean()) < 4 * se)


@pytest.mark.parametrize(
    ("acceptance", "engine"),
    [
        (ALPHA, "fast"),
        pytest.param(MIX, "fast", marks=pytest.mark.slow),
        pytest.param(MIX, "des", marks=pytest.mark.slow),
    ],
    ids=["alpha-fast", "mix-fast", "mix-des"],
)
def test_concurrency_one_tree_is_the_batch_one_tree_engine(acceptance, engine):
    """Same model (tree cycle, per-request tree acceptance), different streams: equal in
    distribution (KS) and in mean (4 SE). With equal cycle times tok/s takes few values
    whose last bits differ between engines (the serving clock accumulates sums), so values
    are compared to 1e-6 tok/s."""
    p = tree_plan(ClosedLoop(1), TREE, acceptance=acceptance, requests=400)
    run = simulate_serving(p, work_out(p, {"tree": FixedK(TREE)}), replications=2, seed=5)
    serving = _pooled(run, "tree")
    sc = tree_scenario(acceptance, TREE)
    batch1 = simulate(sc, engine=engine, replications=4, requests=200, seed=9).tok_s.ravel()
    assert stats.ks_2samp(np.round(serving, 6), np.round(batch1, 6)).pvalue > 1e-3
    assert _within_4se(serving, batch1)


@pytest.mark.parametrize(
    "acceptance", [ALPHA, pytest.param(MIX, marks=pytest.mark.slow)], ids=["alpha", "mix"]
)
def test_pooled_accept_length_is_the_closed_form_tree_accept_length(acceptance):
    """Tokens per cycle pooled over every cycle against the closed form of the tree pooled
    as cycles pool (1 / E[1 / AL] over requests; sim/model/tree/acceptance.py). By Wald's
    identity a request's tokens over its cycles estimates E[L] of its cycles; with equal
    lengths the requests weigh by their cycles. Within 4 SE across replications."""
    p = tree_plan(ClosedLoop(4), TREE, acceptance=acceptance, requests=200, warmup=4)
    run = simulate_serving(p, work_out(p, {"tree": FixedK(TREE)}), replications=6, seed=3)
    per_rep = np.array([r.cycle_tokens / r.request_cycles for r in run.records["tree"]])
    theory = p.tree_acceptance(TREE).cycle_mean_accept_length()
    assert abs(per_rep.mean() - theory) < 4 * per_rep.std(ddof=1) / np.sqrt(per_rep.size)
    summary = summarize_serving(run.records, baseline=None).policies["tree"]
    assert summary.accept_length.mean == pytest.approx(per_rep.mean(), rel=1e-12)


def test_closed_loop_tree_is_the_finite_n_renewal_law():
    """Equal lengths, no prefill, token-only passes: every iteration runs at batch C and
    costs the tree's T_C (verify over C N tokens, drafter passes over C topk beams, the
    extend at the batch's expected path), so per-user tok/s has the exact law of
    sim/model/renewal.py with the tree's pmf."""
    users, n_tok = 4, 60
    p = tree_plan(ClosedLoop(users), TREE, acceptance=ALPHA, output=n_tok, requests=300)
    run = simulate_serving(p, work_out(p, {"tree": FixedK(TREE)}), replications=3, seed=11)
    law = p.tree_acceptance(TREE)
    width = int(np.floor(law.mean_accept_length() + 0.5))
    t_c = float(p.cost.decode_ms(users, TREE, np.array([0.0]), extend_tokens=width)[0])
    values, probs = request_tok_s_distribution(law.request_pmf(), n_tok, t_c)
    got = _pooled(run, "tree")
    assert abs(got.mean() - float(values @ probs)) < 4 * got.std(ddof=1) / np.sqrt(got.size)
    # the tree's iteration is not the chain's
    assert t_c != pytest.approx(float(p.cost.decode_ms(users, 3, np.array([0.0]))[0]))


def test_a_tree_holding_the_chain_never_needs_more_cycles_than_the_chain():
    """Common random numbers: one draw per (request, cycle) serves every draft, and a tree
    that contains the top-1 chain of its depth has a depth survival >= the chain's
    cumulative rates, so its L is >= the chain's draw by draw."""
    p = tree_plan(ClosedLoop(1), TREE, acceptance=MIX, output=80, requests=100)
    paths = set(p.tree_acceptance(TREE).tree.rank_paths())
    assert {(0,), (0, 0), (0, 0, 0)} <= paths
    run = simulate_serving(
        p, work_out(p, {"chain": FixedK(3), "tree": FixedK(TREE)}), replications=1, seed=8
    )
    chain, tree = (run.records[n][0].cycles for n in ("chain", "tree"))
    assert np.all(tree <= chain) and np.any(tree < chain)


def test_a_table_falls_back_from_the_tree_by_batch_size():
    """Six users always decode together: above the table's tree range they decode plainly
    (L = 1 exactly), within it they draft the tree."""
    p = tree_plan(ClosedLoop(6), TREE, acceptance=ALPHA, requests=24, warmup=6)
    policies = {
        "off above 3": KTable(((1, 3, TREE), (4, 64, 0))),
        "tree to 8": KTable(((1, 8, TREE), (9, 64, 2))),
    }
    run = simulate_serving(p, work_out(p, policies), replications=1, seed=2)
    off, tree = (r[0] for r in run.records.values())
    assert off.cycle_tokens == off.request_cycles
    assert tree.cycle_tokens / tree.request_cycles > 2.0
    # KV reserved per running request: SGLang's max(num_steps x topk, num_draft_tokens)
    assert p.lookahead(FixedK(TreeDraft(5, 4, 8))) == 20
    assert p.lookahead(policies["tree to 8"]) == 6


def test_padded_extend_costs_more_than_the_accepted_path():
    """The padded draft extend (SGLang's CUDA graph: the verify's width per request) is
    never cheaper than the accepted path; the draws are the same."""
    runs = {}
    for mode in ("accepted", "padded"):
        p = tree_plan(ClosedLoop(8), TREE, acceptance=ALPHA, requests=40, draft_extend=mode)
        runs[mode] = simulate_serving(
            p, work_out(p, {"tree": FixedK(TREE)}), replications=1, seed=4
        )
    acc, pad = (runs[m].records["tree"][0] for m in ("accepted", "padded"))
    assert np.array_equal(acc.cycles, pad.cycles)
    assert _pooled(runs["padded"], "tree").mean() < _pooled(runs["accepted"], "tree").mean()


def test_the_batch_one_engines_run_the_tree_cycle_not_the_chain():
    """The seed server's tree: its verify over 8 tokens costs 5 x 0.7 ms more than the
    chain's over 3, and the Monte Carlo's cycle is the closed forms' tree cycle."""
    from sim.binding.bound import bind
    from sim.binding.closed_form import cycle_cost
    from sim.scenario.load import load_scenario
    from tests.conftest import SEED

    sc = load_scenario(
        SEED,
        [
            "speculation.topk=4",
            "speculation.num_draft_tokens=8",
            "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
        ],
    )
    mc = bind(sc).cycle_time_model().cost  # type: ignore[attr-defined]
    assert mc.verify_ms == pytest.approx(30.0 + 5 * 0.7)
    assert mc.at_accept_length(cycle_cost(sc).extend_tokens) == cycle_cost(sc)


@pytest.mark.parametrize("batching", ["prefill_first", "chunked"])
def test_a_tight_kv_cache_with_trees_preempts_and_never_over_commits(batching):
    """The tree reserves max(num_steps x topk, num_draft_tokens) lookahead slots per
    running request; with a cache barely above the largest request, requests are
    preempted, the cache is never over-committed and every token is delivered once."""
    from tests.simulation.serving.test_invariants import KvWatch, _run_watched, _trace

    tree = TreeDraft(3, 4, 10)  # lookahead 12
    trace = _trace(np.random.default_rng(1), 50, 0.05)
    capacity = int((trace.input_tokens + trace.output_tokens).max()) + 20
    p = tree_plan(
        trace,
        tree,
        acceptance=ALPHA,
        requests=50,
        max_running_requests=16,
        kv_capacity_tokens=capacity,
        batching=batching,
        prefill="model",
    )
    assert p.lookahead(FixedK(tree)) == 12
    watch = KvWatch()
    rec = _run_watched(p, KTable(((1, 4, tree), (5, 16, 2))), 3, watch)
    assert rec.preemptions_total > 0
    assert all(0 <= level <= capacity for level in watch.levels)
    assert all(value == held for value, held in watch.held)
    assert rec.tokens_delivered == int(trace.output_tokens.sum())
