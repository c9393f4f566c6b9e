"""Hand-worked checks of levers: values computed from the formulas and their sources."""

from __future__ import annotations

from sim.binding.bound import bind
from sim.scenario.load import load_scenario
from sim.studies.levers import lever_table
from tests.conftest import SEED


def test_plain_decoding_emits_one_token_a_cycle():
    """levers.py: the plain-decoding row's accept length is 1 (one token per decode step)."""
    rows = {r.lever.name: r for r in lever_table(bind(load_scenario(SEED))).rows}
    assert rows["plain decoding"].accept_length == 1.0
