"""specsim init of an EAGLE-3 drafter from its own config.json (``--draft-config``): its
parameters (own layer over 2 x hidden, fc over three target layers, LM head over the draft
vocabulary), layers and KV against hand sums, labelled derived with the file named; a config
that is not an EAGLE-3 drafter's, or another target's drafter, is one line naming the file
and field, exit 2, nothing written. Real files: tests/data/configs/README.md."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main
from sim.errors import SpecsimError

DATA = Path(__file__).parents[1] / "data"
TARGET = DATA / "configs" / "qwen3-30b-a3b.json"
DRAFTER = DATA / "configs" / "qwen3-30b-a3b-eagle3.json"
LLAMA_8B_DRAFTER = DATA / "configs" / "llama3.1-8b-eagle3.json"
LLAMA_70B = DATA / "quickstart" / "config.json"

#: SpecForge's Qwen3-30B-A3B EAGLE-3 layer (hidden 2048, 32 heads and 4 KV heads of 128,
#: FFN 12288, draft vocabulary 32,000), summed by hand.
H, HEADS, KV, HD, FFN, DRAFT_VOCAB = 2048, 32, 4, 128, 12288, 32000
LAYER = 2 * H * HEADS * HD + 2 * H * KV * HD + 3 * H * FFN  # q, o; k, v; gated MLP
WIDENED = H * (HEADS + 2 * KV) * HD  # q, k, v read 2 x H inputs
FC = 3 * H * H  # three target layers' hidden states
HEAD = DRAFT_VOCAB * H
EXPECTED = LAYER + WIDENED + FC + HEAD  # 182,976,512


def _req(config: Path = TARGET, **change) -> InitRequest:
    base = InitRequest(str(config), "H100", "vllm", gpus=2, drafter="eagle3", num_steps=3,
                       accept_length=2.6, draft_config=str(DRAFTER))  # fmt: skip
    return replace(base, **change)


def test_a_moe_targets_drafter_is_sized_from_its_config() -> None:
    init = init_scenario(_req())
    m = init.scenario.model
    assert m.draft_params == EXPECTED
    assert m.draft_kv_bytes_per_token == 2 * HD * 2 * 2  # K and V, 4 KV heads over TP 2, BF16
    why = init.comments["model.draft_params"]
    assert why.startswith(f"derived from {DRAFTER}") and "draft_vocab_size" in why
    assert "0.366 GB at 2 B" in why  # its bytes: 183.0M params in bfloat16


def test_the_speculators_layout_reads_the_same_drafter(tmp_path: Path) -> None:
    flat = json.loads(DRAFTER.read_text())
    nested = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": flat.pop("draft_vocab_size"),
        "eagle_aux_hidden_state_layer_ids": [1, 23, 44],
        "torch_dtype": flat.pop("torch_dtype"),
        "transformer_layer_config": {**flat, "architectures": ["LlamaForCausalLM"]},
    }
    path = tmp_path / "speculator.json"
    path.write_text(json.dumps(nested))
    init = init_scenario(_req(draft_config=str(path)))
    assert init.scenario.model.draft_params == EXPECTED


def test_a_narrower_drafter_reads_the_target_width_in_its_fc(tmp_path: Path) -> None:
    narrow = {**json.loads(DRAFTER.read_text()), "hidden_size": 1024, "intermediate_size": 4096,
              "target_hidden_size": 2048}  # fmt: skip
    path = tmp_path / "narrow.json"
    path.write_text(json.dumps(narrow))
    h = 1024
    layer = 2 * h * HEADS * HD + 2 * h * KV * HD + 3 * h * 4096
    expected = layer + h * (HEADS + 2 * KV) * HD + 3 * 2048 * h + DRAFT_VOCAB * h
    assert init_scenario(_req(draft_config=str(path))).scenario.model.draft_params == expected


def test_a_drafter_in_another_dtype_is_read_at_its_own(tmp_path: Path) -> None:
    path = tmp_path / "fp32.json"
    path.write_text(json.dumps({**json.loads(DRAFTER.read_text()), "torch_dtype": "float32"}))
    init = init_scenario(_req(draft_config=str(path)))
    assert "at 4 B" in init.comments["model.draft_params"]
    assert init.scenario.model.draft_bytes_per_param == 4.0


@pytest.mark.parametrize(
    ("config", "draft", "field", "words"),
    [
        (TARGET, LLAMA_8B_DRAFTER, "hidden_size", "4096, the target's is 2048"),
        (LLAMA_70B, LLAMA_8B_DRAFTER, "hidden_size", "4096, the target's is 8192"),
        (TARGET, TARGET, "architectures", "not an EAGLE-3 drafter"),
    ],
)
def test_a_config_that_is_not_this_targets_drafter_is_one_line(
    tmp_path: Path, config: Path, draft: Path, field: str, words: str
) -> None:
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(config), "--gpu", "H100", "--gpus", "2", "--engine", "vllm",
            "--drafter", "eagle3", "-k", "3", "--accept-length", "2.6", "--draft-config",
            str(draft), "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"{draft}: {field}: " in lines[0] and words in lines[0]
    assert not out.exists()


def test_another_vocabulary_is_another_targets_drafter(tmp_path: Path) -> None:
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps({**json.loads(DRAFTER.read_text()), "vocab_size": 128256}))
    with pytest.raises(SpecsimError, match="vocab_size: 128256, the target's is 151936"):
        init_scenario(_req(draft_config=str(path)))


def test_a_drafters_config_given_as_the_target_is_refused() -> None:
    with pytest.raises(SpecsimError, match="give the target model's as --config"):
        init_scenario(_req(config=DRAFTER))


def test_a_draft_config_an_mtp_drafter_does_not_read_is_refused() -> None:
    with pytest.raises(SpecsimError, match="--draft-config: read only with --drafter eagle3"):
        init_scenario(_req(drafter="mtp"))


def test_draft_params_still_win() -> None:
    init = init_scenario(_req(draft_params=0.2e9))
    assert init.scenario.model.draft_params == 0.2e9
    assert init.comments["model.draft_params"] == "--draft-params"


def test_figures_without_their_context_say_what_the_serving_commands_need(tmp_path: Path) -> None:
    """Figures given as flags carry no context: serve refused the written scenario
    (timing.context_tokens) with nothing said at init; init now says so, and not once the
    context is given."""
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(TARGET), "--gpu", "H100", "--gpus", "2", "--engine", "vllm",
            "--drafter", "eagle3", "-k", "3", "--draft-config", str(DRAFTER), "--baseline-tok-s",
            "190", "--point", "3:2.6:330", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "need the context the figures were measured at: --context-tokens N" in " ".join(
        ln.strip() for ln in result.output.splitlines()
    )
    served = CliRunner().invoke(main, ["serve", str(out), "--concurrency", "2", "-q"])
    assert served.exit_code == 2 and "timing.context_tokens" in served.output
    given = CliRunner().invoke(main, [*args, "--context-tokens", "1100"])
    assert given.exit_code == 0 and "--context-tokens N" not in given.output
