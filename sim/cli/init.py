"""``specsim init``: a commented scenario of your server from its model's config.json, the GPU,
the engine and the drafter; with measured figures, calibrated to them in the same step."""

from __future__ import annotations

import click

from sim.calibration.kv_cache_dtype import KV_CACHE_DTYPES
from sim.cli.calibrate import (
    BASELINE_OPTION,
    LOAD_SWEEP_OPTION,
    PER_REQUEST_FORMAT_OPTION,
    PER_REQUEST_OPTION,
    POINT_OPTION,
    PREFER_OPTION,
    REL_ERROR_OPTION,
    SGLANG_BENCH_OPTION,
    SGLANG_LOG_OPTION,
    TRTLLM_BENCH_OPTION,
    VLLM_BENCH_OPTION,
    VLLM_METRICS_OPTION,
)
from sim.cli.options import FiniteFloatRange, output_file_checked, verbose_option

#: The scenario's bounds on a request's answer and prompt (sim/scenario/sections/bounds.py
#: MAX_OUTPUT_TOKENS and 10 x it; not imported, so that --help starts without the schema).
MAX_OUTPUT_TOKENS = 1_000_000
MAX_INPUT_TOKENS = 10 * MAX_OUTPUT_TOKENS

#: What the owner measured about the verify pass: its time, whether it is graphed, and the
#: kernels a layer issues eagerly (which price an ungraphed pass's launches).
VERIFY_MS_OPTION = click.option(
    "--verify-ms",
    type=FiniteFloatRange(min=0.001, max=1e6),
    help="The verify pass measured on this server (ms, batch 1, at --num-steps): held as "
    "given; calibrating figures then fits the rest [default: from the weights or figures].",
)
VERIFY_GRAPH_OPTION = click.option(
    "--verify-cuda-graph/--no-verify-cuda-graph",
    default=None,
    help="Whether the engine runs the verify in a CUDA graph (--no-verify-cuda-graph: run "
    "eagerly, as with SGLang's --disable-cuda-graph or vLLM's --enforce-eager) "
    "[default: the engine's].",
)
KERNELS_OPTION = click.option(
    "--kernels-per-layer",
    type=click.IntRange(1, 10_000),
    help="Kernels one decoder layer issues run eagerly, pricing an ungraphed pass's launches "
    "[default: SGLang's count for a routed-MoE layer; else required by "
    "--no-verify-cuda-graph with --verify-ms].",
)


@click.command("init")
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(dir_okay=False),
    help="The model's Hugging Face config.json (read, never downloaded).",
)
@click.option("--gpu", required=True, help="GPU preset (specsim hardware --help lists them).")
@click.option("--gpus", type=click.IntRange(1, 1024), help="GPUs of the server [default: --tp].")
@click.option(
    "--tp",
    "tensor_parallel",
    type=click.IntRange(1, 1024),
    help="Tensor-parallel size [default: --gpus].",
)
@click.option(
    "--ep",
    "expert_parallel",
    type=click.IntRange(1, 1024),
    help="Expert-parallel size (recorded; the weights are split over --tp) [default: a "
    "trtllm-bench report's world_info.ep_size].",
)
@click.option("--interconnect", help="Interconnect preset [default: the GPU's usual one].")
@click.option(
    "--engine",
    required=True,
    type=click.Choice(("vllm", "sglang", "trtllm")),
    help="Serving engine: its defaults for CUDA graphs, scheduling, host overlap.",
)
@click.option(
    "--engine-version",
    help="Engine version (recorded) [default: a trtllm-bench report's engine.version, else the "
    "defaults' own].",
)
@click.option(
    "--kv-cache-dtype",
    type=click.Choice(KV_CACHE_DTYPES),
    default="auto",
    show_default=True,
    help="The server's KV cache dtype, as the engine's --kv-cache-dtype spells it (fp8: 1 "
    "byte an element, of the target's and the drafter's KV); auto: FP8 where the checkpoint's "
    "quantization_config states kv_cache_quant_algo FP8, else the model's 2-byte dtype.",
)
@click.option(
    "--drafter",
    type=click.Choice(("eagle3", "eagle", "mtp", "draft_model", "dflash", "dspark")),
    help="Draft method (with --num-steps); none: plain decoding. dflash, dspark: block-parallel "
    "(speculation.parallel_draft), sized from --draft-config [default: the one a "
    "--trtllm-bench report's decoding_stats.mode names].",
)
@click.option(
    "--num-steps",
    "-k",
    "num_steps",
    type=click.IntRange(1, 64),
    help="Draft tokens per cycle (k) [default: a --trtllm-bench report's draft length].",
)
@click.option(
    "--draft-params",
    type=FiniteFloatRange(min=1.0, max=1e13),
    help="Drafter parameters read a pass [default: derived from the config].",
)
@click.option(
    "--draft-config",
    type=click.Path(dir_okay=False),
    help="The drafter's own config.json: an EAGLE-3 drafter's (--drafter eagle3), the draft "
    "model's (draft_model), a DFlash/DSpark checkpoint's (dflash, dspark).",
)
@click.option(
    "--accept-length",
    type=FiniteFloatRange(min=1.0, max=65.0),
    help="Mean accept length measured at --num-steps (bonus token included).",
)
@VERIFY_MS_OPTION
@VERIFY_GRAPH_OPTION
@KERNELS_OPTION
@click.option(
    "--context-tokens",
    type=FiniteFloatRange(min=0.0, max=1e8),
    help="Mean context the measured figures' runs decoded at (prompt + half the answer), "
    "for the serving commands [default: from vllm bench files; none without figures].",
)
@click.option(
    "--input-tokens",
    type=click.IntRange(0, MAX_INPUT_TOKENS),
    help="Prompt tokens a served request (workload.input_tokens) [default: the bench files' "
    "mean prompt; none without them].",
)
@click.option(
    "--output-tokens",
    type=click.IntRange(1, MAX_OUTPUT_TOKENS),
    help="Answer tokens a served request (workload.output_tokens) [default: the bench files' "
    "mean answer; none without them].",
)
@click.option(
    "--replay",
    type=click.Path(dir_okay=False),
    help="A vllm bench serve --save-detailed, sglang.bench_serving --output-details or "
    "TensorRT-LLM benchmark_serving --save-detailed result "
    "of one run at --max-concurrency C, or of every request at once (told from its fields): "
    "its requests, in the order listed, become the served job (workload.lengths = "
    "'ordered'; the rows written beside --out as NAME.job.csv).",
)
@click.option("--model-id", help="Hugging Face model id (recorded; calibrate checks files).")
@click.option("--name", help="Scenario name [default: from model, GPUs, engine, drafter].")
@BASELINE_OPTION
@POINT_OPTION
@VLLM_BENCH_OPTION
@VLLM_METRICS_OPTION
@SGLANG_BENCH_OPTION
@TRTLLM_BENCH_OPTION
@SGLANG_LOG_OPTION
@PER_REQUEST_OPTION
@PER_REQUEST_FORMAT_OPTION
@LOAD_SWEEP_OPTION
@REL_ERROR_OPTION
@PREFER_OPTION
@click.option(
    "--out",
    required=True,
    type=click.Path(),
    callback=output_file_checked,
    help="Write the scenario here.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing (errors still print).")
