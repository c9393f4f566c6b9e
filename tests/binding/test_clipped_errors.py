"""A stated error or range wider than the field's valid values allow is named in the
answer's assumptions (its draws are clipped there), not clipped silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.binding.provenance import assumptions
from sim.cli import main
from sim.scenario.load import load_scenario

SCENARIOS = Path(__file__).parents[2] / "scenarios"
SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"
WIDE = 'uncertainty.timing.draft_step_ms={stderr=2.0, origin="assumed", reason="guess"}'
RANGE = 'uncertainty.timing.cycle_overhead_ms={range=[-1.0, 2.0], origin="assumed", reason="x"}'


def _reason(sets: tuple[str, ...], field: str) -> str:
    rows = assumptions(bind(load_scenario(SEED, sets)))
    return next(a.reason for a in rows if a.field == field)


def test_a_stderr_wider_than_the_value_is_named_with_its_clipped_share():
    reason = _reason((WIDE,), "timing.draft_step_ms")
    # P(N(1.2, 2) < 0) = Phi(-0.6) = 0.274
    assert reason.startswith("guess; timing.draft_step_ms: the stated ± 2 is wider")
    assert "27% of its draws fall below the field's lower bound 0 and are clipped" in reason
    (inp,) = [i for i in bind(load_scenario(SEED, (WIDE,))).inputs if i.field.endswith("step_ms")]
    assert inp.clipped_shares()[0] == pytest.approx(0.2742531, abs=1e-6)


def test_a_range_past_the_bound_is_named():
    reason = _reason((RANGE,), "timing.cycle_overhead_ms")
    # uniform over -1..2, valid from 0: a third of the draws clipped
    assert "range -1-2 is wider than the value 0.6 allows: 33% of its draws" in reason


def test_shipped_scenarios_clip_nothing_worth_a_note():
    for path in sorted(SCENARIOS.glob("*.toml")):
        for inp in bind(load_scenario(path)).inputs:
            assert inp.clipping_note() is None, (path.name, inp.field)


def test_run_json_carries_the_note():
    result = CliRunner().invoke(
        main, ["run", str(SEED), "--set", WIDE, "--json", "--replications", "1", "--requests", "5"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    row = next(a for a in doc["assumptions"] if a["field"] == "timing.draft_step_ms")
    assert "clipped" in row["reason"]
