"""The validation's published tables are data files with their sources, shipped in the package."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

from sim.validation.data_files import curve, read_table

DATA = Path(__file__).resolve().parents[2] / "sim" / "validation" / "data"
NAMES = sorted(p.stem for p in DATA.glob("*.toml"))


def test_there_are_data_files():
    assert {"nccl_points", "serving_curves", "tree_runs", "moe_kernels"} <= set(NAMES)


#: Tables that hold no figures: the citations themselves, and a note.
NOT_FIGURES = {"sources", "preset_sources", "p2pmark"}


@pytest.mark.parametrize("name", NAMES)
def test_every_table_of_figures_names_its_source(name):
    """Every table (and every row of an array of tables) has a ``source``: a URL or
    repository path, or the key of one of the file's ``[sources]``, each with its URL."""
    data = read_table(name)
    cited = data.get("sources", {})
    assert all(s["url"].startswith("https://") and s["text"] for s in cited.values())
    rows = [
        (key, row)
        for key, value in data.items()
        if key not in NOT_FIGURES
        for row in (value if isinstance(value, list) else [value])
    ]
    assert rows
    for key, row in rows:
        source = row.get("source", "")
        assert source in cited or source.startswith("https://"), f"{name}.toml [{key}]"


@pytest.mark.parametrize("name", NAMES)
def test_the_package_reads_the_same_file(name):
    text = (files("sim.validation") / "data" / f"{name}.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text) == read_table(name)


def test_pyproject_ships_the_data_files():
    pyproject = tomllib.loads((DATA.parents[2] / "pyproject.toml").read_text())
    assert "data/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["sim.validation"]


def test_a_curve_keeps_the_file_order():
    assert list(curve([[4, 1.5], [1, 2.0]]).items()) == [(4, 1.5), (1, 2.0)]
