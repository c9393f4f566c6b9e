"""Quantized checkpoints ``specsim init`` reads (sim/calibration/quant_layout.py): the bytes a
weight counted with their scales from the group size, the routed experts apart from what
every pass reads (``model.expert_bytes_per_param`` beside ``model.weight_bytes_per_param``),
each labelled derived with the fields read; what it cannot read is one line, exit 2.
Real files: tests/data/configs/README.md."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.calibration.hf_config import HfModel, read_hf_config
from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main
from sim.errors import SpecsimError
from tests.calibration.test_init_hybrid import SMALL_NEXT

DATA = Path(__file__).parents[1] / "data" / "configs"
KIMI = DATA / "kimi-k2-thinking.json"
GPT_OSS = DATA / "gpt-oss-120b.json"
NVFP4 = DATA / "qwen3-30b-a3b-nvfp4-modelopt.json"
QWEN = DATA / "qwen3-30b-a3b.json"
DEEPSEEK_R1 = DATA / "deepseek-r1.json"
LLAMA = Path(__file__).parents[1] / "data" / "quickstart" / "config.json"


def _write(tmp_path: Path, raw: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


def _params(m: HfModel) -> tuple[float, float]:
    """(stored, active a token) parameters: every layer, expert, LM head and embedding."""
    layers = m.get("layers")
    dense = m.values["dense_layers"].value if "dense_layers" in m.values else 0
    head = m.get("lm_head_params")
    dense_total = dense * m.get("dense_layer_params") if dense else 0.0
    routed = (layers - dense) * m.get("layer_params")
    stored = routed + (layers - dense) * m.get("experts") * m.get("expert_params")
    active = routed + (layers - dense) * m.get("experts_per_token") * m.get("expert_params")
    return stored + dense_total + 2 * head, active + dense_total + head


def _dense_mean(m: HfModel, part_bytes: dict[str, float]) -> float:
    """The parameter-weighted mean of what every pass reads, the attention of a layer at
    ``part_bytes["attention"]``, its router and the LM head at theirs (no dense layers)."""
    layers, hidden, experts = m.get("layers"), m.get("hidden_size"), m.get("experts")
    router = hidden * experts
    attention = m.get("layer_params") - router
    head = m.get("lm_head_params")
    total = layers * (attention * part_bytes["attention"] + router * part_bytes["router"])
    total += head * part_bytes["head"]
    return total / (layers * (attention + router) + head)


def test_kimi_k2_thinking_int4_experts_and_bf16_rest() -> None:
    """compressed-tensors: int4 routed experts with a bfloat16 scale every 32 weights (4 +
    16/32 = 4.5 bits); attention, shared experts, the dense layer's MLP and the LM head are
    ignored, so at bfloat16. The geometry is the published one (1T total, 32B active)."""
    m = read_hf_config(KIMI, tensor_parallel=8)
    assert m.get("expert_bytes_per_param") == 4.5 / 8
    assert m.get("weight_bytes_per_param") == 2.0
    expert = m.values["expert_bytes_per_param"].origin
    assert expert.startswith("derived: config.json: quantization_config (compressed-tensors")
    assert "num_bits 4" in expert and "group_size 32" in expert and "16-bit scale" in expert
    why = m.values["weight_bytes_per_param"].origin
    assert "attention, MLP, shared experts, router, LM head at 2 B a weight" in why
    stored, active = _params(m)
    assert 0.95e12 < stored < 1.05e12  # the model card's "1T", norms left out
    assert abs(active / 32e9 - 1) < 0.02  # its "32B activated"


def test_kimi_k25_nests_the_language_model_and_its_quantization(tmp_path: Path) -> None:
    """Kimi-K2.5 nests the language model, its quantization_config inside, under
    ``text_config``; entries naming modules outside it (the vision tower) are said, not read."""
    text = json.loads(KIMI.read_text())
    text["quantization_config"]["ignore"] += ["re:.*vision_tower.*", "re:.*mm_projector.*"]
    raw = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
           "text_config": text}  # fmt: skip
    m = read_hf_config(_write(tmp_path, raw), tensor_parallel=8)
    assert (m.get("weight_bytes_per_param"), m.get("expert_bytes_per_param")) == (2.0, 0.5625)
    why = m.values["weight_bytes_per_param"].origin
    assert why.startswith("derived: config.json: text_config: quantization_config")
    assert "not read: re:.*vision_tower.*, re:.*mm_projector.*" in why


def test_gpt_oss_mxfp4_experts_at_4_25_bits() -> None:
    """mxfp4: the routed experts only, 4 bits + an E8M0 scale every 32 weights (transformers'
    0.5 + 1/32 bytes); no torch_dtype, the rest at bfloat16, said so. Parameters as published:
    116.8B total, 5.1B active."""
    m = read_hf_config(GPT_OSS, tensor_parallel=1)
    assert m.get("expert_bytes_per_param") == 0.5 + 1 / 32
    assert m.get("weight_bytes_per_param") == 2.0
    why = m.values["weight_bytes_per_param"].origin
    assert "bfloat16: no torch_dtype" in why and "not read: model.embed_tokens" in why
    stored, active = _params(m)
    assert abs(stored / 116.8e9 - 1) < 0.002  # norms, biases and sinks left out
    assert abs(active / 5.13e9 - 1) < 0.01


def test_modelopt_nvfp4_experts_attention_excluded() -> None:
    """ModelOpt NVFP4: 4 bits + an FP8 scale every 16 weights (4.5 bits); attention, routers
    and LM head excluded, at bfloat16."""
    m = read_hf_config(NVFP4)
    assert m.get("expert_bytes_per_param") == 0.5625
    assert m.get("weight_bytes_per_param") == 2.0
    assert "quant_algo NVFP4: 4-bit E2M1 + an FP8 scale every 16" in (
        m.values["expert_bytes_per_param"].origin
    )


@pytest.mark.parametrize("method", ["modelopt_fp4", "modelopt_mixed", "ModelOpt"])
def test_vllms_other_modelopt_spellings_read_the_same(tmp_path: Path, method: str) -> None:
    """vLLM names its ModelOpt configs modelopt, modelopt_fp4 and modelopt_mixed; the
    quant_algo, not the spelling, sets the width."""
    raw = json.loads(NVFP4.read_text())
    raw["quantization_config"]["quant_method"] = method
    m = read_hf_config(_write(tmp_path, raw))
    assert m.get("expert_bytes_per_param") == 0.5625
    assert m.get("weight_bytes_per_param") == 2.0


def test_modelopt_nvfp4_everywhere_but_the_head_is_the_weighted_mean(tmp_path: Path) -> None:
    """Attention quantized too: what every pass reads is the parameter-weighted mean of the
    NVFP4 attention, the bf16 routers and the bf16 LM head."""
    raw = json.loads(NVFP4.read_text())
    raw["quantization_config"]["ignore"] = ["lm_head"]
    m = read_hf_config(_write(tmp_path, raw))
    want = _dense_mean(m, {"attention": 0.5625, "router": 2.0, "head": 2.0})
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
    assert 0.5625 < want < 2.0
    assert "attention at 0.5625 B a weight" in m.values["weight_bytes_per_param"].origin


def test_a_plain_checkpoint_is_unchanged() -> None:
    m = read_hf_config(QWEN)
    assert "expert_bytes_per_param" not in m.values
    assert m.values["weight_bytes_per_param"].origin == "config.json: torch_dtype = bfloat16"


@pytest.mark.parametrize(
    ("quant", "bits"),
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, 4 + 16 / 128 + 4 / 128),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}, 4.125),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, 4 + 16 / 128 + 4 / 128),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, 8.0),
    ],
)
def test_gptq_and_awq_count_their_scales_and_keep_the_head(
    tmp_path: Path, quant: dict, bits: float
) -> None:
    """Every decoder linear layer at bits + a 16-bit scale (+ a zero point) a group; the LM
    head at the model's dtype (no ``lm_head: true``)."""
    raw = {**json.loads(LLAMA.read_text()), "quantization_config": quant}
    m = read_hf_config(_write(tmp_path, raw))
    layers, layer, head = m.get("layers"), m.get("layer_params"), m.get("lm_head_params")
    dtype = read_hf_config(LLAMA).get("weight_bytes_per_param")
    want = (layers * layer * bits / 8 + head * dtype) / (layers * layer + head)
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
    assert "expert_bytes_per_param" not in m.values


