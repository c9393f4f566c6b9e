"""Sweeps: evaluate every point of a grid over a base scenario into the resumable store.

Every point is evaluated with the same root seed (the scenario's ``simulation.seed`` after
overrides), so points share common random numbers and the result of a point depends only
on the point, never on the number of workers, the executor (sim/parallel/) or the order
in which points finish. Grids: sim/studies/grid.py; the store: sim/studies/sweep_store.py.
No plotting here (sim/report/sweep_plots.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sim.binding.bound import Bound, bind
from sim.errors import SpecsimError
from sim.hardware.pass_terms import PassTerms
from sim.model.cycle import ceiling_tok_s, throughput_tok_s
from sim.model.rates import mean_accept_length
from sim.parallel import Executor, LocalExecutor
from sim.scenario.overrides import pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.budget import run_hours
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup
from sim.simulation.serving.simulate import simulate_serving
from sim.simulation.serving.stability import LoadCheck, check_open_load
from sim.simulation.simulate import simulate
from sim.simulation.summary import Summary, summarize
from sim.studies.grid import expand_grid, point_key
from sim.studies.sweep_store import SweepStore

#: Longest sweep accepted on the local pool (estimated from sim/simulation/budget.py's
#: measured rates): a day; longer grids belong on a cluster.
MAX_SWEEP_HOURS = 24.0


@dataclass(frozen=True, slots=True)
class PointTask:
    """Everything one worker needs to evaluate one point (picklable, no files)."""

    base: dict[str, Any]  # the base scenario as a plain mapping (Scenario.model_dump)
    overrides: dict[str, Any]
    engine: str
    targets: tuple[float, ...]
    source: str = "sweep"
    fidelity: str = "cycle"
    base_dir: str | None = None  # where a serving trace path is relative to
    #: The point's scenario as validated by ``run_sweep`` (a mapping): the worker
    #: validates it once instead of the base and then the overrides.
    point: dict[str, Any] | None = None
    #: The token-count terms a serving point's passes share with the sweep's other points
    #: run in the same process, and every point's hardware answers (``PassTerms.passes``)
    #: (sim/hardware/pass_terms.py; a worker's copies share one).
    terms: PassTerms = field(default_factory=PassTerms, compare=False, repr=False)


def point_scenario(task: PointTask) -> Scenario:
    """The point's scenario, naming the sweep's file in what it finds wanting later."""
    if task.point is not None:
        out = scenario_from_dict(task.point, source=f"{task.source} (--grid)")
    else:
        base = scenario_from_dict(task.base, source=task.source)
        out = with_overrides(base, task.overrides, source=f"{task.source} (--grid)")
    return out.model_copy(update={"origins": replace(out.origins, file=task.source)})


def _target_label(tok_s: float) -> str:
    return f"{tok_s:g}"


def evaluate_point(task: PointTask) -> dict[str, Any]:
    """One sweep point: its overrides, then closed-form and Monte Carlo statistics.

    The Monte Carlo runs with the point's own ``simulation.seed`` in this process
    (``workers=1``): parallelism is across points, so results do not depend on it.
    """
    # once: the closed forms and the Monte Carlo (with the hardware answers of the sweep's
    # points in this process, ``PassTerms.passes``)
    bound = bind(point_scenario(task), task.terms.passes)
    result = simulate(
        bound,
        engine=task.engine,
        fidelity=task.fidelity,
        seed=bound.scenario.simulation.seed,
        workers=1,
    )
    summary = summarize(result, task.targets)
    return {**dict(task.overrides), **summary_row(bound, summary, task.targets)}


def summary_row(bound: Bound, summary: Summary, targets: Sequence[float]) -> dict[str, Any]:
    """Flat statistics of one bound point: closed forms, then the Monte Carlo summary."""
    scenario = bound.scenario
    cost = bound.cost  # a tree's own cycle for a tree point
    k = scenario.num_steps
    rates = bound.rates  # a tree: its chain-equivalent rates (depth,)
    analytic_al = mean_accept_length(rates)
    row: dict[str, Any] = {
        "num_steps": k,
        "topk": scenario.speculation.topk,
        "num_draft_tokens": scenario.speculation.draft_tokens,
        "baseline_tok_s": bound.baseline_tok_s,
        "ceiling_tok_s": 1000.0 * (rates.size + 1) / cost.total_ms if k else ceiling_tok_s(cost),
        "analytic_tok_s": throughput_tok_s(analytic_al, cost),
        "analytic_accept_length": analytic_al,
        "tok_s_mean": summary.tok_s_mean,
        "tok_s_std": summary.tok_s_std,
        "tok_s_ci95_lo": summary.tok_s_ci95[0],
        "tok_s_ci95_hi": summary.tok_s_ci95[1],
        "tok_s_p5": summary.tok_s_p5,
        "tok_s_p50": summary.tok_s_p50,
        "tok_s_p95": summary.tok_s_p95,
        "accept_length_mean": summary.accept_length_mean,
    }
    for phase, ms in summary.cycle_ms.items():
        row["cycle_ms" if phase == "mean" else f"cycle_{phase}_ms"] = ms
    for cls in summary.classes:  # workload mix: per-class share and mean tok/s
        row[f"class_{cls.name}_share"] = cls.share
        row[f"class_{cls.name}_tok_s"] = cls.mean_tok_s
    by_target = {float(t.tok_s): t for t in summary.targets}
    for tok_s in targets:
        entry = by_target.get(float(tok_s))
        label = _target_label(tok_s)
        lo, hi = entry.ci95 if entry else (None, None)
        row[f"p_at_least_{label}"] = entry.p_at_least if entry else None
        row[f"p_at_least_{label}_ci95_lo"] = lo
        row[f"p_at_least_{label}_ci95_hi"] = hi
    return row


# --------------------------------------------------------------------------- serving

#: Serving metrics of a serving sweep's rows (each policy's mean, interval and quantiles).
SERVING_COLUMNS: tuple[str, ...] = (
    "per_user_tok_s",
    "aggregate_tok_s",
    "ttft_ms",
    "tpot_ms",
    "itl_ms",
    "e2e_ms",
)


#: Column suffix of a policy's replications that were not steady (serve's NOT STEADY).
NOT_STEADY = "_not_steady_replications"


def is_serving_sweep(axes: Sequence[tuple[str, Sequence[Any]]]) -> bool:
    """A grid over a ``serving.*`` field runs the serving simulation at every point."""
    return any(key.startswith("serving.") for key, _ in axes)


def evaluate_serving_point(task: PointTask) -> dict[str, Any]:
    """One serving sweep point: speculation and the baseline on the same arrivals (the
    point's seed), flattened: ``{policy}_{metric}_{mean,ci95_lo,ci95_hi,p50,p90,p99}`` and
    ``speedup_{metric}_{mean,ci95_lo,ci95_hi}``; a Poisson rate above either policy's
    service bound is not simulated (``unstable_columns``). A policy under which the
    requests in the system grew through the window in some replications (``serve``'s NOT
    STEADY: an overload, or a run too short to fill) adds
    ``{policy}_not_steady_replications``, how many."""
    scenario = point_scenario(task)
    base_dir = Path(task.base_dir) if task.base_dir else None
    terms = task.terms
    setup = serving_setup(
        bind(scenario, terms.passes), base_dir=base_dir, source=task.source, terms=terms
    )
    sp = scenario.speculation  # which draft the speculative columns are (as a batch-1 row)
    row: dict[str, Any] = {
        **dict(task.overrides),
        "num_steps": sp.num_steps,
        "topk": sp.topk,
        "num_draft_tokens": sp.draft_tokens,
    }
    check = check_open_load(setup.plan, setup.draftings)
    if check is not None and not check.stable:
        return {**row, **unstable_columns(check)}
    run = simulate_serving(
        setup.plan, setup.draftings, replications=setup.replications, seed=setup.seed
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    for name, policy in summary.policies.items():
        for metric in SERVING_COLUMNS:
            if metric == "aggregate_tok_s":
                r = policy.aggregate_tok_s
                values = {"mean": r.mean, "ci95": r.ci95}
            else:
                e = policy.metrics[metric]
                values = {"mean": e.mean, "ci95": e.ci95, "p50": e.p50, "p90": e.p90, "p99": e.p99}
            for stat, v in _flat(values).items():
                row[f"{name}_{metric}_{stat}"] = v
        row[f"{name}_mean_decode_batch"] = policy.mean_batch.mean
        row[f"{name}_accept_length"] = policy.accept_length.mean
        if policy.overloaded:  # serve's NOT STEADY: only then the column (rows as they were)
            row[f"{name}{NOT_STEADY}"] = policy.overloaded
    for metric, ratio in summary.speedup.get(SPECULATIVE, {}).items():
        if metric in SERVING_COLUMNS:
            for stat, v in _flat({"mean": ratio.mean, "ci95": ratio.ci95}).items():
                row[f"speedup_{metric}_{stat}"] = v
    return row


def unstable_columns(check: LoadCheck) -> dict[str, Any]:
    """The columns of a serving point whose Poisson rate is above what a policy answers
    (sim/simulation/serving/stability.py): nothing simulated (as ``serve`` refuses it),
    ``stable`` false, the offered rate, the policies it is above (``;``-separated) and
    each policy's bound, ``{policy}_service_bound_per_s``. A stable point has none of
    these columns (its row is as it was)."""
    out: dict[str, Any] = {
        "stable": False,
        "offered_rate_per_s": check.offered_per_s,
        "unstable": ";".join(check.unstable),
    }
    for name, b in check.bounds.items():
        out[f"{name}_service_bound_per_s"] = b.rate_per_s
    return out


def _flat(values: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, v in values.items():
        if key == "ci95":
            lo, hi = v if v is not None else (None, None)
            out["ci95_lo"], out["ci95_hi"] = lo, hi
        else:
            out[key] = v
    return {k: (None if v is None or v != v else float(v)) for k, v in out.items()}


# --------------------------------------------------------------------------- running


@dataclass
class SweepOutcome:
    """What a sweep did: ``rows`` in grid order (finished points only), counts, completeness."""

    rows: list[dict[str, Any]]
    varied: list[str]
    total: int
    computed: int
    reused: int
    complete: bool
    meta: dict[str, Any] = field(default_factory=dict)


def sweep_fingerprint(
    base: Scenario,
    engine: str,
    targets: Sequence[float],
    fidelity: str = "cycle",
    serving: bool = False,
    axes: Sequence[tuple[str, Sequence[Any]]] = (),
) -> dict[str, Any]:
    """What besides the point a result depends on, and the grid; stored in the manifest.

    The grid is included so that a directory holds one sweep: two different grids into
    one ``--out`` would otherwise both be accepted and the tables describe whichever
    finished last. The default fidelity (``cycle``) and the batch-1 mode are left out.
    """
    out: dict[str, Any] = {
        "scenario": base.model_dump(mode="json", exclude_none=True),
        "engine": engine,
        "targets": [float(t) for t in targets],
        "grid": [[k, list(v)] for k, v in axes],
    }
    if fidelity != "cycle":
        out["fidelity"] = fidelity
    if serving:
        out["mode"] = "serving"
    return out


def run_sweep(
    base: Scenario,
    axes: Sequence[tuple[str, Sequence[Any]]],
    out_dir: str | Path,
    *,
    engine: str = "fast",
    fidelity: str = "cycle",
    targets: Sequence[float] | None = None,
    executor: Executor | None = None,
    evaluate: Callable[[PointTask], dict[str, Any]] | None = None,
    progress: Callable[[int], None] | None = None,
    source: str = "sweep",
    base_dir: str | None = None,
    shard: tuple[int, int] | None = None,
) -> SweepOutcome:
    """Evaluate the grid's missing points into the store at ``out_dir`` and write the tables.

    The measured verify pass is pinned to its token count first (``pin_verify_tokens``), so
    a grid over ``speculation.num_steps`` prices other k as the closed forms do.
    Every point is validated before anything runs (a bad grid value fails fast, naming the
    key). Finished points are saved one by one as they complete; the tables are rewritten
    at the end, also when the sweep is interrupted (then ``complete`` is false in
    ``sweep.json`` and re-running the same command computes only the missing points).
    ``progress(n)`` is called with the number of points just finished (reused points
    first, in one call). A grid over a ``serving.*`` field evaluates each point with the
    serving simulation (``evaluate_serving_point``; ``base_dir``: where a trace path in the
    scenario is relative to) unless ``evaluate`` is given. ``shard`` (i, n), 1 <= i <= n: only the
    points at grid positions i - 1, i - 1 + n, ... (one job of a batch array writing into
    the same store; shards run at once, and the tables, rewritten by each shard from every
    point in the store when it ends, are complete once the last one has).
    """
    serving = is_serving_sweep(axes)
    if evaluate is None:
        evaluate = evaluate_serving_point if serving else evaluate_point
    targets = tuple(float(t) for t in (base.target_tok_s if targets is None else targets))
    base = pin_verify_tokens(base)
    points = expand_grid(axes)
    varied = [k for k, _ in axes]
    terms = PassTerms()  # one table for the points this process binds and runs
    validated, hours = _validated_points(base, points, engine, terms, source)
    executor = executor or LocalExecutor()  # one executor for the check and the run
    _check_budget(hours, len(points), shard, executor)
    fingerprint = sweep_fingerprint(base, engine, targets, fidelity, serving, axes)
    store = SweepStore(out_dir, fingerprint, shared=shard is not None)
    store.open()
    done = store.load(points)
    base_dict = base.model_dump(exclude_none=True)
    keys = [point_key(p) for p in points]
    mine = range(len(points)) if shard is None else range(shard[0] - 1, len(points), shard[1])
    todo = [i for i in mine if keys[i] not in done]
    tasks = [
        PointTask(
            base_dict,
            points[i],
            engine,
            targets,
            source,
            fidelity,
            base_dir,
            point=validated[i].model_dump(exclude_none=True),
            terms=terms,
        )
        for i in todo
    ]
    reused = len(mine) - len(todo)
    if progress and reused:
        progress(reused)
    meta = _sweep_meta(base, axes, engine, fidelity, targets, serving)
    run = _PointRun(store, points, keys, todo, done, meta)
    try:
        computed = run.evaluate(executor, evaluate, tasks, shard, progress)
        if shard is not None:  # every shard's points so far
            run.done = store.load(points)
        rows, complete = run.write_tables()
    finally:
        store.close()
    return SweepOutcome(rows, varied, len(points), computed, reused, complete, meta)


def _validated_points(
    base: Scenario,
    points: Sequence[dict[str, Any]],
    engine: str,
    terms: PassTerms,
    source: str,
) -> tuple[list[Scenario], float]:
    """Every point's scenario, validated and bound once (the hardware model may refuse a
    point as well; the error names the grid, not --set), and the hours the points would
    take one after another (``run_hours``, one worker)."""
    hours = 0.0
    validated = []
    for point in points:
        try:
            scn = with_overrides(base, point, source=source)
            bind(scn, terms.passes)  # the hardware model may refuse the point as well
        except SpecsimError as exc:  # name the grid, not --set
            raise SpecsimError(exc.message, source=f"{source} (--grid)", field=exc.field) from None
        validated.append(scn)
        sim = scn.simulation
        hours += run_hours(sim.replications, scn.workload.requests, scn.workload.output_tokens,
                           engine, 1)  # fmt: skip
    return validated, hours


def _check_budget(
    hours: float, n_points: int, shard: tuple[int, int] | None, executor: Executor
) -> None:
    """Refuse a shard i/N outside 1 <= i <= N, and a sweep on the local pool whose points
    (a shard's share of ``hours``: its points over all) would take more than
    ``MAX_SWEEP_HOURS`` on its workers (at most the processors)."""
    if shard is not None:
        i, n = shard
        if not 1 <= i <= n:
            raise SpecsimError(f"shard {i}/{n}: expected i/N with 1 <= i <= N", param="shard")
        hours *= len(range(i - 1, n_points, n)) / n_points
    if isinstance(executor, LocalExecutor):
        parallel = max(1, min(executor.workers, os.cpu_count() or 1))
        if hours / parallel > MAX_SWEEP_HOURS:
            raise SpecsimError(
                f"{n_points} points would take about {hours / parallel:.3g} hours on "
                f"{parallel} local worker(s) (limit {MAX_SWEEP_HOURS:g} h): a smaller grid, "
                "fewer replications or requests, or a Dask cluster (--executor dask)",
                param="grids",
            )


def _sweep_meta(
    base: Scenario,
    axes: Sequence[tuple[str, Sequence[Any]]],
    engine: str,
    fidelity: str,
    targets: tuple[float, ...],
    serving: bool,
) -> dict[str, Any]:
    """What ``sweep.json`` says of the sweep besides its points: the scenario, the engine
    and mode (``serving`` for a serving sweep), the Monte Carlo settings, the targets and
    the grid."""
    return {
        "scenario": base.name,
        "engine": "serving" if serving else engine,
        "mode": "serving" if serving else "batch-1",
        "fidelity": fidelity,
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "output_tokens": base.workload.output_tokens,
        "targets": list(targets),
        "varied": [k for k, _ in axes],
        "grid": {k: list(v) for k, v in axes},
    }


@dataclass(slots=True)
class _PointRun:
    """The points a sweep runs and the rows it has: the ``store``, the grid's ``points``
    and their ``keys``, the positions to run (``todo``), the rows by key (``done``) and
    the tables' ``meta``."""

    store: SweepStore
    points: Sequence[dict[str, Any]]
    keys: Sequence[str]
    todo: Sequence[int]
    done: dict[str, dict[str, Any]]
    meta: dict[str, Any]

    def evaluate(
        self,
        executor: Executor,
        evaluate: Callable[[PointTask], dict[str, Any]],
        tasks: Sequence[PointTask],
        shard: tuple[int, int] | None,
        progress: Callable[[int], None] | None,
    ) -> int:
        """Run ``tasks`` on ``executor``, each row saved as it finishes (``progress(1)``
        after each); the points computed. Interrupted: the tables of what finished are
        written, or, when nothing new finished outside a shard, the store is discarded (no
        new file), and the interruption raised."""
        computed = 0
        try:
            for j, row in executor.map_unordered(evaluate, tasks):
                self.store.save(self.points[self.todo[j]], row)
                self.done[self.keys[self.todo[j]]] = row
                computed += 1
                if progress:
                    progress(1)
        except BaseException:
            if computed == 0 and shard is None:  # nothing new finished: leave no new file
                self.store.discard()
                raise
            self.write_tables()
            raise
        return computed

    def write_tables(self) -> tuple[list[dict[str, Any]], bool]:
        """The tables of the finished points (``_write_tables``)."""
        return _write_tables(self.store, self.points, self.keys, self.done, self.meta)


def _write_tables(
    store: SweepStore,
    points: Sequence[dict[str, Any]],
    keys: Sequence[str],
    done: dict[str, dict[str, Any]],
    meta: dict[str, Any],
) -> tuple[list[dict[str, Any]], bool]:
    """The tables of the finished points (also of an interrupted sweep), in grid order."""
    rows = [done[k] for k in keys if k in done]
    complete = len(rows) == len(points)
    store.write_tables(rows, {**meta, "points": len(points), "complete": complete})
    return rows, complete
