"""specsim init on a hybrid target: the linear-attention layers' recurrent state a request is
derived from the config (layers x value heads / TP x value dim x key dim x the state's
dtype), the KV and attention FLOPs are the full-attention layers' only, a config without
linear-attention layers derives no state, and ``--drafter mtp`` reads the Qwen3.5 family's
``mtp_num_hidden_layers`` as it reads DeepSeek's ``num_nextn_predict_layers``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.calibration.hf_config import read_hf_config
from sim.calibration.init_request import InitRequest, InitScenario
from sim.calibration.init_scenario import init_scenario
from sim.errors import SpecsimError

#: A small Qwen3-Next-style config (the fields read): 8 layers, every 4th full attention.
SMALL_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"],
    "hidden_size": 1024,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "intermediate_size": 2816,
    "vocab_size": 32000,
    "torch_dtype": "bfloat16",
    "full_attention_interval": 4,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "linear_key_head_dim": 64,
    "linear_value_head_dim": 96,
    "linear_conv_kernel_dim": 4,
}


def _write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def test_the_state_of_a_qwen3_next_style_config_by_hand(tmp_path: Path) -> None:
    m = read_hf_config(_write(tmp_path, SMALL_NEXT))
    # 6 linear layers (all but every 4th) x 8 value heads x 96 x 64 x 2 bytes (bfloat16)
    assert m.get("state_bytes_per_request") == 6 * 8 * 96 * 64 * 2 == 589_824
    assert m.values["state_bytes_per_request"].origin.startswith("derived: 6 linear-attention")
    # the linear layers (vLLM's block layout of the pool reads them)
    assert m.get("linear_layers") == 6
    # KV: 2 full-attention layers x 2 (K, V) x 128 x 2 KV heads x 2 bytes
    assert m.get("kv_bytes_per_token") == 2 * 2 * 128 * 2 * 2
    assert m.get("attention_flops_per_pair") == 8 * 256 * 2 * 2
    # TP 4: 2 value heads a rank
    assert (
        read_hf_config(_write(tmp_path, SMALL_NEXT), tensor_parallel=4).get(
            "state_bytes_per_request"
        )
        == 6 * 2 * 96 * 64 * 2
    )


def test_the_conv_state_of_a_qwen3_next_style_config_by_hand(tmp_path: Path) -> None:
    """6 linear layers x (2 x 4 key heads x 64 + 8 value heads x 96 = 1,280 channels) x 2
    bytes (bfloat16) a position of the window, kernel 4: 3 positions; TP 4: 320 channels
    a rank."""
    m = read_hf_config(_write(tmp_path, SMALL_NEXT))
    assert m.get("conv_state_bytes_per_position") == 6 * 1280 * 2 == 15_360
    assert m.get("conv_state_positions") == 3
    assert "linear_conv_kernel_dim = 4, minus 1" in m.values["conv_state_positions"].origin
    tp4 = read_hf_config(_write(tmp_path, SMALL_NEXT), tensor_parallel=4)
    assert tp4.get("conv_state_bytes_per_position") == 6 * 320 * 2


def test_layer_types_and_mamba_ssm_dtype_win(tmp_path: Path) -> None:
    text = dict(SMALL_NEXT, mamba_ssm_dtype="float32")
    del text["full_attention_interval"]
    text["layer_types"] = ["linear_attention"] * 5 + ["full_attention"] * 3
    m = read_hf_config(_write(tmp_path, {"architectures": ["X"], "text_config": text}))
    assert m.get("state_bytes_per_request") == 5 * 8 * 96 * 64 * 4
    assert "text_config: mamba_ssm_dtype = float32" in m.values["state_bytes_per_request"].origin
    assert m.get("kv_bytes_per_token") == 3 * 2 * 128 * 2 * 2


def test_a_config_without_linear_layers_derives_no_state(tmp_path: Path) -> None:
    dense = {k: v for k, v in SMALL_NEXT.items() if not k.startswith(("linear_", "full_"))}
    m = read_hf_config(_write(tmp_path, dense))
    assert "state_bytes_per_request" not in m.values
    assert m.get("kv_bytes_per_token") == 8 * 2 * 128 * 2 * 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"layer_types": ["linear_attention"] * 3}, "layer_types"),
        ({"mamba_ssm_dtype": "int3"}, "mamba_ssm_dtype"),
        ({"linear_value_head_dim": None}, "linear_value_head_dim"),
        ({"linear_conv_kernel_dim": None}, "linear_conv_kernel_dim"),
        ({"linear_conv_kernel_dim": 1}, "linear_conv_kernel_dim"),
        ({"linear_num_key_heads": None}, "linear_num_key_heads"),
    ],
)
def test_a_bad_hybrid_field_is_named(tmp_path: Path, change: dict, field: str) -> None:
    with pytest.raises(SpecsimError) as err:
        read_hf_config(_write(tmp_path, dict(SMALL_NEXT, **change)))
    assert err.value.field == field


#: Qwen/Qwen3.5-27B's config.json as published (the fields read; Qwen3.6-27B's has the same
#: fields): the language model nested in ``text_config``, its dtype as ``dtype``, one MTP
#: layer as ``mtp_num_hidden_layers``, every 4th of 64 layers full attention.
QWEN35_27B = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text",
        "dtype": "bfloat16",
        "hidden_size": 5120,
        "intermediate_size": 17408,
        "num_hidden_layers": 64,
        "num_attention_heads": 24,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "attn_output_gate": True,
        "full_attention_interval": 4,
        "layer_types": [
            "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(64)
        ],
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 48,
        "linear_value_head_dim": 128,
        "mamba_ssm_dtype": "float32",
        "mtp_num_hidden_layers": 1,
        "mtp_use_dedicated_embeddings": False,
        "vocab_size": 248320,
        "tie_word_embeddings": False,
    },
    "vision_config": {"model_type": "qwen3_5"},
}


def _init(config: Path, **flags) -> InitScenario:
    args = {"gpus": 1, "drafter": "mtp", "num_steps": 2, "accept_length": 2.3, **flags}
    return init_scenario(InitRequest(str(config), "B200", "vllm", **args))


def test_mtp_of_a_qwen35_style_config_by_hand(tmp_path: Path) -> None:
    """``--drafter mtp`` reads ``text_config.mtp_num_hidden_layers``: one module of a
    full-attention decoder layer (q with its output gate, k, v, o of 24 and 4 heads of 256
    over 5120, MLP 3 x 5120 x 17408), fc 2 x 5120 x 5120 and the untied LM head 248,320 x
    5120; its KV one full-attention layer's (4 KV heads x 256 x K and V x 2 bytes)."""
    init = _init(_write(tmp_path, QWEN35_27B))
    # a full-attention layer: q_proj 5120 x 12,288 (attn_output_gate), k, v, o, the MLP
    mlp = 3 * 5120 * 17408
    full = 5120 * 24 * 256 * 2 + 5120 * 4 * 256 * 2 + 6144 * 5120 + mlp
    assert init.scenario.model.draft_params == full + 2 * 5120 * 5120 + 248320 * 5120
    assert init.scenario.model.draft_params == pytest.approx(1.696e9, abs=0.5e6)  # case 39's
    assert init.scenario.model.draft_layers == 1
    why = init.comments["model.draft_params"]
    assert "config.json: text_config: mtp_num_hidden_layers = 1" in why
    assert init.scenario.model.draft_kv_bytes_per_token == 4 * 256 * 2 * 2
    assert "16 full-attention layers" in init.comments["model.draft_kv_bytes_per_token"]
    # the target's KV: its 16 full-attention layers only
    assert init.scenario.model.kv_bytes_per_token == 16 * 4 * 256 * 2 * 2
    # its states: 48 x 48 x 128 x 128 in float32, the conv window 48 x 10,240 x 2 bytes
    # (text_config.dtype) a position over 3
    m = init.scenario.model
    assert m.state_bytes_per_request == 48 * 48 * 128 * 128 * 4
    assert (m.conv_state_bytes_per_position, m.conv_state_positions) == (48 * 10_240 * 2, 3)
    assert "text_config: dtype = bfloat16" in init.comments["model.conv_state_bytes_per_position"]
    assert (
        init.comments["model.weight_bytes_per_param"]
        == "config.json: text_config: dtype = bfloat16"
    )


