"""The best draft length per batch size, as the engine configuration users paste, checked by
simulating it (``best_k``).

1. **Select** (sim/studies/serving/best_k_selection.py). At each closed-loop concurrency
   C of a grid, every fixed k (0 = plain decoding) runs on common random numbers; the
   best k maximises the objective's mean (per-user tok/s, aggregate tok/s, or goodput:
   requests per second meeting the TTFT and TPOT limits). k whose paired difference from
   the best has a 95% interval containing 0 are reported as tied.
2. **Engine forms** (sim/studies/serving/best_k_forms.py). The best k at C becomes the k
   of the batch sizes nearest C, the boundaries moved to where two k tie: a vLLM
   ``num_speculative_tokens_per_batch_size`` table and an SGLang-style threshold (or why
   none expresses it).
3. **Check, out of sample** (sim/studies/serving/best_k_check.py). The table, the
   threshold and every fixed k run again at the grid loads and at the geometric midpoints
   between them, at another seed (``seed + 1``): at each load the paired difference table
   - fixed k with its 95% interval. The table "beats every fixed k within CI" when no
   fixed k is significantly better than it at any load.

What it answers: sim/studies/serving/best_k_result.py. No plotting
(sim/report/decision_plots.py), no text (sim/report/best_k.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.errors import SpecsimError
from sim.model.policy import FixedK, KTable, SpeculationPolicy
from sim.studies.serving.best_k_check import Check, check_loads, check_policies, tie_note
from sim.studies.serving.best_k_forms import (
    disable_threshold,
    refined_ends,
    table_row_k,
    table_rows,
)
from sim.studies.serving.best_k_result import BestKResult
from sim.studies.serving.best_k_selection import LoadChoice, first_draws_note, select
from sim.studies.serving.draws import DrawnPoints, replication_counts
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import METRICS
from sim.studies.serving.point_tasks import same_point
from sim.studies.serving.scenario_plans import gain_band
from sim.studies.serving.sequential import EARLY, Leader, Pairs, describe

__all__ = [
    "OBJECTIVES",
    "BestKResult",
    "Check",
    "LoadChoice",
    "best_k",
    "best_k_table",
    "check_loads",
    "disable_threshold",
    "table_row_k",
    "table_rows",
]


#: Objectives a best-k table can maximise.
OBJECTIVES: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s", "goodput_req_s")


def _early_note(looked: dict[str, PointEvaluator]) -> tuple[str, ...]:
    """The assumption for the parts of the study (by name) whose evaluator asked its rule
    early (``PointEvaluator(early=...)``); none: nothing."""
    early = {name: ev for name, ev in looked.items() if ev.sequential and ev.early}
    if not early:
        return ()
    ev = next(iter(early.values()))
    return (f"early looks: {' and '.join(early)}, {describe(ev.first, ev.replications, ev.early)}",)


def best_k_table(
    evaluator: PointEvaluator,
    users: Sequence[int],
    num_steps: Sequence[int],
    objective: str = "per_user_tok_s",
    refine: bool = True,
    draws: DrawnPoints | None = None,
    early: Sequence[int] = (),
) -> tuple[tuple[tuple[int, int, int], ...], list[LoadChoice], list[str]]:
    """Steps 1 and 2 without the check: (table rows, selection, notes); ``draws``: ties
    within the 90% interval from inputs and model too (``input_ties``); ``early``: the
    boundaries' bisections ask the evaluator's rule at these counts first
    (``PointEvaluator(early=...)``: nothing but their sides reads those points)."""
    ks = sorted({0, *num_steps})
    choices = select(evaluator, sorted(set(users)), ks, objective, draws)
    if not refine:
        return table_rows(choices), choices, []
    evaluator.early = tuple(n for n in early if n < evaluator.first)
    ends, notes = refined_ends(evaluator, choices, objective)
    return table_rows(choices, ends), choices, notes


def best_k(
    evaluator: PointEvaluator,
    users: Sequence[int],
    num_steps: Sequence[int],
    *,
    objective: str = "per_user_tok_s",
    refine: bool = True,
    check: PointEvaluator | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    draft_method: str | None = None,
    sequential: bool = True,
) -> BestKResult:
    """Select the best k (0 and ``num_steps``) at each of ``users``, build the engine forms
    and check them at another seed (``check``: an evaluator of the same plans at that
    seed; default ``evaluator``'s builder at ``evaluator.seed + 1``). ``refine``: move each
    boundary between two best k to where they tie (``refined_ends``); otherwise
    boundaries sit at the geometric midpoints of the grid. ``draws``: each selection's
    ties within the 90% interval from inputs and model (``input_ties``). ``sequential``:
    a point stops at its first replications where its comparisons are settled
    (sim/studies/serving/sequential.py: at a selection load each k against the leader,
    ``Leader``; in the check each engine form against every fixed k, ``Pairs``, asked
    first at ``EARLY`` replications: nothing but the check's own verdicts reads its
    points, no draw and no crossing)."""
    if objective not in OBJECTIVES:
        raise SpecsimError(
            f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})", param="objective"
        )
    if (
        METRICS[objective].needs_slo
        and evaluator.slo.ttft_ms is None
        and (evaluator.slo.tpot_ms is None)
    ):
        raise SpecsimError(
            "goodput needs a TTFT or TPOT limit (serving.ttft_slo_ms / tpot_slo_ms)",
            param="objective",
        )
    grid = sorted(set(int(u) for u in users))
    if len(grid) < 1 or grid[0] < 1:
        raise SpecsimError("concurrencies must be >= 1", param="concurrency")
    ks = sorted({0, *num_steps})
    if len(ks) < 2 or ks[0] < 0:
        raise SpecsimError("give draft lengths >= 1 to choose from", param="num_steps")
    # with draws the selection's 90% intervals hold the gains' model-error band: a
    # comparison precise against it stops too (sim/studies/serving/sequential.py)
    band = gain_band(evaluator.builder) if draws is not None else None
    if sequential:
        evaluator.rule = Leader(objective, order=lambda p: -p.max_k, band=band)  # ties: shorter k
    rows, choices, notes = best_k_table(
        evaluator, grid, ks, objective, refine, draws, (EARLY,) if sequential else ()
    )
    threshold, note = disable_threshold(choices, rows)
    policies: dict[str, SpeculationPolicy] = {"table": KTable(rows)}
    same = len(rows) == 1 and threshold == FixedK(rows[0][2])
    if threshold is not None and not same:  # a one-row table is its own threshold
        policies["threshold"] = threshold
    checker = check or PointEvaluator(
        evaluator.builder,
        replications=evaluator.replications,
        seed=evaluator.seed + 1,
        slo=evaluator.slo,
        executor=evaluator.executor,
        progress=evaluator.progress,
        same=same_point,
        early=(EARLY,) if sequential else (),
    )
    if sequential:
        pairs = tuple((p, FixedK(k)) for p in policies.values() for k in ks)
        checker.rule = Pairs(objective, pairs)
    checks, fixed = check_policies(checker, check_loads(grid), ks, objective, policies)
    counts = replication_counts(evaluator, draws)
    counts["replications_run"] += checker.replications_run
    early_note = _early_note(
        {"the boundaries' bisections": evaluator, "the check at seed + 1": checker}
    )
    if checker.sequential:
        early_note = (*early_note, *tie_note(checker, check_loads(grid), policies, ks, objective))
    return BestKResult(
        scenario=scenario,
        objective=objective,
        num_steps=tuple(ks),
        choices=tuple(choices),
        table=rows,
        threshold=threshold,
        threshold_note=note,
        check_seed=checker.seed,
        checks=checks,
        fixed=fixed,
        runs=evaluator.runs + checker.runs,
        settings={**dict(settings or {}), **counts},
        assumptions=(
            *assumptions,
            *notes,
            *(
                (describe(evaluator.first, evaluator.replications, band=band is not None),)
                if evaluator.sequential
                else ()
            ),
            *early_note,
            *(note for note in [None if draws is None else draws.describe()] if note),
            *first_draws_note(draws, choices),
        ),
        draft_method=draft_method,
    )
