"""Scenario TOML output (tomli-w plus comments) round-trips through tomllib and the loader."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.scenario.load import load_scenario
from sim.scenario.toml_writer import dumps, dumps_scenario, value_to_toml

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.toml"))


@given(st.text())
def test_strings_round_trip(text: str) -> None:
    assert tomllib.loads(f"v = {value_to_toml(text)}")["v"] == text


@given(st.floats(allow_nan=False))
def test_floats_round_trip_and_stay_floats(x: float) -> None:
    back = tomllib.loads(f"v = {value_to_toml(x)}")["v"]
    assert isinstance(back, float) and back == x


def test_document_with_comments_and_nested_tables() -> None:
    doc = {"name": 'a "b"', "t": {"x": 1, "y": [0.5, 2.0], "flag": True, "sub": {"z": "q"}}}
    text = dumps(doc, header="line one\nline two", comments={"t.x": "why x", "t": "table"})
    assert text.startswith("# line one\n# line two\n")
    assert "# why x\nx = 1" in text and "# table\n[t]" in text and "[t.sub]" in text
    assert tomllib.loads(text) == doc


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_shipped_scenario_round_trips(path: Path, tmp_path: Path) -> None:
    scenario = load_scenario(path)
    out = tmp_path / "again.toml"
    out.write_text(dumps_scenario(scenario, header="copy"))
    assert load_scenario(out) == scenario


def test_arrays_of_tables_with_nested_tables() -> None:
    doc = {
        "a": {"x": 1, "mix": [{"name": "chat", "w": 0.7}, {"name": "code", "sub": {"k": 2}}]},
        "b": {"y": True},
    }
    text = dumps(doc, comments={"a.mix": "classes", "b.y": "why"})
    assert "# classes\nmix = [" in text and "# why\ny = true" in text  # tomli-w: inline tables
    assert tomllib.loads(text) == doc
