"""Sweeps: grid expansion, the resumable on-disk store, and the executors that run points.

A sweep is the cartesian product of ``--grid KEY=VALUES`` axes over a base scenario; each
point is a mapping of dotted overrides (``{"acceptance.alpha": 0.7, "speculation.num_steps":
3}``) applied with :func:`sim.scenario.with_overrides`. Every point is evaluated with the
same root seed (the scenario's ``simulation.seed`` after overrides), so points share common
random numbers and the result of a point depends only on the point, never on the number of
workers or the order in which points finish.

The store keeps one small JSON file per finished point, written atomically (temporary file
+ ``os.replace``), keyed by the canonical JSON of the point's overrides; a sweep that is
interrupted keeps its finished points and a re-run computes only the missing ones. The tidy
tables ``sweep.csv`` and ``sweep.json`` (one row per point: the varied fields, then the
statistics) are rebuilt from the store, also atomically. No plotting here (see sim/plots.py).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from sim.costs import baseline_tok_s, scenario_cycle_cost
from sim.errors import SpecsimError
from sim.files import atomic_write_text
from sim.scenario import Scenario, parse_value, scenario_from_dict, with_overrides
from sim.search import pin_verify_tokens
from sim.theory import ceiling_tok_s, mean_accept_length, throughput_tok_s

T = TypeVar("T")
R = TypeVar("R")

#: Version of the point files and tables; a store of another version is not reused.
STORE_VERSION = 1
#: Most points a sweep may have (a guard against a typo such as ``0:1:0.00001``).
MAX_POINTS = 100_000

# --------------------------------------------------------------------------- grid parsing


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes (``[0.9,0.8],0.7``)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _number(text: str, key: str) -> int | float:
    value = parse_value(text)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecsimError(f"range bound {text!r} is not a number", source="--grid", field=key)
    return value


def parse_range(text: str, key: str = "") -> list[int | float]:
    """``start:stop[:step]`` -> the values from start to stop inclusive.

    Integers stay integers when start, stop and step are all integers (step defaults to
    1); float values are rounded to 12 significant digits so ``0.5:0.95:0.05`` gives
    0.5, 0.55, ..., 0.95 and not 0.6000000000000001.
    """
    pieces = text.split(":")
    if len(pieces) not in (2, 3):
        raise SpecsimError(f"expected start:stop[:step], got {text!r}", source="--grid", field=key)
    start, stop = (_number(p, key) for p in pieces[:2])
    step = _number(pieces[2], key) if len(pieces) == 3 else 1
    if step <= 0:
        raise SpecsimError(f"range step must be positive in {text!r}", source="--grid", field=key)
    if stop < start:
        raise SpecsimError(f"range stop is below start in {text!r}", source="--grid", field=key)
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_POINTS:
        raise SpecsimError(f"range {text!r} has {count} values", source="--grid", field=key)
    if all(isinstance(v, int) for v in (start, stop, step)):
        return [start + i * step for i in range(count)]
    return [float(f"{start + i * step:.12g}") for i in range(count)]


def _is_range(item: str) -> bool:
    return ":" in item and not item.startswith(("[", "{", '"', "'"))


def parse_grid(text: str) -> tuple[str, tuple[Any, ...]]:
    """``KEY=V1,V2,...`` or ``KEY=START:STOP[:STEP]`` (mixable: ``1:4,8``) -> (key, values).

    Values are TOML scalars or arrays as in ``--set``; bare words are strings
    (``pcie-gen4,nvlink4``). Duplicate values are rejected.
    """
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")) or not rest.strip():
        raise SpecsimError(
            f"expected KEY=V1,V2,... or KEY=START:STOP:STEP, got {text!r}", source="--grid"
        )
    values: list[Any] = []
    for item in _split_top_level(rest.strip()):
        if not item:
            raise SpecsimError(f"empty value in {rest!r}", source="--grid", field=key)
        values.extend(parse_range(item, key) if _is_range(item) else [parse_value(item)])
    canon = [_canonical(v) for v in values]
    if len(set(canon)) != len(canon):
        raise SpecsimError(f"repeated value in {rest!r}", source="--grid", field=key)
    return key, tuple(values)


def expand_grid(axes: Sequence[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
    """The cartesian product of the axes, first axis slowest, as override mappings."""
    keys = [k for k, _ in axes]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise SpecsimError("the same key is given twice", source="--grid", field=dupes[0])
    total = math.prod(len(v) for _, v in axes)
    if total > MAX_POINTS:
        raise SpecsimError(f"{total} points exceed the limit of {MAX_POINTS}", source="--grid")
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in axes))
    ]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def point_key(point: Mapping[str, Any]) -> str:
    """Canonical text of a point's overrides: the identity of a point in the store."""
    return _canonical(dict(point))


