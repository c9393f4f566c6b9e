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
from sim.files import atomic_write_text, make_dirs, read_bounded_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: What a figure builder raises on a document of a known kind whose content is not what
#: that kind holds: a missing field, a null or a string where numbers belong, a short list.
MALFORMED: tuple[type[Exception], ...] = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    RecursionError,
)


def render_figures(figures: Sequence[tuple[str, Figure]], fmt: str) -> list[tuple[str, bytes]]:
    """Each (stem, Figure) drawn as ``fmt`` bytes in memory; no file is touched."""
    rendered = []
    for stem, fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        rendered.append((stem, buf.getvalue()))
    return rendered


def write_figures(
    rendered: Sequence[tuple[str, bytes]], out_dir: str | Path, fmt: str
) -> list[Path]:
    """Write each (stem, bytes) as ``out_dir/stem.fmt`` atomically; returns the paths.

    All or nothing: when one file cannot be written, the files this call wrote and the
    directories it made are removed before the error goes on.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SpecsimError("exists and is not a directory", source=str(out))
    if not rendered:
        return []
    created = make_dirs(out, str(out))
    paths: list[Path] = []
    try:
        for stem, data in rendered:
            path = out / f"{stem}.{fmt}"
            atomic_write_text(path, data)
            paths.append(path)
    except SpecsimError:
        for path in paths:
            path.unlink(missing_ok=True)
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                break
        raise
    return paths


def save_figures(
    figures: Sequence[tuple[str, Figure]], out_dir: str | Path, fmt: str
) -> list[Path]:
    """Draw every (stem, Figure), then write each as ``out_dir/stem.fmt``; returns the
    paths. A figure that fails to draw fails before any file is written."""
    return write_figures(render_figures(figures, fmt), out_dir, fmt)


def _malformed(exc: Exception, kind: str, source: str) -> SpecsimError:
    """The one-line error for a document of ``kind`` its figure builders could not read."""
    from sim.documents import MissingField  # lazy: start-up

    what = f"not a valid {kind} document"
    if isinstance(exc, MissingField):
        return SpecsimError(f"{what}: the field is missing", source=source, field=exc.path)
    if isinstance(exc, KeyError):
        detail = f"missing key {exc.args[0]!r}" if exc.args else "a key is missing"
    elif isinstance(exc, RecursionError):
        detail = "nested too deeply"
    else:
        detail = " ".join(str(exc).split()) or type(exc).__name__
    if len(detail) > 300:
        detail = detail[:300] + "..."
    return SpecsimError(f"{what}: {detail}", source=source)


def document_figures(
    doc: dict[str, Any], kind: str, source: str, fmt: str
) -> list[tuple[str, bytes]]:
    """The figures of a result document, built and drawn as ``fmt`` bytes, nothing written.

    A document of a known ``kind`` whose content its builders cannot read (a missing field,
    a null or a string where numbers belong) is one SpecsimError ``not a valid KIND
    document``, naming the field's dotted path when it is missing (builders read the document
    through ``sim.documents.with_paths``) and the builder's complaint otherwise.
    """
    from sim.documents import with_paths  # lazy: start-up
    from sim.report.figures import figures_for

    try:
        return render_figures(figures_for(with_paths(doc)), fmt)
    except MALFORMED as exc:
        raise _malformed(exc, kind, source) from None


def read_document(path: str | Path) -> dict[str, Any]:
    """A result JSON document, or ``DIR/sweep.json`` for a sweep directory."""
    p = Path(path)
    if p.is_dir():
        p = p / "sweep.json"
    text = read_bounded_text(p)
    try:
        doc = json.loads(text)
    except ValueError as exc:  # not JSON, or an integer of more digits than Python reads
        raise SpecsimError(f"not a JSON result document: {str(exc)[:200]}", source=str(p)) from None
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
    """Figures from a sweep directory (or its sweep.json), or the --json file of run,
    search, search --solve, compare, serve, crossover, best-k, capacity, controllers or
    tree-load (dispatched on its ``kind``)."""
    # lazy: matplotlib is imported when figures are drawn, not for --help (start-up)
    from sim.documents import document_kind, plotted
    from sim.report.numeric_fields import check_numbers

    doc = read_document(result)
    kind = document_kind(doc, result)
    rows = doc.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SpecsimError("must be a list of tables (one per point)", source=result, field="rows")
    plotted(kind, result)
    if kind == "serve" and doc.get("stable") is False:
        raise SpecsimError(
            "has no figures: its load is above what the server answers, nothing was simulated",
            source=result,
        )
    check_numbers(doc, kind, result)
    rendered = document_figures(doc, kind, result, fmt)
    if not rendered:  # a known kind whose builders found nothing to draw in it
        raise SpecsimError(f"the {kind} document holds nothing to draw", source=result)
    where = out_dir or str(
        (Path(result) if Path(result).is_dir() else Path(result).parent) / "plots"
    )
    paths = write_figures(rendered, where, fmt)
    if as_json:
        echo_document("plot", {"source": result, "files": [str(p) for p in paths]})
    else:
        echo_written(paths, quiet)
