"""Load sweeps: the figures of benchmark runs at several concurrencies or request rates.

One ``LoadPoint`` per run, read from the files the usual load generators write (field
names as their writers spell them):

- ``vllm bench serve --save-result`` JSON (vllm-project/vllm ``vllm/benchmarks/serve.py``,
  formerly ``benchmarks/benchmark_serving.py``): ``max_concurrency``, ``request_rate``,
  ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``output_throughput``,
  ``mean_ttft_ms``, ``mean_tpot_ms``, ``std_tpot_ms``, ``mean_itl_ms``, ``mean_e2el_ms``
  and, with speculation, ``spec_decode_acceptance_length`` (bonus token included);
- ``python -m sglang.bench_serving --output-file`` JSON Lines (sgl-project/sglang
  ``python/sglang/bench_serving.py``, ``benchmark()``: one object appended a run):
  ``request_rate``, ``max_concurrency``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``output_throughput``, ``mean_ttft_ms``, ``mean_tpot_ms``,
  ``std_tpot_ms``, ``mean_itl_ms``, ``mean_e2e_latency_ms``, ``concurrency`` (the mean
  number of requests in flight) and ``accept_length`` (the server's
  ``avg_spec_accept_length``; null without speculation);
- ``python -m sglang.bench_one_batch --result-filename`` JSON Lines: a static batch of
  ``batch_size`` requests, ``median_decode_latency`` seconds a step, no speculation;
- SGLang ``scripts/playground/bench_speculative.py --output`` JSON Lines (``batch_size``,
  ``steps``, ``topk``, ``num_draft_tokens``, ``acc_length``, ``step_time``): chains
  (topk 1) and trees (topk > 1) at several batch sizes;
- ``trtllm-bench throughput|latency --report_json`` JSON (NVIDIA/TensorRT-LLM
  ``tensorrt_llm/bench/dataclasses/reporting.py``, sim/calibration/importers/trtllm_bench.py):
  one run a file; the load is ``request_info.avg_num_concurrent_requests`` (the report does
  not record ``--concurrency``), the TPOT ``streaming_metrics.tpot_percentiles.average``
  (None without ``--streaming``), the accept length and draft length from
  ``decoding_stats`` (plain decoding without it);
- TensorRT-LLM ``benchmark_serving.py --save-result`` JSON (vLLM's lineage, against
  ``trtllm-serve``; sim/calibration/importers/trtllm_serving.py): vLLM's keys, the accept
  length ``avg_decoded_tokens_per_iter.mean`` (1: plain decoding);
- guidellm's benchmarks report JSON (neuralmagic/guidellm, ``GenerativeBenchmarksReport``:
  ``benchmarks[]``, each with ``metrics`` of ``StatusDistributionSummary`` values whose
  ``successful`` summary holds ``mean``/``median``; ``inter_token_latency_ms`` is the
  decode-only time per output token, ``time_per_output_token_ms`` includes the first
  token and is not used; the load from ``args.strategy`` or ``config.strategy``:
  ``streams`` of a concurrent run, ``rate`` of a constant or Poisson one).

The decode time per output token of a request (``tpot_ms``) is what the batched cost
model predicts (sim/calibration/load_fit.py); the load is the run's concurrency, or for a
run at a request rate the mean number of requests in flight (SGLang's ``concurrency``, else
Little's law: request throughput x mean end-to-end latency). A vLLM or SGLang run without
an accept length is plain decoding (vLLM writes ``spec_decode_*`` keys whenever the server
speculates, since PR #31739; SGLang's ``accept_length`` is null without speculation); a
guidellm report does not say, so the scenario decides (``speculative`` None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import load_object, load_objects, number
from sim.calibration.importers.request_lengths import serving_lengths
from sim.calibration.importers.trtllm_bench import is_trtllm_bench, parse_trtllm_bench
from sim.calibration.importers.trtllm_serving import MARK, decoded_per_iter
from sim.calibration.importers.vllm_bench import request_rate
from sim.calibration.run_job import RunJob, closed_loop_workers
from sim.errors import SpecsimError

__all__ = ["FORMATS", "LoadPoint", "parse_load_sweep", "read_load_sweep"]

FORMATS = (
    "vllm bench serve",
    "sglang bench_serving",
    "sglang bench_one_batch",
    "sglang bench_speculative",
    "trtllm-bench",
    "trtllm benchmark_serving",
    "guidellm",
)


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One run of a load sweep.

    ``load``: requests decoding together (the concurrency of a closed loop or a static
    batch, the mean in flight of an open loop); ``load_kind``: ``concurrency``, ``batch`` or
    ``in flight``. ``tpot_ms``: mean decode time per output token of a request (None where
    the run has none); ``tpot_se_ms``: its standard error where the run gives a spread
    (std / sqrt(completed)). ``accept_length``: tokens per verify (bonus included; 1.0
    without speculation, None when a speculative run does not say); ``num_steps`` /
    ``topk`` / ``num_draft_tokens``: the draft where the file says it (bench_speculative).
    ``context_tokens``: mean prompt + half the mean answer (None where the file lacks the
    totals). ``job``: the run's own job where its file lists each request's lengths and
    it ran a closed loop (sim/calibration/run_job.py; None: priced at its mean context);
    ``job_note``: why a run that lists its requests is not (else "")."""

    source: str
    where: str
    format: str
    load: float
    load_kind: str
    speculative: bool | None
    tpot_ms: float | None
    tpot_se_ms: float | None = None
    accept_length: float | None = None
    output_tok_s: float | None = None
    ttft_ms: float | None = None
    rate_per_s: float | None = None
    completed: int | None = None
    context_tokens: float | None = None
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None
    job: RunJob | None = None
    job_note: str = ""

    @property
    def tree(self) -> bool:
        return self.topk is not None and self.topk > 1


