"""``specsim calibrate``: fit a scenario to measured figures and the files servers write.

Inputs (any mix): ``--baseline-tok-s``/``--point`` figures; a vLLM ``/metrics`` scrape;
``vllm bench serve`` result JSON; SGLang ``bench_speculative`` JSONL; an SGLang log
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

from dataclasses import replace

import click

from sim.calibration.settings import ACCEPTANCE_MODELS, DEFAULT_TIMING_FIT, TABLE_TIMING_FIT
from sim.cli.options import (
    FiniteFloatRange,
    echo_document,
    json_option,
    output_file_checked,
    set_option,
)

#: Smallest relative error of a figure: a part per million is beyond any benchmark, and
#: below ~1e-20 the weighted residuals overflow the least-squares fit (a traceback at 1e-160).
MIN_REL_ERROR = 1e-6

TIMING_RUN_HELP = (
    "A run with synthetic or forced acceptance (repeatable; vLLM bench serve JSON, SGLang "
    "bench_speculative JSONL or a vLLM /metrics scrape of batch-1 traffic): fits the timings "
    "only. vLLM: --speculative-config with rejection_sample_method='synthetic' and "
    "synthetic_acceptance_length = L (bonus included) or synthetic_acceptance_rates; SGLang: "
    "SGLANG_SIMULATE_ACC_LEN=L (bonus included, METHOD=match-expected keeps the mean); "
    "TensorRT-LLM: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS = L - 1 (bonus excluded; give "
    "that run as --point K:L:TOKS). With a timing run, the other files fit acceptance only."
)


PER_REQUEST_OPTION = click.option(
    "--per-request",
    "per_request",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Per-request speculative counts (repeatable): SGLang /generate responses or "
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
VLLM_BENCH_OPTION = click.option(
    "--vllm-bench",
    "vllm_bench",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="vllm bench serve --save-result JSON (repeatable; tok/s used at max_concurrency 1).",
)
SGLANG_BENCH_OPTION = click.option(
    "--sglang-bench",
    "sglang_bench",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="SGLang bench_speculative.py --output JSONL (batch_size 1 records) or "
    "sglang.bench_one_batch --result-filename JSONL (the baseline); repeatable.",
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
@click.option(
    "--load-sweep",
    "load_sweeps",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Runs at several concurrencies or request rates (repeatable; vllm bench serve JSON, "
    "sglang.bench_serving / bench_one_batch / bench_speculative JSONL, guidellm report "
    "JSON): fits the batched terms (serving.host_us_per_request, serving.kernel_slope) to "
    "their decode time per token after the batch-1 fit.",
)
@PER_REQUEST_OPTION
@PER_REQUEST_FORMAT_OPTION
@click.option("--quiet", "-q", is_flag=True, help="No 'wrote FILE' line.")
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
    as_json: bool,
) -> None:
    """Fit timings and acceptance to measurements; report them and write a scenario."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from sim.binding.bound import bind
    from sim.calibration.calibrate import calibrate
    from sim.calibration.measurements import Measurements
    from sim.calibration.spread import per_request_measurement
    from sim.errors import SpecsimError
    from sim.files import atomic_write_text
    from sim.report.calibrate import calibrated_toml, format_calibration, format_imported
    from sim.scenario.load import load_scenario
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
    base = load_scenario(base_path, sets) if base_path else None
    if base is not None:
        bind(base)  # what the scenario means: the hardware model checks it here
    fields = None
    if fit is not None:
        fields = [f.removeprefix("timing.") for f in split_list(fit, source="--fit")]
        if not fields:
            raise SpecsimError("name at least one timing field", source="--fit")
    real = _real_runs(
        baseline_tok_s, points, vllm_metrics, vllm_metrics_before, metrics_batch1, vllm_bench,
        sglang_bench, sglang_log, sglang_server_args, num_steps, rel_error,
        base.num_steps if base is not None else None,
    )  # fmt: skip
    spread_files = _per_request_files(
        per_request, per_request_format, num_steps if num_steps is not None else (
            base.num_steps if base is not None else None)
    )  # fmt: skip
    for file in spread_files:
        real += per_request_measurement(file)
    data: Measurements = real
    if timing_runs:
        timing = Measurements()
        for path in timing_runs:
            timing += _timing_run(path, rel_error)
        data = timing.timing_only() + real.acceptance_only()
        data += Measurements(
            notes=(
                "two-stage: timings fitted to the synthetic-acceptance runs only; acceptance "
                "to the real-drafter runs, whose tok/s are held out as checks",
            )
        )
    if base is None:
        if data.empty and not data.imported:
            raise SpecsimError("nothing to read: give a file or a figure", source="calibrate")
        body = {"imported": list(data.imported), "notes": list(data.notes), **_summary(data)}
        if spread_files:
            body["per_request_spread"] = _fit_files(spread_files)[0].as_dict()
        if as_json:
            echo_document("import", body)
        else:
            click.echo(format_imported(body))
        return
    result = calibrate(base, data, fit_timing=fields, acceptance=acceptance, prefer=prefer)
    spread = None
    if spread_files:
        spread, result = _with_spread(result, spread_files)
    load = _load_fit(result, load_sweeps) if load_sweeps else None
    if load is not None:
        result = replace(result, scenario=load.scenario)
    if out:
        atomic_write_text(out, calibrated_toml(result, base_path or ""))
    if as_json:
        extra = {"load_fit": load.as_dict()} if load is not None else {}
        if spread is not None:
            extra["per_request_spread"] = spread.as_dict()
        echo_document("calibrate", {**result.as_dict(), **extra, "out": out})
        return
    click.echo(format_calibration(result))
    if load is not None:
        # lazy: the load-sweep report only when a sweep was given (start-up)
        from sim.report.load_fit import format_load_fit

        click.echo(format_load_fit(load))
    if out and not quiet:
        click.echo(f"wrote {out}")


