"""specsim init: a model's geometry and weights from its config.json (published configs'
values; parameter totals checked against the models' stated sizes), engine defaults with
their version, every value with its origin, and one line for what it cannot derive."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sim.calibration.hf_config import read_hf_config
from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.errors import SpecsimError
from sim.report.init import init_toml

LLAMA_70B = Path(__file__).parents[1] / "data" / "quickstart" / "config.json"

#: Qwen/Qwen3-30B-A3B config.json (the fields read).
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
#: deepseek-ai/DeepSeek-V3 config.json (the fields read).
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "vocab_size": 129280,
    "num_nextn_predict_layers": 1,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
}


def _write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def _total(m) -> float:
    """Parameters a model stores: every layer, every expert, LM head and embedding."""
    layers, dense = m.get("layers"), m.values.get("dense_layers")
    n_dense = dense.value if dense else 0
    total = 2 * m.get("lm_head_params")  # untied: LM head and embedding
    if m.is_moe:
        moe_layer = m.get("layer_params") + m.get("experts") * m.get("expert_params")
        total += (layers - n_dense) * moe_layer
        if n_dense:
            total += n_dense * m.get("dense_layer_params")
    else:
        total += layers * m.get("layer_params")
    return total


def test_llama_70b_dense() -> None:
    m = read_hf_config(LLAMA_70B, tensor_parallel=4)
    # q 8192x8192 + k, v 8192x1024 each + o 8192x8192 + FFN 3 x 8192 x 28672
    assert m.get("layer_params") == 8192 * 8192 * 2 + 8192 * 1024 * 2 + 3 * 8192 * 28672
    assert m.get("lm_head_params") == 128256 * 8192
    assert _total(m) == pytest.approx(70.6e9, rel=0.005)  # "70B": 70.55B in its safetensors
    # 8 KV heads over 4 ranks: 2 a rank x 128 x (K, V) x 2 bytes x 80 layers
    assert m.get("kv_bytes_per_token") == 2 * 128 * 2 * 2 * 80
    assert "num_hidden_layers" in m.values["layers"].origin


def test_qwen3_moe(tmp_path: Path) -> None:
    m = read_hf_config(_write(tmp_path, QWEN3_30B_A3B))
    assert m.is_moe and m.get("experts") == 128 and m.get("experts_per_token") == 8
    assert m.get("expert_params") == 3 * 2048 * 768
    assert _total(m) == pytest.approx(30.5e9, rel=0.01)  # "30.5B in total"


#: meta-llama/Llama-4-Scout-17B-16E config.json's text_config (the fields read): every
#: layer routed (interleave_moe_layer_step 1), and each runs a shared expert no field names.
LLAMA4_SCOUT_TEXT = {
    "model_type": "llama4_text",
    "hidden_size": 5120,
    "head_dim": 128,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "interleave_moe_layer_step": 1,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "num_experts_per_tok": 1,
    "num_hidden_layers": 48,
    "num_local_experts": 16,
    "vocab_size": 202048,
    "torch_dtype": "bfloat16",
}


def test_llama4_scout_counts_its_shared_expert(tmp_path: Path) -> None:
    """ "17B active, 109B total" (the model card; the total includes the vision encoder,
    about 1B): without the shared expert the text model would be 101.7B and 11.1B active."""
    cfg = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
           "text_config": LLAMA4_SCOUT_TEXT}  # fmt: skip
    m = read_hf_config(_write(tmp_path, cfg))
    expert = 3 * 5120 * 8192
    assert m.get("expert_params") == expert
    attention = 5120 * 40 * 128 * 2 + 5120 * 8 * 128 * 2
    assert m.get("layer_params") == attention + expert + 5120 * 16  # + shared + router
    assert "shared expert" in m.values["layer_params"].origin
    assert _total(m) == pytest.approx(108e9, rel=0.01)
    active = 48 * (m.get("layer_params") + m.get("expert_params")) + 2 * m.get("lm_head_params")
    assert active == pytest.approx(17e9, rel=0.03)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        # meta-llama/Llama-4-Maverick: one layer in two routed, the others dense
        ({"interleave_moe_layer_step": 2}, "interleave_moe_layer_step"),
        ({"decoder_sparse_step": 2}, "decoder_sparse_step"),
        ({"mlp_only_layers": [0, 47]}, "mlp_only_layers"),
    ],
)
def test_routed_layers_interleaved_with_dense_ones_are_refused(
    tmp_path: Path, change: dict, field: str
) -> None:
    """Read as every layer routed, such a model's weights a pass would be wrong."""
    with pytest.raises(SpecsimError) as err:
        read_hf_config(_write(tmp_path, {**QWEN3_30B_A3B, **change}))
    assert f"config.json: {field}: " in str(err.value)


