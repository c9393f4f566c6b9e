"""Every field's origin, read at once (``Scenario.field_origins``): set afterwards beats an
``[uncertainty]`` entry, which beats given by the file, which beats the default."""

from __future__ import annotations

from sim.scenario.load import load_scenario
from sim.scenario.overrides import PINNED_VERIFY_TOKENS, pin_verify_tokens, with_overrides
from tests.conftest import ROOT


def test_an_uncertainty_entry_gives_its_origin_reason_and_range(seed_path):
    origins = load_scenario(seed_path).field_origins()
    verify = origins["timing.verify_ms"]
    assert (verify.origin, verify.range, verify.stderr) == ("measured", (29.0, 31.0), None)
    assert verify.reason.startswith("profiled ~30 ms")
    step = origins["timing.draft_step_ms"]
    assert (step.origin, step.stderr, step.range) == ("assumed", 0.3, None)


def test_given_fields_and_the_tables_holding_them_are_measured(seed_path):
    origins = load_scenario(seed_path).field_origins()
    assert origins["model.allreduces_per_layer"].origin == "measured"
    assert origins["model"].origin == "measured"  # a table, given by its entries


def test_a_field_not_given_is_the_default(seed_path):
    found = load_scenario(seed_path).field_origins()["hardware.bandwidth_efficiency"]
    assert (found.origin, found.reason) == ("default", "not given: the default")


def test_an_override_beats_the_entry_and_drops_its_spread(seed_path):
    scenario = with_overrides(load_scenario(seed_path), {"timing.verify_ms": 25.0})
    found = scenario.field_origins()["timing.verify_ms"]
    assert (found.origin, found.stderr, found.range) == ("override", None, None)
    assert found.reason == "set by override"
    assert scenario.given_origin("timing.verify_ms") == ("override", "set by override")


def test_a_pinned_verify_token_count_is_named_as_pinned_not_as_an_override():
    """Studies pin ``timing.verify_tokens`` to the measured pass (k + 1) when the file does
    not give it; the report's overrides then say so instead of "(override)", which read as
    if the user had set it."""
    sc = load_scenario(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    assert sc.timing.verify_tokens is None
    pinned = pin_verify_tokens(sc)
    assert pinned.timing.verify_tokens == sc.speculation.num_steps + 1
    assert pinned.origins.overrides["timing.verify_tokens"] == PINNED_VERIFY_TOKENS
