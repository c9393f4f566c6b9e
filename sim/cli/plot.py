"""``specsim plot``: figures from a sweep or search output; helpers for ``--plot DIR``."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sim.cli.options import (
    echo_document,
    format_option,
    json_option,
    output_dir_checked,
    quiet_option,
)
from sim.errors import SpecsimError
from sim.files import atomic_write_text, read_bounded_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figures(
    figures: Sequence[tuple[str, Figure]], out_dir: str | Path, fmt: str
) -> list[Path]:
    """Write each (stem, Figure) as ``out_dir/stem.fmt`` atomically; returns the paths."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SpecsimError("exists and is not a directory", source=str(out))
    paths = []
    for stem, fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        path = out / f"{stem}.{fmt}"
        atomic_write_text(path, buf.getvalue())
        paths.append(path)
    return paths


def read_document(path: str | Path) -> dict[str, Any]:
    """A result JSON document, or ``DIR/sweep.json`` for a sweep directory."""
    p = Path(path)
    if p.is_dir():
        p = p / "sweep.json"
    text = read_bounded_text(p)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecsimError(f"not a JSON result document: {exc}", source=str(p)) from None
    except RecursionError:
        raise SpecsimError("not a result document: nested too deeply", source=str(p)) from None
    if not isinstance(doc, dict):
        raise SpecsimError("not a JSON result document (not an object)", source=str(p))
    return doc


def echo_written(paths: Sequence[Path], quiet: bool = False) -> None:
    """``wrote FILE`` on stderr for each file (nothing with ``--quiet``)."""
    if quiet:
        return
    for p in paths:
        click.echo(f"wrote {p}", err=True)


@click.command()
@click.argument("result", type=click.Path(path_type=str))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=str),
    default=None,
    callback=output_dir_checked,
    help="Directory for the figures (default: plots/ beside RESULT).",
)
@format_option
@quiet_option
@json_option
def plot(result: str, out_dir: str | None, fmt: str, quiet: bool, as_json: bool) -> None:
    """Figures from a sweep directory (or its sweep.json), or a run/search/solve/compare
    --json file (dispatched on its ``kind``)."""
    # lazy: matplotlib is imported when figures are drawn, not for --help (start-up)
    from sim.documents import document_kind
    from sim.report.figures import figures_for

    doc = read_document(result)
    document_kind(doc, result)
    rows = doc.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SpecsimError("must be a list of tables (one per point)", source=result, field="rows")
    figures = figures_for(doc)
    if not figures:
        raise SpecsimError(
            f"a {doc['kind']} document has no figures (plot takes sweep, run, search, solve "
            "and compare documents)",
            source=result,
        )
    where = out_dir or str(
        (Path(result) if Path(result).is_dir() else Path(result).parent) / "plots"
    )
    paths = save_figures(figures, where, fmt)
    if as_json:
        echo_document("plot", {"source": result, "files": [str(p) for p in paths]})
    else:
        echo_written(paths, quiet)
