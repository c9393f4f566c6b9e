"""The job ``specsim init --replay FILE`` writes: one ``vllm bench serve --save-result
--save-detailed`` run's requests replayed as that job (``workload.lengths = "ordered"``,
sim/simulation/serving/setup.py): its completed requests' ``input_lens`` and
``output_lens`` (sim/calibration/importers/request_lengths.py) in the order the file lists
them, sent by its ``max_concurrency`` workers.

ASSUMED: the file lists the requests in the order they were sent (vLLM gathers its
per-request outputs in the order it built the requests, and its concurrency limit admits
waiting requests first come; not checked against a run here). Failed requests are left
out (the importer keeps the completed ones), and the job's time is then the completed
requests'.

The rows are written as specsim's trace CSV beside the scenario (its ``arrival_s`` is not
read by an ordered job); the scenario names it in ``workload.lengths_trace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.vllm_bench import read_vllm_bench
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


def init_job(path: str, csv_name: str) -> InitJob:
    """The ordered job of the one run in ``path`` (``csv_name``: the rows' file as the
    scenario names it). SpecsimError naming the file and field when the file holds more
    than one run, lists no request's lengths, had no concurrency limit or a request
    without an answer token."""
    runs = read_vllm_bench(path)
    if len(runs) != 1:
        raise SpecsimError(
            f"{len(runs)} runs in the file; --replay takes the file of one run", source=path
        )
    run = runs[0]
    lengths = run.lengths
    if lengths is None or lengths.input_lens is None or lengths.output_lens is None:
        raise SpecsimError(
            "the run lists no request's lengths (vllm bench serve --save-detailed writes them)",
            source=path,
            field="output_lens",
        )
    if run.max_concurrency is None:
        raise SpecsimError(
            "no concurrency limit: the run was not a closed-loop job (vllm bench serve "
            "--max-concurrency C)",
            source=path,
            field="max_concurrency",
        )
    outs = lengths.output_lens
    for i, n_out in enumerate(outs):
        if n_out < 1:
            raise SpecsimError(
                f"completed request {i} has {n_out} answer tokens: a replayed request needs 1",
                source=path,
                field="output_lens",
            )
    n, users = len(outs), run.max_concurrency
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
        ("serving.concurrency", users, f"--replay {path}: max_concurrency"),
    )
    summary = (
        f"job: {n} requests of {path} replayed in order by {users} worker"
        f"{'s' * (users != 1)} (rows in {csv_name})"
    )
    return InitJob(fields, csv_text, summary)
