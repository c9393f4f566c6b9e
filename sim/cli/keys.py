"""``specsim keys``: every scenario key with unit, default and bounds; ``--json`` the JSON
Schema of a scenario file (from the pydantic models)."""

from __future__ import annotations

import click

from sim.cli.options import echo_document, json_option


@click.command("keys")
@json_option
def keys(as_json: bool) -> None:
    """Every scenario key: type, unit, default and bounds (--json: the JSON Schema)."""
    from sim.scenario.keys import json_schema, scenario_keys  # lazy: start-up

    if as_json:
        echo_document("schema", json_schema())  # kind/specsim_version: extra JSON Schema keywords
        return
    rows = [k for k in scenario_keys()]
    width = max(len(k.key) for k in rows)
    for k in rows:
        default = "required" if k.required else ("-" if k.default is None else repr(k.default))
        unit = f" [{k.unit}]" if k.unit else ""
        bounds = f"  ({k.bounds})" if k.bounds else ""
        click.echo(f"{k.key:<{width}}  {k.type}{unit}; default {default}{bounds}")
