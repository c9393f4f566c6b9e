"""``bind(scenario) -> Bound``: the model built once, the errors it finds named with the
file, and the example of docs/binding.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.binding.bound import Bound, as_bound, bind
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from tests.conftest import ROOT, SEED

DOC = Path(__file__).resolve().parents[2] / "docs" / "binding.md"


def test_the_docs_example_runs_as_shown(monkeypatch):
    """docs/binding.md's Python example runs from the repository root as written."""
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {})


def test_a_scenario_handed_to_an_entry_is_bound_there_and_a_bound_one_is_kept():
    sc = load_scenario(SEED)
    bound = bind(sc)
    assert as_bound(bound) is bound
    assert isinstance(as_bound(sc), Bound) and as_bound(sc).passes == bound.passes


def test_what_the_hardware_model_finds_names_the_step_that_set_it(write_scenario):
    """The loader reports a problem of the file; ``bind`` one of the hardware model, as
    ``FILE (--set)`` when --set changed a hardware, model or timing field, and as the
    study's source when a study's own override did."""
    low = ["timing.verify_ms=10.0"]  # below the GPU work of the graphed decode + growth
    with pytest.raises(SpecsimError) as err:
        bind(load_scenario(SEED, low))
    assert err.value.source == f"{SEED} (--set)" and err.value.field is not None
    later = with_overrides(load_scenario(SEED, low), {"simulation.seed": 3}, source="--seed")
    with pytest.raises(SpecsimError) as err:
        bind(later)  # the --seed step changed no hardware field: the file's --set did
    assert err.value.source == f"{SEED} (--set)"
    study = with_overrides(load_scenario(SEED), {"timing.verify_ms": 10.0}, source="search")
    with pytest.raises(SpecsimError) as err:
        bind(study)
    assert err.value.source == "search (--set)"


def test_serving_values_are_set_on_the_bound_model_as_a_bind_of_them_gives():
    """``Bound.with_serving``: no binding step reads ``[serving]``, so the model bound once
    answers as a bind of the changed scenario does, its uncertain inputs found again."""
    sc = load_scenario(ROOT / "scenarios" / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml")
    values = {"serving.host_us_per_request": 123.0, "serving.kernel_slope": 0.7}
    moved = bind(sc).with_serving(values, source="test")
    again = bind(with_overrides(sc, values, source="test"))
    assert moved.scenario == again.scenario
    assert moved.scenario.given_origin("serving.kernel_slope") == ("override", "set by test")
    assert moved.passes == again.passes and moved.cycle == again.cycle
    assert list(moved.rates) == list(again.rates)
    assert moved.inputs == again.inputs
    # an override drops the file's range of the field it sets: the inputs are found again
    assert {u.field for u in bind(sc).inputs} >= set(values)
    assert not {u.field for u in moved.inputs} & set(values)
    with pytest.raises(ValueError, match=r"not serving fields: timing\.decode_ms"):
        bind(sc).with_serving({"timing.decode_ms": 9.0})
