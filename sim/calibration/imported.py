"""Measurements from benchmark outputs: vLLM bench serve, SGLang bench_speculative, vLLM's
latency histograms, SGLang's server_args (sim/calibration/importers/ parse them).

Which figure feeds which fit:

- acceptance: vLLM's per-position (cumulative) rates, else its accept length; SGLang's
  ``acc_length`` at its ``steps``;
- timing: per-request tok/s of runs at batch 1 only (a scenario is one request at a time):
  vLLM ``max_concurrency`` 1 (1000 / mean TPOT), SGLang ``batch_size`` 1 (``speed``), a
  vLLM scrape declared batch 1 (accept length / mean engine-step time);
- SGLang ``steps`` 0 (or a vLLM run without speculation) is the plain-decoding baseline;
- context (where the passes ran, for ``timing.context_tokens``): a vLLM run's mean prompt
  + half its mean answer; a ``bench_one_batch`` record's ``input_len`` + ``output_len`` / 2
  (its decode steps run from the prompt to prompt + answer); none from ``bench_speculative``
  (its prompts' lengths are not recorded);
- the runs' prompt and answer lengths (``Measurements.lengths``) for ``specsim init``'s
  workload: every vLLM run's, the batch-1 records' of SGLang's files.

Tree records (topk > 1) and batched runs are reported, not fitted, each with a note.
Standard errors: vLLM rates binomial over drafts (as for the /metrics counters); tok/s the
larger of ``rel_error`` x value and the spread over requests / sqrt(requests) where the
file gives one; SGLang figures ``rel_error`` x value (the file gives no spread).
"""

from __future__ import annotations

import math

from sim.calibration.importers.request_lengths import fixed_lengths
from sim.calibration.importers.sglang_bench import OneBatchRecord, SglangBench
from sim.calibration.importers.sglang_server_args import SglangServerArgs
from sim.calibration.importers.sglang_serving import SglangServingRun
from sim.calibration.importers.trtllm_serving import TrtllmServingRun
from sim.calibration.importers.vllm_bench import VllmBenchRun
from sim.calibration.importers.vllm_metrics import SpecDecodeCounters, VllmLatency
from sim.calibration.measurements import (
    AcceptLengthObs,
    BaselinePoint,
    CumulativeObs,
    Measurements,
    ServerFact,
    SpecPoint,
    cumulative_checks,
)
from sim.errors import SpecsimError


def _binomial(c: float, n: float) -> float:
    return max(math.sqrt(max(c * (1.0 - c), 0.0) / n), 0.5 / n)


def vllm_bench_measurement(runs: tuple[VllmBenchRun, ...], rel_error: float) -> Measurements:
    """Acceptance and (at max_concurrency 1) tok/s from ``vllm bench serve`` results."""
    out = Measurements(imported=tuple(r.figures() for r in runs))
    for run in runs:
        src = f"vllm bench {run.source}" + (f" line {run.line}" if run.line > 1 else "")
        out += Measurements(server=(ServerFact("engine", "vllm", src),))
        if run.model:
            out += Measurements(server=(ServerFact("model", run.model, src),))
        if run.lengths is not None:
            out += Measurements(lengths=(run.lengths,))
        k = run.num_spec_tokens
        if run.speculative and k is not None and k >= 1:
            assert run.accept_length is not None
            n = run.num_drafts or 0.0
            out += Measurements(
                notes=tuple(
                    f"{src}: {note}"
                    for note in cumulative_checks(run.cumulative, run.accept_length)
                )
            )
            if run.cumulative and n > 0:
                out += Measurements(
                    cumulative=tuple(
                        CumulativeObs(i + 1, c, _binomial(c, n), src)
                        for i, c in enumerate(run.cumulative)
                    )
                )
            else:
                sigma = math.sqrt(k * (run.accept_length - 1.0) / n) if n else 0.0
                out += Measurements(
                    accept_lengths=(
                        AcceptLengthObs(
                            k, run.accept_length, max(sigma, rel_error * run.accept_length), src
                        ),
                    )
                )
        spec = run.accept_length if run.speculative and k else None
        out += serving_tok_s(run, src, rel_error, k, spec)
    return out