def test_the_mtp_count_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a hybrid target the MTP count sizes the drafter and its KV: one read of the
    config's MTP field serves both (with --draft-params, the KV's read only)."""
    import sim.calibration.init_scenario as init_module

    calls: list[str] = []
    real = init_module.mtp_modules

    def counted(config: str) -> tuple[int, str]:
        calls.append(config)
        return real(config)

    monkeypatch.setattr(init_module, "mtp_modules", counted)
    config = _write(tmp_path, QWEN35_27B)
    assert _init(config).scenario.model.draft_kv_bytes_per_token == 4 * 256 * 2 * 2
    assert _init(config, draft_params=1.7e9).scenario.model.draft_kv_bytes_per_token
    assert calls == [str(config), str(config)]


def test_a_qwen35_layer_is_the_mean_of_its_two_mixers_by_hand(tmp_path: Path) -> None:
    """16 full-attention mixers (q 5120 x 12,288 with the gate, k and v 5120 x 1,024, o
    6,144 x 5,120: 104.86M) and 48 Gated DeltaNet mixers (in_proj_qkvz 5120 x 16,384,
    in_proj_ba 5120 x 96, out_proj 6,144 x 5,120: 115.83M), each with the 267.39M MLP: a
    mean layer of 380.49M, validation case 39's 380.5M."""
    m = read_hf_config(_write(tmp_path, QWEN35_27B))
    full = 5120 * 12288 + 2 * 5120 * 1024 + 6144 * 5120
    delta = 5120 * 16384 + 5120 * 96 + 6144 * 5120
    mlp = 3 * 5120 * 17408
    assert m.get("layer_params") == (16 * full + 48 * delta) / 64 + mlp
    assert m.get("layer_params") == pytest.approx(380.5e6, abs=0.05e6)
    assert m.full_attention_layer_params == full + mlp
    assert "the mean of 16 full-attention" in m.values["layer_params"].origin
    # without the gate (Qwen3-Next) q_proj is 5120 x 6,144
    plain = {k: v for k, v in QWEN35_27B["text_config"].items() if k != "attn_output_gate"}
    no_gate = read_hf_config(_write(tmp_path, plain))
    assert no_gate.full_attention_layer_params == full - 5120 * 6144 + mlp