# --------------------------------------------------------------------------- the store


class SweepStore:
    """Finished points of one sweep in ``out_dir``: ``manifest.json`` and ``points/*.json``.

    ``fingerprint`` is everything besides the point that a result depends on (the base
    scenario, engine, targets); a directory whose manifest has another fingerprint belongs
    to another sweep and is refused rather than mixed.
    """

    def __init__(self, out_dir: str | Path, fingerprint: Mapping[str, Any]):
        self.out_dir = Path(out_dir)
        self.fingerprint = {"store_version": STORE_VERSION, **fingerprint}
        self.points_dir = self.out_dir / "points"
        self.manifest_path = self.out_dir / "manifest.json"

    def open(self) -> None:
        """Create the directory and manifest, or check that an existing one matches."""
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise SpecsimError("exists and is not a directory", source=str(self.out_dir))
        if self.manifest_path.exists():
            try:
                old = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                raise SpecsimError("unreadable manifest.json", source=str(self.out_dir)) from None
            if _canonical(old) != _canonical(self.fingerprint):
                a, b = _flatten(old), _flatten(self.fingerprint)
                differs = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                shown = ", ".join(differs[:3]) + (", ..." if len(differs) > 3 else "")
                raise SpecsimError(
                    f"holds a sweep with other settings ({shown} differ); "
                    "use another --out directory or remove this one",
                    source=str(self.out_dir),
                )
        try:
            if not self.manifest_path.exists():
                text = json.dumps(self.fingerprint, indent=2) + "\n"
                atomic_write_text(self.manifest_path, text)
            self.points_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecsimError(f"cannot write: {exc.strerror}", source=str(self.out_dir)) from None

    def _path(self, key: str) -> Path:
        return self.points_dir / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".json")

    def load(self, points: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Finished rows of ``points`` already in the store, by point key."""
        found: dict[str, dict[str, Any]] = {}
        for point in points:
            key = point_key(point)
            path = self._path(key)
            if not path.exists():
                continue
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue  # cannot happen with atomic writes; recompute if it does
            if record.get("key") == key:
                found[key] = record["row"]
        return found

    def save(self, point: Mapping[str, Any], row: Mapping[str, Any]) -> None:
        key = point_key(point)
        atomic_write_text(self._path(key), json.dumps({"key": key, "row": dict(row)}) + "\n")

    def write_tables(self, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
        """``sweep.csv`` (tidy, one row per point) and ``sweep.json`` (meta + the same rows)."""
        columns = table_columns(rows, meta.get("varied", ()))
        atomic_write_text(self.out_dir / "sweep.csv", rows_to_csv(rows, columns))
        doc = {**meta, "columns": columns, "rows": [dict(r) for r in rows]}
        atomic_write_text(self.out_dir / "sweep.json", json.dumps(doc, indent=2) + "\n")


def _flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """Dotted key -> canonical JSON of each leaf (for naming what differs)."""
    if isinstance(node, dict):
        out: dict[str, str] = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: _canonical(node)}


def table_columns(rows: Sequence[Mapping[str, Any]], varied: Sequence[str]) -> list[str]:
    """The varied fields first (grid order), then every other column in first-seen order."""
    columns = list(varied)
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    return columns


def rows_to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text; list values (``per_position``) are written as their JSON text."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c)
            cells.append("" if v is None else json.dumps(v) if isinstance(v, list | dict) else v)
        writer.writerow(cells)
    return buf.getvalue()


# --------------------------------------------------------------------------- executors


class Executor(Protocol):
    """Runs ``fn`` over items in any order, yielding ``(index, result)`` as each finishes."""

    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T]
    ) -> Iterator[tuple[int, R]]: ...


def _pool_context() -> multiprocessing.context.BaseContext | None:
    """The platform's default start method, unless this process runs other threads.

    Forking a process that runs threads (a Dask client, an IO loop) can deadlock the child,
    so then workers come from a fork server that has imported the simulator once. Without
    threads the default (fork on Linux) starts workers fastest and needs no importable
    ``__main__``.
    """
    if threading.active_count() == 1 or "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["sim.sweep", "sim.montecarlo"])
    return ctx


@dataclass(frozen=True)
class LocalExecutor:
    """The default: a local process pool of ``workers`` processes (1: in this process)."""

    workers: int = 1

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        if self.workers <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(item)
            return
        ctx = _pool_context()
        with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=ctx) as pool:
            pending: dict[Future[R], int] = {pool.submit(fn, it): i for i, it in enumerate(items)}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        yield pending.pop(fut), fut.result()
            finally:
                for fut in pending:
                    fut.cancel()


@dataclass(frozen=True)
class DaskExecutor:
    """Points as tasks on an existing Dask cluster (``dask.distributed``, extra ``specsim[dask]``).

    ``scheduler`` is a scheduler address (``tcp://host:8786``) or a ``distributed.Client``.
    Workers must be able to import ``sim`` (install specsim on them). Results are identical
    to the local pool's: every point carries its own seed.
    """

    scheduler: Any
    timeout_s: float = 10.0

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise SpecsimError(
                "the Dask executor needs dask.distributed: pip install 'specsim[dask]'",
                source="--executor",
            ) from None
        own = not isinstance(self.scheduler, Client)
        if own:
            try:
                client = Client(self.scheduler, timeout=self.timeout_s)
            except (OSError, TimeoutError, ValueError) as exc:
                raise SpecsimError(
                    f"cannot reach the Dask scheduler: {exc}", source="--scheduler"
                ) from None
        else:
            client = self.scheduler
        try:
            futures = client.map(fn, list(items), pure=False)
            index = {fut.key: i for i, fut in enumerate(futures)}
            try:
                for fut in as_completed(futures):
                    yield index[fut.key], fut.result()
            finally:
                client.cancel(futures)
        finally:
            if own:
                client.close()


def make_executor(kind: str, *, workers: int = 1, scheduler: str | None = None) -> Executor:
    """``local`` (process pool of ``workers``) or ``dask`` (needs ``scheduler``)."""
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "dask":
        if not scheduler:
            raise SpecsimError("--executor dask needs --scheduler ADDRESS", source="--scheduler")
        return DaskExecutor(scheduler)
    raise SpecsimError(f"unknown executor {kind!r} (local or dask)", source="--executor")


# --------------------------------------------------------------------------- points


@dataclass(frozen=True)
class PointTask:
    """Everything one worker needs to evaluate one point (picklable, no files)."""

    base: dict[str, Any]  # the base scenario as a plain mapping (Scenario.model_dump)
    overrides: dict[str, Any]
    engine: str
    targets: tuple[float, ...]
    source: str = "sweep"


def point_scenario(task: PointTask) -> Scenario:
    base = scenario_from_dict(task.base, source=task.source)
    return with_overrides(base, task.overrides, source=f"{task.source} (--grid)")


def _target_label(tok_s: float) -> str:
    return f"{tok_s:g}"


def evaluate_point(task: PointTask) -> dict[str, Any]:
    """One sweep point: its overrides, then closed-form and Monte Carlo statistics.

    The Monte Carlo runs with the point's own ``simulation.seed`` in this process
    (``workers=1``): parallelism is across points, so results do not depend on it.
    """
    from sim.montecarlo import simulate, summarize

    scenario = point_scenario(task)
    result = simulate(scenario, engine=task.engine, seed=scenario.simulation.seed, workers=1)
    summary = summarize(result, task.targets).to_dict()
    return {**dict(task.overrides), **summary_row(scenario, summary, task.targets)}


def summary_row(
    scenario: Scenario, summary: Mapping[str, Any], targets: Sequence[float]
) -> dict[str, Any]:
    """Flat statistics of one point: closed forms, then the Monte Carlo summary."""
    cost = scenario_cycle_cost(scenario)
    tput = summary["throughput_tok_s"]
    cycle = summary.get("cycle_ms", {})
    k = scenario.num_steps
    rates = scenario.acceptance.conditional_rates(k) if scenario.acceptance else np.zeros(k)
    analytic_al = mean_accept_length(rates)
    row: dict[str, Any] = {
        "num_steps": k,
        "baseline_tok_s": baseline_tok_s(scenario),
        "ceiling_tok_s": ceiling_tok_s(cost),
        "analytic_tok_s": throughput_tok_s(analytic_al, cost),
        "analytic_accept_length": analytic_al,
        "tok_s_mean": tput["mean"],
        "tok_s_std": tput["std"],
        "tok_s_ci95_lo": tput["ci95"][0],
        "tok_s_ci95_hi": tput["ci95"][1],
        "tok_s_p5": tput["p5"],
        "tok_s_p50": tput["p50"],
        "tok_s_p95": tput["p95"],
        "accept_length_mean": summary["accept_length"]["mean"],
    }
    for phase in ("mean", "draft", "verify", "extend", "overhead"):
        if phase in cycle:
            row["cycle_ms" if phase == "mean" else f"cycle_{phase}_ms"] = cycle[phase]
    for cls in summary.get("classes", []):  # workload mix: per-class share and mean tok/s
        row[f"class_{cls['name']}_share"] = cls["share"]
        row[f"class_{cls['name']}_tok_s"] = cls["mean_tok_s"]
    by_target = {float(t["tok_s"]): t for t in summary.get("targets", [])}
    for tok_s in targets:
        entry = by_target.get(float(tok_s), {})
        label = _target_label(tok_s)
        lo, hi = entry.get("p_at_least_ci95") or (None, None)
        row[f"p_at_least_{label}"] = entry.get("p_at_least")
        row[f"p_at_least_{label}_ci95_lo"] = lo
        row[f"p_at_least_{label}_ci95_hi"] = hi
    return row


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


def sweep_fingerprint(base: Scenario, engine: str, targets: Sequence[float]) -> dict[str, Any]:
    """What besides the point a result depends on; stored in the manifest."""
    return {
        "scenario": base.model_dump(mode="json", exclude_none=True),
        "engine": engine,
        "targets": [float(t) for t in targets],
    }


def run_sweep(
    base: Scenario,
    axes: Sequence[tuple[str, Sequence[Any]]],
    out_dir: str | Path,
    *,
    engine: str = "fast",
    targets: Sequence[float] | None = None,
    executor: Executor | None = None,
    evaluate: Callable[[PointTask], dict[str, Any]] = evaluate_point,
    progress: Callable[[int], None] | None = None,
    source: str = "sweep",
) -> SweepOutcome:
    """Evaluate the grid's missing points into the store at ``out_dir`` and write the tables.

    The measured verify pass is pinned to its token count first (``pin_verify_tokens``), so
    a grid over ``speculation.num_steps`` prices other k as the closed forms do.
    Every point is validated before anything runs (a bad grid value fails fast, naming the
    key). Finished points are saved one by one as they complete; the tables are rewritten
    at the end, also when the sweep is interrupted (then ``complete`` is false in
    ``sweep.json`` and re-running the same command computes only the missing points).
    ``progress(n)`` is called with the number of points just finished (reused points
    first, in one call).
    """
    targets = tuple(float(t) for t in (base.target_tok_s if targets is None else targets))
    base = pin_verify_tokens(base)
    points = expand_grid(axes)
    varied = [k for k, _ in axes]
    for point in points:
        try:
            with_overrides(base, point, source=source)
        except SpecsimError as exc:  # name the grid, not --set
            raise SpecsimError(exc.message, source=f"{source} (--grid)", field=exc.field) from None
    store = SweepStore(out_dir, sweep_fingerprint(base, engine, targets))
    store.open()
    done = store.load(points)
    base_dict = base.model_dump(exclude_none=True)
    keys = [point_key(p) for p in points]
    todo = [i for i, k in enumerate(keys) if k not in done]
    tasks = [PointTask(base_dict, points[i], engine, targets, source) for i in todo]
    reused = len(points) - len(todo)
    if progress and reused:
        progress(reused)
    computed = 0
    meta = {
        "scenario": base.name,
        "engine": engine,
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "output_tokens": base.workload.output_tokens,
        "targets": list(targets),
        "varied": varied,
        "grid": {k: list(v) for k, v in axes},
    }
    try:
        for j, row in (executor or LocalExecutor()).map_unordered(evaluate, tasks):
            store.save(points[todo[j]], row)
            done[keys[todo[j]]] = row
            computed += 1
            if progress:
                progress(1)
    finally:
        rows = [done[k] for k in keys if k in done]
        complete = len(rows) == len(points)
        store.write_tables(rows, {**meta, "points": len(points), "complete": complete})
    return SweepOutcome(rows, varied, len(points), computed, reused, complete, meta)