def test_an_expert_count_it_does_not_read_is_refused(tmp_path: Path) -> None:
    """baidu/ERNIE-4.5's moe_num_experts: read as dense, its FFN would be one expert's."""
    cfg = {
        k: v for k, v in QWEN3_30B_A3B.items() if k not in ("num_experts", "num_experts_per_tok")
    }
    with pytest.raises(SpecsimError, match=r"config\.json: moe_num_experts: 64: "):
        read_hf_config(_write(tmp_path, {**cfg, "moe_num_experts": 64}))
    for step in ({"decoder_sparse_step": 1}, {"mlp_only_layers": []}, {"moe_layer_freq": 1}):
        assert read_hf_config(_write(tmp_path, {**QWEN3_30B_A3B, **step})).is_moe


def test_deepseek_v3_mla_fp8(tmp_path: Path) -> None:
    m = read_hf_config(_write(tmp_path, DEEPSEEK_V3), tensor_parallel=8)
    assert m.is_mla and m.get("dense_layers") == 3
    # FP8 without a block: the experts 1 B, the rest just above it (LM head, routers at 2 B)
    assert m.get("expert_bytes_per_param") == 1.0
    assert 1.0 < m.get("weight_bytes_per_param") < 1.1
    assert _total(m) == pytest.approx(671e9, rel=0.01)  # 671B (without the MTP module)
    # MLA latent (512 + 64) x 2 bytes x 61 layers on every rank, whatever the TP
    assert m.get("kv_bytes_per_token") == (512 + 64) * 2 * 61


@pytest.mark.parametrize(
    ("gpu", "engine", "change", "block"),
    [
        ("H200", "vllm", {}, 64),  # FlashMLA
        ("B200", "vllm", {}, 64),  # FlashInfer MLA (qk_nope_head_dim 128)
        ("B200", "vllm", {"qk_nope_head_dim": 96}, 128),  # CUTLASS MLA
        ("RTX-PRO-6000", "vllm", {}, 16),  # Triton MLA on the default
        ("A100", "vllm", {"index_topk": 2048}, 64),  # FlashMLA sparse, any GPU
        ("MI300X", "vllm", {}, None),  # ROCm's rule: not read, nothing written
        ("H200", "sglang", {}, None),  # SGLang's pool is per token
    ],
)
def test_init_writes_vllms_mla_block(tmp_path: Path, gpu, engine, change, block) -> None:
    path = _write(tmp_path, {**DEEPSEEK_V3, **change})
    init = init_scenario(InitRequest(str(path), gpu, engine, gpus=8))
    assert init.scenario.serving.kv_block_tokens == block
    if block is not None:
        assert "vllm/platforms/cuda.py" in init.comments["serving.kv_block_tokens"]


def test_init_writes_no_block_for_a_model_without_mla() -> None:
    init = init_scenario(InitRequest(str(LLAMA_70B), "H200", "vllm", gpus=4))
    assert init.scenario.serving is None or init.scenario.serving.kv_block_tokens is None


def test_every_value_names_its_origin_and_engine_defaults_their_version() -> None:
    req = InitRequest(
        str(LLAMA_70B), "H100", "sglang", gpus=4, drafter="eagle3", num_steps=3, accept_length=2.8
    )
    init = init_scenario(req)
    s = init.scenario
    assert s.hardware.gpus == 4 and s.server.engine == "sglang" and s.server.engine_version
    assert s.timing.verify_cuda_graph and s.serving.host_overlap == "baseline"
    assert "sglang 0.5 default" in init.comments["serving.host_overlap"]
    given = [k for k in s.origins.given if not k.startswith(("name", "description"))]
    assert given and all(k in init.comments for k in given), set(given) - set(init.comments)


