"""Measurements from ``trtllm-bench --report_json`` reports and TensorRT-LLM
``benchmark_serving`` results (sim/calibration/importers/trtllm_bench.py and
trtllm_serving.py read them).

Which figure feeds which fit:

- the server: engine ``trtllm``, ``engine.model``, ``world_info.tp_size`` and, for a
  speculative run, its draft length (``--prefer`` settles a contradiction with the base);
  for ``specsim init``: ``decoding_stats.mode`` (as spelled, and the drafter specsim names
  for it: the drafter kind when ``--drafter`` is not given, sim/calibration/reported_drafter.py),
  ``engine.kv_cache_dtype`` when stated (it prices the KV cache),
  ``engine.version`` and ``world_info.ep_size`` (recorded), ``engine.quantization``
  (checked against the config.json's ``quantization_config``);
- acceptance: ``decoding_stats.acceptance_length_percentiles.average`` at the draft length
  the report implies, its error ``rel_error`` x value (the report gives percentiles, no
  count of drafts);
- timing: a run served one request at a time with ``--streaming``: tok/s = 1000 / mean
  TPOT (``streaming_metrics.tpot_percentiles.average``), a point at its draft length, or
  the plain-decoding baseline without ``decoding_stats``, at the run's mean context
  (prompt + half the answer), error ``rel_error`` x value;
- lengths: ``request_info.avg_input_length`` / ``avg_output_length`` for ``specsim init``'s
  workload.

A batched run (requests overlapping) gives acceptance only; its TPOT is a batched
server's (give it to ``--load-sweep``). A ``benchmark_serving`` run gives the same at
``max_concurrency`` 1 (sim/calibration/imported.py ``serving_tok_s``), its accept length
``avg_decoded_tokens_per_iter.mean`` at the k the scenario or ``--num-steps`` says (the file
does not say it).
"""

from __future__ import annotations

from sim.calibration.imported import serving_accept_length, serving_tok_s
from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.importers.trtllm_bench import TrtllmBench
from sim.calibration.importers.trtllm_serving import MARK, TrtllmServingRun
from sim.calibration.measurements import (
    AcceptLengthObs,
    BaselinePoint,
    Measurements,
    ServerFact,
    SpecPoint,
)

__all__ = ["trtllm_bench_measurement", "trtllm_serving_measurement"]


def trtllm_bench_measurement(report: TrtllmBench, rel_error: float) -> Measurements:
    """Server facts, acceptance, lengths and (one request at a time, streamed) tok/s of one
    ``trtllm-bench`` report; every figure's source names the file and its field."""
    src = f"trtllm-bench {report.source}"
    facts = [
        ServerFact("engine", "trtllm", src),
        ServerFact("tensor_parallel", report.tp_size, f"{src} world_info.tp_size"),
    ]
    if report.model:
        facts.append(ServerFact("model", report.model, f"{src} engine.model"))
    quantized = report.quantization or "none"  # null: the checkpoint's weights unquantized
    facts.append(ServerFact("quantization", quantized, f"{src} engine.quantization"))
    if report.ep_size is not None:
        facts.append(ServerFact("expert_parallel", report.ep_size, f"{src} world_info.ep_size"))
    if report.version:
        facts.append(ServerFact("engine_version", report.version, f"{src} engine.version"))
    if report.kv_cache_dtype:
        kv = ServerFact("kv_cache_dtype", report.kv_cache_dtype, f"{src} engine.kv_cache_dtype")
        facts.append(kv)
    if report.speculative:  # the mode as spelled; the drafter specsim names for it, if any
        mode_src = f"{src} decoding_stats.mode"
        facts.append(ServerFact("decoding_mode", str(report.mode), mode_src))
        if report.drafter is not None:
            facts.append(ServerFact("drafter", report.drafter, mode_src))
    lengths = RequestLengths(
        src,
        report.avg_input_length,
        report.avg_output_length,
        report.num_requests,
        input_key="request_info.avg_input_length",
        output_key="request_info.avg_output_length",
    )
    out = Measurements(server=tuple(facts), lengths=(lengths,), imported=(report.figures(),))
    notes = []
    k, al = report.num_steps, report.accept_length
    al_src = f"{src} decoding_stats.acceptance_length_percentiles.average"
    if k is not None and al is not None:
        out += Measurements(accept_lengths=(AcceptLengthObs(k, al, rel_error * al, al_src),))
        notes.append(
            f"{src}: {report.mode} at draft length {k} = (accept length - 1) / draft "
            f"acceptance rate ({al:.4g} - 1) / {report.draft_acceptance_rate:.4g}; its accept "
            "length is output tokens / (decode iterations + 1), the context step counted, so "
            "it sits below the decode steps' own by about (AL - 1) / (iterations + 1)"
        )
    tok_s = report.tok_s
    if report.pp_size > 1:
        notes.append(
            f"{src}: world_info.pp_size {report.pp_size}: a pipeline-parallel server; the "
            "scenario prices one tensor-parallel group"
        )
    if tok_s is None:
        notes.append(
            f"{src}: no streaming_metrics (run without --streaming): no TPOT, so only its "
            "acceptance and lengths are used"
        )
    elif not report.batch1:
        notes.append(
            f"{src}: request_info.avg_num_concurrent_requests {report.avg_in_flight:.3g} "
            "(requests overlapped): its TPOT is a batched server's, so only its acceptance "
            "and lengths are used (give it to --load-sweep for the batched terms)"
        )
    else:
        tpot_src = f"{src} streaming_metrics.tpot_percentiles.average"
        ctx = report.context_tokens
        if k is not None and al is not None:
            point = SpecPoint(
                k, al, tok_s, rel_error * tok_s, rel_error * al, tpot_src, context_tokens=ctx
            )
            out += Measurements(points=(point,))
        else:
            baseline = BaselinePoint(tok_s, rel_error * tok_s, tpot_src, context_tokens=ctx)
            out += Measurements(baselines=(baseline,))
    return out + Measurements(notes=tuple(notes))


def trtllm_serving_measurement(
    run: TrtllmServingRun, rel_error: float, num_steps: int | None
) -> Measurements:
    """A ``benchmark_serving`` run against ``trtllm-serve``: its engine and model, the
    accept length at ``num_steps`` (the scenario's or the flag's), and at
    ``max_concurrency`` 1 the tok/s, 1000 / mean TPOT, with its context and lengths; a run
    decoding one token an iteration is plain decoding (the baseline)."""
    src = f"trtllm benchmark_serving {run.source}"
    out = Measurements(server=(ServerFact("engine", "trtllm", src),), imported=(run.figures(),))
    if run.model:
        out += Measurements(server=(ServerFact("model", run.model, f"{src} model_id"),))
    if run.lengths is not None:
        out += Measurements(lengths=(run.lengths,))
    al = run.accept_length
    if run.speculative:
        where = (run.source, f"{MARK}: mean")
        out += serving_accept_length(al, num_steps, rel_error, f"{src} {MARK}.mean", where)
    out += serving_tok_s(run, src, rel_error, num_steps, al if run.speculative else None)
    note = (
        f"{src}: {MARK} is the mean over requests of the server's tokens a decoding "
        "iteration (1: plain decoding)"
    )
    return out + Measurements(notes=(note,))
