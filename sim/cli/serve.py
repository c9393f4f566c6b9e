"""``specsim serve``: the scenario's server under load, speculation on and off side by side."""

from __future__ import annotations

import math
import os
from pathlib import Path

import click

from sim.cli.options import (
    FiniteFloatRange,
    bind_file,
    format_option,
    json_option,
    plot_option,
    quiet_option,
    replications_option,
    requests_option,
    scenario_argument,
    seed_option,
    set_option,
    verbose_option,
    workers_option,
)
from sim.cli.progress import ProgressBar
from sim.cli.serving_options import draws_option, emit


def parse_window(text: str) -> list[float]:
    """``START:END`` seconds -> [start, end] (SpecsimError naming --trace-window)."""
    from sim.errors import SpecsimError  # lazy: start-up

    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, end = float(parts[0]), float(parts[1])
    except ValueError:
        raise SpecsimError(
            f"expected START:END in seconds, got {text[:60]!r}", source="--trace-window"
        ) from None
    if not (math.isfinite(start) and math.isfinite(end)) or start < 0 or end <= start:
        raise SpecsimError(
            f"need 0 <= START < END, finite, got {text[:60]!r}", source="--trace-window"
        )
    return [start, end]


@click.command()
@scenario_argument
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Closed loop of C users, each sending its next request when the last is answered "
    "[default: serving.concurrency].",
)
@click.option(
    "--rate",
    type=FiniteFloatRange(min=1e-6, max=1e7),
    default=None,
    metavar="REQ_PER_S",
    help="Poisson arrivals at this rate [default: serving.rate_per_s].",
)
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    metavar="FILE",
    help="Replay a trace: specsim CSV (arrival_s, input_tokens, output_tokens[, class]), "
    "Azure LLM inference CSV, BurstGPT CSV or Mooncake JSONL (told from the file).",
)
@click.option(
    "--trace-format",
    type=click.Choice(("auto", "specsim", "azure", "burstgpt", "mooncake")),
    default=None,
    help="The trace's format [default: serving.trace_format, auto: told from the file].",
)
@click.option(
    "--rate-scale",
    type=FiniteFloatRange(min=1e-6, max=1e6),
    default=None,
    metavar="X",
    help="Replay the trace X times as fast (arrival times / X) [default: 1].",
)
@click.option(
    "--trace-window",
    default=None,
    metavar="START:END",
    help="Replay only the requests arriving in [START, END) seconds of the trace's clock.",
)
@draws_option
@set_option
@json_option
@seed_option
@requests_option
@replications_option
@workers_option("replications")
@quiet_option
@verbose_option
@plot_option
@format_option
def serve(
    scenario: str,
    concurrency: int | None,
    rate: float | None,
    trace: str | None,
    trace_format: str | None,
    rate_scale: float | None,
    trace_window: str | None,
    draws: int,
    sets: tuple[str, ...],
    as_json: bool,
    seed: int | None,
    requests: int | None,
    replications: int | None,
    workers: int,
    quiet: bool,
    verbose: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Serve the scenario under concurrency: TTFT, TPOT, ITL, per-user and aggregate tok/s,
    with speculation and without it on the same arrivals (paired speedup)."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.report.serving import render_serving, served_to_dict
    from sim.report.serving_screen import render_serving_screen
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings
    from sim.studies.serving import serve as study

    given = [
        n for n, v in (("--concurrency", concurrency), ("--rate", rate), ("--trace", trace)) if v
    ]
    if len(given) > 1:
        raise click.UsageError(
            f"give at most one of --concurrency, --rate, --trace (got {', '.join(given)})"
        )
    window = parse_window(trace_window) if trace_window else None
    sc = load_scenario(
        scenario,
        sets,
        [
            ("--concurrency", "serving.concurrency", concurrency),
            ("--rate", "serving.rate_per_s", rate),
            ("--trace", "serving.trace", os.path.abspath(trace) if trace else None),
            ("--trace-format", "serving.trace_format", trace_format),
            ("--rate-scale", "serving.trace_rate_scale", rate_scale),
            ("--trace-window", "serving.trace_window_s", window),
            *sample_settings(replications, requests, seed),
        ],
    )
    with ProgressBar(enabled=not quiet) as progress:
        served = study.serve_bound(
            bind_file(sc, scenario, sets),  # what it means, once: the hardware model checks it
            workers=workers,
            base_dir=Path(scenario).resolve().parent,
            source=scenario,
            progress=progress,
            interval_draws=draws,
        )
    body = served_to_dict(served, sc.name)
    ran = served.run is not None
    if not ran and plot_dir and not quiet:  # above what the server answers
        click.echo("no figures: the load is above what the server answers, nothing ran")
    render = render_serving if verbose else render_serving_screen
    emit(
        "serve",
        body,
        render,
        as_json=as_json,
        plot_dir=plot_dir if ran else None,
        fmt=fmt,
        quiet=quiet,
    )