def test_an_sglang_drafter_gets_sglangs_speculative_admission_cap() -> None:
    """SGLang caps a speculating server at 48 running requests when none is given; a
    plain SGLang server and a vLLM one keep one cap for both arms."""
    args = {"gpus": 4, "num_steps": 3, "accept_length": 2.8}
    spec = init_scenario(InitRequest(str(LLAMA_70B), "H100", "sglang", drafter="eagle3", **args))
    assert spec.scenario.serving.max_running_requests_speculative == 48
    assert "reset to 48" in spec.comments["serving.max_running_requests_speculative"]
    plain = init_scenario(InitRequest(str(LLAMA_70B), "H100", "sglang", gpus=4))
    assert plain.scenario.serving.max_running_requests_speculative is None
    vllm = init_scenario(InitRequest(str(LLAMA_70B), "H100", "vllm", drafter="eagle3", **args))
    assert vllm.scenario.serving.max_running_requests_speculative is None


@pytest.mark.parametrize(
    ("change", "flag", "words"),
    [
        ({"gpu": "H999"}, "--gpu", "H999"),
        ({"tensor_parallel": 4, "gpus": 8}, "--tp", "one tensor-parallel group"),
        ({"num_steps": None}, "--num-steps", "together"),
        ({"accept_length": None}, "--drafter", "--accept-length"),
        ({"drafter": "mtp"}, "config.json", "no MTP module"),
    ],
)
def test_what_it_cannot_derive_is_one_line(change: dict, flag: str, words: str) -> None:
    base = {
        "config": str(LLAMA_70B),
        "gpu": "H100",
        "engine": "vllm",
        "gpus": 4,
        "drafter": "eagle3",
        "num_steps": 3,
        "accept_length": 2.8,
    }
    with pytest.raises(SpecsimError) as err:
        init_scenario(InitRequest(**{**base, **change}))
    line = str(err.value)
    assert flag in line and words in line and "\n" not in line


def test_a_missing_config_field_is_named(tmp_path: Path) -> None:
    cfg = {k: v for k, v in QWEN3_30B_A3B.items() if k != "num_hidden_layers"}
    with pytest.raises(SpecsimError, match="num_hidden_layers: missing"):
        read_hf_config(_write(tmp_path, cfg))


def test_eagle3_of_a_moe_target_needs_its_size(tmp_path: Path) -> None:
    req = InitRequest(
        str(_write(tmp_path, QWEN3_30B_A3B)),
        "H100",
        "vllm",
        drafter="eagle3",
        num_steps=3,
        accept_length=2.5,
    )
    with pytest.raises(SpecsimError, match="--draft-params"):
        init_scenario(req)
    sized = init_scenario(replace(req, draft_params=0.5e9))
    assert sized.scenario.model.draft_params == 0.5e9
    assert sized.comments["model.draft_params"] == "--draft-params"


