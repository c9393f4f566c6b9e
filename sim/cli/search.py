"""``specsim search``: the acceptance (or any lever) that reaches each tok/s target."""

from __future__ import annotations

from pathlib import Path

import click

from sim.cli.options import (
    FiniteFloatRange,
    bind_file,
    echo_document,
    format_option,
    json_option,
    list_values,
    monte_carlo_options,
    plot_option,
    quiet_option,
    scenario_argument,
    set_option,
    target_option,
    targets_or_scenario,
    verbose_option,
    workers_option,
)


def parse_num_steps(text: str) -> list[int]:
    """``1:16``, ``4`` or ``2,4,8`` -> draft lengths."""
    from sim.errors import SpecsimError  # lazy: start-up

    if not text.strip():
        raise SpecsimError("empty: give START:STOP, a list 2,4,8 or one k", source="--num-steps")
    values = list_values(text, "--num-steps")
    top = 64  # sim.scenario.sections.bounds.MAX_NUM_STEPS (not imported: start-up)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= top for v in values):
        raise SpecsimError(f"expected integers 1 to {top}, got {text!r}", source="--num-steps")
    return sorted(values)


def parse_int_list(text: str, option: str) -> list[int]:
    """``2,4,8`` or ``1:8`` -> integers >= 1 (SpecsimError naming ``option`` otherwise)."""
    from sim.errors import SpecsimError  # lazy: start-up

    values = list_values(text, option)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise SpecsimError(f"expected integers >= 1, got {text!r}", source=option)
    return sorted(values)


@click.command()
@scenario_argument
@set_option
@target_option
@click.option(
    "--num-steps",
    "num_steps",
    default=None,
    metavar="RANGE",
    help="Draft lengths k to search: START:STOP, a list 2,4,8 or one k [default: 1:16].",
)
@click.option(
    "--topk",
    "topks",
    default=None,
    metavar="LIST",
    help="Chain or tree: search SGLang trees of these topk (e.g. 1,2,4,8; 1 = chain) over "
    "--num-steps and --draft-tokens; needs acceptance.rank_rates or rank_profile.",
)
@click.option(
    "--draft-tokens",
    "draft_tokens",
    default=None,
    metavar="LIST",
    help="num_draft_tokens tried for trees with --topk [default: 4,6,8,10,12,16,24,32,48,64].",
)
@click.option(
    "--quantile",
    type=FiniteFloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=None,
    help="Service-level form: lowest rate at which this fraction of requests reach the target.",
)
@click.option(
    "--solve",
    "solve_field",
    default=None,
    metavar="FIELD",
    help="Solve for another monotone numeric field instead (e.g. timing.verify_ms).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Per-user tok/s simulated by the serving engine with C concurrent users.",
)
@click.option(
    "--rate",
    type=FiniteFloatRange(min=1e-6, max=1e7),
    default=None,
    metavar="REQ_PER_S",
    help="Per-user tok/s simulated by the serving engine under Poisson arrivals.",
)
@monte_carlo_options
@workers_option("draft lengths")
@quiet_option
@verbose_option
@json_option
@plot_option
@format_option
def search(
    scenario: str,
    sets: tuple[str, ...],
    targets: tuple[float, ...],
    num_steps: str | None,
    topks: str | None,
    draft_tokens: str | None,
    quantile: float | None,
    solve_field: str | None,
    concurrency: int | None,
    rate: float | None,
    engine: str,
    fidelity: str,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    workers: int,
    quiet: bool,
    verbose: bool,
    as_json: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Lowest acceptance rate (per target and per k) reaching each tok/s target.

    Brackets with the closed forms, refines by Monte Carlo bisection on common random
    numbers and reports a 95% interval from the Monte Carlo noise.
    """
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.documents import plotted
    from sim.errors import SpecsimError
    from sim.report.search import render_lever, render_search
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings
    from sim.studies.search import search_acceptance
    from sim.studies.serving.paired_metrics import Load
    from sim.studies.serving.search import search_at_load
    from sim.studies.solve import solve_lever

    scn = load_scenario(scenario, sets, sample_settings(replications, requests, seed))
    # what the scenario means: the hardware model checks it; its answers serve the search
    memo = bind_file(scn, scenario, sets).hardware.memo
    tgts = targets_or_scenario(targets, scn)
    if draft_tokens is not None and (topks is None or solve_field is not None):
        raise SpecsimError(
            "is for the tree search (--topk); a chain's draft is --num-steps long",
            source="--draft-tokens",
        )
    kind = "solve" if solve_field is not None else "tree-search" if topks else "search"
    if plot_dir:  # before the run: a document without figures would write nothing
        plotted(kind)
    if solve_field is not None:
        if topks is not None:
            raise SpecsimError(
                "is for the tree search; with --solve set the tree with --set speculation.topk=K",
                source="--topk",
            )
        if num_steps is not None:
            raise SpecsimError(
                "--num-steps is for the acceptance search; with --solve set k with "
                "--set speculation.num_steps=K",
                source="--num-steps",
            )
        if concurrency is not None or rate is not None:
            raise SpecsimError(
                "--solve runs the batch-1 Monte Carlo; --concurrency/--rate are for the "
                "acceptance search",
                source="--concurrency" if concurrency is not None else "--rate",
            )
        doc = solve_lever(
            scn, solve_field, tgts, quantile=quantile, engine=engine, fidelity=fidelity, memo=memo
        ).to_dict()
        text = render_lever(doc, verbose)
    elif topks is not None:
        # lazy: the library is imported when a command runs (start-up)
        from sim.report.tree_search import render_tree_search
        from sim.studies.bisection import MonteCarloStats
        from sim.studies.tree_search import DRAFT_TOKENS, search_trees

        if quantile is not None:
            raise SpecsimError("--quantile is not supported with --topk", source="--quantile")
        if concurrency is not None or rate is not None:
            raise SpecsimError(
                "the tree search runs at batch 1; --concurrency/--rate are for chains",
                source="--concurrency" if concurrency is not None else "--rate",
            )
        ks = parse_num_steps("1:16" if num_steps is None else num_steps)
        widths = parse_int_list(topks, "--topk")
        tokens = parse_int_list(draft_tokens, "--draft-tokens") if draft_tokens else DRAFT_TOKENS
        doc = search_trees(
            scn, tgts, ks, widths, tokens, simulate=MonteCarloStats(engine, fidelity), memo=memo
        ).to_dict()
        text = render_tree_search(doc, verbose)
    elif concurrency is not None or rate is not None:
        if concurrency is not None and rate is not None:
            raise click.UsageError("give at most one of --concurrency, --rate")
        if concurrency is not None:
            load = Load("concurrency", concurrency)
        elif rate is not None:  # one of the two is given (the branch's condition)
            load = Load("rate", rate)
        ks = parse_num_steps(num_steps or "1:8")
        doc = search_at_load(
            scn,
            tgts,
            ks,
            load,
            quantile=quantile,
            workers=workers,
            base_dir=Path(scenario).resolve().parent,
        ).to_dict()
        text = render_search(doc, verbose)
    else:
        ks = parse_num_steps("1:16" if num_steps is None else num_steps)
        doc = search_acceptance(
            scn,
            tgts,
            ks,
            quantile=quantile,
            engine=engine,
            fidelity=fidelity,
            workers=workers,
            memo=memo,
        ).to_dict()
        text = render_search(doc, verbose)
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.documents import document
        from sim.report.figures import figures_for

        echo_written(save_figures(figures_for(document(kind, doc)), plot_dir, fmt), quiet)
    if as_json:
        echo_document(kind, doc)
    else:
        click.echo(text)
