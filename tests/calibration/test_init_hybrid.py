"""specsim init on a hybrid target: the linear-attention layers' recurrent state a request is
derived from the config (layers x value heads / TP x value dim x key dim x the state's
dtype), the KV and attention FLOPs are the full-attention layers' only, and a config without
linear-attention layers derives no state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.calibration.hf_config import read_hf_config
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
    ],
)
def test_a_bad_hybrid_field_is_named(tmp_path: Path, change: dict, field: str) -> None:
    with pytest.raises(SpecsimError) as err:
        read_hf_config(_write(tmp_path, dict(SMALL_NEXT, **change)))
    assert err.value.field == field
