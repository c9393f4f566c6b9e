"""Capacity under SLOs: the highest Poisson rate at which a share of requests meets the
TTFT and TPOT limits, with and without speculation, per k (``capacity``).

In three stages: every policy's capacity, each found by its own search on log rate
(sim/studies/serving/capacity_search.py, ``CapacitySearch``; the searches step together,
``_together``); with draws of the inputs, each draw's capacity on a rate ladder of its own
(sim/studies/serving/capacity_ladder.py, ``completed_draws``), hence the 90% intervals
(sim/studies/serving/capacity_intervals.py); then the 95% interval of every capacity,
whose bisections stop once their bracket lies inside what the 90% interval already holds.
What it answers: sim/studies/serving/capacity_result.py; its assumption lines:
sim/studies/serving/capacity_notes.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from sim.errors import SpecsimError
from sim.parallel import Executor, close_executor, drain
from sim.studies.serving.capacity_completion import completion_tolerances
from sim.studies.serving.capacity_draw_starts import bound_moves, capacity_moves
from sim.studies.serving.capacity_intervals import (
    capacity_intervals,
    capacity_sources,
    model_error_terms,
    settled_range,
    widest_term,
)
from sim.studies.serving.capacity_ladder import completed_draws
from sim.studies.serving.capacity_notes import (
    LADDER_NOTE,
    completion_note,
    resolution_note,
    stopped_notes,
)
from sim.studies.serving.capacity_result import CapacityResult, PolicyCapacity, gain_ci95
from sim.studies.serving.capacity_search import (
    DEFAULT_RTOL,
    CapacitySearch,
    CapacityTask,
    search_points,
    start_search,
)
from sim.studies.serving.draw_intervals import IntervalSources
from sim.studies.serving.draws import DrawnPoints, replication_counts
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import BASELINE
from sim.studies.serving.sequential import FIRST, describe
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = ["DEFAULT_RTOL", "CapacityResult", "PolicyCapacity", "capacity", "search_points"]

T = TypeVar("T")
U = TypeVar("U")


def _together(
    executor: Executor, step: Callable[[T, Executor | None], U], items: Sequence[T]
) -> Iterator[tuple[int, U]]:
    """``step(item, executor)`` of every policy's search, (index, result) as each ends.

    One worker: one after the other in this process (``executor`` None). More: every
    search steps at once, each in a thread of this process that sends its rates'
    replications (in blocks, sim/studies/serving/point_tasks.py) through the one
    ``executor``, so the workers always hold the next steps of every policy. A search's
    steps depend only on its own values, each replication carries its own seed: the same
    results either way."""
    if executor.width() <= 1:
        yield from enumerate(step(item, None) for item in items)
        return
    from concurrent.futures import ThreadPoolExecutor

    threads = ThreadPoolExecutor(max_workers=len(items))
    finished = False
    try:
        yield from drain({threads.submit(step, t, executor): i for i, t in enumerate(items)})
        finished = True
    finally:
        if not finished:  # an error or an interrupt: the other searches' next steps fail
            close_executor(executor)
        threads.shutdown(wait=finished, cancel_futures=True)


def _ends(
    item: tuple[CapacitySearch, tuple[float, float] | None], executor: Executor | None
) -> None:
    search, within = item
    search.find_ends(within)


def capacity(
    evaluator: PointEvaluator,
    num_steps: Sequence[int],
    *,
    share: float = 0.9,
    rtol: float = DEFAULT_RTOL,
    hint_per_s: float | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    sequential: bool = True,
) -> CapacityResult:
    """Capacity of plain decoding and of each k in ``num_steps`` (the evaluator's SLO,
    seed and replications); the policies' searches step together through the evaluator's
    executor (``_together``; results do not depend on it). In three stages: every
    policy's capacity; ``draws``: each draw's capacity on its rate ladder
    (``completed_draws``), hence the capacity's and gain's 90% intervals from inputs and
    model (``capacity_intervals``); then the 95% interval of every capacity, whose ends'
    bisections stop once their bracket lies inside the range the 90% interval already
    holds (the draws' 5-95% and the model-error band, ``settled_range``: wherever in
    the bracket the end lies, the 90% interval is the same). ``sequential``: a rate
    stops at its first replications where its attainment is settled against the share;
    where the nominal's other replications at such a rate could still move a draw's
    shifted attainment across the share, the rate runs more of them, two at a time,
    before the draws are read (``completed_draws``)."""
    ks = _checked(evaluator, num_steps, share)
    if hint_per_s is None:
        alone = evaluator(Load("concurrency", 1), BASELINE)  # output tok/s of one user
        tok_s = float(alone.values["aggregate_tok_s"].mean())
        hint_per_s = tok_s / max(1.0, _mean_output(evaluator))
    tasks = [
        CapacityTask(
            evaluator.builder,
            evaluator.replications,
            evaluator.seed,
            evaluator.slo,
            k,
            share,
            hint_per_s,
            rtol,
            sequential,
        )
        for k in [0, *ks]
    ]
    steps = 2 * len(tasks)
    searches = _searched(evaluator, tasks, steps)
    caps: list[np.ndarray] = []
    terms: list[ModelErrorTerm | None] = []
    within: list[tuple[float, float] | None] = [None] * len(searches)
    tolerances: list[float] = []
    if draws is not None:  # first: the draws may complete rates stopped early
        caps, tolerances = _drawn(draws, searches, share)
        terms = model_error_terms(draws, [s.result() for s in searches])
        within = [
            settled_range(s.value, c, t) if s.value is not None and not s.at_least else None
            for s, c, t in zip(searches, caps, terms, strict=True)
        ]
    items = list(zip(searches, within, strict=True))
    for done, _ in enumerate(_together(evaluator.executor, _ends, items), 1):
        if evaluator.progress:
            evaluator.progress(len(tasks) + done, steps)
    policies = tuple(s.result() for s in searches)
    gains = tuple(gain_ci95(p, policies[0], share) for p in policies)
    intervals: tuple[dict[str, list[float | None] | None], ...] = ()
    sources: tuple[dict[str, IntervalSources], ...] = ()
    if draws is not None:
        intervals = capacity_intervals(policies, caps, gains, terms)
        sources = capacity_sources(policies, caps, gains, draws.uncertain)
    counts = replication_counts(evaluator, draws)
    counts["replications_run"] += sum(s.ev.replications_run for s in searches)
    notes = _notes(evaluator, draws, searches, rtol, tolerances, sequential)
    return CapacityResult(
        scenario=scenario,
        share=share,
        policies=policies,
        runs=evaluator.runs + sum(s.ev.runs for s in searches),
        settings={**dict(settings or {}), "hint_per_s": hint_per_s, "rtol": rtol, **counts},
        assumptions=(*assumptions, *notes),
        gain_ci95=gains,
        interval90=intervals,
        sources=sources,
        model_error=widest_term(terms),
    )


def _checked(evaluator: PointEvaluator, num_steps: Sequence[int], share: float) -> list[int]:
    """The draft lengths asked, sorted and unique, once the share (in (0, 1)), the SLO (a
    TTFT or TPOT limit) and the lengths (>= 1) are checked."""
    if not 0.0 < share < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {share}", param="share")
    if evaluator.slo.ttft_ms is None and evaluator.slo.tpot_ms is None:
        raise SpecsimError(
            "capacity needs a TTFT or TPOT limit (serving.ttft_slo_ms / tpot_slo_ms)",
            param="ttft_slo_ms",
        )
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    return ks


def _searched(
    evaluator: PointEvaluator, tasks: Sequence[CapacityTask], steps: int
) -> list[CapacitySearch]:
    """The first stage: every policy's search (``tasks``: plain decoding first, then each
    k), plain decoding's first, each k's bracket then starting at its capacity
    (``find``), the k's stepping together (``_together``); progress after each of the
    ``steps``' first half."""
    plain = start_search(tasks[0], evaluator.executor if evaluator.executor.width() > 1 else None)
    if evaluator.progress:
        evaluator.progress(1, steps)
    start = plain.value if plain.value is not None and not plain.at_least else None
    rest = [replace(t, start_per_s=start) for t in tasks[1:]]
    found: dict[int, CapacitySearch] = {0: plain}
    for done, (i, search) in enumerate(_together(evaluator.executor, start_search, rest), 2):
        found[i + 1] = search
        if evaluator.progress:
            evaluator.progress(done, steps)
    return [found[i] for i in range(len(tasks))]