@verbose_option
def init_command(
    config, gpu, gpus, tensor_parallel, expert_parallel, interconnect, engine, engine_version,
    kv_cache_dtype, drafter, num_steps, draft_params, draft_config, accept_length, verify_ms,
    verify_cuda_graph, kernels_per_layer, context_tokens,
    input_tokens, output_tokens, replay, model_id, name,
    baseline_tok_s, points, vllm_bench, vllm_metrics, sglang_bench, trtllm_bench, sglang_log,
    per_request,
    per_request_format, load_sweeps, rel_error, prefer, out, quiet, verbose,
) -> None:  # fmt: skip
    """Write a commented scenario of a server from its model's config.json, GPU, engine and
    drafter; with measured figures, calibrated to them.

    Each value says where it came from: a flag, a config.json field, or a named default.
    With --load-sweep, the batched terms are fitted too, as calibrate --load-sweep fits them.
    """
    # lazy: the library is imported when the command runs, not for --help (start-up)
    from sim.calibration.init_job import init_job, job_csv_path
    from sim.calibration.init_request import InitRequest
    from sim.calibration.inputs import CalibrationInputs
    from sim.calibration.run import run_init
    from sim.cli.calibrate import MIN_REL_ERROR
    from sim.errors import SpecsimError
    from sim.files import atomic_write_text
    from sim.report.calibrate import format_calibration
    from sim.report.init import init_summary, init_toml

    if not MIN_REL_ERROR <= rel_error < 1.0:
        raise SpecsimError(
            f"must be in [{MIN_REL_ERROR:g}, 1), got {rel_error:g}", source="--rel-error"
        )
    rows = job_csv_path(out)
    job = init_job(replay, rows.name) if replay is not None else None
    req = InitRequest(
        config, gpu, engine, gpus, tensor_parallel, expert_parallel, interconnect,
        engine_version, drafter, num_steps, draft_params, draft_config, accept_length,
        name=name, model_id=model_id, context_tokens=context_tokens,
        input_tokens=input_tokens, output_tokens=output_tokens, job=job, verify_ms=verify_ms,
        verify_cuda_graph=verify_cuda_graph, kernels_per_layer=kernels_per_layer,
        kv_cache_dtype=None if kv_cache_dtype == "auto" else kv_cache_dtype,
    )  # fmt: skip
    inputs = CalibrationInputs.from_options(click.get_current_context().params)
    init, cal, load = run_init(req, inputs, prefer=prefer)
    text = init_toml(init, cal, config)
    if job is not None:  # the rows first: the scenario names them
        atomic_write_text(rows, job.csv_text)
    try:
        atomic_write_text(out, text)
    except BaseException:
        if job is not None:  # no rows left behind without their scenario
            rows.unlink(missing_ok=True)
        raise
    if quiet:  # the file is the answer; errors still print (SpecsimError)
        return
    click.echo(init_summary(init, cal, verbose))
    if cal is not None:  # a load sweep's terms follow: the batch-1 fit's kept values compact
        click.echo(format_calibration(cal, verbose, compact=load is not None))
    if load is not None:
        # lazy: the load-sweep report only when a sweep was given (start-up)
        from sim.report.load_fit import format_load_fit

        click.echo(format_load_fit(load, verbose))
    click.echo(f"wrote {out}" + (f" and {rows}" if job is not None else ""))