def serving_tok_s(
    run: VllmBenchRun | SglangServingRun | TrtllmServingRun,
    src: str,
    rel_error: float,
    k: int | None,
    accept_length: float | None,
) -> Measurements:
    """A serving benchmark run's tok/s, 1000 / mean TPOT, at ``max_concurrency`` 1: a
    point at ``k`` with ``accept_length`` (None: the baseline) at the run's context, its
    error the larger of ``rel_error`` x tok/s and the spread over requests / sqrt(requests);
    at another concurrency a note (its TPOT is a batched server's)."""
    tok_s = run.tok_s
    if tok_s is None:
        return Measurements()
    if run.max_concurrency != 1:
        return Measurements(
            notes=(
                f"{src}: max_concurrency {run.max_concurrency} (not 1): its TPOT is a "
                "batched server's, so only its acceptance figures are used",
            )
        )
    spread = (
        tok_s * (run.std_tpot_ms or 0.0) / (run.mean_tpot_ms or 1.0) / math.sqrt(run.completed)
        if run.completed
        else 0.0
    )
    sigma = max(rel_error * tok_s, spread)
    if accept_length is not None and k:
        al_sigma = rel_error * accept_length
        point = SpecPoint(
            k, accept_length, tok_s, sigma, al_sigma, src, context_tokens=run.context_tokens
        )
        return Measurements(points=(point,))
    baseline = BaselinePoint(tok_s, sigma, src, context_tokens=run.context_tokens)
    return Measurements(baselines=(baseline,))


def sglang_bench_measurement(bench: SglangBench, rel_error: float) -> Measurements:
    """Batch-1 chain records of ``bench_speculative``: acceptance, tok/s and the baseline."""
    out = Measurements(
        imported=(bench.figures(),),
        server=(ServerFact("engine", "sglang", f"sglang bench {bench.source}"),),
    )
    skipped_batch = [r for r in bench.records if r.batch_size != 1]
    trees = [r for r in bench.records if r.batch_size == 1 and r.steps > 0 and r.topk != 1]
    for r in bench.records:
        if r.batch_size != 1:
            continue
        src = f"sglang bench {bench.source} line {r.line}"
        if r.completion_tokens is not None:
            out += Measurements(
                lengths=(
                    fixed_lengths(None, r.completion_tokens, bench.source, f"line {r.line}", None),
                )
            )
        if r.steps == 0:
            out += Measurements(
                baselines=(BaselinePoint(r.speed_tok_s, rel_error * r.speed_tok_s, src),)
            )
        else:
            # a tree row: its tok/s on the tree's cycle, its accept length by the tree's
            # closed form (calibrate), not as a chain's
            al_sigma = rel_error * r.acc_length
            point = SpecPoint(
                r.steps,
                r.acc_length,
                r.speed_tok_s,
                rel_error * r.speed_tok_s,
                al_sigma,
                src,
                topk=max(r.topk, 1),
                num_draft_tokens=r.num_draft_tokens if r.topk > 1 else None,
            )
            tree = r.topk > 1
            chain_al = () if tree else (AcceptLengthObs(r.steps, r.acc_length, al_sigma, src),)
            out += Measurements(points=(point,), accept_lengths=chain_al)
    notes = [
        f"SGLang bench {bench.source}: step_time is the 20th percentile of per-window mean "
        "step times (bench_speculative.py), so its speed leans fast"
    ]
    if skipped_batch:
        notes.append(
            f"{len(skipped_batch)} record{'s' * (len(skipped_batch) != 1)} with batch_size > 1 "
            f"{'are' if len(skipped_batch) != 1 else 'is'} reported, not fitted "
            "(a scenario is one request at a time)"
        )
    if trees:
        notes.append(
            f"{len(trees)} tree record{'s' * (len(trees) != 1)} (topk > 1) fitted on the "
            "tree's cycle (drafter passes over topk beams, the verify over num_draft_tokens); "
            "their accept lengths fix the top-1 rate through the tree's closed form when no "
            "chain accept length is given"
        )
    out += Measurements(notes=tuple(notes))
    if not (out.baselines or out.points):
        raise SpecsimError(
            "no batch_size 1 chain or baseline record (steps 0, or topk 1) to use",
            source=bench.source,
        )
    return out


def vllm_latency_measurement(
    latency: VllmLatency, counters: SpecDecodeCounters, rel_error: float
) -> Measurements:
    """tok/s = accept length / mean engine-step time, for a scrape of batch-1 traffic."""
    step = latency.step
    if step is None or step.count <= 0:
        raise SpecsimError(
            "no vllm:inter_token_latency_seconds (or vllm:time_per_output_token_seconds) "
            "histogram with observations: cannot take the step time",
            source=latency.source,
        )
    k = counters.num_spec_tokens
    if k is None or k < 1:
        raise SpecsimError("no drafts in the vLLM counters", source=latency.source)
    al = counters.accept_length
    tok_s = 1000.0 * al / step.mean_ms
    src = f"vllm metrics {latency.source} ({step.family} mean {step.mean_ms:.4g} ms)"
    return Measurements(
        points=(SpecPoint(k, al, tok_s, rel_error * tok_s, rel_error * al, src),),
        notes=(
            f"{src}: taken as one request at a time (batch 1): the mean engine-step time is "
            "the cycle time",
        ),
    )


