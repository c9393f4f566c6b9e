"""``specsim sweep``: a cartesian grid of scenario overrides, resumable, in parallel."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click

from sim.cli.options import (
    bind_file,
    echo_json,
    executor_options,
    format_option,
    json_option,
    monte_carlo_options,
    output_dir_checked,
    plot_option,
    quiet_option,
    scenario_argument,
    set_option,
    target_option,
    targets_or_scenario,
    workers_option,
)
from sim.cli.progress import ProgressBar


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """``--shard I/N`` as (I, N), 1 <= I <= N; click's usage error (exit 2) otherwise."""
    if value is None:
        return None
    i_text, sep, n_text = value.partition("/")
    try:
        i, n = int(i_text), int(n_text)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise click.BadParameter(f"{value!r}: expected I/N with 1 <= I <= N", param_hint="--shard")
    return i, n


@click.command()
@scenario_argument
@set_option
@click.option(
    "--grid",
    "grids",
    multiple=True,
    required=True,
    metavar="KEY=VALUES",
    help="A swept field: a list (nvlink4,pcie-gen4 or 0.6,0.7) or START:STOP[:STEP] "
    "(inclusive). Repeat for more fields; the sweep is their cartesian product.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=str),
    callback=output_dir_checked,
    help="Directory for sweep.csv, sweep.json and the per-point store (resumable).",
)
@workers_option("grid points (local executor)")
@executor_options
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    callback=lambda ctx, param, value: parse_shard(value),
    help="Only the grid's points I, I+N, I+2N, ... (1 <= I <= N): one job of N writing "
    "into the same --out (batch schedulers); the tables are complete once every shard "
    "has finished.",
)
@target_option
@monte_carlo_options
@quiet_option
@json_option
@plot_option
@format_option
def sweep(
    scenario: str,
    sets: tuple[str, ...],
    grids: tuple[str, ...],
    out_dir: str,
    workers: int,
    executor: str,
    scheduler: str | None,
    shard: tuple[int, int] | None,
    targets: tuple[float, ...],
    engine: str,
    fidelity: str,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    quiet: bool,
    as_json: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Run the scenario over a grid of overrides; re-running resumes a stopped sweep."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.parallel import close_executor, make_executor
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings
    from sim.studies.grid import expand_grid, parse_grid
    from sim.studies.sweep import run_sweep

    scn = load_scenario(scenario, sets, sample_settings(replications, requests, seed))
    bind_file(scn, scenario, sets)  # what the scenario means: the hardware model checks it
    axes = [parse_grid(g) for g in grids]
    total = len(expand_grid(axes))
    if shard is not None:
        total = len(range(shard[0] - 1, total, shard[1]))
    run = make_executor(executor, workers=workers, scheduler=scheduler)
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        bar(done, total)

    owner = os.getpid()

    def terminate(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked pool worker inherited this handler: die quietly
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt  # SIGTERM: stop like Ctrl-C (finished points kept, tables written)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with ProgressBar(enabled=not quiet) as bar:
            outcome = run_sweep(
                scn,
                axes,
                out_dir,
                engine=engine,
                fidelity=fidelity,
                targets=targets_or_scenario(targets, scn),
                executor=run,
                progress=advance,
                source=scenario,
                base_dir=str(Path(scenario).resolve().parent),
                shard=shard,
            )
    except KeyboardInterrupt:
        click.echo(
            f"specsim: interrupted: finished points are kept in {out_dir}; run the same "
            "command again to compute only the missing ones",
            err=True,
        )
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        close_executor(run)
    from sim.cli.plot import read_document  # lazy: start-up

    doc = read_document(out_dir)
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.report.figures import figures_for

        echo_written(save_figures(figures_for(doc), plot_dir, fmt), quiet)
    if as_json:
        echo_json({**doc, "computed": outcome.computed, "reused": outcome.reused})
        return
    from sim.report.sweep import render_sweep  # lazy: start-up

    click.echo(render_sweep(outcome, out_dir))
