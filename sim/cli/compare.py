"""``specsim compare``: scenarios side by side, with ratios to the first."""

from __future__ import annotations

import click

from sim.cli.options import (
    bind_file,
    echo_document,
    format_option,
    json_option,
    monte_carlo_options,
    plot_option,
    quiet_option,
    set_option,
    target_option,
    verbose_option,
    workers_option,
)
from sim.cli.progress import announce_slow_intervals


@click.command()
@click.argument(
    "scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str)
)
@set_option
@target_option
@monte_carlo_options
@workers_option("replications of each run")
@quiet_option
@verbose_option
@json_option
@plot_option
@format_option
@click.option(
    "--levers",
    is_flag=True,
    help="One SCENARIO: plain decoding (the reference), the scenario, graphing its verify, "
    "NVLink and a better drafter (alone and combined) side by side, ranked, each with its "
    "range over the hardware model's variants.",
)
def compare(
    scenarios: tuple[str, ...],
    sets: tuple[str, ...],
    targets: tuple[float, ...],
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
    levers: bool,
) -> None:
    """Baseline, speculative tok/s with CI, accept length, cycle breakdown and required
    alpha per target for each SCENARIO (--set applies to all), ratios to the first.

    The text is a first screen: the answer, what it rests on and how far it moves
    (--verbose: the full table)."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.documents import document
    from sim.report.compare import render_comparison, render_comparison_screen
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings
    from sim.studies.compare import compare_scenarios, unique_labels

    settings = sample_settings(replications, requests, seed)
    loaded = [load_scenario(p, sets, settings) for p in scenarios]
    # what each scenario means, bound once: the hardware model checks it here
    bound = [bind_file(sc, p, sets) for sc, p in zip(loaded, scenarios, strict=True)]
    entries = list(zip(unique_labels(scenarios), bound, strict=True))
    lever_doc = None
    if levers:
        from sim.errors import SpecsimError
        from sim.studies.levers import lever_scenarios, lever_table

        if len(loaded) != 1:
            raise SpecsimError("give exactly one SCENARIO with --levers", source="--levers")
        own = entries[0][1]  # the scenario as loaded, bound above: the levers' table reads it
        entries = lever_scenarios(loaded[0], memo=own.hardware.memo)
    announce_slow_intervals([bound for _, bound in entries], enabled=not quiet)
    doc = compare_scenarios(
        entries, targets=targets, engine=engine, fidelity=fidelity, workers=workers
    ).to_dict()
    if levers:
        # the columns are the levers' scenarios: their 90% intervals are the levers'
        intervals = {
            c["label"]: None
            if c["tok_s_interval90"] is None or None in c["tok_s_interval90"]
            else tuple(c["tok_s_interval90"])
            for c in doc["scenarios"]
        }
        lever_doc = lever_table(own, intervals90=intervals, levers_bound=dict(entries)).to_dict()
        doc["levers"] = lever_doc
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.report.figures import figures_for

        echo_written(save_figures(figures_for(document("compare", doc)), plot_dir, fmt), quiet)
    if as_json:
        echo_document("compare", doc)
    elif lever_doc is not None:  # the levers' table is the answer; --verbose adds the columns
        from sim.report.hardware import render_levers
        from sim.report.screen import fit_width

        if verbose:
            click.echo(render_comparison(doc))
            click.echo("")
            click.echo(render_levers(lever_doc))
        else:
            click.echo("\n".join(fit_width(render_levers(lever_doc, verbose).splitlines())))
    else:
        click.echo(render_comparison(doc) if verbose else render_comparison_screen(doc))