#: A block-FP8 weight's bytes: 8 bits + a float32 scale a 128 x 128 block.
BLOCK_FP8 = 1 + 4 / (128 * 128)


def test_deepseek_r1_block_fp8_keeps_its_lm_head_and_routers_in_bf16() -> None:
    """vLLM's Fp8Config quantizes linear layers and the fused experts, never the LM head
    (ParallelLMHead) nor the routers (built with quant_config=None): summed by hand."""
    m = read_hf_config(DEEPSEEK_R1, tensor_parallel=8)
    hidden, layers, dense = 7168, 61, 3
    attention = (hidden * 1536 + 1536 * 128 * (128 + 64) + hidden * (512 + 64)
                 + 512 * 128 * (128 + 128) + 128 * 128 * hidden)  # fmt: skip
    fp8 = layers * attention + dense * 3 * hidden * 18432 + (layers - dense) * 3 * hidden * 2048
    bf16 = (layers - dense) * hidden * 256 + 129280 * hidden  # routers, LM head
    want = (fp8 * BLOCK_FP8 + bf16 * 2) / (fp8 + bf16)
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
    assert m.get("expert_bytes_per_param") == BLOCK_FP8
    why = m.values["weight_bytes_per_param"].origin
    assert why.startswith("derived: ") and "weight_block_size 128 x 128" in why
    assert "router, LM head at 2 B a weight (config.json: torch_dtype = bfloat16)" in why
    assert 1.05 < want < 1.07  # the LM head's 0.93B and the routers' 0.11B at 2 B