def server_args_measurement(args: SglangServerArgs) -> Measurements:
    """No figure to fit: what the server ran with, reported (and k for its logs)."""
    src = f"SGLang server_args {args.source}"
    facts = [ServerFact("engine", "sglang", src)]
    if args.model_path:
        facts.append(ServerFact("model", args.model_path, src))
    if args.tp_size:
        facts.append(ServerFact("tensor_parallel", args.tp_size, src))
    if args.num_steps:
        facts.append(ServerFact("num_steps", args.num_steps, src))
    notes = [
        f"SGLang server_args {args.source} line {args.line}: algorithm "
        f"{args.speculative_algorithm}, num_steps {args.num_steps}, topk {args.topk}, "
        f"num_draft_tokens {args.num_draft_tokens}, tp_size {args.tp_size}"
    ]
    dtype = args.kv_cache_dtype
    if dtype is not None and dtype != "auto":
        notes.append(
            f"SGLang server_args {args.source}: kv_cache_dtype {dtype}; calibrate keeps the base "
            f"scenario's model.kv_bytes_per_token (specsim init --kv-cache-dtype {dtype} "
            "derives this server's)"
        )
    return Measurements(server=tuple(facts), imported=(args.figures(),), notes=tuple(notes))


def sglang_one_batch_measurement(
    records: tuple[OneBatchRecord, ...], source: str, rel_error: float
) -> Measurements:
    """The plain-decoding baseline from ``bench_one_batch`` records at batch size 1."""
    ones = [r for r in records if r.batch_size == 1]
    if not ones:
        raise SpecsimError("no batch_size 1 record (the baseline is one request)", source=source)
    figures = {
        "format": "SGLang bench_one_batch JSONL",
        "source": source,
        "records": [
            {"line": r.line, "batch_size": r.batch_size, "input_len": r.input_len,
             "output_len": r.output_len, "median_decode_latency_s": r.median_decode_latency_s}
            for r in records
        ],
    }  # fmt: skip
    return Measurements(
        baselines=tuple(
            BaselinePoint(
                r.tok_s,
                rel_error * r.tok_s,
                f"sglang bench_one_batch {source} line {r.line}",
                # its decode steps ran from the prompt to prompt + answer: half-way on average
                context_tokens=r.input_len + r.output_len / 2.0,
            )
            for r in ones
        ),
        lengths=tuple(
            fixed_lengths(r.input_len, r.output_len, source, f"line {r.line}", r.batch_size)
            for r in ones
        ),
        imported=(figures,),
        notes=(
            f"SGLang bench_one_batch {source}: baseline = 1 / median decode step at batch 1 "
            f"({len(records) - len(ones)} larger batches reported, not fitted)",
        ),
    )


#: The engine a ``bench_serving`` run's ``backend`` benchmarked (others say nothing).
SERVING_BACKENDS = {"sglang": "sglang", "sglang-native": "sglang", "sglang-oai": "sglang",
                    "sglang-oai-chat": "sglang", "vllm": "vllm", "vllm-chat": "vllm"}  # fmt: skip


def sglang_serving_measurement(
    runs: tuple[SglangServingRun, ...], source: str, rel_error: float, num_steps: int | None
) -> Measurements:
    """``bench_serving`` runs: the accept length at ``num_steps`` (the file does not say
    k: the scenario's or the flag's), and at ``max_concurrency`` 1 the tok/s, 1000 / mean
    TPOT, with the context and lengths of its requests; a run without an accept length is
    plain decoding (the baseline)."""
    out = Measurements(imported=tuple(r.figures() for r in runs))
    for run in runs:
        src = f"sglang bench_serving {source} line {run.line}"
        engine = SERVING_BACKENDS.get(run.backend or "")
        if engine is not None:
            out += Measurements(server=(ServerFact("engine", engine, src),))
        if run.lengths is not None:
            out += Measurements(lengths=(run.lengths,))
        al = run.accept_length
        if run.speculative:
            assert al is not None
            field = f"line {run.line}: accept_length"
            out += serving_accept_length(al, num_steps, rel_error, src, (source, field))
        out += serving_tok_s(run, src, rel_error, num_steps, al if run.speculative else None)
    note = (
        f"SGLang bench_serving {source}: accept_length is the server's running mean "
        "(get_server_info avg_spec_accept_length), its warm-up requests included"
    )
    return out + Measurements(notes=(note,))


def serving_accept_length(
    al: float, num_steps: int | None, rel_error: float, src: str, where: tuple[str, str]
) -> Measurements:
    """A serving run's accept length at ``num_steps`` (its file does not say k: the
    scenario's or the flag's), error ``rel_error`` x value; SpecsimError at ``where``
    (file, field) without a k or above k + 1."""
    if num_steps is None or num_steps < 1:
        raise SpecsimError(
            "the file does not say k: give --num-steps (or --scenario)",
            source=where[0],
            field=where[1],
        )
    if al > num_steps + 1 + 1e-9:
        raise SpecsimError(
            f"{al:g} is above k + 1 = {num_steps + 1} (bonus token included)",
            source=where[0],
            field=where[1],
        )
    return Measurements(accept_lengths=(AcceptLengthObs(num_steps, al, rel_error * al, src),))
