"""The expert overlap and the fused-MoE pair FLOP efficiency as serving keys
(``serving.expert_overlap``, ``serving.pair_flop_efficiency``;
docs/studies/moe-routing-ranges.md): validated, read by the batched passes, and drawn over
their plausible ranges into every serving answer's 90% interval on a MoE target that does
not state them, where the answer lists them as assumed inputs."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.calibration.init_scenario import InitRequest, init_scenario
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
from sim.studies.serving.draws import serve_intervals
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
    ("key", "value"),
    [("expert_overlap", "1"), ("expert_overlap", "-0.1"), ("pair_flop_efficiency", "0")],
)
def test_a_bad_value_is_one_line_and_exit_status_2(tmp_path, key: str, value: str) -> None:
    text = SERVING.read_text().replace("[serving]\n", f"[serving]\n{key} = {value}\n", 1)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["serve", str(path), "--requests", "4"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specsim: error: {path}: serving.{key}: ")
    assert "Traceback" not in result.output


def test_a_moe_target_draws_both_keys_over_their_ranges_as_assumed() -> None:
    sc = load_scenario(SERVING)
    inputs = {u.field: u for u in serving_inputs(bind(sc))}
    for field, nominal, (low, high) in (
        (OVERLAP, STEP_EXPERT_OVERLAP, STEP_EXPERT_OVERLAP_RANGE),
        (PAIRS, PAIR_FLOP_EFFICIENCY, PAIR_FLOP_EFFICIENCY_RANGE),
    ):
        u = inputs[field]
        assert (u.nominal, u.low, u.high) == (nominal, low, high)
        assert (u.origin, u.kind) == ("assumed", "uniform")
        drawn = [dict(d)[field] for d in input_draws(bind(sc), seed=3).overrides]
        assert low <= min(drawn) < max(drawn) <= high
    rows = {r["field"]: r for r in describe_inputs(tuple(inputs.values()))}
    assert rows[OVERLAP]["origin"] == rows[PAIRS]["origin"] == "assumed"
    assert rows[OVERLAP]["range"] == [0.0, 0.5] and rows[PAIRS]["range"] == [0.22, 0.8]
    assert "cannot identify" in rows[OVERLAP]["reason"] and "kernel" in rows[PAIRS]["reason"]
    # a file that states them keeps them (no draw), as does a dense target
    stated = load_scenario(SERVING, [f"{OVERLAP}=0.2", f"{PAIRS}=0.5"])
    fields = {u.field for u in serving_inputs(bind(stated))}
    assert OVERLAP not in fields and PAIRS not in fields
    dense = {u.field for u in serving_inputs(bind(load_scenario(DENSE)))}
    assert OVERLAP not in dense and PAIRS not in dense


def _qwen3_30b(drop: str | None = None) -> Scenario:
    """Qwen3-30B-A3B (128 experts, 8 a token) on 2x H100 under vLLM with an EAGLE-3 chain
    of 3, as ``specsim init`` derives it (docs/studies/moe-gain-under-load.md), at 64 users
    and short fixed-length requests, every serving input stated but ``drop`` (the derived
    compute's efficiency held at 0.5), no model-error term: its interval is the Monte Carlo
    one joined with the draws of what it leaves out."""
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
    raw["serving"].update({k: v for k, v in STATED.items() if k != drop}, concurrency=64)
    raw["serving"]["model_error"] = {"level_per_sqrt_log_load": 0.0, "gain_ceiling": 0.0}
    raw["hardware"]["bandwidth_efficiency"] = 0.5
    held = {"range": [0.5, 0.5], "origin": "measured", "reason": "held for the test"}
    raw["uncertainty"] = {"hardware": {"bandwidth_efficiency": held}}
    raw["acceptance"].update(shape="flat", tilt=1.0)
    raw["workload"].update(requests=128, output_tokens=128)
    raw["simulation"] = {**raw.get("simulation", {}), "replications": 3}
    return scenario_from_dict(raw, source="test")


def _speedup_interval(sc: Scenario) -> tuple[list[float], dict[str, Any]]:
    from sim.simulation.serving.setup import serving_setup
    from sim.simulation.serving.simulate import simulate_serving

    setup = serving_setup(bind(sc))
    run = simulate_serving(setup.plan, setup.draftings, replications=3, seed=setup.seed)
    got = serve_intervals(bind(sc), run.records, slo=setup.slo, seed=setup.seed, batch=64)
    return got["speedup"]["speculative"]["per_user_tok_s"], got


@pytest.mark.parametrize("key", ["expert_overlap", "pair_flop_efficiency"])
def test_a_key_left_to_its_range_widens_the_serving_interval(key: str) -> None:
    """At 64 users the speculative gain of a small-active MoE moves with the verify's
    expert union (the overlap) and its pairs' FLOPs (the efficiency): left unstated, the
    key's draws widen the 90% interval of the speed-up beyond the Monte Carlo one that a
    scenario stating it keeps (1.759-1.767 stated; overlap drawn 1.742-1.814, efficiency
    1.662-1.897)."""
    (lo0, hi0), stated = _speedup_interval(_qwen3_30b())
    assert stated["draws"] == 0 and stated["inputs"] == []
    (lo, hi), drawn = _speedup_interval(_qwen3_30b(drop=key))
    assert [row["field"] for row in drawn["inputs"]] == [f"serving.{key}"]
    assert drawn["inputs"][0]["origin"] == "assumed"
    assert lo <= lo0 and hi0 <= hi and (hi - lo) > 4 * (hi0 - lo0)