def test_an_fp8_checkpoints_modules_to_not_convert_stay_in_its_dtype(tmp_path: Path) -> None:
    quant = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
    raw = {**json.loads(QWEN.read_text()), "quantization_config": quant}
    m = read_hf_config(_write(tmp_path, raw))
    assert 1.0 < m.get("weight_bytes_per_param") < 2.0
    raw["quantization_config"] = {**quant, "modules_to_not_convert": ["lm_head", "self_attn"]}
    kept = read_hf_config(_write(tmp_path, raw))
    assert kept.get("weight_bytes_per_param") == 2.0  # attention, routers, LM head
    assert kept.get("expert_bytes_per_param") == BLOCK_FP8


def test_a_bad_fp8_block_is_one_line(tmp_path: Path) -> None:
    quant = {"quant_method": "fp8", "weight_block_size": [128]}
    path = _write(tmp_path, {**json.loads(QWEN.read_text()), "quantization_config": quant})
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(path), "--gpu", "H100", "--engine", "vllm", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"specsim: error: {path}: quantization_config.weight_block_size: must be [rows, "
        "columns], got [128]"
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"quant_method": "modelopt", "quant_algo": "INT4_AWQ"}, "quantization_config.quant_algo",
         "'INT4_AWQ': specsim init reads"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quantization_config",
         "quant_method 'bitsandbytes' without bits"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"],
          "weights": {"num_bits": 4, "strategy": "group"}}}},
         "quantization_config.config_groups.g.weights.group_size", "must be an integer"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"],
          "weights": {"num_bits": 4, "strategy": "group", "group_size": 32}}},
          "ignore": ["re:.*self_attn.k_proj"]},
         "quantization_config", "attention projections of one layer are stored at different"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:.*": {}}},
         "quantization_config.dynamic", "per-module overrides"),
    ],
)  # fmt: skip
def test_what_init_cannot_read_is_one_line(
    tmp_path: Path, change: dict, field: str, words: str
) -> None:
    path = _write(tmp_path, {**json.loads(QWEN.read_text()), "quantization_config": change})
    with pytest.raises(SpecsimError) as err:
        read_hf_config(path)
    assert err.value.field == field and words in str(err.value)
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(path), "--gpu", "H100", "--engine", "vllm", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specsim: error: {path}: {field}: ")


