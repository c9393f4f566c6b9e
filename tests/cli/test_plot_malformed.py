"""``specsim plot`` on a document of a known kind whose content is not that kind's: one line
naming the file (and the field, when one is missing), exit 2, and no figure written.

The documents are real ``serve``, ``search`` and ``run`` outputs, each edited in one place
(a field removed, a null or a string where numbers belong), as a hand-edited file would be.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from sim.cli import main
from sim.cli.plot import save_figures, write_figures
from sim.documents import MissingField, with_paths
from sim.errors import SpecsimError
from tests.conftest import ROOT, SEED

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
SMALL = ["--replications", "2", "--requests", "5"]
MADE_WITH = {
    "serve": ["serve", str(SERVING), "-q", "--replications", "2", "--requests", "12"],
    "search": ["search", str(SEED), "--num-steps", "2", *SMALL],
    "run": ["run", str(SEED), "-q", *SMALL],
}


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    """One good document of each kind the edits start from, made by the CLI."""
    out = {}
    for kind, args in MADE_WITH.items():
        result = CliRunner().invoke(main, [*args, "--json"])
        assert result.exit_code == 0, result.output
        out[kind] = json.loads(result.stdout)
    return out


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _drop(doc: dict[str, Any], path: tuple[Any, ...]) -> None:
    for key in path[:-1]:
        doc = doc[key]
    del doc[path[-1]]


Edit = Callable[[dict[str, Any]], None]
#: (case id, document kind to start from, the edit, text the error line must contain)
EDITS: list[tuple[str, str, Edit, str]] = [
    (
        "serve-null-distributions",
        "serve",
        lambda d: _set(d, ("speculative", "distributions"), None),
        "not a valid serve document",
    ),
    (
        "serve-no-batch-share",  # the first two figures build, the third cannot
        "serve",
        lambda d: _drop(d, ("speculative", "decode_batch_time_share")),
        "speculative.decode_batch_time_share: not a valid serve document: the field is missing",
    ),
    (
        # drawn by matplotlib as a category before the document was checked (exit 0)
        "serve-string-in-an-interval",
        "serve",
        lambda d: _set(d, ("speculative", "ttft_ms", "ci95", 0), "x"),
        "speculative.ttft_ms.ci95[0]: not a valid serve document: expected a number, got 'x'",
    ),
    (
        "serve-null-percentile",
        "serve",
        lambda d: _set(d, ("baseline", "queue_ms", "p99"), None),
        "baseline.queue_ms.p99: not a valid serve document: expected a number, got null",
    ),
    (
        "serve-string-in-a-distribution",
        "serve",
        lambda d: _set(d, ("baseline", "distributions", "tpot_ms", 0), "fast"),
        "baseline.distributions.tpot_ms[0]: not a valid serve document",
    ),
    (
        "search-null-per-num-steps",
        "search",
        lambda d: _set(d, ("targets", 0, "per_num_steps"), None),
        "not a valid search document",
    ),
    (
        "search-target-without-reachable",
        "search",
        lambda d: _drop(d, ("targets", 0, "per_num_steps", 0, "reachable")),
        "targets[0].per_num_steps[0].reachable: not a valid search document",
    ),
    (
        "run-string-cycle",
        "run",
        lambda d: _set(d, ("cycle_ms", "draft"), "x"),
        "not a valid run document: could not convert string to float: 'x'",
    ),
]


def plot_fails_cleanly(doc_path: Path, out: Path, needle: str) -> None:
    """``plot DOC --out OUT``: exit 2, one ``specsim: error: DOC: ...`` line holding
    ``needle``, no traceback, nothing on stdout, and OUT never created."""
    result = CliRunner().invoke(main, ["plot", str(doc_path), "--out", str(out)])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"specsim: error: {doc_path}: "), lines[0]
    assert needle in lines[0], lines[0]
    assert result.stdout == ""
    assert not out.exists(), sorted(out.iterdir())


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"kind": "serve"}', "baseline: not a valid serve document: the field is missing"),
        ('{"kind": "sweep"}', "rows: not a valid sweep document: the field is missing"),
        ('{"kind": "compare", "scenarios": [{}]}', "scenarios[0].label: not a valid compare"),
        ('{"kind": "solve", "field": 3}', "not a valid solve document"),
    ],
    ids=["serve-empty", "sweep-empty", "compare-row-without-label", "solve-field-not-text"],
)
def test_a_bare_document_names_the_missing_field(text: str, needle: str, tmp_path: Path):
    """A document that is only its ``kind`` (or close to it) names the first field the
    figures need and it lacks, by its dotted path."""
    (tmp_path / "doc.json").write_text(text)
    plot_fails_cleanly(tmp_path / "doc.json", tmp_path / "figs", needle)


@pytest.mark.parametrize(("name", "kind", "edit", "needle"), EDITS, ids=[e[0] for e in EDITS])
def test_an_edited_document_is_one_line_and_no_figures(
    documents: dict[str, dict[str, Any]],
    tmp_path: Path,
    name: str,
    kind: str,
    edit: Edit,
    needle: str,
):
    """A real document edited in one place fails as bad input (exit 2, one line), and
    writes no figure, even when the figures before the bad field could be built."""
    doc = copy.deepcopy(documents[kind])
    edit(doc)
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    plot_fails_cleanly(tmp_path / "doc.json", tmp_path / "figs", needle)


@pytest.mark.parametrize("kind", sorted(MADE_WITH))
def test_the_unedited_documents_still_plot(
    documents: dict[str, dict[str, Any]], tmp_path: Path, kind: str
):
    """The documents the edits start from are good: ``plot`` draws them (exit 0)."""
    (tmp_path / "doc.json").write_text(json.dumps(documents[kind]))
    out = tmp_path / "figs"
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "doc.json"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    files = list(out.iterdir())
    assert files and all(f.suffix == ".png" for f in files), files


def _titled(title: str) -> Figure:
    fig = Figure()
    fig.subplots().set_title(title)
    return fig


def test_a_figure_that_fails_to_draw_leaves_no_file(tmp_path: Path):
    """``save_figures`` draws every figure before writing any: the second figure's title
    is bad mathtext (it fails only when drawn), so the good first one is not written."""
    good, bad = _titled("fine"), _titled(r"$\frac{1}$")
    with pytest.raises(ValueError):
        save_figures([("good", good), ("bad", bad)], tmp_path / "figs", "png")
    assert not (tmp_path / "figs").exists()


def test_a_file_that_cannot_be_written_takes_the_others_with_it(tmp_path: Path):
    """``write_figures`` is all or nothing: when the second file cannot be written (a
    directory is in its way) the first, already written, is removed again."""
    out = tmp_path / "figs"
    (out / "b.png").mkdir(parents=True)
    with pytest.raises(SpecsimError):
        write_figures([("a", b"png bytes"), ("b", b"png bytes")], out, "png")
    assert [p.name for p in out.iterdir()] == ["b.png"]


def test_a_missing_key_is_named_by_its_path_in_the_document():
    """``with_paths`` makes every object of a document report a missing key by its full
    dotted path (list items by index); present values read as before."""
    doc = with_paths({"a": {"b": [{"c": 1}, {"d": 2}]}})
    assert doc["a"]["b"][0]["c"] == 1 and doc["a"].get("x") is None
    with pytest.raises(MissingField) as caught:
        doc["a"]["b"][1]["c"]
    assert caught.value.path == "a.b[1].c"
    with pytest.raises(KeyError):  # still a KeyError to code that expects one
        doc["top"]
