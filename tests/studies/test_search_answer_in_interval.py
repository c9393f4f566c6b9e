"""``specsim search`` prints each target's answer and the 90% interval of the same
quantity: the flat answer is the equal rate at its own best k, as its interval is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

SEED = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"


@pytest.fixture(scope="module")
def doc() -> dict:
    result = CliRunner().invoke(main, ["search", str(SEED), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_flat_answer_is_the_interval_quantity(doc):
    for t in doc["targets"]:
        unc = t["uncertainty"]
        rows = [r for r in t["per_num_steps"] if r["reachable"]]
        best = min(rows, key=lambda r: (r["flat_alpha"], r["num_steps"]))
        assert t["flat_alpha"] == best["flat_alpha"]
        assert t["flat_num_steps"] == best["num_steps"]
        # the interval's nominal row solves the same closed form
        assert t["flat_alpha"] == pytest.approx(unc["flat_alpha"], abs=1e-3)
        lo, hi = unc["flat_interval90"]
        assert lo <= t["flat_alpha"] <= hi


def test_answers_lie_in_their_intervals(doc):
    slack = 0.003  # the finite-N root sits 0.001-0.002 above the long-run closed form
    for t in doc["targets"]:
        unc = t["uncertainty"]
        for value, (lo, hi) in (
            (t["first_rate"], unc["interval90"]),
            (t["alpha"], unc["mean_rate_interval90"]),
        ):
            assert lo - slack <= value <= (1.0 if hi is None else hi) + slack


def test_text_names_what_each_interval_is_of():
    out = CliRunner().invoke(main, ["search", str(SEED), "--target", "150", "--verbose"]).output
    assert "flat rates reach it at 0.910 (k = 13, closed form)" in out
    assert "flat at its own best k [0.901, 0.942]" in out
    assert "first: 90% in+model" in out
