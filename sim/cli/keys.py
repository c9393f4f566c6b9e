"""``specsim keys``: the sections of a scenario file; ``specsim keys SECTION`` every key of
a section with unit, default and bounds; ``--json`` the JSON Schema of a scenario file (from
the pydantic models)."""

from __future__ import annotations

import click

from sim.cli.options import echo_document, json_option
from sim.errors import SpecsimError


@click.command("keys")
@click.argument("sections", nargs=-1, metavar="[SECTION]...")
@click.option("--all", "every", is_flag=True, help="Every key of every section.")
@json_option
def keys(sections: tuple[str, ...], every: bool, as_json: bool) -> None:
    """The sections of a scenario file; with SECTION (or a dotted prefix such as
    serving.kv) its keys: type, unit, default and bounds (--json: the JSON Schema)."""
    # lazy: start-up
    from sim.report.keys import render_keys, render_sections
    from sim.scenario.keys import (
        KeyInfo,
        json_schema,
        keys_in,
        scenario_keys,
        scenario_sections,
    )

    if as_json:
        echo_document("schema", json_schema())  # kind/specsim_version: extra JSON Schema keywords
        return
    listed = scenario_keys()
    if every:
        click.echo(render_keys(listed))
        return
    if not sections:
        click.echo(render_sections(scenario_sections(listed)))
        return
    chosen: list[KeyInfo] = []
    for section in sections:
        found = keys_in(listed, section)
        if not found:
            names = ", ".join(s.name for s in scenario_sections(listed))
            raise SpecsimError(f"no section or key {section!r} (sections: {names})", source="keys")
        chosen.extend(k for k in found if k not in chosen)
    click.echo(render_keys(chosen))
