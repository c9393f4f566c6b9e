"""What ``specsim calibrate`` reads: the figures and files it is given, as measurements.

``CalibrationInputs`` holds the options as given (paths and figures); ``read_inputs`` turns
them into one ``Measurements``: the real drafter's runs (figures, a vLLM /metrics scrape,
``vllm bench serve`` JSON, SGLang ``bench_speculative`` / ``bench_one_batch`` /
``bench_serving`` JSONL, ``trtllm-bench --report_json``, an
SGLang log and its ``server_args`` line, per-request counts), and, with timing runs
(synthetic or forced acceptance), the two-stage split: timings from the timing runs only,
acceptance from the real runs only, whose tok/s are held out as checks.
``imported_summary`` is what the files give, in calibrate's vocabulary (import-only
output).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from sim.calibration.imported import (
    server_args_measurement,
    sglang_bench_measurement,
    sglang_one_batch_measurement,
    sglang_serving_measurement,
    vllm_bench_measurement,
    vllm_latency_measurement,
)
from sim.calibration.imported_trtllm import trtllm_bench_measurement, trtllm_serving_measurement
from sim.calibration.importers.files import read_text
from sim.calibration.importers.sglang_bench import (
    is_one_batch,
    parse_sglang_bench,
    parse_sglang_one_batch,
)
from sim.calibration.importers.sglang_log import read_sglang_log
from sim.calibration.importers.sglang_server_args import read_sglang_server_args
from sim.calibration.importers.sglang_serving import is_bench_serving, parse_sglang_serving
from sim.calibration.importers.trtllm_bench import is_trtllm_bench, parse_trtllm_bench
from sim.calibration.importers.trtllm_serving import MARK, parse_trtllm_serving
from sim.calibration.importers.vllm_bench import parse_vllm_bench, read_vllm_bench
from sim.calibration.importers.vllm_metrics import (
    VllmLatency,
    latency_from_text,
    parse_vllm_metrics,
    read_vllm_latency,
    read_vllm_metrics,
)
from sim.calibration.measurements import (
    Measurements,
    baseline_measurement,
    parse_point,
    sglang_measurement,
    vllm_measurement,
)
from sim.errors import SpecsimError

if TYPE_CHECKING:
    from sim.calibration.importers.per_request import PerRequestFile

__all__ = [
    "CalibrationInputs",
    "imported_summary",
    "per_request_files",
    "read_inputs",
    "timing_run",
]

TWO_STAGE_NOTE = (
    "two-stage: timings fitted to the synthetic-acceptance runs only; acceptance "
    "to the real-drafter runs, whose tok/s are held out as checks"
)


@dataclass(frozen=True, slots=True)
class CalibrationInputs:
    """The figures and files calibrate is given (each named after its option).

    ``rel_error``: the relative standard error given to each figure passed as an option;
    ``num_steps``: num_steps of the SGLang log run (None: its ``server_args``, else what the
    log implies, else the base scenario's)."""

    rel_error: float = 0.02
    baseline_tok_s: float | None = None
    points: tuple[str, ...] = ()
    vllm_metrics: str | None = None
    vllm_metrics_before: str | None = None
    metrics_batch1: bool = False
    vllm_bench: tuple[str, ...] = ()
    sglang_bench: tuple[str, ...] = ()
    trtllm_bench: tuple[str, ...] = ()
    sglang_log: str | None = None
    sglang_server_args: str | None = None
    timing_runs: tuple[str, ...] = ()
    num_steps: int | None = None
    load_sweeps: tuple[str, ...] = ()
    per_request: tuple[str, ...] = ()
    per_request_format: str = "auto"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> CalibrationInputs:
        """The inputs among a command's options, by name (the others are left out)."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if f.name in options})


def read_inputs(
    inputs: CalibrationInputs, base_num_steps: int | None = None
) -> tuple[Measurements, list[PerRequestFile]]:
    """Every measurement the inputs give, with timing runs split in two stages (timings
    from the timing runs, acceptance from the rest), and the per-request files read (their
    requests' accept lengths are among the measurements)."""
    real = real_runs(inputs, base_num_steps)
    files = per_request_files(
        inputs, inputs.num_steps if inputs.num_steps is not None else base_num_steps
    )
    if files:
        # lazy: the per-request reader only when a file is given (start-up)
        from sim.calibration.spread import per_request_measurement

        for file in files:
            real += per_request_measurement(file)
    if not inputs.timing_runs:
        return real, files
    timing = Measurements()
    for path in inputs.timing_runs:
        timing += timing_run(path, inputs.rel_error)
    data = timing.timing_only() + real.acceptance_only() + Measurements(notes=(TWO_STAGE_NOTE,))
    return data, files


def per_request_files(inputs: CalibrationInputs, num_steps: int | None) -> list[PerRequestFile]:
    """The per-request files read (sim/calibration/importers/per_request.py)."""
    if not inputs.per_request:
        return []
    # lazy: the reader only when a file is given (start-up)
    from sim.calibration.importers.per_request import read_per_request

    return [read_per_request(p, inputs.per_request_format, num_steps) for p in inputs.per_request]


def real_runs(inputs: CalibrationInputs, base_num_steps: int | None) -> Measurements:
    """Measurements of the real drafter's runs (and of figures given as options)."""
    rel_error = inputs.rel_error
    data = Measurements()
    if inputs.baseline_tok_s is not None:
        data += baseline_measurement(inputs.baseline_tok_s, rel_error, "--baseline-tok-s")
    for text in inputs.points:
        data += parse_point(text, rel_error)
    if inputs.vllm_metrics:
        for part in _vllm_scrape(inputs):
            data += part
    for path in inputs.vllm_bench:
        data += vllm_bench_measurement(read_vllm_bench(path), rel_error)
    for path in inputs.sglang_bench:
        text = read_text(path)
        if is_trtllm_bench(text) or MARK in text:
            raise SpecsimError(
                "a TensorRT-LLM file (trtllm-bench report or benchmark_serving result), not "
                "SGLang's: give it as --trtllm-bench",
                source=path,
                field="world_info" if is_trtllm_bench(text) else MARK,
            )
        if is_bench_serving(text):
            k = inputs.num_steps if inputs.num_steps is not None else base_num_steps
            runs = parse_sglang_serving(text, source=path)
            data += sglang_serving_measurement(runs, path, rel_error, k)
        elif is_one_batch(text):
            records = parse_sglang_one_batch(text, source=path)
            data += sglang_one_batch_measurement(records, path, rel_error)
        else:
            data += sglang_bench_measurement(parse_sglang_bench(text, source=path), rel_error)
    for path in inputs.trtllm_bench:
        text = read_text(path)
        if MARK in text and not is_trtllm_bench(text):
            k = inputs.num_steps if inputs.num_steps is not None else base_num_steps
            data += trtllm_serving_measurement(
                parse_trtllm_serving(text, source=path), rel_error, k
            )
        else:
            data += trtllm_bench_measurement(parse_trtllm_bench(text, source=path), rel_error)
    log_k = inputs.num_steps
    if inputs.sglang_server_args:
        args = read_sglang_server_args(inputs.sglang_server_args)
        data += server_args_measurement(args)
        if log_k is None and args.num_steps:
            log_k = args.num_steps
    if inputs.sglang_log:
        data += _sglang_log(inputs.sglang_log, log_k, base_num_steps, rel_error)
    return data


def _vllm_scrape(inputs: CalibrationInputs) -> list[Measurements]:
    """A vLLM /metrics scrape (minus an earlier one): its counters with what it holds as
    imported figures, then with ``metrics_batch1`` its step time as a tok/s figure (added
    in that order: two runs' CUDA-graph flags only combine when they agree)."""
    assert inputs.vllm_metrics is not None
    counters = read_vllm_metrics(inputs.vllm_metrics, inputs.vllm_metrics_before)
    latency = read_vllm_latency(inputs.vllm_metrics, inputs.vllm_metrics_before)
    figures = {
        "format": "vLLM /metrics scrape",
        "source": counters.source,
        **{k: v for k, v in asdict(counters).items() if k != "source"},
        "accept_length": counters.accept_length,
        "draft_acceptance_rate": counters.draft_acceptance_rate,
        "cumulative": list(counters.cumulative),
        "conditional": list(counters.conditional),
        **latency.figures(),
    }
    parts = [vllm_measurement(counters) + Measurements(imported=(figures,))]
    if inputs.metrics_batch1:
        parts.append(vllm_latency_measurement(latency, counters, inputs.rel_error))
    return parts


def _sglang_log(
    path: str, log_k: int | None, base_num_steps: int | None, rel_error: float
) -> Measurements:
    """An SGLang server log's Decode batch lines, and what it holds as imported figures."""
    log = read_sglang_log(path)
    default_k = base_num_steps if base_num_steps is not None else log_k
    if default_k is None and log.implied_num_draft_tokens is None:
        raise SpecsimError(
            "num_steps unknown: give --num-steps, --sglang-server-args or --scenario",
            source=path,
        )
    figures = {
        "format": "SGLang Decode batch log",
        "source": log.source,
        "lines": len(log.lines),
        "skipped": log.skipped,
        "accept_length_mean": log.accept_length_mean,
        "accept_length_std": log.accept_length_std,
        "single_request_tok_s": log.single_request_tok_s,
        "cuda_graph": log.cuda_graph,
        "implied_num_draft_tokens": log.implied_num_draft_tokens,
    }
    measured = sglang_measurement(log, log_k, rel_error, default_num_steps=default_k or 1)
    return measured + Measurements(imported=(figures,))


def timing_run(path: str, rel_error: float) -> Measurements:
    """A synthetic-acceptance run, its format told by its content (vLLM bench serve JSON,
    SGLang bench_speculative JSONL, a trtllm-bench report, or a vLLM /metrics scrape of
    batch-1 traffic)."""
    text = read_text(path)
    head = text.lstrip()[:1]
    if is_trtllm_bench(text):
        data = trtllm_bench_measurement(parse_trtllm_bench(text, source=path), rel_error)
        if not (data.points or data.baselines):
            raise SpecsimError(
                "no one-request-at-a-time tok/s in this report (timing needs a --streaming "
                "run at --concurrency 1)",
                source=path,
                field="streaming_metrics",
            )
        return data
    if head == "{":
        if '"step_time"' in text and '"acc_length"' in text:
            return sglang_bench_measurement(parse_sglang_bench(text, source=path), rel_error)
        data = vllm_bench_measurement(parse_vllm_bench(text, source=path), rel_error)
        if not (data.points or data.baselines):
            raise SpecsimError(
                "no batch-1 tok/s in this run (max_concurrency must be 1 for timing)",
                source=path,
            )
        return data
    if not head:
        raise SpecsimError("empty file", source=path)
    counters = parse_vllm_metrics(text, source=path)
    h = latency_from_text(text, path)
    latency = VllmLatency(h["step"], h["request_tpot"], path)
    return vllm_latency_measurement(latency, counters, rel_error)


def imported_summary(data: Measurements) -> dict[str, Any]:
    """What the files give, in the calibrate vocabulary (import-only output): the files'
    own figures and notes, then baselines, points, accept lengths and cumulative rates."""
    return {
        "imported": list(data.imported),
        "notes": list(data.notes),
        "baselines": [
            {"tok_s": b.tok_s, "sigma": b.sigma, "source": b.source} for b in data.baselines
        ],
        "points": [
            {"num_steps": p.num_steps, "accept_length": p.accept_length, "tok_s": p.tok_s,
             "tok_s_sigma": p.tok_s_sigma, "source": p.source}
            for p in data.points
        ],
        "accept_lengths": [
            {"num_steps": a.num_steps, "accept_length": a.accept_length, "sigma": a.sigma,
             "source": a.source}
            for a in data.accept_lengths
        ],
        "cumulative": [
            {"position": c.position, "rate": c.rate, "sigma": c.sigma, "source": c.source}
            for c in data.cumulative
        ],
    }  # fmt: skip
