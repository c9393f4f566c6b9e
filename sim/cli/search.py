"""``specsim search``: the acceptance (or any lever) that reaches each tok/s target."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from sim.hardware.passes import PassMemo
    from sim.scenario.schema import Scenario


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
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings

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
        _check_solve_options(topks, num_steps, concurrency, rate)
        doc, text = _solve(scn, solve_field, tgts, quantile, engine, fidelity, memo, verbose)
    elif topks is not None:
        _check_tree_options(quantile, concurrency, rate)
        doc, text = _tree_search(
            scn, tgts, num_steps, topks, draft_tokens, engine, fidelity, memo, verbose
        )
    elif concurrency is not None or rate is not None:
        doc, text = _search_at_load(
            scn, tgts, num_steps, quantile, concurrency, rate, workers, scenario, verbose
        )
    else:
        doc, text = _search_acceptance(
            scn, tgts, num_steps, quantile, engine, fidelity, workers, memo, verbose
        )
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


def _check_solve_options(
    topks: str | None, num_steps: str | None, concurrency: int | None, rate: float | None
) -> None:
    """Refuse, with ``--solve``, the options of the other searches: ``--topk`` (set the
    tree with --set), ``--num-steps`` (set k with --set) and ``--concurrency``/``--rate``
    (the solve runs the batch-1 Monte Carlo)."""
    from sim.errors import SpecsimError  # lazy: start-up

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


def _solve(
    scn: Scenario,
    field: str,
    tgts: tuple[float, ...],
    quantile: float | None,
    engine: str,
    fidelity: str,
    memo: PassMemo,
    verbose: bool,
) -> tuple[dict[str, Any], str]:
    """``--solve FIELD``: the document and text of ``solve_lever``."""
    # lazy: the library is imported when a command runs (start-up)
    from sim.report.search import render_lever
    from sim.studies.solve import solve_lever

    doc = solve_lever(
        scn, field, tgts, quantile=quantile, engine=engine, fidelity=fidelity, memo=memo
    ).to_dict()
    return doc, render_lever(doc, verbose)


def _check_tree_options(
    quantile: float | None, concurrency: int | None, rate: float | None
) -> None:
    """Refuse, with ``--topk``, ``--quantile`` and a load: the tree search runs at batch 1
    on the mean."""
    from sim.errors import SpecsimError  # lazy: start-up

    if quantile is not None:
        raise SpecsimError("--quantile is not supported with --topk", source="--quantile")
    if concurrency is not None or rate is not None:
        raise SpecsimError(
            "the tree search runs at batch 1; --concurrency/--rate are for chains",
            source="--concurrency" if concurrency is not None else "--rate",
        )


def _tree_search(
    scn: Scenario,
    tgts: tuple[float, ...],
    num_steps: str | None,
    topks: str,
    draft_tokens: str | None,
    engine: str,
    fidelity: str,
    memo: PassMemo,
    verbose: bool,
) -> tuple[dict[str, Any], str]:
    """``--topk``: the document and text of ``search_trees`` over ``--num-steps`` (default
    1:16), the widths and ``--draft-tokens`` (default ``DRAFT_TOKENS``), each answer
    solved again by the Monte Carlo."""
    # lazy: the library is imported when a command runs (start-up)
    from sim.report.tree_search import render_tree_search
    from sim.studies.bisection import MonteCarloStats
    from sim.studies.tree_search import DRAFT_TOKENS, search_trees

    ks = parse_num_steps("1:16" if num_steps is None else num_steps)
    widths = parse_int_list(topks, "--topk")
    tokens = parse_int_list(draft_tokens, "--draft-tokens") if draft_tokens else DRAFT_TOKENS
    doc = search_trees(
        scn, tgts, ks, widths, tokens, simulate=MonteCarloStats(engine, fidelity), memo=memo
    ).to_dict()
    return doc, render_tree_search(doc, verbose)


def _search_at_load(
    scn: Scenario,
    tgts: tuple[float, ...],
    num_steps: str | None,
    quantile: float | None,
    concurrency: int | None,
    rate: float | None,
    workers: int,
    scenario: str,
    verbose: bool,
) -> tuple[dict[str, Any], str]:
    """``--concurrency C`` or ``--rate R`` (not both): the document and text of
    ``search_at_load`` over ``--num-steps`` (default 1:8), the scenario's own folder the
    base of its relative paths."""
    # lazy: the library is imported when a command runs (start-up)
    from sim.report.search import render_search
    from sim.studies.serving.paired_metrics import Load
    from sim.studies.serving.search import search_at_load

    if concurrency is not None and rate is not None:
        raise click.UsageError("give at most one of --concurrency, --rate")
    if concurrency is not None:
        load = Load("concurrency", concurrency)
    elif rate is not None:  # one of the two is given (the caller's condition)
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
    return doc, render_search(doc, verbose)


def _search_acceptance(
    scn: Scenario,
    tgts: tuple[float, ...],
    num_steps: str | None,
    quantile: float | None,
    engine: str,
    fidelity: str,
    workers: int,
    memo: PassMemo,
    verbose: bool,
) -> tuple[dict[str, Any], str]:
    """The batch-1 acceptance search over ``--num-steps`` (default 1:16): the document and
    text of ``search_acceptance``."""
    # lazy: the library is imported when a command runs (start-up)
    from sim.report.search import render_search
    from sim.studies.search import search_acceptance

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
    return doc, render_search(doc, verbose)
