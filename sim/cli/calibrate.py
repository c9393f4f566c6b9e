"""``specsim calibrate``: fit a scenario to measured figures, vLLM metrics or an SGLang log."""

from __future__ import annotations

import click

from sim.calibration.settings import ACCEPTANCE_MODELS, DEFAULT_TIMING_FIT, TABLE_TIMING_FIT
from sim.cli.options import echo_document, json_option, output_file_checked, set_option


@click.command("calibrate")
@click.option(
    "--scenario",
    "base_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Base scenario: values the data cannot determine are kept from it.",
)
@set_option
@click.option("--baseline-tok-s", type=float, help="Measured plain-decoding tok/s (batch 1).")
@click.option(
    "--point",
    "points",
    multiple=True,
    metavar="K:AL:TOKS",
    help="Measured speculative tok/s at num_steps K with accept length AL "
    "(repeat for several num_steps).",
)
@click.option(
    "--vllm-metrics",
    type=click.Path(dir_okay=False),
    help="A vLLM /metrics scrape (Prometheus text).",
)
@click.option(
    "--vllm-metrics-before",
    type=click.Path(dir_okay=False),
    help="An earlier scrape: counters are taken as --vllm-metrics minus this one.",
)
@click.option(
    "--sglang-log",
    type=click.Path(dir_okay=False),
    help="An SGLang server log with 'Decode batch' lines.",
)
@click.option(
    "--num-steps",
    type=int,
    help="num_steps of the SGLang log run (default: implied by the log, else base).",
)
@click.option(
    "--rel-error",
    type=float,
    default=0.02,
    show_default=True,
    help="Relative standard error assumed for each figure given as an option.",
)
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
@click.option(
    "--out",
    type=click.Path(),
    callback=output_file_checked,
    help="Write the calibrated scenario here (checked before the fit).",
)
@json_option
def calibrate_command(
    base_path: str,
    sets: tuple[str, ...],
    baseline_tok_s: float | None,
    points: tuple[str, ...],
    vllm_metrics: str | None,
    vllm_metrics_before: str | None,
    sglang_log: str | None,
    num_steps: int | None,
    rel_error: float,
    fit: str | None,
    acceptance: str,
    out: str | None,
    as_json: bool,
) -> None:
    """Fit timings and acceptance to measurements; report them and write a scenario."""
    # lazy: the fitting stack is imported when the command runs, not for --help (start-up)
    from sim.calibration.calibrate import calibrate
    from sim.calibration.importers.sglang_log import read_sglang_log
    from sim.calibration.importers.vllm_metrics import read_vllm_metrics
    from sim.calibration.measurements import (
        Measurements,
        baseline_measurement,
        parse_point,
        sglang_measurement,
        vllm_measurement,
    )
    from sim.errors import SpecsimError
    from sim.files import atomic_write_text
    from sim.report.calibrate import calibrated_toml, format_calibration
    from sim.scenario.load import load_scenario

    if not 0.0 < rel_error < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {rel_error}", source="--rel-error")
    if vllm_metrics_before and not vllm_metrics:
        raise SpecsimError("needs --vllm-metrics", source="--vllm-metrics-before")
    base = load_scenario(base_path, sets)
    data = Measurements()
    if baseline_tok_s is not None:
        data += baseline_measurement(baseline_tok_s, rel_error, "--baseline-tok-s")
    for text in points:
        data += parse_point(text, rel_error)
    if vllm_metrics:
        data += vllm_measurement(read_vllm_metrics(vllm_metrics, vllm_metrics_before))
    if sglang_log:
        log = read_sglang_log(sglang_log)
        data += sglang_measurement(log, num_steps, rel_error, default_num_steps=base.num_steps)
    fields = None
    if fit is not None:
        fields = [f.strip().removeprefix("timing.") for f in fit.split(",") if f.strip()]
        if not fields:
            raise SpecsimError("name at least one timing field", source="--fit")
    result = calibrate(base, data, fit_timing=fields, acceptance=acceptance)
    if out:
        text = calibrated_toml(result, base_path)
        atomic_write_text(out, text)
    if as_json:
        echo_document("calibrate", {**result.as_dict(), "out": out})
        return
    click.echo(format_calibration(result))
    if out:
        click.echo(f"wrote {out}")
