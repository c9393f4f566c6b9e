"""The nominal runs of ``tree-load`` (stages 2 and 3 of sim/studies/serving/tree_load.py
``tree_load_study``): the size check before any run, every draft at every load on the
scenario's seed with sequential replications (a load stops after its first ``FIRST`` when
they settle every comparison it answers), and each load's ``LoadPoint`` with its paired
tree / chain ratios per replication."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.binding.bound import bind
from sim.hardware.pass_terms import PassTerms
from sim.model.policy import FixedK
from sim.parallel import Executor
from sim.scenario.schema import Scenario
from sim.simulation.budget import check_serving_size
from sim.simulation.serving.metrics import Estimate, Ratio, ServingSummary, summarize_serving
from sim.simulation.serving.setup import BASELINE, ServingSetup, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.sequential import FIRST, settled
from sim.studies.serving.tree_load_drafts import AskedDrafts
from sim.studies.serving.tree_load_draws import PairArrays
from sim.studies.serving.tree_load_result import METRICS, LoadPoint
from sim.uncertainty.model_error import ModelErrorTerm, model_error_term

__all__ = [
    "DEFAULT_CONCURRENCIES",
    "NominalLoads",
    "Progress",
    "StudyRuns",
    "check_study_size",
    "load_point",
    "load_records",
    "load_settled",
    "nominal_loads",
    "pair_ratios",
    "ratio_of",
]


#: Closed-loop concurrencies when none are given (the command's default).
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)


Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class StudyRuns:
    """How the study's serving runs run: ``tree_load_study``'s options of the same names."""

    workers: int
    executor: Executor | None
    base_dir: Path | None
    source: str
    sequential: bool


def check_study_size(
    base: Scenario,
    grid: Sequence[int],
    drafts: int,
    policies: Mapping[str, FixedK],
    terms: PassTerms,
    runs: StudyRuns,
) -> None:
    """Stage 2 of ``tree_load_study``: the size before any run (``check_serving_size``):
    every one of ``drafts`` drafts at every load, each load's requests those of the top one
    (its warm-up the longest), so that the estimate errs long."""
    largest = serving_setup(
        bind(with_load(base, concurrency=grid[-1], source=runs.source), terms.passes),
        base_dir=runs.base_dir,
        source=runs.source,
        policies=policies,
        terms=terms,
    )
    w = largest.plan.workload
    check_serving_size(
        len(grid) * drafts,
        largest.replications,
        w.requests + w.warmup,
        runs.workers,
        what="draft x load simulations",
        grown={
            "concurrencies": (len(grid) / len(DEFAULT_CONCURRENCIES), "loads"),
            # a load's warm-up is as many requests as its users
            "concurrency": (w.warmup / w.requests, "users"),
        },
    )


def pair_ratios(
    records: Mapping[str, Any], slo: Any, trees: Sequence[str], chains: Sequence[str]
) -> PairArrays:
    """Per replication tree / chain of each metric (R,): ``ratios[tree][chain][metric]``,
    the ratio of the two drafts' replication means (``summarize_serving`` with ``slo``)."""
    summary = summarize_serving(records, slo, baseline=None)
    per = {n: summary.policies[n].per_replication for n in (*trees, *chains)}
    return {t: {ch: {m: per[t][m] / per[ch][m] for m in METRICS} for ch in chains} for t in trees}


def load_records(
    setup: ServingSetup,
    by: Mapping[str, str],
    asked: AskedDrafts,
    runs: StudyRuns,
) -> dict[str, list[Any]]:
    """One load's serving records, every draft on the same users: its first ``FIRST``
    replications when ``sequential``, and the rest of the seed's, continuing it, unless
    those settle every comparison the load answers (``load_settled``)."""
    count = FIRST if runs.sequential and setup.replications > FIRST else setup.replications
    records = simulate_serving(
        setup.plan,
        setup.draftings,
        replications=count,
        seed=setup.seed,
        workers=runs.workers,
        executor=runs.executor,
    ).records
    if count < setup.replications and not load_settled(
        summarize_serving(records, setup.slo, baseline=None), by, asked.trees, asked.chains
    ):
        rest = simulate_serving(
            setup.plan,
            setup.draftings,
            replications=setup.replications - count,
            seed=setup.seed,
            workers=runs.workers,
            executor=runs.executor,
            first=count,
        ).records
        records = {n: [*v, *rest[n]] for n, v in records.items()}
    return records


