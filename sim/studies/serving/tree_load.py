"""Chain against tree as concurrency grows: where a draft tree stops beating the chain.

At each concurrency C of a grid (a closed loop of C users) the serving simulation runs
plain decoding, every chain and every tree asked for on the same users, arrivals, lengths
and per-request acceptance draws (common random numbers, sim/simulation/serving/simulate.py;
one seed for every C, so neighbouring loads share their users too). Per policy: per-user
and aggregate tok/s with 95% intervals across replications; per (tree, chain) pair: the
paired ratio tree / chain of replication means. A tree beats a chain at C when that ratio
is above 1.

The crossover of a pair: the first grid concurrency at which the ratio's mean falls below 1
after being above it (``first_loss``), the last one above it before (``last_win``), and the
concurrency at which the ratio interpolated linearly against log C crosses 1 (``at``). The
interval is the grid's: the ratio is smooth in C and a finer grid narrows it. A tree that
loses already at the smallest C, or wins at every C on the grid, has no crossover there
(``never_wins`` / ``always_wins``). The ratio need not be monotone (on an MoE the tree's
extra verify tokens read extra experts only until the batch reads nearly all of them), so
loads beyond the first loss where the tree wins again are listed (``wins_again``).

The best draft per load: at each C the policy with the largest mean per-user tok/s, and
from those a ``serving.draft_table`` (``[start_bs, end_bs, num_steps, topk,
num_draft_tokens]`` rows, boundaries at the geometric midpoints between grid loads): the
decode batch of a closed loop of C users is about C (less while prompts prefill), so the
table keys the winner of load C to batch sizes around C. It is a recommendation from this
grid, not a simulated policy; ``specsim serve --set serving.draft_table=...`` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.binding.bound import bind
from sim.hardware.pass_terms import PassTerms
from sim.model.policy import FixedK
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.parallel import Executor
from sim.scenario.schema import Scenario
from sim.studies.serving.draw_intervals import DRAW_REPLICATIONS
from sim.studies.serving.tree_load_crossings import study_crossings, with_intervals
from sim.studies.serving.tree_load_drafts import drafts_asked
from sim.studies.serving.tree_load_draws import PairArrays, drawn_ratios
from sim.studies.serving.tree_load_notes import intervals_doc, study_assumptions
from sim.studies.serving.tree_load_result import TreeLoadResult
from sim.studies.serving.tree_load_runs import (
    Progress,
    StudyRuns,
    check_study_size,
    nominal_loads,
    pair_ratios,
)
from sim.uncertainty.perturb import input_draws

__all__ = ["tree_load_study"]


def tree_load_study(
    scenario: Scenario,
    concurrencies: Sequence[int],
    *,
    chains: Sequence[int] | None = None,
    trees: Sequence[TreeDraft | Tree] = (),
    workers: int = 1,
    executor: Executor | None = None,
    base_dir: Path | None = None,
    source: str = "scenario",
    progress: Progress | None = None,
    draws: int = 0,
    sequential: bool = True,
) -> TreeLoadResult:
    """Chains and trees of ``scenario`` against concurrency (see the module docstring).

    ``chains``: chain lengths (default: the scenario's num_steps, or the tree's when the
    scenario drafts one); ``trees``: SGLang trees (default: the scenario's own, when it
    drafts one, else ``DEFAULT_TREE``, SGLang's default). The scenario's acceptance is every
    draft's; a tree's ranks below the top-1 take the scenario's rank shape
    (``acceptance.rank_profile`` or ``rank_rates``), or ``DEFAULT_RANK_PROFILE``'s when it
    gives none. What was defaulted is in the result's ``defaults``. ``draws``:
    Sobol draws of the uncertain inputs for the 90% intervals from inputs and model of
    every ratio and crossing (sim/studies/serving/tree_load_draws.py; 0: Monte Carlo only).
    ``sequential``: a load runs its first ``FIRST`` replications, and the rest only where
    a comparison it answers is not settled (``load_settled``).

    In five stages: the drafts asked and their defaults (``drafts_asked``); the size
    check (``check_study_size``); the nominal runs at every load (``nominal_loads``);
    the draws' runs (tree_load_draws.py ``drawn_ratios``), hence every ratio's 90%
    interval (``with_intervals``); and the crossings with theirs (``study_crossings``).
    """
    asked = drafts_asked(scenario, concurrencies, chains, trees, source)
    base = asked.scenario
    drafts = asked.drafts
    grid = tuple(sorted(set(int(c) for c in concurrencies)))
    policies = {name: FixedK(d) for name, d in drafts.items() if name != "off"}
    terms = PassTerms()  # the plans at every load share their passes' terms
    runs = StudyRuns(workers, executor, base_dir, source, sequential)
    check_study_size(base, grid, len(drafts), policies, terms, runs)
    nominal = nominal_loads(base, grid, asked, policies, terms, runs, progress)
    first = nominal.first
    sampled = input_draws(bind(base), first.seed, draws)  # found once: drawn, described
    r = min(DRAW_REPLICATIONS, first.replications)

    def ratios(records: Mapping[str, Any]) -> PairArrays:
        return pair_ratios(records, first.slo, asked.trees, asked.chains)

    drawn = drawn_ratios(
        base,
        grid,
        sampled.overrides,
        policies,
        nominal.ratios,
        ratios,
        replications=r,
        workers=workers,
        executor=executor,
        base_dir=base_dir,
        source=source,
        sequential=sequential,
    )
    points = with_intervals(nominal.points, drawn, nominal.terms_at)
    return TreeLoadResult(
        scenario=base.name,
        concurrencies=grid,
        drafts=drafts,
        points=tuple(points),
        replications=base.simulation.replications,
        requests=base.workload.requests,
        seed=base.simulation.seed,
        assumptions=study_assumptions(asked, nominal),
        crossings=study_crossings(grid, points, drawn, nominal.terms_at, asked),
        defaults=asked.defaults,
        replications_run={c: n * len(drafts) for c, n in nominal.ran.items()},
        intervals=intervals_doc(sampled, r, drawn, len(policies), nominal, points),
    )