def test_the_written_file_holds_what_init_set_each_under_its_origin(tmp_path: Path) -> None:
    cfg = {**json.loads(LLAMA_70B.read_text()), "_name_or_path": "meta-llama/Llama-3.1-70B"}
    req = InitRequest(str(_write(tmp_path, cfg)), "H100", "vllm", gpus=4, drafter="eagle3",
                      num_steps=3, accept_length=2.8)  # fmt: skip
    init = init_scenario(req)
    text = init_toml(init, None, req.config)
    lines = text.splitlines()
    assigned = [i for i, ln in enumerate(lines) if " = " in ln and not ln.startswith("#")]
    # every value but the name and description sits under its comment
    assert all(lines[i - 1].startswith("# ") for i in assigned[2:])
    assert "weight_bytes_per_param = 2.0" in text  # a default, written: the dtype says so
    assert init.scenario.model.name == "meta-llama/Llama-3.1-70B"
    assert init.comments["model.name"] == "config.json: _name_or_path"
    # an explicit --model-id comes first, then _name_or_path, then the folder (above)
    given = init_scenario(replace(req, model_id="org/Served-70B"))
    assert given.scenario.model.name == "org/Served-70B"
    assert given.comments["model.name"] == "--model-id"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        # google-t5/t5-base: an encoder-decoder
        (
            {"architectures": ["T5ForConditionalGeneration"], "is_encoder_decoder": True},
            "is_encoder_decoder",
        ),
        # ai21labs/Jamba-v0.1: Mamba layers beside attention layers
        ({"architectures": ["JambaForCausalLM"], "model_type": "jamba"}, "model_type"),
        # a reward model's classification head over a decoder
        ({"architectures": ["Qwen3MoeForSequenceClassification"]}, "architectures"),
    ],
)
def test_a_model_specsim_does_not_derive_is_refused(
    tmp_path: Path, change: dict, field: str
) -> None:
    """Its attention-shaped fields alone would pass; the config says what it is."""
    with pytest.raises(SpecsimError) as err:
        read_hf_config(_write(tmp_path, {**QWEN3_30B_A3B, **change}))
    line = str(err.value)
    assert f"config.json: {field}: " in line and "\n" not in line


def test_a_config_in_the_hugging_face_cache_is_named_by_its_repo(tmp_path: Path) -> None:
    """hf_hub_download puts config.json under models--ORG--NAME/snapshots/REV: the model
    is ORG/NAME, not the revision hash its folder is named by."""
    snapshot = tmp_path / "models--Qwen--Qwen3-30B-A3B" / "snapshots" / ("ad44e777" * 5)
    snapshot.mkdir(parents=True)
    req = InitRequest(str(_write(snapshot, QWEN3_30B_A3B)), "H100", "vllm", gpus=2)
    init = init_scenario(req)
    assert init.scenario.model.name == "Qwen/Qwen3-30B-A3B"
    assert init.comments["model.name"] == (
        "the Hugging Face cache folder models--Qwen--Qwen3-30B-A3B"
    )
    assert init.scenario.name == "qwen3-30b-a3b-2xh100-vllm"
    # elsewhere the folder's name, as before
    plain = init_scenario(replace(req, config=str(_write(tmp_path, QWEN3_30B_A3B))))
    assert plain.scenario.model.name == tmp_path.name
    assert plain.comments["model.name"] == "the config.json's folder name"
    # a name cut at 60 characters does not end in the hyphen it was cut at
    long = tmp_path / ("m" * 59)
    long.mkdir()
    cut = init_scenario(replace(req, config=str(_write(long, QWEN3_30B_A3B))))
    assert cut.scenario.name == "m" * 59


def test_kv_heads_a_config_leaves_out_are_named_as_the_attention_heads(tmp_path: Path) -> None:
    """Without num_key_value_heads, transformers' configs take num_attention_heads (multi-head
    attention): the KV is that large, and the origin says so instead of citing the field."""
    cfg = {k: v for k, v in QWEN3_30B_A3B.items() if k != "num_key_value_heads"}
    m = read_hf_config(_write(tmp_path, cfg), tensor_parallel=2)
    # 32 heads over 2 ranks x 128 x (K, V) x 2 bytes x 48 layers
    assert m.get("kv_bytes_per_token") == 16 * 128 * 2 * 2 * 48
    for key in ("kv_bytes_per_token", "layer_params"):
        assert "no num_key_value_heads" in m.values[key].origin
    given = read_hf_config(_write(tmp_path, QWEN3_30B_A3B), tensor_parallel=2)
    assert "no num_key_value_heads" not in given.values["kv_bytes_per_token"].origin


