"""The expert overlap and the fused-MoE pair FLOP efficiency as serving keys
(``serving.expert_overlap``, ``serving.pair_flop_efficiency``;
docs/studies/moe-routing-ranges.md): validated, read by the batched passes, and drawn into
a serving answer's 90% interval, listed as assumed inputs, where a scenario states them
with an ``[uncertainty]`` range. Left unstated they are not drawn: drawn by default, they
widened the scored gain intervals past the pre-registered rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main
from sim.hardware.experts import (
    PAIR_FLOP_EFFICIENCY,
    PAIR_FLOP_EFFICIENCY_RANGE,
    STEP_EXPERT_OVERLAP,
    STEP_EXPERT_OVERLAP_RANGE,
)
from sim.scenario.load import load_scenario
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.studies.serving.serve_intervals import serve_intervals
from sim.uncertainty.perturb import describe_inputs, input_draws, serving_inputs
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
DENSE = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
CONFIGS = ROOT / "tests" / "data" / "configs"
OVERLAP, PAIRS = "serving.expert_overlap", "serving.pair_flop_efficiency"
#: Every other serving input stated: only what a test leaves out is drawn.
STATED = {
    "host_us_per_request": 20.0,
    "kernel_slope": 1.0,
    "expert_skew": 0.65,
    "kv_reserve_gib": 0.9,
    "bytes_per_logit": 12.0,
    "expert_overlap": STEP_EXPERT_OVERLAP,
    "pair_flop_efficiency": PAIR_FLOP_EFFICIENCY,
}


@pytest.mark.parametrize(
    ("key", "value", "bound"),
    [
        ("expert_overlap", "1", "less than 1"),
        ("expert_overlap", "-0.1", "greater than or equal to 0"),
        ("pair_flop_efficiency", "0", "greater than 0"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_status_2(
    tmp_path, key: str, value: str, bound: str
) -> None:
    text = SERVING.read_text().replace("[serving]\n", f"[serving]\n{key} = {value}\n", 1)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["serve", str(path), "--requests", "4"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specsim: error: {path}: serving.{key}: ")
    assert lines[0].endswith(f"Input should be {bound}")  # a key with bounds, not unknown
    assert "Traceback" not in result.output


RANGES = {OVERLAP: STEP_EXPERT_OVERLAP_RANGE, PAIRS: PAIR_FLOP_EFFICIENCY_RANGE}


def _opted_in(sc: Scenario, *fields: str) -> Scenario:
    """``sc`` with each of ``fields`` stated at its default and drawn over its plausible
    range (an ``[uncertainty]`` entry, assumed)."""
    raw = sc.model_dump(exclude_none=True)
    for field in fields:
        key = field.split(".", 1)[1]
        raw["serving"][key] = STATED[key]
        low, high = RANGES[field]
        entry = {"range": [low, high], "origin": "assumed", "reason": "plausible range"}
        raw.setdefault("uncertainty", {}).setdefault("serving", {})[key] = entry
    return scenario_from_dict(raw, source="test")


def test_the_keys_are_drawn_where_a_scenario_gives_their_range() -> None:
    sc = load_scenario(SERVING)
    fields = {u.field for u in serving_inputs(bind(sc))}
    assert OVERLAP not in fields and PAIRS not in fields  # not drawn by default
    opted = _opted_in(sc, OVERLAP, PAIRS)
    inputs = {u.field: u for u in serving_inputs(bind(opted))}
    for field, nominal in ((OVERLAP, STEP_EXPERT_OVERLAP), (PAIRS, PAIR_FLOP_EFFICIENCY)):
        u = inputs[field]
        low, high = RANGES[field]
        assert (u.nominal, u.low, u.high) == (nominal, low, high)
        assert (u.origin, u.kind) == ("assumed", "uniform")
        drawn = [dict(d)[field] for d in input_draws(bind(opted), seed=3).overrides]
        assert low <= min(drawn) < max(drawn) <= high
    rows = {r["field"]: r for r in describe_inputs(tuple(inputs.values()))}
    assert rows[OVERLAP]["origin"] == rows[PAIRS]["origin"] == "assumed"
    assert rows[OVERLAP]["range"] == [0.0, 0.5] and rows[PAIRS]["range"] == [0.22, 0.8]


def test_a_serving_answer_names_the_routing_inputs_it_holds() -> None:
    """A MoE's serving answer lists the overlap and the pair efficiency among its
    assumptions, each held (not in the interval) unless the scenario draws it; a dense
    target routes no experts and has no such line."""
    from sim.binding.serving_notes import expert_routing_note

    note = expert_routing_note(bind(load_scenario(SERVING)))
    assert note is not None
    assert "serving.expert_overlap 0.38 (assumed, the default; plausible 0-0.5, held)" in note
    assert "serving.pair_flop_efficiency 0.42 (assumed, the default; plausible 0.22-0.8, held)" in (
        note
    )
    opted = expert_routing_note(bind(_opted_in(load_scenario(SERVING), OVERLAP)))
    assert opted is not None and "(given in the scenario; plausible 0-0.5, drawn)" in opted
    assert expert_routing_note(bind(load_scenario(DENSE))) is None
    result = CliRunner().invoke(main, ["serve", str(SERVING), "--requests", "8", "--verbose"])
    assert result.exit_code == 0, result.output
    assert "expert routing: serving.expert_overlap 0.38" in result.output


def _qwen3_30b(drawn: str | None = None) -> Scenario:
    """Qwen3-30B-A3B (128 experts, 8 a token) on 2x H100 under vLLM with an EAGLE-3 chain
    of 3, as ``specsim init`` derives it (docs/studies/moe-gain-under-load.md), at 64 users
    and short fixed-length requests, every serving input stated (the derived compute's
    efficiency held at 0.5) and only ``drawn`` given a range, no model-error term: its
    interval is the Monte Carlo one joined with the draws of ``drawn``."""
    request = InitRequest(
        str(CONFIGS / "qwen3-30b-a3b.json"),
        "H100",
        "vllm",
        gpus=2,
        drafter="eagle3",
        num_steps=3,
        accept_length=2.8,
        draft_config=str(CONFIGS / "qwen3-30b-a3b-eagle3.json"),
        input_tokens=512,
        output_tokens=512,
    )
    raw = init_scenario(request).scenario.model_dump(exclude_none=True)
    raw["serving"].update(STATED, concurrency=64)
    raw["serving"]["model_error"] = {"level_per_sqrt_log_load": 0.0, "gain_ceiling": 0.0}
    raw["hardware"]["bandwidth_efficiency"] = 0.5
    held = {"range": [0.5, 0.5], "origin": "measured", "reason": "held for the test"}
    raw["uncertainty"] = {"hardware": {"bandwidth_efficiency": held}}
    raw["acceptance"].update(shape="flat", tilt=1.0)
    raw["workload"].update(requests=128, output_tokens=128)
    raw["simulation"] = {**raw.get("simulation", {}), "replications": 3}
    sc = scenario_from_dict(raw, source="test")
    return sc if drawn is None else _opted_in(sc, drawn)


def _speedup_interval(sc: Scenario) -> tuple[list[float], dict[str, Any]]:
    from sim.simulation.serving.setup import serving_setup
    from sim.simulation.serving.simulate import simulate_serving

    setup = serving_setup(bind(sc))
    run = simulate_serving(setup.plan, setup.draftings, replications=3, seed=setup.seed)
    got = serve_intervals(bind(sc), run.records, slo=setup.slo, seed=setup.seed, batch=64)
    return got["speedup"]["speculative"]["per_user_tok_s"], got


@pytest.mark.parametrize("field", [OVERLAP, PAIRS])
def test_a_key_given_its_range_widens_the_serving_interval(field: str) -> None:
    """At 64 users the speculative gain of a small-active MoE moves with the verify's
    expert union (the overlap) and its pairs' FLOPs (the efficiency): given its range, the
    key's draws widen the 90% interval of the speed-up beyond the Monte Carlo one that a
    scenario stating it exactly keeps (1.759-1.767 stated; overlap drawn 1.742-1.814,
    efficiency 1.662-1.897)."""
    (lo0, hi0), stated = _speedup_interval(_qwen3_30b())
    assert stated["draws"] == 0 and stated["inputs"] == []
    (lo, hi), drawn = _speedup_interval(_qwen3_30b(drawn=field))
    assert [row["field"] for row in drawn["inputs"]] == [field]
    assert drawn["inputs"][0]["origin"] == "assumed"
    assert lo <= lo0 and hi0 <= hi and (hi - lo) > 4 * (hi0 - lo0)