def test_mtp_of_a_deepseek_style_config_names_its_field(tmp_path: Path) -> None:
    """DeepSeek's ``num_nextn_predict_layers`` at the top level, two modules: the count
    and the field in the provenance; a dense target's drafter KV stays the default."""
    cfg = {k: v for k, v in SMALL_NEXT.items() if not k.startswith(("linear_", "full_"))}
    init = _init(_write(tmp_path, dict(cfg, num_nextn_predict_layers=2)))
    assert init.scenario.model.draft_layers == 2
    assert "config.json: num_nextn_predict_layers = 2" in init.comments["model.draft_params"]
    assert "model.draft_kv_bytes_per_token" not in init.comments


@pytest.mark.parametrize("count", [0, None, "1"])
def test_a_config_without_mtp_modules_is_one_line(tmp_path: Path, count) -> None:
    text = dict(QWEN35_27B["text_config"], mtp_num_hidden_layers=count)
    if count is None:
        del text["mtp_num_hidden_layers"]
    with pytest.raises(SpecsimError) as err:
        _init(_write(tmp_path, dict(QWEN35_27B, text_config=text)))
    line = str(err.value)
    assert "no MTP module" in line and "config.json" in line and "\n" not in line


def test_a_nested_config_may_state_its_dtype_at_the_top(tmp_path: Path) -> None:
    """The weights' dtype from ``text_config`` when it has one (named so), else from the
    top level; quantization at the top level wins."""
    dense = {k: v for k, v in SMALL_NEXT.items() if not k.startswith(("linear_", "full_"))}
    text = {k: v for k, v in dense.items() if k != "torch_dtype"}
    top = read_hf_config(_write(tmp_path, {"torch_dtype": "float16", "text_config": text}))
    assert top.values["weight_bytes_per_param"].origin == "config.json: torch_dtype = float16"
    inner = read_hf_config(_write(tmp_path, {"torch_dtype": "float32", "text_config": dense}))
    assert inner.get("weight_bytes_per_param") == 2.0
    assert inner.values["weight_bytes_per_param"].origin.startswith("config.json: text_config")
    fp8 = {"quantization_config": {"quant_method": "fp8"}, "text_config": dense}
    m = read_hf_config(_write(tmp_path, fp8))  # its layers at 1 B, its LM head at 2 B
    layers, head = m.get("layers") * m.get("layer_params"), m.get("lm_head_params")
    want = (layers + 2 * head) / (layers + head)
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
