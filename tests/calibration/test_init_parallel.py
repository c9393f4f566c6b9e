"""specsim init of a block-parallel drafter (DFlash, DSpark): speculation.parallel_draft and
the drafter's size, layers and KV from its checkpoint's config.json, against hand sums, each
value with its origin; what it cannot read is one line naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main
from sim.errors import SpecsimError

#: A Qwen3-style target of hidden 5120 over a 248,320-token vocabulary (the fields read).
TARGET = {
    "architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 5120,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 25600,
    "vocab_size": 248320,
    "torch_dtype": "bfloat16",
}
#: A speculators-format DSpark checkpoint of that target's geometry (5 Qwen3 layers of 20
#: query and 4 KV heads of 256, the hidden states of 8 target layers, Markov rank 256).
DSPARK = {
    "speculators_model_type": "dspark",
    "aux_hidden_state_layer_ids": [4, 12, 20, 28, 36, 44, 52, 60],
    "markov_rank": 256,
    "draft_vocab_size": None,
    "torch_dtype": "bfloat16",
    "transformer_layer_config": {
        "model_type": "qwen3",
        "num_hidden_layers": 5,
        "hidden_size": 5120,
        "num_attention_heads": 20,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "intermediate_size": 17408,
        "vocab_size": 248320,
    },
}
#: A dense DFlash checkpoint (decoder config at the top level, dflash_config's target layers).
DFLASH = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 5,
    "hidden_size": 5120,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 17408,
    "vocab_size": 248320,
    "torch_dtype": "bfloat16",
    "dflash_config": {"target_layer_ids": [1, 16, 31, 46, 61], "mask_token_id": 248319},
}
#: One DSpark layer by hand: q and o 5120 x 5120, k and v 5120 x 1024, MLP 3 x 5120 x 17408.
DSPARK_LAYER = 2 * 5120 * 5120 + 2 * 5120 * 1024 + 3 * 5120 * 17408


def _files(tmp_path: Path, drafter: dict, target: dict = TARGET) -> tuple[str, str]:
    t, d = tmp_path / "target.json", tmp_path / "drafter.json"
    t.write_text(json.dumps(target))
    d.write_text(json.dumps(drafter))
    return str(t), str(d)


def _init(tmp_path: Path, drafter: dict, method: str = "dspark", **kw):
    target, draft = _files(tmp_path, drafter)
    req = InitRequest(target, "B200", "vllm", drafter=method, num_steps=7, accept_length=3.4,
                      draft_config=draft, **kw)  # fmt: skip
    return init_scenario(req), draft


def test_a_speculators_dspark_checkpoint_by_hand(tmp_path: Path) -> None:
    init, draft = _init(tmp_path, DSPARK)
    model = init.scenario.model
    # 5 layers + fc over 8 target layers + the shared LM head + the Markov projection read
    # at each of the 7 positions (its embedding is a lookup)
    hand = 5 * DSPARK_LAYER + 8 * 5120 * 5120 + 248320 * 5120 + 7 * 256 * 248320
    assert model.draft_params == hand == 3_577_610_240
    assert model.draft_layers == 5
    assert model.draft_kv_bytes_per_token == 5 * 2 * 256 * 4 * 2  # 5 layers, K and V, bf16
    assert init.scenario.speculation.parallel_draft is True
    assert init.scenario.acceptance.method == "generic"
    for key in ("model.draft_params", "model.draft_layers", "model.draft_kv_bytes_per_token"):
        assert draft in init.comments[key]
    assert "shared" in init.comments["model.draft_params"]
    assert "one drafter pass" in init.comments["speculation.parallel_draft"]


def test_a_dense_dflash_checkpoint_has_no_markov_head_and_its_own_vocabulary_its_own_head(
    tmp_path: Path,
) -> None:
    layer = 2 * 5120 * 40 * 128 + 2 * 5120 * 8 * 128 + 3 * 5120 * 17408
    shared, _ = _init(tmp_path, {**DFLASH, "markov_rank": 256}, method="dflash")
    assert shared.scenario.model.draft_params == 5 * layer + 5 * 5120 * 5120 + 248320 * 5120
    own, _ = _init(tmp_path, {**DFLASH, "draft_vocab_size": 32000}, method="dflash")
    assert own.scenario.model.draft_params == 5 * layer + 5 * 5120 * 5120 + 32000 * 5120
    assert "its own head" in own.comments["model.draft_params"]


def test_the_drafter_kv_is_per_tensor_parallel_rank(tmp_path: Path) -> None:
    init, _ = _init(tmp_path, DSPARK, gpus=2)
    assert init.scenario.model.draft_kv_bytes_per_token == 5 * 2 * 256 * 2 * 2  # 4 heads / 2


def test_a_stated_size_needs_no_config_and_still_drafts_in_parallel(tmp_path: Path) -> None:
    target, _ = _files(tmp_path, DSPARK)
    req = InitRequest(target, "B200", "vllm", drafter="dflash", num_steps=7, accept_length=3.4,
                      draft_params=2.0e9)  # fmt: skip
    init = init_scenario(req)
    assert init.scenario.model.draft_params == 2.0e9
    assert init.comments["model.draft_params"] == "--draft-params"
    assert init.scenario.speculation.parallel_draft is True


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"aux_hidden_state_layer_ids": None}, "aux_hidden_state_layer_ids"),
        ({"aux_hidden_state_layer_ids": []}, "aux_hidden_state_layer_ids"),
        ({"speculators_model_type": "eagle3"}, "speculators_model_type"),
        ({"transformer_layer_config": None}, "transformer_layer_config"),
        ({"markov_rank": 0}, "markov_rank"),
        ({"draft_vocab_size": -5}, "draft_vocab_size"),
    ],
)
def test_what_the_checkpoint_lacks_is_one_line_naming_the_file_and_field(
    tmp_path: Path, change: dict, field: str
) -> None:
    drafter = {k: v for k, v in {**DSPARK, **change}.items() if v is not None or k not in change}
    with pytest.raises(SpecsimError) as err:
        _init(tmp_path, drafter)
    line = str(err.value)
    assert field in line and "drafter.json" in line and "\n" not in line


def test_without_its_config_or_size_the_command_says_so_in_one_line(tmp_path: Path) -> None:
    target, _ = _files(tmp_path, DSPARK)
    out = tmp_path / "s.toml"
    args = ["init", "--config", target, "--gpu", "B200", "--engine", "vllm", "--drafter",
            "dspark", "-k", "7", "--accept-length", "3.4", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--draft-config" in lines[0] and "--drafter dspark" in lines[0]
    assert not out.exists()
