"""calibrate never mixes servers: a base scenario the figures' files contradict is refused
with one line naming both, unless the user says which wins; the output lists what was
kept from the base."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.binding.closed_form import closed_form_tok_s
from sim.calibration.calibrate import calibrate
from sim.calibration.importers.vllm_metrics import read_vllm_metrics
from sim.calibration.measurements import (
    Measurements,
    ServerFact,
    baseline_measurement,
    point_measurement,
    vllm_measurement,
)
from sim.calibration.server_match import check_init_server, contradictions
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides

SEED = Path(__file__).parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"


def _k3() -> Measurements:
    return baseline_measurement(82.5, 0.02, "--baseline-tok-s") + point_measurement(
        3, 2.4, 71.4, 0.02, "--point 3:2.4:71.4"
    )


def test_num_steps_of_the_figures_against_the_base_is_refused() -> None:
    """Issue 31: the seed as base with k = 3 data wrote num_steps = 2, and run then missed
    the measured figure."""
    with pytest.raises(SpecsimError) as err:
        calibrate(load_scenario(SEED), _k3())
    line = str(err.value)
    assert "num_steps is 3 (--point 3:2.4:71.4)" in line
    assert "speculation.num_steps is 2" in line and "--prefer" in line
    assert "\n" not in line


def test_prefer_data_writes_the_figures_num_steps_and_reproduces_them() -> None:
    cal = calibrate(load_scenario(SEED), _k3(), prefer="data")
    assert cal.scenario.num_steps == 3
    assert cal.scenario.acceptance.measured_num_steps == 3
    assert closed_form_tok_s(cal.scenario) == pytest.approx(71.4, rel=1e-5)
    assert any("the figures' written (--prefer data)" in n for n in cal.notes)
    kept = next(n for n in cal.notes if n.startswith("kept from the base scenario"))
    assert "model Kimi-K2.5 (its weights)" in kept and "RTX-PRO-6000" in kept
    assert "num_steps" not in kept


def test_prefer_base_keeps_the_base_and_says_so() -> None:
    cal = calibrate(load_scenario(SEED), _k3(), prefer="base")
    assert cal.scenario.num_steps == 2
    assert any("the base's kept (--prefer base)" in n for n in cal.notes)


def test_model_tensor_parallel_and_engine_named_by_the_files() -> None:
    base = with_overrides(load_scenario(SEED), {"server.engine": "vllm"})
    facts = (
        ServerFact("engine", "sglang", "server.log"),
        ServerFact("model", "meta-llama/Llama-3.1-70B-Instruct", "server.log"),
        ServerFact("tensor_parallel", 4, "server.log"),
    )
    found = {c.what: c for c in contradictions(base, Measurements(server=facts))}
    assert set(found) == {"engine", "model", "tensor-parallel size"}
    assert found["model"].line() == (
        "the figures' model is meta-llama/Llama-3.1-70B-Instruct (server.log) but the base "
        "scenario's model.name is Kimi-K2.5"
    )
    assert found["tensor-parallel size"].base == 8
    data = _k3() + Measurements(server=facts)
    with pytest.raises(SpecsimError, match=r"\(and 3 more\)") as err:
        calibrate(base, data)
    # the line names the base's field it contradicts: calibrate: FIELD: ...
    assert f"calibrate: {err.value.field}: the figures' " in str(err.value)
    assert err.value.field in {"speculation.num_steps", "server.engine", "model.name"}
    cal = calibrate(base, data, prefer="data")
    assert cal.scenario.hardware.gpus == 4 and cal.scenario.server.engine == "sglang"
    assert cal.scenario.server.model_id == "meta-llama/Llama-3.1-70B-Instruct"
    assert any("needs its own config.json" in n for n in cal.notes)


def test_spellings_of_one_model_agree() -> None:
    base = load_scenario(SEED)
    for name in ("moonshotai/Kimi-K2.5", "kimi_k2.5", "/models/Kimi-K2.5/"):
        data = Measurements(server=(ServerFact("model", name, "f"),))
        assert contradictions(base, data) == ()


def test_a_metrics_scrape_names_its_model() -> None:
    """vLLM labels its counters with the served model (model_name): a scrape of another
    model's server contradicts the base, one of the base's model does not."""
    scrape = Path(__file__).parents[1] / "data" / "formats" / "vllm_metrics_tpot.txt"
    counters = read_vllm_metrics(scrape)
    assert counters.models == ("meta-llama/Llama-3.1-8B-Instruct",)
    found = {c.what: c for c in contradictions(load_scenario(SEED), vllm_measurement(counters))}
    assert found["model"].data == "meta-llama/Llama-3.1-8B-Instruct"
    llama = load_scenario(SEED.parent / "llama31-8b-1xh100-eagle3.toml")
    assert "model" not in {c.what for c in contradictions(llama, vllm_measurement(counters))}


QWEN3_MOE_CONFIG = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe"}


@pytest.mark.parametrize(
    ("config", "model_id"),
    [
        (QWEN3_MOE_CONFIG, "Qwen/Qwen3-235B-A22B-Instruct-2507"),
        (QWEN3_MOE_CONFIG, "my-org/support-bot-v2"),  # a fine-tune names no family
        ({"architectures": ["LlamaForCausalLM"]}, "deepseek-ai/DeepSeek-R1-Distill-Llama-70B"),
        ({"architectures": ["MistralForCausalLM"]}, "mistralai/Devstral-Small-2505"),
        ({"model_type": "kimi_k2"}, "moonshotai/Kimi-K2-Instruct"),
        ({}, "meta-llama/Llama-3.1-70B-Instruct"),  # a config naming no family
    ],
)  # fmt: skip
def test_init_takes_figures_of_the_configs_model(config: dict, model_id: str) -> None:
    data = Measurements(
        server=(ServerFact("engine", "sglang", "f"), ServerFact("model", model_id, "f"))
    )
    check_init_server("sglang", config, "config.json", data)


def test_init_refuses_another_engines_or_models_figures() -> None:
    """A vLLM file given to an SGLang server's init points to --engine vllm (calibrating
    would say 'calibrate the scenario of the server'); a Llama bench file beside a Qwen
    config names the scenario after Llama and fits Llama's times to Qwen's weights."""
    vllm = Measurements(server=(ServerFact("engine", "vllm", "vllm bench b.json"),))
    with pytest.raises(
        SpecsimError,
        match=r"--engine: sglang, but vllm bench b\.json is vllm's: give --engine vllm",
    ):
        check_init_server("sglang", QWEN3_MOE_CONFIG, "config.json", vllm)
    llama = Measurements(
        server=(ServerFact("model", "meta-llama/Llama-3.1-70B-Instruct", "b.json"),)
    )
    with pytest.raises(
        SpecsimError, match=r"b\.json: model: meta-llama/Llama-3\.1-70B-Instruct is not"
    ):
        check_init_server("vllm", QWEN3_MOE_CONFIG, "config.json", llama)


def test_init_names_the_num_steps_its_figures_were_measured_at() -> None:
    """Figures all measured at k = 3 beside no --drafter (or another --num-steps) are
    refused in init's flags, not as a base scenario the user never wrote; figures at
    several k, or at the flags' k, pass."""
    at_3 = Measurements(server=(ServerFact("num_steps", 3, "r.json"),))
    with pytest.raises(
        SpecsimError,
        match=r"--num-steps: no --drafter, but the figures of r\.json are of speculative "
        r"decoding at num_steps 3: give --drafter and --num-steps 3",
    ):
        check_init_server("trtllm", {}, "config.json", at_3)
    with pytest.raises(SpecsimError, match=r"--num-steps: --num-steps 4, but"):
        check_init_server("trtllm", {}, "config.json", at_3, 4)
    check_init_server("trtllm", {}, "config.json", at_3, 3)
    several = Measurements(
        server=(ServerFact("num_steps", 3, "a.json"), ServerFact("num_steps", 5, "b.json"))
    )
    check_init_server("trtllm", {}, "config.json", several, 5)
