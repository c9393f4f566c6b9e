"""The job ``specsim init --replay FILE`` writes: one serving benchmark run's requests
replayed as that job (``workload.lengths = "ordered"``,
sim/simulation/serving/setup_workload.py ``ordered_workload``):
its completed requests' ``input_lens`` and ``output_lens`` (sim/calibration/importers/
request_lengths.py) in the order the file lists them, sent by its ``max_concurrency``
workers. The run is a ``vllm bench serve --save-result --save-detailed`` result or an
SGLang ``python -m sglang.bench_serving --output-file F --output-details`` one, told from
its fields (sim/calibration/importers/serving_runs.py); the same rules for both.

ASSUMED: the file lists the requests in the order they were sent (both clients gather
their per-request outputs in the order they built the requests, ``asyncio.gather``, and
their concurrency limit, a semaphore, admits waiting requests first come; not checked
against a run here). Failed requests (a non-empty ``errors`` entry, 0 output tokens) are
left out (the importers keep the completed ones), and the job's time is then the
completed requests'.

A run without ``max_concurrency`` (null: no limit) sent its requests at ``request_rate``:
at inf (both clients' default) every request at once, which is exactly a closed loop of
one worker a request (each sends its one request at 0; tests/simulation/serving/
test_ordered_job.py checks that law), and is written so; at a finite rate a Poisson
process whose arrival times the file does not record, refused naming the field (an ordered
job is a closed loop, and the project has no ordered open arrivals). SGLang's
``concurrency`` key is the mean number of requests in flight measured over the run (the
sum of their latencies / the duration), not a limit: not read.

The rows are written as specsim's trace CSV beside the scenario (its ``arrival_s`` is not
read by an ordered job); the scenario names it in ``workload.lengths_trace``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.serving_runs import ServingRun, read_serving_runs
from sim.calibration.run_job import closed_loop_workers
from sim.errors import SpecsimError

__all__ = ["InitJob", "init_job", "job_csv_path"]


@dataclass(frozen=True, slots=True)
class InitJob:
    """The keys to write, each (dotted key, value, origin), the CSV's text, one line for
    init's report."""

    fields: tuple[tuple[str, Any, str], ...]
    csv_text: str
    summary: str


def job_csv_path(out: str | Path) -> Path:
    """Where init writes the job's rows: beside the scenario ``out``, ``NAME.job.csv``."""
    p = Path(out)
    return p.with_name(f"{p.stem}.job.csv")


def _workers(
    run: ServingRun, path: str, field: Callable[[str], str], command: str, n: int
) -> tuple[int, str]:
    """The job's workers (``closed_loop_workers``: the run's ``max_concurrency``; without
    one, at ``request_rate`` inf, one a completed request) and their origin; SpecsimError
    naming the field for an open loop at a finite rate."""
    workers = closed_loop_workers(run.max_concurrency, run.request_rate, n)
    if workers is None:
        rate = run.request_rate
        sent = f" (sent at request_rate {rate:g} a second)" if rate is not None else ""
        raise SpecsimError(
            f"no concurrency limit: the run was not a closed-loop job{sent} ({command} "
            "--max-concurrency C)",
            source=path,
            field=field("max_concurrency"),
        )
    if run.max_concurrency is not None:
        return workers, f"--replay {path}: max_concurrency"
    return workers, (
        f"--replay {path}: no max_concurrency at request_rate inf: all {n} completed "
        "requests sent at once, one a worker"
    )


def init_job(path: str, csv_name: str) -> InitJob:
    """The ordered job of the one run in ``path`` (``csv_name``: the rows' file as the
    scenario names it). SpecsimError naming the file and field when the file holds more
    than one run, lists no request's lengths, had no concurrency limit or a request
    without an answer token."""
    fmt, runs = read_serving_runs(path)
    if len(runs) != 1:
        lines = ", ".join(str(r.line) for r in runs)
        at = f" (lines {lines})" if fmt.several else ""
        raise SpecsimError(
            f"{len(runs)} runs in the file{at}; --replay takes the file of one run{fmt.several}",
            source=path,
        )
    run = runs[0]
    where = fmt.where(run)

    def field(key: str) -> str:
        return f"{where}: {key}" if where else key

    lengths = run.lengths
    if lengths is None or lengths.input_lens is None or lengths.output_lens is None:
        raise SpecsimError(
            f"the run lists no request's lengths ({fmt.command} {fmt.details_flag} writes them)",
            source=path,
            field=field("output_lens"),
        )
    users, users_origin = _workers(run, path, field, fmt.command, len(lengths.output_lens))
    outs = lengths.output_lens
    for i, n_out in enumerate(outs):
        if n_out < 1:
            raise SpecsimError(
                f"completed request {i} has {n_out} answer tokens: a replayed request needs 1",
                source=path,
                field=field("output_lens"),
            )
    n = len(outs)
    pairs = zip(lengths.input_lens, outs, strict=True)
    rows = "".join(f"0,{i},{o}\n" for i, o in pairs)
    csv_text = (
        f"# written by specsim init --replay from {path}: its {n} completed requests in the\n"
        "# order listed (input_lens, output_lens); arrival_s is not read by an ordered job\n"
        "arrival_s,input_tokens,output_tokens\n" + rows
    )
    means = {
        side: sum(lens) / n for side, lens in (("input", lengths.input_lens), ("output", outs))
    }
    fields = (
        *(
            (
                f"workload.{side}_tokens",
                max(round(mean), 1 if side == "output" else 0),
                f"--replay {path}: the mean of its {n} completed requests' {side}_lens "
                f"({mean:.6g}; the job sends each request's own)",
            )
            for side, mean in means.items()
        ),
        (
            "workload.lengths",
            "ordered",
            f"--replay {path}: its {n} completed requests sent in the order listed (ASSUMED the "
            "order sent), each worker taking the next when its last is answered",
        ),
        (
            "workload.lengths_trace",
            csv_name,
            f"written by specsim init from {path} (input_lens, output_lens)",
        ),
        ("serving.concurrency", users, users_origin),
    )
    summary = (
        f"job: {n} requests of {path} replayed in order by {users} worker"
        f"{'s' * (users != 1)} (rows in {csv_name})"
    )
    return InitJob(fields, csv_text, summary)