def _drawn(
    draws: DrawnPoints, searches: Sequence[CapacitySearch], share: float
) -> tuple[list[np.ndarray], list[float]]:
    """The second stage: each policy's draws' capacities (D,) on their rate ladders
    (``completed_draws``), and the tolerances that completed the rates stopped early (the
    model-error terms at the capacities' decode batches, from the searches' rates alone).
    Each k's draws start where the draw moved the capacity of the policy before it (the
    next smaller k, or plain decoding), plain decoding's from the move of its service
    bound in the draw."""
    tolerances = completion_tolerances(model_error_terms(draws, [s.result() for s in searches]))
    caps: list[np.ndarray] = []
    for s, tol in zip(searches, tolerances, strict=True):
        moves = capacity_moves(caps, searches) if caps else bound_moves(draws, s)
        got = completed_draws(draws, s.result(), share, search=s, tolerance=tol, moves=moves)
        caps.append(got[0])
    return caps, tolerances


def _notes(
    evaluator: PointEvaluator,
    draws: DrawnPoints | None,
    searches: Sequence[CapacitySearch],
    rtol: float,
    tolerances: Sequence[float],
    sequential: bool,
) -> tuple[str, ...]:
    """The answer's own assumption lines: the rates' resolution, the replications a rate
    stops at (``sequential`` with more than the first), and with draws the ladder, the
    completion tolerances and the rates stopped early."""
    stops = sequential and evaluator.replications > FIRST
    notes: tuple[str, ...] = (resolution_note(rtol),)
    notes = (*notes, describe(FIRST, evaluator.replications)) if stops else notes
    if draws is not None and draws.draws:
        notes = (*notes, LADDER_NOTE, *completion_note(tolerances), *stopped_notes(searches))
    return notes


def _mean_output(evaluator: PointEvaluator) -> float:
    plan = evaluator.builder(Load("concurrency", 1), evaluator.builder.default_steps)
    return float(plan.workload.output_tokens.mean)
