"""Options shared by several commands."""

from __future__ import annotations

import json
from typing import Any

import click

scenario_argument = click.argument("scenario", type=click.Path(dir_okay=False, path_type=str))

set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario field, e.g. --set acceptance.alpha=0.8 (value parsed as TOML).",
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def echo_json(document: Any) -> None:
    """Print a JSON document (NaN and infinities are not JSON: they fail loudly)."""
    click.echo(json.dumps(document, indent=2, allow_nan=False))
