"""``specsim calibrate``: fit a scenario to measured figures and the files servers write.

Inputs (any mix): ``--baseline-tok-s``/``--point`` figures; a vLLM ``/metrics`` scrape;
``vllm bench serve`` result JSON; SGLang ``bench_speculative`` JSONL; ``trtllm-bench
--report_json`` reports; an SGLang log
(``Decode batch`` lines, and its ``server_args`` line for k); ``--timing-run`` files from
runs with synthetic or forced acceptance. Without ``--scenario`` nothing is fitted: the
command prints what it read (import-only).

Two-stage calibration: a run whose acceptance the engine was told (vLLM
``rejection_sample_method="synthetic"``, ``SGLANG_SIMULATE_ACC_LEN``, TensorRT-LLM
``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``) measures the cost of a cycle without the
drafter's luck: its tok/s at the forced accept length fits the timings only. The real
drafter's runs then fit the acceptance only, and their tok/s is held out and scored
against the calibrated model (``checks``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from sim.calibration.settings import ACCEPTANCE_MODELS, DEFAULT_TIMING_FIT, TABLE_TIMING_FIT
from sim.cli.options import (
    FiniteFloatRange,
    bind_file,
    echo_document,
    json_option,
    output_file_checked,
    set_option,
    verbose_option,
)

#: Smallest relative error of a figure: a part per million is beyond any benchmark, and
#: below ~1e-20 the weighted residuals overflow the least-squares fit (a traceback at 1e-160).
MIN_REL_ERROR = 1e-6

TIMING_RUN_HELP = (
    "A run with synthetic or forced acceptance (repeatable; vLLM bench serve JSON, SGLang "
    "bench_speculative JSONL, a trtllm-bench --report_json of a --streaming --concurrency 1 "
    "run, or a vLLM /metrics scrape of batch-1 traffic): fits the timings "
    "only. vLLM: --speculative-config with rejection_sample_method='synthetic' and "
    "synthetic_acceptance_length = L (bonus included) or synthetic_acceptance_rates; SGLang: "
    "SGLANG_SIMULATE_ACC_LEN=L (bonus included, METHOD=match-expected keeps the mean); "
    "TensorRT-LLM: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS = L - 1 (bonus excluded; give "
    "that run's report, or --point K:L:TOKS). With a timing run, the other files fit "
    "acceptance only."
)


def files_option(flag: str, text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A repeatable option naming files (help ``text``), its parameter named after the flag."""
    return click.option(
        flag, flag.removeprefix("--").replace("-", "_"), multiple=True,
        type=click.Path(dir_okay=False), help=text,
    )  # fmt: skip


PER_REQUEST_OPTION = files_option(
    "--per-request",
    "Per-request speculative counts (repeatable): SGLang /generate responses or "
    "--export-metrics-to-file records (meta_info spec_verify_ct, ...), or vLLM responses "
    "with metrics.speculative_decoding (--per-request-spec-decode-metrics). Fits the "
    "per-request spread of acceptance (docs/per-request.md).",
)
PER_REQUEST_FORMAT_OPTION = click.option(
    "--per-request-format",
    type=click.Choice(("auto", "sglang", "vllm")),
    default="auto",
    show_default=True,
    help="Format of the --per-request files (auto: by their keys).",
)

