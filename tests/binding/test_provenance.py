"""Every input of an answer carries its origin: measured, assumed, default, derived,
calibrated or override."""

from __future__ import annotations

import pytest

from sim.binding.bound import bind
from sim.binding.provenance import assumptions, effective_hardware
from sim.report.uncertainty import hardware_line
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from tests.conftest import MINIMAL, SEED, seed_text_without_uncertainty


def _by_field(scenario):
    return {a.field: a for a in assumptions(bind(scenario))}


def test_every_origin(write_scenario) -> None:
    text = MINIMAL.replace("cycle_overhead_ms = 0.5\n", "") + (
        "[uncertainty]\n"
        'timing.draft_step_ms = { range = [0.5, 1.5], reason = "split assumed" }\n'
        'timing.verify_ms = { stderr = 0.4, origin = "calibrated", reason = "fit" }\n'
        'timing.decode_ms = { stderr = 0.1, reason = "timed 50 times" }\n'
    )
    s = load_scenario(write_scenario(text), ["timing.draft_extend_ms=2.5"])
    a = _by_field(s)
    assert a["timing.draft_step_ms"].origin == "assumed"
    assert a["timing.draft_step_ms"].range == (0.5, 1.5)
    assert a["timing.verify_ms"].origin == "calibrated" and a["timing.verify_ms"].stderr == 0.4
    assert a["timing.decode_ms"].origin == "measured" and a["timing.decode_ms"].stderr == 0.1
    assert a["timing.draft_extend_ms"].origin == "override"
    assert a["timing.draft_extend_ms"].value == 2.5
    assert a["timing.cycle_overhead_ms"].origin == "default"
    assert a["speculation.num_steps"].origin == "measured"
    # no slope and no model to derive one: a default, listed with why
    slope = a["timing.verify_ms_per_extra_token"]
    assert (slope.origin, slope.value) == ("default", 0.0) and "optimistic" in slope.reason
    # one alpha, no method: the pooled decay prior, with its range
    decay = a["acceptance.decay"]
    assert decay.origin == "derived" and decay.range is not None and decay.range[1] == 1.0
    assert a["acceptance.method"].origin == "default"


def test_derived_slope_and_efficiency_carry_ranges(write_scenario) -> None:
    text = seed_text_without_uncertainty().replace("verify_ms_per_extra_token = 0.7\n", "")
    text = text.replace('verify_compute = "decode"', 'verify_compute = "measured"')
    # 18 kernels a layer: the public per-kernel cost's launches then fit the measured 30 ms
    text = text.replace("kernels_per_layer = 28", "kernels_per_layer = 18")
    a = _by_field(load_scenario(write_scenario(text)))
    slope = a["timing.verify_ms_per_extra_token"]
    assert slope.origin == "derived" and slope.range[0] == slope.value < slope.range[1]
    eff = a["hardware.bandwidth_efficiency"]
    assert eff.origin == "assumed" and eff.range == (0.5, 1.0)
    # the seed states its estimate with the hardware model's range instead
    seed = _by_field(load_scenario(SEED))["timing.verify_ms_per_extra_token"]
    assert (seed.origin, seed.value, seed.range) == ("assumed", 0.7, (0.7, 1.42))


def test_an_override_drops_the_stated_error_and_shows_in_the_header() -> None:
    s = load_scenario(SEED, ["timing.verify_ms=25", "hardware.interconnect=nvlink4"])
    a = _by_field(s)
    assert a["timing.verify_ms"].origin == "override" and a["timing.verify_ms"].range is None
    assert "timing.verify_ms" not in s.uncertainty.entries()
    hw = effective_hardware(s)
    assert hw["interconnect"] == "nvlink4" and hw["recomposed"]
    line = hardware_line(hw)
    assert "re-composed" in line and "pcie-gen4" in line


def test_a_study_override_is_named_by_its_source() -> None:
    s = with_overrides(load_scenario(SEED), {"speculation.num_steps": 5}, source="search")
    assert s.origins.overrides == {"speculation.num_steps": "search"}
    assert _by_field(s)["speculation.num_steps"].reason == "set by search"


def test_the_eager_model_inputs_are_listed_with_their_origins() -> None:
    """The seed's verify runs eagerly: its kernel count is listed with its counted range and
    source, and the per-kernel cost as derived from the measured verify, its range the
    cost at the count's two ends (30 ms less the last all-reduce over 61 x 28 and 61 x 42)."""
    a = _by_field(load_scenario(SEED))
    kernels = a["model.kernels_per_layer"]
    assert (kernels.value, kernels.origin, kernels.range) == (28, "derived", (28.0, 42.0))
    assert "SGLang's source" in kernels.reason
    launch = a["hardware.launch_us"]
    assert launch.origin == "derived" and "measured ungraphed verify" in launch.reason
    low, high = launch.range
    assert high == pytest.approx(launch.value, rel=1e-3)
    assert low == pytest.approx(high * 28 / 42, rel=1e-9)
    # graphed as a what-if, the timings were still measured eager: the cost stays derived
    graphed = _by_field(load_scenario(SEED, ["timing.verify_cuda_graph=true"]))
    assert graphed["hardware.launch_us"].origin == "derived"


def test_a_list_of_tables_the_file_gives_is_not_a_default() -> None:
    """The mix file's [[acceptance.mix]] was listed as 'default: not given' (the file's
    fields are kept per entry, acceptance.mix[0].alpha, and the list's own name was not
    among them); a list set by --set stays an override."""
    mix = SEED.parent / "kimi-k25-8xpcie-eagle3-mix.toml"
    entry = _by_field(load_scenario(mix))["acceptance.mix"]
    assert (entry.origin, entry.value) == ("measured", ["chat", "code"])
    assert entry.reason == "given in the scenario"
    over = load_scenario(mix, ['acceptance.mix=[{name="a",weight=1,alpha=0.5}]'])
    assert _by_field(over)["acceptance.mix"].origin == "override"
