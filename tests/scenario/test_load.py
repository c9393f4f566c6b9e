"""Scenario files: validation, defaults, and dotted overrides."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from sim.binding.closed_form import conditional_rates
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.overrides import apply_overrides, parse_assignment, parse_value, with_overrides
from sim.scenario.validate import scenario_from_dict


def test_minimal_scenario_loads_with_documented_defaults(write_scenario):
    sc = load_scenario(write_scenario())
    assert sc.num_steps == 3
    assert sc.speculation.topk == 1 and sc.speculation.draft_tokens == 4
    assert sc.workload.output_tokens == 512
    assert sc.simulation.replications == 20
    assert sc.target_tok_s == (100.0,)


def test_per_position_repeats_the_last_rate(write_scenario):
    listed = 'per_position = [0.8, 0.6]\nshape = "repeat"'
    text = write_scenario().read_text().replace("alpha = 0.7", listed)
    sc = load_scenario(write_scenario(text))
    np.testing.assert_allclose(conditional_rates(sc.acceptance, 4), [0.8, 0.6, 0.6, 0.6])
    np.testing.assert_allclose(conditional_rates(sc.acceptance, 1), [0.8])


def test_per_position_auto_continues_with_the_nominal_shape_error(write_scenario):
    """Not repeated silently: past the list the rates move by the nominal shape error."""
    from sim.binding.priors import shape_error

    text = write_scenario().read_text().replace("alpha = 0.7", "per_position = [0.8, 0.6]")
    sc = load_scenario(write_scenario(text))
    rho = np.exp(shape_error("generic").nominal)
    assert rho < 1.0  # the cross-run evidence falls
    np.testing.assert_allclose(
        conditional_rates(sc.acceptance, 4), [0.8, 0.6, 0.6 * rho, 0.6 * rho**2]
    )


def test_scenarios_are_frozen(write_scenario):
    sc = load_scenario(write_scenario())
    with pytest.raises(ValidationError):
        sc.speculation.num_steps = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("4", 4),
        ("0.8", 0.8),
        ("[0.9, 0.8]", [0.9, 0.8]),
        ("true", True),
        ("nvlink4", "nvlink4"),
        ('"pcie-gen5"', "pcie-gen5"),
    ],
)
def test_set_values_are_toml(text, parsed):
    assert parse_value(text) == parsed


def test_set_requires_key_equals_value():
    assert parse_assignment("speculation.num_steps=4") == ("speculation.num_steps", 4)
    for bad in ("speculation.num_steps", "=4", "a..b=1"):
        with pytest.raises(SpecsimError):
            parse_assignment(bad)


def test_overrides_replace_exclusive_and_derived_keys():
    raw = {
        "acceptance": {"per_position": [0.9]},
        "speculation": {"num_steps": 2, "num_draft_tokens": 3},
    }
    out = apply_overrides(raw, {"acceptance.alpha": 0.8, "speculation.num_steps": 4})
    assert out["acceptance"] == {"alpha": 0.8}
    assert out["speculation"] == {"num_steps": 4}
    assert raw["acceptance"] == {"per_position": [0.9]}  # input untouched


def test_cli_overrides_and_programmatic_overrides_agree(write_scenario):
    path = write_scenario()
    a = load_scenario(path, ["speculation.num_steps=5", "acceptance.alpha=0.9"])
    b = with_overrides(load_scenario(path), {"speculation.num_steps": 5, "acceptance.alpha": 0.9})
    assert a == b
    assert a.num_steps == 5 and a.acceptance.alpha == 0.9


def test_override_errors_point_at_set(write_scenario):
    with pytest.raises(SpecsimError) as err:
        load_scenario(write_scenario(), ["acceptance.alpha=1.5"])
    assert err.value.field == "acceptance.alpha"
    assert "(--set)" in err.value.source


def test_a_copy_derives_from_its_own_fields(seed_path):
    """A scenario keeps no memo: a copy with a changed field derives from that field."""
    from sim.binding.closed_form import pass_times

    seed = load_scenario(seed_path)
    before = pass_times(seed)
    timing = seed.timing.model_copy(update={"verify_ms": 20.0})
    copy = seed.model_copy(update={"timing": timing})
    expected = pass_times(with_overrides(seed, {"timing.verify_ms": 20.0}))
    assert pass_times(copy) == expected != before


def test_origins_say_where_values_come_from_and_are_no_value(seed_path):
    """``Scenario.origins`` (public, frozen) holds the file, what it gave and what was set
    afterwards by what; it is left out of dumps, the JSON Schema and equality, and a file
    cannot give it."""
    from sim.scenario.keys import json_schema

    seed = load_scenario(seed_path, ["speculation.num_steps=4"])
    assert seed.origins.file == str(seed_path)
    assert seed.origins.overrides == {"speculation.num_steps": "--set"}
    assert "timing.verify_ms" in seed.origins.given
    assert "speculation.num_steps" not in seed.origins.given
    other = with_overrides(seed, {"timing.verify_ms": 20.0}, source="search")
    assert other.origins.file == str(seed_path)
    assert other.origins.overrides["timing.verify_ms"] == "search"
    assert "origins" not in seed.model_dump() and "origins" not in json_schema()["properties"]
    again = with_overrides(seed, {}, source="search")
    assert again == seed and again.origins != seed.origins  # equality: the values only
    with pytest.raises(SpecsimError) as err:
        scenario_from_dict({**seed.model_dump(), "origins": {"file": "x"}}, source="x.toml")
    assert err.value.field == "origins"


def test_an_unquoted_path_says_how_to_quote_it():
    """``--set serving.trace=traces/x.csv`` failed with "cannot parse value ... as TOML",
    which does not say what to do: a string beyond a bare word needs TOML quotes."""
    with pytest.raises(SpecsimError) as err:
        parse_value("scenarios/traces/x.csv")
    assert """KEY='"scenarios/traces/x.csv"'""" in str(err.value)
    with pytest.raises(SpecsimError) as err:  # not a string: no quoting hint
        parse_value("[0.9, ")
    assert "quote" not in str(err.value)


def test_a_text_already_read_is_not_read_again(write_scenario):
    """``calibrate`` reads its base file once (the scenario and its comments from one
    text): given the text, loading does not touch the file."""
    path = write_scenario()
    text = path.read_text()
    before = load_scenario(path, ["acceptance.alpha=0.6"])
    path.unlink()
    assert load_scenario(path, ["acceptance.alpha=0.6"], text=text) == before
    with pytest.raises(SpecsimError, match="no such file"):
        load_scenario(path)
