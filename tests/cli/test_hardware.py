"""``specsim hardware`` and the scenarios that come with the hardware model."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from sim.binding.closed_form import conditional_rates, pass_times
from sim.binding.closed_form import cycle_cost as scenario_cycle_cost
from sim.cli import main
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import PRESETS
from sim.model.cycle import throughput_tok_s
from sim.model.rates import mean_accept_length
from sim.scenario.load import load_scenario
from tests.conftest import SEED

SCENARIOS = SEED.parent


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def seed_outputs() -> dict[str, tuple[int, str]]:
    """(exit code, output) of ``specsim hardware`` on the seed as text, with --verbose and
    with --json: the three renderings of one summary (strings: nothing a test does changes
    them)."""
    import sim.studies.hardware as study

    summarise, summaries = study.hardware_summary, []

    def once(bound):
        if not summaries:
            summaries.append((bound.scenario, summarise(bound)))
        assert bound.scenario == summaries[0][0], "another scenario's summary was asked for"
        return copy.deepcopy(summaries[0][1])

    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(study, "hardware_summary", once)
        for name, extra in (("text", ()), ("verbose", ("--verbose",)), ("json", ("--json",))):
            result = run_cli("hardware", str(SEED), *extra)
            got[name] = result.exit_code, result.output
    return got


def test_hardware_table_for_the_seed(seed_outputs):
    """The first screen takes every pass apart; --verbose adds the verify on each preset."""
    code, out = seed_outputs["text"]
    assert code == 0, out
    for word in ("decode", "verify", "draft_step", "draft_extend", "122 x", "ring/LL eager"):
        assert word in out
    assert "graphed here" in out and "pcie-gen4-host-bounce" not in out
    code, verbose = seed_outputs["verbose"]
    assert code == 0, verbose
    for word in PRESETS:
        assert word in verbose
    verify = next(ln for ln in out.splitlines() if ln.startswith("verify "))
    assert "30.000" in verify and "measured" in verify


def test_hardware_json_parts_add_up(seed_outputs):
    code, text = seed_outputs["json"]
    assert code == 0, text
    doc = json.loads(text)
    v = doc["passes"]["verify"]
    assert v["total_ms"] == pytest.approx(30.0)
    assert v["comm_ms"] == pytest.approx(v["allreduces"] * v["allreduce"]["us"] / 1000)
    assert doc["measured_on"]["interconnect"] == "pcie-gen4"
    assert doc["verify_graphed"]["total_ms"] < v["total_ms"]
    assert set(doc["verify_on_presets"]) == set(PRESETS)


def test_hardware_what_if_through_set():
    doc = json.loads(
        run_cli("hardware", str(SEED), "--set", "hardware.interconnect=nvlink4", "--json").output
    )
    assert doc["hardware"]["interconnect"] == "nvlink4"
    assert doc["passes"]["verify"]["origin"] == "recomposed"
    assert doc["passes"]["verify"]["allreduce"]["algorithm"] == "custom"


def test_hardware_list_shows_every_preset_a_line_and_with_verbose_its_source():
    result = run_cli("hardware", "--list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100
    for name in (*PRESETS, *GPU_PRESETS):
        assert sum(1 for ln in lines if ln.split()[:1] == [name]) == 1
    assert "source:" not in result.output
    verbose = run_cli("hardware", "--list", "--verbose").output
    assert verbose.count("source:") == len(PRESETS) + len(GPU_PRESETS)
    doc = json.loads(run_cli("hardware", "--list", "--json").output)
    assert all(v["source"] for v in doc["interconnects"].values())


def test_hardware_needs_a_scenario_or_list():
    result = run_cli("hardware")
    assert result.exit_code == 2 and "--list" in result.output


def spec_tok_s(path, sets=()):
    s = load_scenario(path, sets)
    al = mean_accept_length(conditional_rates(s.acceptance, s.num_steps))
    return 1000.0 / pass_times(s).decode_ms, throughput_tok_s(al, scenario_cycle_cost(s))


def test_seed_figures_unchanged():
    base, spec = spec_tok_s(SEED)
    assert 82 <= base <= 83 and 59 <= spec <= 61


def test_what_if_scenarios_move_the_right_way():
    _, seed = spec_tok_s(SEED)
    _, graphed = spec_tok_s(SCENARIOS / "kimi-k25-8xpcie-eagle3-graphed.toml")
    _, gen5 = spec_tok_s(SCENARIOS / "kimi-k25-8xpcie5-eagle3.toml")
    h200_path = SCENARIOS / "kimi-k25-8xh200-nvlink-eagle3.toml"
    base_h200, h200 = spec_tok_s(h200_path)
    _, h200_graphed = spec_tok_s(h200_path, ["timing.verify_cuda_graph=true"])
    assert graphed > seed
    assert seed <= gen5 < graphed  # Gen5 changes bandwidth; batch-1 messages are latency-bound
    assert base_h200 == pytest.approx(1000 / 9.22)
    # Ungraphed, the derived verify is launch-bound (~20.7 ms of CPU issue work) and
    # speculation loses to plain decoding; graphed, it pays off.
    assert h200 < base_h200 < h200_graphed


def test_llama_scenario_reproduces_its_source():
    # sgl-project/sglang PR #4247: 361.70 tok/s at accept length 4.68, num_steps 5.
    _, tok_s = spec_tok_s(SCENARIOS / "llama31-8b-1xh100-eagle3.toml")
    assert tok_s == pytest.approx(361.7, rel=0.005)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")))
def test_every_scenario_validates(path):
    assert run_cli("validate", str(path)).exit_code == 0


def test_hardware_without_model_geometry_names_file_and_field(write_scenario):
    path = write_scenario()  # timings only, no [model]
    result = run_cli("hardware", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "model.layers" in result.output


def test_the_launch_cost_in_the_header_has_the_tables_precision(seed_outputs):
    """The derived per-kernel launch cost (17.5487... us for the seed) reads 17.55 in the
    header, as in the 'us a kernel' row, not 17.5487."""
    out = seed_outputs["text"][1]
    assert ", launch 17.55 us/kernel, " in out.splitlines()[0]
    assert "17.5487" not in out


def test_a_pass_time_the_file_calls_derived_or_assumed_is_not_labelled_measured(seed_outputs):
    """The origin column is the one the scenario states for a given pass time: the seed's
    drafter passes are assumed (its [uncertainty.timing]); a calibrated file's drafter passes
    priced by the hardware model are derived."""
    table = [ln.split() for ln in seed_outputs["text"][1].splitlines()]
    names = ("decode", "verify", "draft_step", "draft_extend")
    rows = {w[0]: w[-1] for w in table if w and w[0] in names and w[1].isdigit()}
    assert rows == {"decode": "measured", "verify": "measured", "draft_step": "assumed",
                    "draft_extend": "assumed"}  # fmt: skip
    derived = 'uncertainty.timing.draft_step_ms={stderr=0.1, origin="derived"}'
    out = run_cli("hardware", str(SEED), "--set", derived).output
    (row,) = [ln for ln in out.splitlines() if ln.startswith("draft_step ")]
    assert row.endswith(" derived")
