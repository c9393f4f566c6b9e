"""``specsim tree-load``: chain against tree as concurrency grows, on the same users."""

from __future__ import annotations

from pathlib import Path

import click

from sim.cli.options import (
    bind_file,
    executor_options,
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
from sim.cli.serving_options import draws_option, emit, sequential_option

#: Closed-loop concurrencies when none are given (sim.studies.serving.tree_load_runs'
#: DEFAULT_CONCURRENCIES, written out: the library is imported when a command runs).
DEFAULT_CONCURRENCIES = "1,2,4,8,16,32,64"


@click.command("tree-load")
@scenario_argument
@click.option(
    "--concurrency",
    "concurrencies",
    default=DEFAULT_CONCURRENCIES,
    show_default=True,
    metavar="C,C,...",
    help="Closed loops of C users to compare the drafts at.",
)
@click.option(
    "--tree",
    "trees",
    multiple=True,
    metavar="S/K/N",
    help="An SGLang tree num_steps/topk/num_draft_tokens, e.g. 5/4/8 (repeatable) "
    "[default: the scenario's tree].",
)
@click.option(
    "--chain",
    "chains",
    type=click.IntRange(min=1),
    multiple=True,
    metavar="K",
    help="A chain of K drafts (repeatable) [default: the scenario's num_steps].",
)
@sequential_option
@draws_option
@set_option
@json_option
@seed_option
@requests_option
@replications_option
@workers_option("replications", auto=True)
@executor_options
@quiet_option
@verbose_option
@plot_option
@format_option
def tree_load(
    scenario: str,
    concurrencies: str,
    trees: tuple[str, ...],
    chains: tuple[int, ...],
    all_replications: bool,
    draws: int,
    sets: tuple[str, ...],
    as_json: bool,
    seed: int | None,
    requests: int | None,
    replications: int | None,
    workers: int | None,
    executor: str,
    scheduler: str | None,
    quiet: bool,
    verbose: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Where a draft tree stops beating the chain as concurrency grows: plain decoding,
    each chain and each tree on the same users at every load (serving simulation), the
    paired tree / chain ratio with its 90% interval from inputs and model, the crossover
    and the best draft per load."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.cli.search import parse_int_list
    from sim.parallel import close_executor, make_executor, resolve_workers
    from sim.report.tree_load import (
        render_tree_load,
        render_tree_load_screen,
        tree_load_to_dict,
    )
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings
    from sim.studies.serving.tree_load import tree_load_study
    from sim.studies.serving.tree_load_drafts import parse_tree

    grid = parse_int_list(concurrencies, "--concurrency")
    sc = load_scenario(scenario, sets, sample_settings(replications, requests, seed))
    bind_file(sc, scenario, sets)  # what the scenario means: the hardware model checks it
    workers = resolve_workers(executor, workers)
    run = make_executor(executor, workers=workers, scheduler=scheduler)
    try:
        with ProgressBar(enabled=not quiet) as progress:
            result = tree_load_study(
                sc,
                grid,
                chains=list(chains) or None,
                trees=[parse_tree(t) for t in trees],
                workers=workers,
                executor=run,
                base_dir=Path(scenario).resolve().parent,
                source=scenario,
                progress=progress,
                draws=draws,
                sequential=not all_replications,
            )
    finally:
        close_executor(run)
    emit(
        "tree-load",
        tree_load_to_dict(result),
        render_tree_load if verbose else render_tree_load_screen,
        as_json=as_json,
        plot_dir=plot_dir,
        fmt=fmt,
        quiet=quiet,
    )