def test_a_scenario_without_a_timing_figure_says_its_passes_are_an_optimistic_bound() -> None:
    """Without a tok/s at --max-concurrency 1 (an accept length alone, or bench runs at
    higher loads that give acceptance only) every pass is the weights at peak bandwidth:
    Qwen3-235B on 8x H100 decodes in 2.7 ms where its server measured 11.2."""
    from sim.calibration.calibrate import calibrate
    from sim.calibration.measurements import BaselinePoint, Measurements
    from sim.report.init import init_summary

    req = InitRequest(
        str(LLAMA_70B), "H100", "sglang", gpus=4, drafter="eagle3", num_steps=3, accept_length=2.8
    )
    init = init_scenario(req)
    for verbose in (False, True):
        text = " ".join(init_summary(init, None, verbose).split())  # lines wrapped or not
        assert "passes: derived from the weights at peak bandwidth" in text
        assert "an optimistic bound" in text
    cal = calibrate(init.scenario, Measurements(baselines=(BaselinePoint(52.0, 1.0, "flag"),)))
    assert "passes:" not in init_summary(init, cal, verbose=False)


#: Qwen/Qwen3-235B-A22B-Instruct-2507 config.json (the fields read)
QWEN3_235B = {**QWEN3_30B_A3B, "hidden_size": 4096, "num_hidden_layers": 94,
              "num_attention_heads": 64, "intermediate_size": 12288,
              "moe_intermediate_size": 1536}  # fmt: skip


def _qwen3_235b_server(tmp_path: Path, spec_tok_s: float):
    """init of Qwen3-235B-A22B on 8x H100 (SGLang, EAGLE-3 k = 3) calibrated to a plain
    TPOT of 11.2 ms and a speculative tok/s at accept length 2.72, each at 2% error."""
    return _qwen3_235b_init(tmp_path, spec_tok_s)[1]


def _qwen3_235b_init(tmp_path: Path, spec_tok_s: float):
    """(the scenario init writes, its calibration) of ``_qwen3_235b_server``."""
    from sim.calibration.init_calibrate import init_and_calibrate
    from sim.calibration.measurements import BaselinePoint, Measurements, SpecPoint

    config = str(_write(tmp_path, QWEN3_235B))
    req = InitRequest(config, "H100", "sglang", gpus=8, drafter="eagle3", num_steps=3,
                      draft_params=1e9, accept_length=2.72)  # fmt: skip
    data = Measurements(
        baselines=(BaselinePoint(1000 / 11.2, 0.02 * 1000 / 11.2, "plain"),),
        points=(SpecPoint(3, 2.72, spec_tok_s, 0.02 * spec_tok_s, 0.02 * 2.72, "eagle3"),),
    )
    return init_and_calibrate(req, data)


#: A speculative tok/s the hardware model's verify allows on that server (below what it
#: predicts with no cycle overhead, which is left to fit).
SPEC_TOK_S_DERIVED = 85.0
#: A speculative tok/s the hardware model's verify refutes on that server: with no cycle
#: overhead its derived verify (15.2 ms over 4 tokens) gives about 160.
SPEC_TOK_S_REFUTED = 200.0


def test_a_verify_the_figures_refute_is_fitted_to_them(tmp_path: Path) -> None:
    """A speculative tok/s the derived verify misses by more than 3 sigma: init fits the
    verify to the figures, and the slope to other k is the line through the measured
    decode and verify (here below the extra experts' reads at peak bandwidth: the range
    reaches up to them)."""
    from sim.binding.closed_form import closed_form_tok_s, pass_times

    derived = pass_times(_qwen3_235b_server(tmp_path, SPEC_TOK_S_DERIVED).scenario).verify_ms
    cal = _qwen3_235b_server(tmp_path, SPEC_TOK_S_REFUTED)
    assert cal is not None
    s = cal.scenario
    assert closed_form_tok_s(s) == pytest.approx(SPEC_TOK_S_REFUTED, rel=0.01)
    assert 1000 / s.timing.decode_ms == pytest.approx(1000 / 11.2, rel=0.01)
    assert any(n.startswith("timing.verify_ms fitted to the figures") for n in cal.notes)
    assert s.timing.decode_ms < s.timing.verify_ms < derived
    line = (s.timing.verify_ms - s.timing.decode_ms) / 3
    assert s.timing.verify_ms_per_extra_token == pytest.approx(line, rel=1e-5)
    low, high = s.uncertainty.timing["verify_ms_per_extra_token"].range
    assert 0 < low == pytest.approx(line, rel=1e-5) and high > low
    # a 2-token verify between the decode and the 4-token one, not below the decode
    assert s.timing.decode_ms <= pass_times(s).verify_over_ms(2) <= s.timing.verify_ms