def _opt(record: dict[str, Any], key: str, source: str, where: str) -> float | None:
    if record.get(key) is None:
        return None
    return number(record, key, source, where)


def _positive(value: float | None, key: str, source: str, where: str) -> float | None:
    if value is not None and value <= 0:
        raise SpecsimError(f"{value:g} must be positive", source=source, field=f"{where}: {key}")
    return value


def _context(record: dict[str, Any], source: str, where: str) -> float | None:
    done = _opt(record, "completed", source, where)
    tin = _opt(record, "total_input_tokens", source, where)
    tout = _opt(record, "total_output_tokens", source, where)
    if not done or tin is None or tout is None:
        return None
    return (tin + tout / 2.0) / done


def _tpot_se(record: dict[str, Any], source: str, where: str) -> float | None:
    std = _opt(record, "std_tpot_ms", source, where)
    done = _opt(record, "completed", source, where)
    if std is None or not done:
        return None
    if std < 0:
        raise SpecsimError(f"{std:g} must be >= 0", source=source, field=f"{where}: std_tpot_ms")
    return std / math.sqrt(done)


def _serving_run(
    record: dict[str, Any], source: str, where: str, fmt: str, latency_key: str
) -> LoadPoint:
    """A vLLM ``bench serve`` or SGLang ``bench_serving`` result (the same lineage)."""
    conc = _positive(_opt(record, "max_concurrency", source, where), "max_concurrency", source,
                     where)  # fmt: skip
    rate = record.get("request_rate")
    rate_per_s = float(rate) if isinstance(rate, int | float) and math.isfinite(rate) else None
    tpot = _positive(_opt(record, "mean_tpot_ms", source, where), "mean_tpot_ms", source, where)
    if fmt == "trtllm benchmark_serving":
        al: float | None = decoded_per_iter(record, source, where)
    elif fmt == "vllm bench serve":
        al = _opt(record, "spec_decode_acceptance_length", source, where)
    else:
        al = _opt(record, "accept_length", source, where)
    if al is not None and al < 1.0:
        raise SpecsimError(f"{al:g} is below 1 (bonus token included)", source=source,
                           field=f"{where}: accept length")  # fmt: skip
    flight = _opt(record, "concurrency", source, where)
    if conc is not None:
        load, kind = conc, "concurrency"
    elif flight is not None and flight > 0:
        load, kind = flight, "in flight"
    else:
        thr = _opt(record, "request_throughput", source, where)
        e2e = _opt(record, latency_key, source, where)
        if not thr or not e2e:
            raise SpecsimError(
                f"neither max_concurrency nor request_throughput and {latency_key}: the "
                "run's load is unknown",
                source=source,
                field=where,
            )
        load, kind = thr * e2e / 1000.0, "in flight"
    done = _opt(record, "completed", source, where)
    job, job_note = _run_job(record, source, where, conc)
    return LoadPoint(
        source=source,
        where=where,
        format=fmt,
        load=float(load),
        load_kind=kind,
        speculative=al is not None and al > 1.0,
        tpot_ms=tpot,
        tpot_se_ms=_tpot_se(record, source, where),
        accept_length=al,
        output_tok_s=_opt(record, "output_throughput", source, where),
        ttft_ms=_opt(record, "mean_ttft_ms", source, where),
        rate_per_s=rate_per_s,
        completed=int(done) if done is not None else None,
        context_tokens=_context(record, source, where),
        job=job,
        job_note=job_note,
    )