@pytest.mark.parametrize(
    ("config", "gpu", "gpus", "expert"),
    [(KIMI, "H200", 8, 0.5625), (GPT_OSS, "H100", 1, 0.53125), (NVFP4, "B200", 1, 0.5625)],
)
def test_init_writes_a_scenario_run_reads(
    tmp_path: Path, config: Path, gpu: str, gpus: int, expert: float
) -> None:
    """``specsim init`` writes both keys with their origins; ``specsim run`` runs on it, and
    its experts are read at their own width (a 1-byte-wider expert pass is slower)."""
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(config), "--gpu", gpu, "--gpus", str(gpus), "--engine",
            "sglang", "--drafter", "eagle3", "-k", "3", "--draft-params", "1e9",
            "--accept-length", "2.5", "--model-id", "org/m", "--out", str(out), "-q"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert f"expert_bytes_per_param = {expert}" in text
    assert "# derived: config.json: quantization_config" in text
    uncertainty = tomllib.loads(text)["uncertainty"]["model"]
    assert uncertainty["expert_bytes_per_param"]["origin"] == "derived"
    assert "quantization_config" in uncertainty["weight_bytes_per_param"]["reason"]
    ran = CliRunner().invoke(main, ["run", str(out), "-q", "--json"])
    assert ran.exit_code == 0, ran.output
    wider = tmp_path / "wider.toml"
    wider.write_text(
        text.replace(f"expert_bytes_per_param = {expert}", f"expert_bytes_per_param = {expert + 1}")
    )
    slower = CliRunner().invoke(main, ["run", str(wider), "-q", "--json"])
    assert slower.exit_code == 0, slower.output
    assert _plain_tok_s(slower.output) < _plain_tok_s(ran.output)


def _plain_tok_s(output: str) -> float:
    doc = json.loads(output)
    return float(doc["baseline_tok_s"])