#: Options calibrate shares with init (figures, files, their error, which server wins).
BASELINE_OPTION = click.option(
    "--baseline-tok-s",
    type=FiniteFloatRange(min=0.0, min_open=True, max=1e7),
    help="Measured plain-decoding tok/s (batch 1).",
)
POINT_OPTION = click.option(
    "--point",
    "points",
    multiple=True,
    metavar="K:AL:TOKS",
    help="Measured speculative tok/s at num_steps K with accept length AL "
    "(repeat for several num_steps); K/TOPK/NDT:AL:TOKS is an SGLang tree row (num_steps, "
    "topk, num_draft_tokens; docs/trees.md).",
)
VLLM_METRICS_OPTION = click.option(
    "--vllm-metrics",
    type=click.Path(dir_okay=False),
    help="A vLLM /metrics scrape (Prometheus text): speculative-decoding counters.",
)
VLLM_BENCH_OPTION = files_option(
    "--vllm-bench",
    "vllm bench serve --save-result JSON (repeatable; tok/s used at max_concurrency 1).",
)
SGLANG_BENCH_OPTION = files_option(
    "--sglang-bench",
    "SGLang bench_speculative.py --output JSONL (batch_size 1 records), "
    "sglang.bench_one_batch --result-filename JSONL (the baseline) or sglang.bench_serving "
    "--output-file JSONL (max_concurrency 1 runs; k from --num-steps); repeatable.",
)
TRTLLM_BENCH_OPTION = files_option(
    "--trtllm-bench",
    "trtllm-bench throughput/latency --report_json JSON (repeatable): its server, "
    "draft length and accept length; tok/s (1000 / mean TPOT) from a --streaming run whose "
    "requests never overlapped (--concurrency 1). Also TensorRT-LLM benchmark_serving.py "
    "--save-result JSON (a trtllm-serve run; k from --num-steps or the scenario).",
)
SGLANG_LOG_OPTION = click.option(
    "--sglang-log",
    type=click.Path(dir_okay=False),
    help="An SGLang server log with 'Decode batch' lines.",
)
REL_ERROR_OPTION = click.option(
    "--rel-error",
    type=float,
    default=0.02,
    show_default=True,
    help="Relative standard error assumed for each figure given as an option, in [1e-6, 1).",
)
PREFER_OPTION = click.option(
    "--prefer",
    type=click.Choice(("data", "base")),
    default=None,
    help="When the files' server contradicts the base scenario's (engine, model, "
    "tensor-parallel size, num_steps): write the data's values, or keep the base's. "
    "Without it such a base is refused.",
)