def _run_job(
    record: dict[str, Any], source: str, where: str, conc: float | None
) -> tuple[RunJob | None, str]:
    """The run's own job (sim/calibration/run_job.py) where the record lists its requests'
    lengths (``input_lens``, ``output_lens``, ``errors``: vLLM ``--save-detailed``, SGLang
    ``--output-details``; the completed ones, as ``specsim init --replay`` reads them) and
    its workers are known: its ``max_concurrency`` or, without one at ``request_rate`` inf,
    one a completed request (``closed_loop_workers``, as ``init --replay``). Else (None,
    why), "" when it lists none."""
    lengths = serving_lengths(record, source, where)
    if lengths is None or lengths.input_lens is None or lengths.output_lens is None:
        return None, ""
    n = len(lengths.output_lens)
    if max(lengths.output_lens) < 2:
        return None, "no completed request of two or more tokens: no decode time to price"
    if conc is not None and not conc.is_integer():
        return None, f"max_concurrency {conc:g} is not a whole number of workers"
    limit = None if conc is None else int(conc)
    workers = closed_loop_workers(limit, request_rate(record.get("request_rate")), n)
    if workers is None:
        return None, (
            "an open loop (no max_concurrency, request_rate not inf) whose arrival times "
            "the file does not record"
        )
    return RunJob(lengths.input_lens, lengths.output_lens, workers), ""


def _one_batch(record: dict[str, Any], source: str, where: str) -> LoadPoint:
    size = number(record, "batch_size", source, where)
    step = number(record, "median_decode_latency", source, where)
    if size < 1 or size != int(size) or step <= 0:
        raise SpecsimError("batch_size must be an integer >= 1 and median_decode_latency "
                           "positive", source=source, field=where)  # fmt: skip
    tin = _opt(record, "input_len", source, where)
    tout = _opt(record, "output_len", source, where)
    ctx = tin + tout / 2.0 if tin is not None and tout is not None else None
    return LoadPoint(source, where, "sglang bench_one_batch", size, "batch", False,
                     step * 1000.0, accept_length=1.0, context_tokens=ctx)  # fmt: skip


def _speculative_bench(record: dict[str, Any], source: str, where: str) -> LoadPoint:
    keys = ("batch_size", "steps", "topk", "num_draft_tokens")
    ints = {k: number(record, k, source, where) for k in keys}
    for k, v in ints.items():
        if v != int(v) or v < 0 or v > 4096:
            raise SpecsimError(f"expected an integer in [0, 4096], got {v:g}", source=source,
                               field=f"{where}: {k}")  # fmt: skip
    if ints["batch_size"] < 1:
        raise SpecsimError("must be >= 1", source=source, field=f"{where}: batch_size")
    al = number(record, "acc_length", source, where)
    step = number(record, "step_time", source, where)
    steps = int(ints["steps"])
    if not 1.0 <= al <= steps + 1 + 1e-9 or step <= 0:
        raise SpecsimError(f"acc_length {al:g} outside [1, steps + 1] or step_time <= 0",
                           source=source, field=where)  # fmt: skip
    return LoadPoint(
        source, where, "sglang bench_speculative", ints["batch_size"], "batch", steps > 0,
        step * 1000.0 / al, accept_length=al, num_steps=steps, topk=int(ints["topk"]),
        num_draft_tokens=int(ints["num_draft_tokens"]),
    )  # fmt: skip


def _trtllm_bench(text: str, source: str) -> LoadPoint:
    """A ``trtllm-bench`` report: one run at its mean number of requests in flight."""
    report = parse_trtllm_bench(text, source=source)
    return LoadPoint(
        source=source,
        where="report",
        format="trtllm-bench",
        load=report.avg_in_flight,
        load_kind="in flight",
        speculative=report.speculative,
        tpot_ms=report.tpot_ms,
        accept_length=report.accept_length if report.speculative else 1.0,
        output_tok_s=report.output_tok_s,
        ttft_ms=report.ttft_ms,
        completed=report.num_requests,
        context_tokens=report.context_tokens,
        # a chain: one beam, the k drafts and the bonus verified (SGLang's num_draft_tokens)
        num_steps=report.num_steps,
        topk=1 if report.num_steps is not None else None,
        num_draft_tokens=report.num_steps + 1 if report.num_steps is not None else None,
    )


def _summary(metrics: dict[str, Any], key: str, source: str, where: str) -> float | None:
    """``metrics[key].successful.mean`` of a guidellm report (None when absent)."""
    value = metrics.get(key)
    if not isinstance(value, dict):
        return None
    ok = value.get("successful")
    if not isinstance(ok, dict) or ok.get("mean") is None:
        return None
    return number(ok, "mean", source, f"{where}: metrics.{key}.successful")


