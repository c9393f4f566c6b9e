"""``specsim run``: the closed-form answer for one scenario."""

from __future__ import annotations

import click

from sim.analysis import analyze
from sim.cli import main
from sim.cli.options import echo_json, json_option, scenario_argument, set_option
from sim.report import analysis_to_dict, render_analysis
from sim.scenario import load_scenario


@main.command()
@scenario_argument
@set_option
@json_option
def run(scenario: str, sets: tuple[str, ...], as_json: bool) -> None:
    """Throughput, accept length, cycle breakdown and what each target needs."""
    analysis = analyze(load_scenario(scenario, sets))
    if as_json:
        echo_json(analysis_to_dict(analysis))
    else:
        click.echo(render_analysis(analysis))
