"""The batches a scenario's costs are measured at, against which serving answers say
they extrapolate: batch 1, the measured passes and the loads a sweep calibrated it on."""

from pathlib import Path

import pytest

from sim.scenario.load import load_scenario
from sim.uncertainty.model_error import beyond_measured_note, measured_loads, model_error_term

SCENARIOS = Path(__file__).parents[3] / "scenarios"


def test_batch_one_alone_without_points_or_figures():
    sc = load_scenario(SCENARIOS / "llama31-8b-1xh100-eagle3.toml")
    assert measured_loads(sc) == (1,)
    top = model_error_term(sc, 1.0).highest_measured
    assert beyond_measured_note(top, 2.0).startswith(
        "beyond the highest measured batch (1): at batch 2 "
    )


def test_the_loads_of_the_calibration_figures_count_as_measured():
    sc = load_scenario(SCENARIOS / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml")
    assert measured_loads(sc) == (1, 8, 32)
    top = model_error_term(sc, 1.0).highest_measured
    assert top == 32
    assert beyond_measured_note(top, 31.9) is None
    assert "(32): at batch 64 " in beyond_measured_note(top, 64.0)


def test_measured_passes_count_as_they_did():
    sc = load_scenario(SCENARIOS / "kimi-k25-8xpcie-eagle3-serving.toml")
    assert measured_loads(sc) == (1, 8)


def test_each_arm_counts_what_measures_it():
    """A decode point measures plain decoding only; a sweep's figures say their arm."""
    kimi = load_scenario(SCENARIOS / "kimi-k25-8xpcie-eagle3-serving.toml")
    assert measured_loads(kimi, "plain") == (1, 8)
    assert measured_loads(kimi, "speculative") == (1,)
    swept = load_scenario(SCENARIOS / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml")
    assert measured_loads(swept, "plain") == measured_loads(swept, "speculative") == (1, 8, 32)
    with pytest.raises(ValueError, match="arm must be"):
        measured_loads(kimi, "tree")


def test_a_term_read_once_answers_at_any_batch_as_the_scenario_does():
    """``ModelErrorTerm.at`` moves the term to another batch without the scenario, and
    its ``beyond_note`` is the scenario's note at that batch, the term's own activity
    saying whether the model's error is in the interval."""
    sc = load_scenario(SCENARIOS / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml")
    term = model_error_term(sc, 1.0)
    assert term.highest_measured == 32 and term.beyond_note() is None
    for batch in (8.0, 31.9, 64.0):
        at = term.at(batch)
        assert at == model_error_term(sc, batch)
        assert at.beyond_note() == beyond_measured_note(32, batch, at.active)
    assert "model's error there" in term.at(64.0).beyond_note()
