"""The published tables are data files with their sources, shipped in the package: the
validation's (sim/validation/data/) and the priors' (sim/binding/data/)."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

from sim.tables import read_package_table
from sim.validation.data_files import curve, read_table

SIM = Path(__file__).resolve().parents[2] / "sim"
DATA = SIM / "validation" / "data"
NAMES = sorted(p.stem for p in DATA.glob("*.toml"))
#: (package, file) of every data file of the package.
FILES = sorted((f"sim.{p.parents[1].name}", p.stem) for p in SIM.glob("*/data/*.toml"))


def test_there_are_data_files():
    assert {
        "nccl_points",
        "serving_curves",
        "tree_runs",
        "moe_kernels",
        "eager_pairs",
        "layer_kernels",
        "batch1_runs",
    } <= set(NAMES)
    assert {("sim.binding", "cross_run"), ("sim.binding", "profiles")} <= set(FILES)


#: Tables that hold no figures: the citations themselves, and a note.
NOT_FIGURES = {"sources", "preset_sources", "p2pmark", "citations"}


@pytest.mark.parametrize(("package", "name"), FILES)
def test_every_table_of_figures_names_its_source(package, name):
    """Every table (and every row of an array of tables) has a ``source``: a URL or
    repository path, or the key of one of the file's ``[sources]``, each with its URL; and
    a ``figure`` (which figure, what setting) unless the file cites its sources by key."""
    data = read_package_table(package, name)
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
        assert cited or row.get("figure"), f"{name}.toml [{key}] has no figure"


@pytest.mark.parametrize("name", NAMES)
def test_the_package_reads_the_same_file(name):
    text = (files("sim.validation") / "data" / f"{name}.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text) == read_table(name)


@pytest.mark.parametrize("package", sorted({package for package, _ in FILES}))
def test_pyproject_ships_the_data_files(package):
    pyproject = tomllib.loads((SIM.parent / "pyproject.toml").read_text())
    assert "data/*.toml" in pyproject["tool"]["setuptools"]["package-data"][package]


def test_a_curve_keeps_the_file_order():
    assert list(curve([[4, 1.5], [1, 2.0]]).items()) == [(4, 1.5), (1, 2.0)]