LOAD_SWEEP_OPTION = click.option(
    "--load-sweep",
    "load_sweeps",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Runs at several concurrencies or request rates (repeatable; vllm bench serve JSON, "
    "sglang.bench_serving / bench_one_batch / bench_speculative JSONL, trtllm-bench "
    "--report_json (one a concurrency), guidellm report JSON): fits the batched terms "
    "(serving.host_us_per_request, serving.kernel_slope) to their decode time per token after "
    "the batch-1 fit, and records the runs in the written scenario "
    "([[serving.calibrated_on]]): the serving commands' intervals are then conditioned on "
    "them (docs/load-calibration.md).",
)


@click.command("calibrate")
@click.option(
    "--scenario",
    "base_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Base scenario: values the data cannot determine are kept from it. Without it, "
    "print what the files hold (import-only, nothing fitted).",
)
@set_option
@BASELINE_OPTION
@POINT_OPTION
@VLLM_METRICS_OPTION
@click.option(
    "--vllm-metrics-before",
    type=click.Path(dir_okay=False),
    help="An earlier scrape: counters are taken as --vllm-metrics minus this one.",
)
@click.option(
    "--metrics-batch1",
    is_flag=True,
    help="The scrape's traffic ran one request at a time: its mean engine-step time "
    "(vllm:inter_token_latency_seconds, or the deprecated vllm:time_per_output_token_seconds, "
    "both per step) is the cycle time, giving a tok/s figure.",
)
@VLLM_BENCH_OPTION
@SGLANG_BENCH_OPTION
@TRTLLM_BENCH_OPTION
@SGLANG_LOG_OPTION
@click.option(
    "--sglang-server-args",
    type=click.Path(dir_okay=False),
    help="An SGLang log with the start-up server_args=ServerArgs(...) line (gives k).",
)
@click.option(
    "--timing-run", "timing_runs", multiple=True, type=click.Path(dir_okay=False),
    help=TIMING_RUN_HELP,
)  # fmt: skip
@click.option(
    "--num-steps",
    type=click.IntRange(0, 64),
    help="num_steps of the SGLang log run (default: server_args, else implied by the log, "
    "else the base).",
)
@REL_ERROR_OPTION
@click.option(
    "--fit",
    "fit",
    default=None,
    help="Timing fields to fit, in priority order (earlier wins when the data cannot "
    f"separate two). Default: {','.join(DEFAULT_TIMING_FIT)}; "
    f"{','.join(TABLE_TIMING_FIT)} when the base derives its verify pass.",
)
@click.option(
    "--acceptance",
    type=click.Choice(ACCEPTANCE_MODELS),
    default="auto",
    show_default=True,
    help="Acceptance model: one alpha or per-position rates (auto: per_position "
    "with vLLM per-position counters, else alpha).",
)
@PREFER_OPTION
@click.option(
    "--out",
    type=click.Path(),
    callback=output_file_checked,
    help="Write the calibrated scenario here (checked before the fit).",
)
@LOAD_SWEEP_OPTION
@PER_REQUEST_OPTION
@PER_REQUEST_FORMAT_OPTION
@click.option("--quiet", "-q", is_flag=True, help="No 'wrote FILE' line.")
@verbose_option
@json_option
def calibrate_command(
    base_path: str | None,
    sets: tuple[str, ...],
    baseline_tok_s: float | None,
    points: tuple[str, ...],
    vllm_metrics: str | None,
    vllm_metrics_before: str | None,
    metrics_batch1: bool,
    vllm_bench: tuple[str, ...],
    sglang_bench: tuple[str, ...],
    trtllm_bench: tuple[str, ...],
    sglang_log: str | None,
    sglang_server_args: str | None,
    timing_runs: tuple[str, ...],
    num_steps: int | None,
    rel_error: float,
    fit: str | None,
    acceptance: str,
    prefer: str | None,
    out: str | None,
    load_sweeps: tuple[str, ...],
    per_request: tuple[str, ...],
    per_request_format: str,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Fit timings and acceptance to measurements; report them and write a scenario."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from sim.calibration.inputs import CalibrationInputs
    from sim.calibration.run import run_calibration
    from sim.errors import SpecsimError
    from sim.files import atomic_write_text, read_bounded_text
    from sim.report.calibrate import (
        calibrated_toml,
        format_calibration,
        format_imported,
        kept_origins,
    )
    from sim.scenario.load import MAX_SCENARIO_BYTES, load_scenario
    from sim.scenario.toml_comments import value_comments
    from sim.studies.grid import split_list

    if not MIN_REL_ERROR <= rel_error < 1.0:  # also refuses nan
        raise SpecsimError(
            f"must be in [{MIN_REL_ERROR:g}, 1), got {rel_error:g}", source="--rel-error"
        )
    if vllm_metrics_before and not vllm_metrics:
        raise SpecsimError("needs --vllm-metrics", source="--vllm-metrics-before")
    if metrics_batch1 and not vllm_metrics:
        raise SpecsimError("needs --vllm-metrics", source="--metrics-batch1")
    if base_path is None:
        for name, given in (("--out", out), ("--set", sets), ("--fit", fit)):
            if given:
                raise SpecsimError("needs --scenario (import-only mode fits nothing)", source=name)
    base = None
    base_text = None
    if base_path:
        # read once: the scenario and, for --out, the base file's own comments on its values
        base_text = read_bounded_text(Path(base_path), limit=MAX_SCENARIO_BYTES)
        base = load_scenario(base_path, sets, text=base_text)
        bind_file(base, base_path, sets)  # what the scenario means: the hardware model checks it
    fields = None
    if fit is not None:
        fields = [f.removeprefix("timing.") for f in split_list(fit, source="--fit")]
        if not fields:
            raise SpecsimError("name at least one timing field", source="--fit")
    inputs = CalibrationInputs.from_options(click.get_current_context().params)
    run = run_calibration(inputs, base, fit_timing=fields, acceptance=acceptance, prefer=prefer)
    if run.calibration is None:
        if as_json:
            echo_document("import", run.as_dict())
        else:
            click.echo(format_imported(run.as_dict(), verbose))
        return
    if out:
        origins = None
        if base is not None and base_text is not None:  # the base file's own comments
            stated = value_comments(base_text)
            origins = kept_origins(stated, base, run.calibration.scenario)
        text = calibrated_toml(
            run.calibration,
            base_path or "",
            sets=sets,
            base_origins=origins,
            base_name=Path(base_path).name if base_path else None,
        )
        atomic_write_text(out, text)
    if as_json:
        echo_document("calibrate", {**run.as_dict(), "out": out})
        return
    # a load sweep's terms follow: the batch-1 fit's kept values and notes take a line each
    click.echo(format_calibration(run.calibration, verbose, compact=run.load is not None))
    if run.load is not None:
        # lazy: the load-sweep report only when a sweep was given (start-up)
        from sim.report.load_fit import format_load_fit

        click.echo(format_load_fit(run.load, verbose))
    if out and not quiet:
        click.echo(f"wrote {out}")
