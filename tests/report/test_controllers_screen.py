"""``specsim controllers``' first screen at its defaults on the mix scenario: the answer
with two table switches beyond the measured batch (the longest screen the shipped scenarios
give) still fits 25 lines of at most 100 characters.

The document is the default run's JSON (``specsim controllers
scenarios/kimi-k25-8xpcie-eagle3-mix.toml --json``, seed 20261130) cut to the fields the
first screen reads: the headline metric's levels, advantages and intervals."""

from __future__ import annotations

import json

from sim.report.controllers import render_controllers_screen
from sim.report.screen import WIDTH, fits
from tests.conftest import ROOT

DOC = ROOT / "tests" / "data" / "controllers-mix-default.json"


def test_the_default_screen_with_two_switches_fits():
    doc = json.loads(DOC.read_text())
    assert len(doc["table_switches"]) == 2 and doc["interval90"]["note"]
    out = render_controllers_screen(doc)
    assert fits(out, lines=25, width=WIDTH), (len(out.splitlines()), out)


def test_the_sample_and_the_assumptions_share_a_paragraph():
    out = render_controllers_screen(json.loads(DOC.read_text()))
    assert "intervals: 8 of 8 draws x 2 replications, 12 inputs drawn; rests on 11" in out
    assert out.rstrip().endswith("--verbose: them, every table and winner, the engine configs")