def _guidellm(doc: dict[str, Any], source: str) -> list[LoadPoint]:
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not benches:
        raise SpecsimError("expected a non-empty list", source=source, field="benchmarks")
    out = []
    for i, bench in enumerate(benches):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise SpecsimError("expected an object with metrics", source=source, field=where)
        metrics = bench["metrics"]
        setup = bench.get("args") if isinstance(bench.get("args"), dict) else bench.get("config")
        strategy = setup.get("strategy") if isinstance(setup, dict) else None
        strategy = strategy if isinstance(strategy, dict) else {}
        kind = strategy.get("type_")
        rate = strategy.get("rate") if isinstance(strategy.get("rate"), int | float) else None
        flight = _summary(metrics, "request_concurrency", source, where)
        if kind == "synchronous":
            load, load_kind = 1.0, "concurrency"
        elif kind == "concurrent" and isinstance(strategy.get("streams"), int):
            load, load_kind = float(strategy["streams"]), "concurrency"
        elif flight:
            load, load_kind = flight, "in flight"
        else:
            raise SpecsimError(
                "no concurrent streams and no metrics.request_concurrency: the load is unknown",
                source=source,
                field=f"{where}: args.strategy",
            )
        itl = _positive(_summary(metrics, "inter_token_latency_ms", source, where),
                        "inter_token_latency_ms", source, where)  # fmt: skip
        tin = _summary(metrics, "prompt_token_count", source, where)
        tout = _summary(metrics, "output_token_count", source, where)
        out.append(
            LoadPoint(
                source=source,
                where=where,
                format="guidellm",
                load=load,
                load_kind=load_kind,
                speculative=None,
                tpot_ms=itl,
                output_tok_s=_summary(metrics, "output_tokens_per_second", source, where),
                ttft_ms=_summary(metrics, "time_to_first_token_ms", source, where),
                rate_per_s=float(rate) if rate is not None else None,
                context_tokens=tin + tout / 2.0 if tin is not None and tout is not None else None,
            )
        )
    return out


#: What a run's figures can be (a value outside is not a measurement, refused rather
#: than fitted): a TPOT from a microsecond to a minute a token, a load from a millionth
#: of a request in flight to a million, an accept length up to 4,097 (4,096 drafts).
TPOT_MS_RANGE = (1e-3, 6e4)
LOAD_RANGE = (1e-6, 1e6)
MAX_ACCEPT_LENGTH = 4097.0


def check_point(point: LoadPoint) -> LoadPoint:
    """``point`` when its figures can be measurements (SpecsimError naming the run and
    the figure otherwise)."""
    checks = (
        ("TPOT (ms)", point.tpot_ms, TPOT_MS_RANGE),
        (point.load_kind, point.load, LOAD_RANGE),
        ("accept length", point.accept_length, (1.0, MAX_ACCEPT_LENGTH)),
    )
    for name, value, (lo, hi) in checks:
        if value is not None and not lo <= value <= hi:
            raise SpecsimError(
                f"{value:.4g} is not a measurement (expected {lo:g} to {hi:g})",
                source=point.source,
                field=f"{point.where}: {name}",
            )
    return point


def parse_load_sweep(text: str, *, source: str = "<sweep>") -> tuple[LoadPoint, ...]:
    """Every run in one file of any of ``FORMATS`` (told apart by their keys), each
    checked to be a measurement (``check_point``)."""
    return tuple(check_point(p) for p in _parse(text, source))


def _parse(text: str, source: str) -> tuple[LoadPoint, ...]:
    stripped = text.lstrip()
    if is_trtllm_bench(text):
        return (_trtllm_bench(text, source),)
    if stripped.startswith("{") and '"benchmarks"' in text:
        doc = load_object(text.strip(), source)
        if "benchmarks" in doc:
            return tuple(_guidellm(doc, source))
    points = []
    # SGLang's bench_serving writes its default request rate, float("inf"), as Infinity
    for line, record in load_objects(text, source, infinity=True):
        where = f"line {line}"
        if "median_decode_latency" in record:
            points.append(_one_batch(record, source, where))
        elif "step_time" in record and "acc_length" in record:
            points.append(_speculative_bench(record, source, where))
        elif MARK in record:
            points.append(_serving_run(record, source, where, "trtllm benchmark_serving",
                                       "mean_e2el_ms"))  # fmt: skip
        elif "mean_e2e_latency_ms" in record or "accept_length" in record:
            points.append(_serving_run(record, source, where, "sglang bench_serving",
                                       "mean_e2e_latency_ms"))  # fmt: skip
        elif "mean_tpot_ms" in record:
            points.append(_serving_run(record, source, where, "vllm bench serve",
                                       "mean_e2el_ms"))  # fmt: skip
        else:
            raise SpecsimError(
                "not a load-sweep result: expected the keys of one of " + ", ".join(FORMATS),
                source=source,
                field=where,
            )
    return tuple(points)


def read_load_sweep(path: str | Path) -> tuple[LoadPoint, ...]:
    return parse_load_sweep(read_text(path), source=str(path))