def load_settled(
    summary: ServingSummary, by: Mapping[str, str], trees: Sequence[str], chains: Sequence[str]
) -> bool:
    """Whether a load's first replications settle every comparison it answers
    (sim/studies/serving/sequential.py ``settled``: the mean more than ``SETTLED_SE``
    standard errors from its reference): each tree / chain ratio of every metric against
    1, and the best draft by per-user tok/s (``LoadPoint.best``) against each other draft,
    their paired difference against 0. ``summary``: the load's
    ``summarize_serving``; ``by``: draft name -> its name there."""
    per = {n: summary.policies[by[n]].per_replication for n in by}
    for t in trees:
        for ch in chains:
            if not all(settled(per[t][m] / per[ch][m], 1.0) for m in METRICS):
                return False
    speed = {n: per[n]["per_user_tok_s"] for n in by}
    best = max(speed, key=lambda n: float(np.mean(speed[n])))
    return all(settled(speed[best] - speed[n], 0.0) for n in speed if n != best)


def load_point(
    c: int, summary: ServingSummary, by: Mapping[str, str], pairs: PairArrays, term: ModelErrorTerm
) -> tuple[LoadPoint, ModelErrorTerm]:
    """One load's ``LoadPoint`` from its summary and its tree / chain ratios ``pairs``
    (each ``Ratio.across`` its replications), and the model-error term at its decode batch:
    the largest policy's mean decode batch (``beyond_measured`` above the highest batch the
    costs are measured at)."""
    per = {n: summary.policies[by[n]] for n in by}
    batch = max(p.mean_batch.mean for p in per.values())
    vs = {
        t: {ch: {m: Ratio.across(v) for m, v in ms.items()} for ch, ms in d.items()}
        for t, d in pairs.items()
    }
    point = LoadPoint(
        concurrency=c,
        per_user_tok_s={n: ratio_of(per[n].metrics["per_user_tok_s"]) for n in by},
        aggregate_tok_s={n: per[n].aggregate_tok_s for n in by},
        accept_length={n: per[n].accept_length for n in by},
        mean_batch=per["off"].mean_batch,
        vs_chain=vs,
        beyond_measured=batch > term.highest_measured,
        decode_batch=batch,
    )
    return point, term.at(batch)


def ratio_of(e: Estimate) -> Ratio:
    """An estimate's mean and interval."""
    return Ratio(e.mean, e.ci95)


@dataclass(frozen=True, slots=True)
class NominalLoads:
    """The nominal runs over the grid (``nominal_loads``): a ``LoadPoint`` per load, and
    per load its tree / chain ratios per replication, the model-error term at its decode
    batch and the replications it ran; ``first``: the first load's setup; ``term``: the
    scenario's model-error term at batch 1."""

    points: list[LoadPoint]
    ratios: dict[int, PairArrays]
    terms_at: dict[int, ModelErrorTerm]
    ran: dict[int, int]
    first: ServingSetup
    term: ModelErrorTerm


def nominal_loads(
    base: Scenario,
    grid: Sequence[int],
    asked: AskedDrafts,
    policies: Mapping[str, FixedK],
    terms: PassTerms,
    runs: StudyRuns,
    progress: Progress | None,
) -> NominalLoads:
    """Stage 3 of ``tree_load_study``: every draft at every load of ``grid`` on the
    scenario's seed (``load_records``), summarized per load (``load_point``); the ratios
    of every load taken with the first load's SLO."""
    by = {n: BASELINE if n == "off" else n for n in asked.drafts}
    term = model_error_term(base, 1.0)  # read once; each load takes it at its batch
    points: list[LoadPoint] = []
    pairs: dict[int, PairArrays] = {}
    terms_at: dict[int, ModelErrorTerm] = {}
    ran: dict[int, int] = {}
    setups: list[ServingSetup] = []
    for i, c in enumerate(grid):
        sc = with_load(base, concurrency=c, source=runs.source)
        setup = serving_setup(
            bind(sc, terms.passes),
            base_dir=runs.base_dir,
            source=runs.source,
            policies=policies,
            terms=terms,
        )
        setups.append(setup)
        records = load_records(setup, by, asked, runs)
        ran[c] = len(next(iter(records.values())))
        summary = summarize_serving(records, setup.slo, baseline=None)
        pairs[c] = pair_ratios(records, setups[0].slo, asked.trees, asked.chains)
        point, terms_at[c] = load_point(c, summary, by, pairs[c], term)
        points.append(point)
        if progress:
            progress(i + 1, len(grid))
    return NominalLoads(points, pairs, terms_at, ran, setups[0], term)
