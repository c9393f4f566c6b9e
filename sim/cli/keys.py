"""``specsim keys``: every scenario key with unit, default and bounds; ``--json`` the JSON
Schema of a scenario file (from the pydantic models)."""

from __future__ import annotations

import click

from sim.cli.options import echo_document, json_option


@click.command("keys")
@json_option
def keys(as_json: bool) -> None:
    """Every scenario key: type, unit, default and bounds (--json: the JSON Schema)."""
    # lazy: start-up
    from sim.report.keys import render_keys
    from sim.scenario.keys import json_schema, scenario_keys

    if as_json:
        echo_document("schema", json_schema())  # kind/specsim_version: extra JSON Schema keywords
        return
    click.echo(render_keys(scenario_keys()))
