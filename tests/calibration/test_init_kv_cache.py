"""The server's KV cache dtype in ``specsim init`` (sim/calibration/kv_cache_dtype.py):
``--kv-cache-dtype`` in the engines' spellings, else what the checkpoint states (ModelOpt's
``kv_cache_quant_algo``, served FP8 by the engines' ``auto``; compressed-tensors'
``kv_cache_scheme``, which their ``auto`` does not apply), else 2 bytes; the drafter's KV
follows it, the KV capacity too; what it cannot read is one line, exit 2, nothing written.
Real files: tests/data/configs/README.md."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.binding.kv_capacity import kv_capacity
from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main

DATA = Path(__file__).parents[1] / "data" / "configs"
QWEN = DATA / "qwen3-30b-a3b.json"  # bf16, no quantization_config
NVFP4 = DATA / "qwen3-30b-a3b-nvfp4-modelopt.json"  # ModelOpt, kv_cache_quant_algo FP8
DRAFTER = DATA / "qwen3-30b-a3b-eagle3.json"  # bf16 EAGLE-3 drafter of QWEN
#: Qwen3-30B-A3B's KV a token at 1 byte an element: K and V x 4 KV heads x 128 x 48 layers.
FP8_KV = 2 * 4 * 128 * 48
#: Its EAGLE-3 drafter's (one layer, 4 KV heads of 128) at 1 byte, on one GPU.
FP8_DRAFT_KV = 2 * 4 * 128


def _req(config: Path = QWEN, **change: object) -> InitRequest:
    return replace(InitRequest(str(config), "H100", "vllm"), **change)


def _compressed_tensors(tmp_path: Path, scheme: object) -> Path:
    """Qwen3-30B-A3B with an llm-compressor FP8 layout (per-channel weights, routers and LM
    head ignored) and the given ``kv_cache_scheme``."""
    raw = json.loads(QWEN.read_text())
    raw["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$"],
        "kv_cache_scheme": scheme,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return path


#: llm-compressor's FP8 KV cache scheme (per-tensor scales).
FP8_SCHEME = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
              "symmetric": True}  # fmt: skip


@pytest.mark.parametrize("flag", ["fp8", "fp8_e4m3", "fp8_e5m2"])
def test_an_fp8_flag_halves_the_kv_of_a_bf16_checkpoint(flag: str) -> None:
    init = init_scenario(_req(kv_cache_dtype=flag))
    assert init.scenario.model.kv_bytes_per_token == FP8_KV
    assert f"(--kv-cache-dtype {flag})" in init.comments["model.kv_bytes_per_token"]


def test_auto_is_two_bytes_without_a_statement_and_says_so() -> None:
    init = init_scenario(_req())
    assert init.scenario.model.kv_bytes_per_token == 2 * FP8_KV
    assert "states no KV cache quantization" in init.comments["model.kv_bytes_per_token"]


def test_auto_reads_modelopts_kv_cache_quant_algo_and_a_flag_overrides_it() -> None:
    auto = init_scenario(_req(NVFP4))
    assert auto.scenario.model.kv_bytes_per_token == FP8_KV
    assert "kv_cache_quant_algo = FP8" in auto.comments["model.kv_bytes_per_token"]
    bf16 = init_scenario(_req(NVFP4, kv_cache_dtype="bf16"))
    assert bf16.scenario.model.kv_bytes_per_token == 2 * FP8_KV
    assert "(--kv-cache-dtype bf16)" in bf16.comments["model.kv_bytes_per_token"]


def test_modelopts_nested_layout_and_a_non_fp8_algorithm(tmp_path: Path) -> None:
    raw = json.loads(NVFP4.read_text())
    quant = raw.pop("quantization_config")
    kv = quant.pop("kv_cache_quant_algo")
    raw["quantization_config"] = {
        "quant_method": "modelopt",
        "quantization": {**quant, "kv_cache_quant_algo": kv},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    init = init_scenario(_req(path))
    assert init.scenario.model.kv_bytes_per_token == FP8_KV
    assert "quantization.kv_cache_quant_algo" in init.comments["model.kv_bytes_per_token"]
    raw["quantization_config"]["quantization"]["kv_cache_quant_algo"] = "INT8"
    path.write_text(json.dumps(raw))
    # the engines map FP8 only and fall back to the model's dtype otherwise
    assert init_scenario(_req(path)).scenario.model.kv_bytes_per_token == 2 * FP8_KV


def test_a_compressed_tensors_kv_scheme_needs_the_flag(tmp_path: Path) -> None:
    path = _compressed_tensors(tmp_path, FP8_SCHEME)
    auto = init_scenario(_req(path))
    assert auto.scenario.model.kv_bytes_per_token == 2 * FP8_KV
    assert "give --kv-cache-dtype fp8" in auto.comments["model.kv_bytes_per_token"]
    fp8 = init_scenario(_req(path, kv_cache_dtype="fp8"))
    assert fp8.scenario.model.kv_bytes_per_token == FP8_KV


def test_the_drafters_kv_follows_the_server() -> None:
    eagle3 = {"drafter": "eagle3", "num_steps": 3, "accept_length": 2.6,
              "draft_config": str(DRAFTER)}  # fmt: skip
    plain = init_scenario(_req(**eagle3))
    assert plain.scenario.model.draft_kv_bytes_per_token == 2 * FP8_DRAFT_KV
    for engine in ("vllm", "sglang"):  # a flag reaches SGLang's draft worker too
        init = init_scenario(_req(engine=engine, kv_cache_dtype="fp8", **eagle3))
        assert init.scenario.model.draft_kv_bytes_per_token == FP8_DRAFT_KV
        assert "(--kv-cache-dtype fp8)" in init.comments["model.draft_kv_bytes_per_token"]
    # auto: vLLM's one cache config takes the target's FP8; SGLang's draft worker its own
    vllm = init_scenario(_req(NVFP4, **eagle3))
    assert vllm.scenario.model.draft_kv_bytes_per_token == FP8_DRAFT_KV
    sglang = init_scenario(_req(NVFP4, engine="sglang", **eagle3))
    assert sglang.scenario.model.kv_bytes_per_token == FP8_KV
    assert sglang.scenario.model.draft_kv_bytes_per_token == 2 * FP8_DRAFT_KV
    assert "SGLang's draft worker" in sglang.comments["model.draft_kv_bytes_per_token"]


def test_an_fp8_cache_holds_twice_the_tokens() -> None:
    bf16 = kv_capacity(init_scenario(_req()).scenario, speculates=False).tokens
    fp8 = kv_capacity(init_scenario(_req(kv_cache_dtype="fp8")).scenario, False).tokens
    assert bf16 is not None and fp8 is not None and bf16 > 10_000
    # the same bytes over half the bytes a token, up to whole blocks of 16 tokens
    assert abs(fp8 - 2 * bf16) <= 2 * 16


def test_cli_writes_the_flag_and_refuses_an_unknown_value(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    base = ["init", "--config", str(QWEN), "--gpu", "H100", "--engine", "vllm", "--out", str(out)]
    ok = CliRunner().invoke(main, [*base, "--kv-cache-dtype", "fp8_e4m3", "-q"])
    assert ok.exit_code == 0, ok.output
    text = out.read_text()
    assert f"kv_bytes_per_token = {float(FP8_KV)}" in text
    assert "(--kv-cache-dtype fp8_e4m3)" in text
    out.unlink()
    bad = CliRunner().invoke(main, [*base, "--kv-cache-dtype", "int8"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "specsim: error: init: --kv-cache-dtype: 'int8' is not one of 'auto', 'bf16', "
        "'bfloat16', 'fp16', 'fp8', 'fp8_e4m3', 'fp8_e5m2'"
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    ("scheme", "said"),
    [("fp8", "must be a mapping"), ({"num_bits": 4, "type": "float"}, "num_bits 4")],
)
def test_an_unreadable_kv_cache_scheme_is_one_line(tmp_path: Path, scheme: object, said: str):
    path = _compressed_tensors(tmp_path, scheme)
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(path), "--gpu", "H100", "--engine", "vllm", "--out", str(out)]
    bad = CliRunner().invoke(main, args)
    assert bad.exit_code == 2
    lines = bad.output.strip().splitlines()
    assert len(lines) == 1 and said in lines[0]
    assert lines[0].startswith(f"specsim: error: {path}: quantization_config.kv_cache_scheme:")
    assert not out.exists()