def _per_request_files(paths, fmt, num_steps):
    """The per-request files read (sim/calibration/importers/per_request.py)."""
    if not paths:
        return []
    # lazy: the reader only when a file is given (start-up)
    from sim.calibration.importers.per_request import read_per_request

    return [read_per_request(p, fmt, num_steps) for p in paths]


def _with_spread(result, files):
    """The per-request spread of all files' requests, fitted and written into ``result``."""
    # lazy: the fit only when a per-request file is given (start-up)
    from sim.calibration.spread import with_spread

    fit, source = _fit_files(files)
    return fit, with_spread(result, fit, source)


def _fit_files(files):
    """The per-request spread fitted to all files' requests, and their names."""
    # lazy: the fit only when a per-request file is given (start-up)
    from sim.calibration.spread_fit import fit_spread
    from sim.errors import SpecsimError

    ks = {f.num_steps for f in files}
    source = ", ".join(f.source for f in files)
    if len(ks) > 1:
        raise SpecsimError(
            f"the files ran at num_steps {sorted(ks)}: one spread is fitted at one num_steps",
            source="--per-request",
        )
    requests = [r for f in files for r in f.requests]
    return fit_spread(requests, ks.pop(), source=source), source


def _load_fit(result, paths):
    """The load-sweep fit of the batch-1 calibrated scenario (sim/calibration/load_fit.py)."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from sim.calibration.load_fit import fit_load_sweep
    from sim.calibration.load_sweep import read_load_sweep

    points = [p for path in paths for p in read_load_sweep(path)]
    return fit_load_sweep(result.scenario, points, source="--load-sweep")


def _real_runs(
    baseline_tok_s, points, vllm_metrics, vllm_metrics_before, metrics_batch1, vllm_bench,
    sglang_bench, sglang_log, sglang_server_args, num_steps, rel_error, base_num_steps,
):  # fmt: skip
    """Measurements of the real drafter's runs (and of figures given as options)."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from dataclasses import asdict

    from sim.calibration.imported import (
        server_args_measurement,
        sglang_bench_measurement,
        sglang_one_batch_measurement,
        vllm_bench_measurement,
        vllm_latency_measurement,
    )
    from sim.calibration.importers.files import read_text
    from sim.calibration.importers.sglang_bench import (
        is_one_batch,
        parse_sglang_bench,
        parse_sglang_one_batch,
    )
    from sim.calibration.importers.sglang_log import read_sglang_log
    from sim.calibration.importers.sglang_server_args import read_sglang_server_args
    from sim.calibration.importers.vllm_bench import read_vllm_bench
    from sim.calibration.importers.vllm_metrics import read_vllm_latency, read_vllm_metrics
    from sim.calibration.measurements import (
        Measurements,
        baseline_measurement,
        parse_point,
        sglang_measurement,
        vllm_measurement,
    )
    from sim.errors import SpecsimError

    data = Measurements()
    if baseline_tok_s is not None:
        data += baseline_measurement(baseline_tok_s, rel_error, "--baseline-tok-s")
    for text in points:
        data += parse_point(text, rel_error)
    if vllm_metrics:
        counters = read_vllm_metrics(vllm_metrics, vllm_metrics_before)
        latency = read_vllm_latency(vllm_metrics, vllm_metrics_before)
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
        data += vllm_measurement(counters) + Measurements(imported=(figures,))
        if metrics_batch1:
            data += vllm_latency_measurement(latency, counters, rel_error)
    for path in vllm_bench:
        data += vllm_bench_measurement(read_vllm_bench(path), rel_error)
    for path in sglang_bench:
        text = read_text(path)
        if is_one_batch(text):
            records = parse_sglang_one_batch(text, source=path)
            data += sglang_one_batch_measurement(records, path, rel_error)
        else:
            data += sglang_bench_measurement(parse_sglang_bench(text, source=path), rel_error)
    log_k = num_steps
    if sglang_server_args:
        args = read_sglang_server_args(sglang_server_args)
        data += server_args_measurement(args)
        if log_k is None and args.num_steps:
            log_k = args.num_steps
    if sglang_log:
        log = read_sglang_log(sglang_log)
        default_k = base_num_steps if base_num_steps is not None else log_k
        if default_k is None and log.implied_num_draft_tokens is None:
            raise SpecsimError(
                "num_steps unknown: give --num-steps, --sglang-server-args or --scenario",
                source=sglang_log,
            )
        data += sglang_measurement(log, log_k, rel_error, default_num_steps=default_k or 1)
        data += Measurements(
            imported=(
                {
                    "format": "SGLang Decode batch log",
                    "source": log.source,
                    "lines": len(log.lines),
                    "skipped": log.skipped,
                    "accept_length_mean": log.accept_length_mean,
                    "accept_length_std": log.accept_length_std,
                    "single_request_tok_s": log.single_request_tok_s,
                    "cuda_graph": log.cuda_graph,
                    "implied_num_draft_tokens": log.implied_num_draft_tokens,
                },
            )
        )
    return data


def _timing_run(path: str, rel_error: float):
    """A synthetic-acceptance run, its format told by its content."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from sim.calibration.imported import (
        sglang_bench_measurement,
        vllm_bench_measurement,
        vllm_latency_measurement,
    )
    from sim.calibration.importers.files import read_text
    from sim.calibration.importers.sglang_bench import parse_sglang_bench
    from sim.calibration.importers.vllm_bench import parse_vllm_bench
    from sim.calibration.importers.vllm_metrics import (
        VllmLatency,
        latency_from_text,
        parse_vllm_metrics,
    )
    from sim.errors import SpecsimError

    text = read_text(path)
    head = text.lstrip()[:1]
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
    return vllm_latency_measurement(VllmLatency(h["step"], h["request_tpot"], path), counters,
                                    rel_error)  # fmt: skip


def _summary(data) -> dict:
    """The figures the files give, in the calibrate vocabulary (import-only output)."""
    return {
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