def test_a_refits_base_values_are_the_scenario_init_wrote(tmp_path: Path) -> None:
    """The report's "base" beside a fitted pass is the uncalibrated scenario's (what
    ``specsim run`` prints on it), not the first fit's that the verify refit starts from
    (a decode fitted to 11.2 ms was shown as its own base)."""
    from sim.binding.closed_form import pass_times

    init, cal = _qwen3_235b_init(tmp_path, SPEC_TOK_S_REFUTED)
    assert cal is not None
    assert any(n.startswith("timing.verify_ms fitted to the figures") for n in cal.notes)
    passes = pass_times(init.scenario)
    base = {v.field: v.base for v in cal.values}
    assert base["timing.decode_ms"] == passes.decode_ms != cal.scenario.timing.decode_ms
    assert base["timing.verify_ms"] == passes.verify_ms


def test_a_verify_the_figures_allow_is_kept(tmp_path: Path) -> None:
    """Figures the hardware model's verify reproduces keep it and the intercept fit (the
    dense and MoE servers whose EAGLE-3 runs it predicts): no refit, no note."""
    from sim.binding.closed_form import pass_times

    cal = _qwen3_235b_server(tmp_path, SPEC_TOK_S_DERIVED)
    assert cal is not None
    assert cal.scenario.timing.verify_ms is None
    assert pass_times(cal.scenario).verify_table_ms is not None
    assert not any(n.startswith("timing.verify_ms fitted") for n in cal.notes)
    assert all(abs(r.normalized) < 3 for r in cal.residuals)


def test_a_derived_moe_verify_carries_the_expert_reads_range(tmp_path: Path) -> None:
    """init of Qwen3-30B-A3B on 2x H100 from its config.json and a plain tok/s alone: the
    verify is derived from the measured decode, its extra experts priced through the
    fused-MoE kernel at hardware.expert_read_efficiency (0.934 of peak, not the decode's
    0.148), and the answer draws that share over its assumed range 0.5-1, which moves the
    speculative tok/s."""
    from sim.binding.bound import bind
    from sim.binding.closed_form import closed_form_tok_s, pass_times
    from sim.calibration.init_calibrate import init_and_calibrate
    from sim.calibration.measurements import BaselinePoint, Measurements
    from sim.scenario.overrides import with_overrides

    config = str(_write(tmp_path, QWEN3_30B_A3B))
    req = InitRequest(
        config, "H100", "sglang", gpus=2, drafter="eagle3", num_steps=3, draft_params=2e8,
        accept_length=2.7,
    )  # fmt: skip
    cal = init_and_calibrate(req, Measurements(baselines=(BaselinePoint(150.0, 3.0, "flag"),)))[1]
    assert cal is not None
    s = cal.scenario
    assert s.timing.verify_ms is None and s.hardware.bandwidth_efficiency < 0.2
    bound = bind(s)
    assert bound.hardware.grows_experts()
    drawn = {u.field: u for u in bound.inputs}["hardware.expert_read_efficiency"]
    assert (drawn.kind, drawn.origin, drawn.low, drawn.high) == ("uniform", "assumed", 0.5, 1.0)
    ends = [
        closed_form_tok_s(with_overrides(s, {"hardware.expert_read_efficiency": e}))
        for e in (0.5, 1.0)
    ]
    assert ends[0] < closed_form_tok_s(s) < ends[1]
    assert ends[1] / ends[0] > 1.05  # the range moves the answer
    from sim.uncertainty.drivers import measurement_for

    assert "derived from the decode" in measurement_for("hardware.expert_read_efficiency", s, 5)
    # at the decode's own share of peak (the old pricing) the verify is far dearer
    old = with_overrides(s, {"hardware.expert_read_efficiency": None})
    assert pass_times(old).verify_ms > pass_times(s).verify_ms + 2.0
    assert "hardware.expert_read_efficiency" not in {u.field for u in bind(old).inputs}