def test_modelopt_mixed_precision_reads_each_module_its_own(tmp_path: Path) -> None:
    """MIXED_PRECISION: NVFP4 experts, FP8 attention named by vLLM's fused ``qkv_proj``
    (its q, k and v); an entry naming no module of this model (an MTP layer) is said."""
    raw = json.loads(QWEN.read_text())
    layers: dict[str, dict] = {"mtp.layers.0.mlp.experts": {"quant_algo": "NVFP4"}}
    for i in range(raw["num_hidden_layers"]):
        layers[f"model.layers.{i}.mlp.experts"] = {"quant_algo": "NVFP4", "group_size": 16}
        layers[f"model.layers.{i}.self_attn.qkv_proj"] = {"quant_algo": "FP8"}
        layers[f"model.layers.{i}.self_attn.o_proj"] = {"quant_algo": "FP8"}
    raw["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                  "quantized_layers": layers, "ignore": ["lm_head"]}  # fmt: skip
    m = read_hf_config(_write(tmp_path, raw))
    assert m.get("expert_bytes_per_param") == 0.5625
    want = _dense_mean(m, {"attention": 1.0, "router": 2.0, "head": 2.0})
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
    assert "not read: mtp.layers.0.mlp.experts" in m.values["weight_bytes_per_param"].origin


def test_a_quantized_drafter_is_read_module_by_module(tmp_path: Path) -> None:
    """A drafter's own compressed-tensors FP8 layers beside its bf16 LM head: its bytes a
    weight are their parameter-weighted mean, labelled derived once, with its file."""
    raw = json.loads((DATA / "qwen3-30b-a3b-eagle3.json").read_text())
    fp8 = {"num_bits": 8, "type": "float", "strategy": "channel"}
    raw["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "ignore": ["lm_head"],
        "config_groups": {"g": {"targets": ["Linear"], "weights": fp8}},
    }
    drafter = _write(tmp_path, raw, "drafter.json")
    req = InitRequest(str(QWEN), "H100", "vllm", gpus=1, drafter="eagle3", num_steps=3,
                      accept_length=2.6, draft_config=str(drafter))  # fmt: skip
    init = init_scenario(req)
    layer = read_hf_config(drafter)
    assert 1.0 < init.scenario.model.draft_bytes_per_param < 2.0
    assert init.scenario.model.draft_bytes_per_param == layer.get("weight_bytes_per_param")
    why = init.comments["model.draft_bytes_per_param"]
    assert why.count("derived") == 1 and f"{drafter}: quantization_config" in why


def test_a_hybrids_linear_layers_kept_apart_layer_by_layer(tmp_path: Path) -> None:
    """Qwen3-Next style (every 4th layer full attention): int4 groups of 128 with bfloat16
    scales (4.125 bits) over every linear layer but the ignored Gated DeltaNet mixers."""
    group = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}
    quant = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*linear_attn.*"],
             "config_groups": {"g": {"targets": ["Linear"], "weights": group}}}  # fmt: skip
    m = read_hf_config(_write(tmp_path, {**SMALL_NEXT, "quantization_config": quant}))
    mlp = 3 * 1024 * 2816
    full = m.full_attention_layer_params - mlp
    delta = (8 * (m.get("layer_params") - mlp) - 2 * full) / 6  # 6 linear layers of 8
    head, w = m.get("lm_head_params"), 4.125 / 8
    want = (6 * delta * 2 + 2 * full * w + 8 * mlp * w + head * 2) / (
        6 * delta + 2 * full + 8 * mlp + head
    )
    assert m.get("weight_bytes_per_param") == pytest.approx(want, rel=1e-12)
    assert "linear attention, LM head at 2 B a weight" in m.values["weight_bytes_per_param"].origin


def test_deepseek_r1s_mtp_module_is_read_at_its_own_widths() -> None:
    """The MTP module (model.layers.61): attention, shared and 8 active experts in FP8; its
    router, eh_proj (vLLM's plain nn.Linear) and the shared LM head in bf16, summed by hand."""
    req = InitRequest(str(DEEPSEEK_R1), "H200", "vllm", gpus=8, drafter="mtp", num_steps=1,
                      accept_length=1.8)  # fmt: skip
    init = init_scenario(req)
    hidden = 7168
    attention = (hidden * 1536 + 1536 * 128 * (128 + 64) + hidden * (512 + 64)
                 + 512 * 128 * (128 + 128) + 128 * 128 * hidden)  # fmt: skip
    fp8 = attention + 3 * hidden * 2048 + 8 * 3 * hidden * 2048  # shared + 8 routed experts
    bf16 = hidden * 256 + 2 * hidden * hidden + 129280 * hidden  # router, eh_proj, LM head
    m = init.scenario.model
    assert m.draft_params == fp8 + bf16
    want = (fp8 * BLOCK_FP8 + 2 * bf16) / (fp8 + bf16)
    assert m.draft_bytes_per_param == pytest.approx(want, rel=1e-12)
    assert 1.6 < m.draft_bytes_per_param < 1.7  # not the target's 1.064: the head dominates
    assert "router, LM head, eh_proj at 2 B" in init.comments["model.draft_bytes_per_param"]
