"""Published hardware figures the hardware model is scored on: nccl-tests all-reduce points
(sim/validation/data/nccl_points.toml), graphed-vs-eager decode pairs
(eager_pairs.toml) and the kernels an eager layer issues, counted from the engines' source
(layer_kernels.toml), each with its source and setting; what is derived from them (kernels
a layer, GPU floors, the pairs built from a report's speeds) is computed here.

Figures are copied from the sources (times in microseconds or milliseconds as named);
settings the source does not state are marked as assumptions where they are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.hardware.gpus import gpu_preset
from sim.hardware.mla import MlaDims, prefill_context_ms
from sim.hardware.roofline import Weights, roofline_ms
from sim.validation.data_files import curve, read_table


@dataclass(frozen=True, slots=True)
class NcclPoint:
    """One measured all-reduce: ``gpus`` ranks, ``nbytes``, the reported time (us).

    ``gpus_per_process``: GPUs one host thread drives (nccl-tests ``-g``); the loop is then
    bound by that many launches an iteration (sim/hardware/allreduce.py
    ``nccl_tests_time_us``).
    """

    setting: str
    interconnect: str
    gpus: int
    nbytes: int
    measured_us: float
    source: str
    gpus_per_process: int = 1
    note: str = ""


_NCCL = read_table("nccl_points")
_SOURCES: dict[str, str] = {key: s["text"] for key, s in _NCCL["sources"].items()}
STAS00_NETWORK = _SOURCES["STAS00_NETWORK"]
MOONCAKE_3484 = _SOURCES["MOONCAKE_3484"]
RTX6KPRO_WRX90 = _SOURCES["RTX6KPRO_WRX90"]
RTX6KPRO_ASUS = _SOURCES["RTX6KPRO_ASUS"]
#: p2pmark's NCCL timing (https://github.com/lukealonso/p2pmark p2pmark.cu at 3c39f36,
#: ``bench_nccl_ar``): one process opens every GPU with ``ncclCommInitAll`` and one thread
#: issues each iteration's ``ncclAllReduce`` for all of them inside ``ncclGroupStart`` /
#: ``ncclGroupEnd``, 2000 iterations back to back (200 above 1 MB), no sync between them:
#: the loop of nccl-tests ``-g N``.
P2PMARK_GPUS_PER_PROCESS_NOTE: str = _NCCL["p2pmark"]["note"]
OCI_GPU_CLUSTER = _SOURCES["OCI_GPU_CLUSTER"]
NCCL_1530 = _SOURCES["NCCL_1530"]
NCCL_1439 = _SOURCES["NCCL_1439"]
TINYGRAD_36 = _SOURCES["TINYGRAD_36"]
HPE_30 = _SOURCES["HPE_30"]

GIB = 1 << 30


def _series_points(series: dict) -> tuple[NcclPoint, ...]:
    """One setting's points: ``points`` as printed (us); ``busbw_points`` from a printed bus
    bandwidth (GB/s): time = bytes x 2 (g - 1) / g / busbw."""
    note = series.get("note", "")
    if series.get("note_p2pmark"):
        note = f"{note}; {P2PMARK_GPUS_PER_PROCESS_NOTE}"
    gpus = series["gpus"]
    times = [(int(b), float(t)) for b, t in series["points"]]
    times += [
        (int(b), b * 2 * (gpus - 1) / gpus / (busbw_gbps * 1e9) * 1e6)
        for b, busbw_gbps in series.get("busbw_points", ())
    ]
    return tuple(
        NcclPoint(
            series["setting"],
            series["interconnect"],
            gpus,
            b,
            t,
            _SOURCES[series["source"]],
            gpus_per_process=series["gpus_per_process"],
            note=note,
        )
        for b, t in times
    )


#: The scored all-reduce points, setting by setting (sim/validation/data/nccl_points.toml).
NCCL_POINTS: tuple[NcclPoint, ...] = tuple(
    p for series in _NCCL["series"] for p in _series_points(series)
)

#: stas00/ml-engineering's 8x A100 sweep (nccl-tests -g 8) from 32 KB to 4 MB, us: the
#: scored rows' neighbours, kept to show the shape of the mid-size excess (not scored).
STAS00_A100_SWEEP_US: dict[int, float] = curve(_NCCL["stas00_a100_sweep"]["points"])
#: NCCL's ring LL channel tuning (NVIDIA/nccl src/enqueue.cc: channels drop while
#: nBytes < nc x nt x threadThreshold; LL: nt = 512 threads, threshold 8 x nRanks bytes,
#: src/graph/tuning.cc): bytes a channel must have on 8 ranks before NCCL opens another.
NCCL_LL_BYTES_PER_CHANNEL_8_RANKS = 512 * 8 * 8

#: The figures the interconnect presets took their bus bandwidths from (not scored).
NCCL_PRESET_SOURCES: tuple[str, ...] = tuple(_NCCL["preset_sources"]["figures"])


@dataclass(frozen=True, slots=True)
class EagerPair:
    """One pass measured with and without a CUDA graph (ms), and what the model needs.

    ``mode``: how the ungraphed side ran (``eager``, or vLLM's ``piecewise`` graphs with
    the attention op eager); ``kernels_per_layer`` counts the all-reduces;
    ``attention_kernels`` only for piecewise. ``same_kernels``: False where the ungraphed
    side also ran other kernels (vLLM's --enforce-eager turns torch.compile's fusions off
    too; a fix that also changed the attention path). ``ungraphed_extra_gpu_ms``: GPU work
    of the pass that only the ungraphed side runs, where the source says which path it
    took (voipmonitor: the MLA chunked-prefill branch, sim/hardware/mla.py), spread over
    the layers' first attention kernels. ``unfused_kernels_per_layer``: the
    extra kernels of ops that run unfused without torch.compile, where the source code
    counts them (sim/hardware/eager.py). ``gpu_floor_ms``: the GPU work of the graphed pass
    at its floor (weights read at the GPU's peak bandwidth, sim/hardware/roofline.py) where
    the source names the GPU; the rest of the graphed step is the engine's host work
    (sim/hardware/eager.py ``host_ms_from_graphed``), when ``split_host``: the floor is a
    small share of the graphed step, so the split holds whatever fraction of peak the GPU
    reaches (GPT-2). Elsewhere the floor is a large share of the step and the GPU's real
    efficiency, which no source gives, decides the split: the graphed step is taken to be
    all GPU work (no host share), and the floor only bounds how far that can be off
    (sim/validation/hardware_cases.py reports the prediction at the bound). ``held_out``:
    added after every modelling choice of sim/hardware/eager.py was fixed (issue 14's
    search for more public pairs), so no choice was made looking at it.
    """

    key: str
    title: str
    source: str
    layers: int
    kernels_per_layer: int
    gpus: int
    interconnect: str | None
    hidden_size: int
    tokens: int
    graphed_ms: float
    eager_ms: float
    mode: str = "eager"
    attention_kernels: int = 0
    library: str = "auto"
    same_kernels: bool = True
    allreduces_per_layer: int = 2
    unfused_kernels_per_layer: int = 0
    gpu_floor_ms: float | None = None
    split_host: bool = False
    ungraphed_extra_gpu_ms: float = 0.0
    held_out: bool = False
    note: str = ""


def gpu_floor_ms(weights: Weights, tokens: int, gpu: str, gpus: int) -> float:
    """The pass's GPU work at its floor (ms per rank): the batch-1 roofline at peak."""
    return roofline_ms(weights, tokens, gpu_preset(gpu), gpus)


#: GPT-2 (124M): openai-community/gpt2 config.json, n_layer 12, n_embd 768, vocab 50257,
#: tied embeddings. Per block: c_attn 768 x 2304 + 2304, attn c_proj 768^2 + 768, c_fc
#: 768 x 3072 + 3072, mlp c_proj 3072 x 768 + 768, two LayerNorms 4 x 768 = 7,087,872;
#: the head is the 50257 x 768 embedding (38,597,376), read once a step. BF16.
GPT2_WEIGHTS = Weights(layers=12, layer_params=7_087_872, lm_head_params=38_597_376)
#: Qwen2.5-Omni-7B thinker's language model (huggingface/transformers
#: models/qwen2_5_omni/configuration_qwen2_5_omni.py text defaults: hidden 3584,
#: intermediate 18944, 28 layers, 28 heads, 4 KV heads of 128, vocab 152064): per layer
#: q, o 3584^2 each, k, v 3584 x 512 each, MLP 3 x 3584 x 18944 = 233,046,016; untied
#: head 152064 x 3584 = 544,997,376. BF16.
QWEN25_OMNI_7B_WEIGHTS = Weights(layers=28, layer_params=233_046_016, lm_head_params=544_997_376)
#: OPT-175B (Zhang et al. 2022, table 1: 96 layers, hidden 12288): 12 x 12288^2 per
#: layer; head = the 50272 x 12288 embedding. FP16.
OPT_175B_WEIGHTS = Weights(layers=96, layer_params=12 * 12288**2, lm_head_params=50272 * 12288)
#: Kimi-K2.5 (the seed scenario's weights, scenarios/kimi-k25-8xpcie-eagle3.toml from
#: moonshotai/Kimi-K2 config.json): 61 layers, 1 dense; per MoE layer 145.2M outside the
#: routed experts, dense layer 497.5M, routed expert 44.04M (INT4), 384 experts, 8 a token,
#: head 1.174B; BF16 elsewhere.
KIMI_WEIGHTS = Weights(
    layers=61,
    layer_params=145.2e6,
    lm_head_params=1.174e9,
    dense_layers=1,
    dense_layer_params=497.5e6,
    experts=384,
    experts_per_token=8,
    expert_params=44.04e6,
    expert_bytes_per_param=0.5,
)
#: DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: 61 layers, the first 3 dense, hidden
#: 7168, q_lora_rank 1536, kv_lora_rank 512 + rope 64, 128 heads of qk 192 / v 128, 256 routed
#: experts of intermediate 2048, 8 a token, 1 shared, dense intermediate 18432, vocab
#: 129280). Per MoE layer outside the routed experts: q_a 7168 x 1536, q_b 1536 x 24576,
#: kv_a 7168 x 576, kv_b 512 x 32768, o 16384 x 7168 (187,105,280), shared expert
#: 3 x 7168 x 2048, router 7168 x 256: 232,980,480; dense layer 187,105,280 + 3 x 7168 x
#: 18432 = 583,467,008; routed expert 44,040,192; head 129280 x 7168. Block-FP8 weights (1
#: byte; the BF16 head taken at 1 byte too: 0.02 ms of the floor on 8 H200s).
DEEPSEEK_V3_WEIGHTS = Weights(
    layers=61,
    layer_params=232_980_480,
    lm_head_params=129_280 * 7168,
    weight_bytes_per_param=1.0,
    dense_layers=3,
    dense_layer_params=583_467_008,
    experts=256,
    experts_per_token=8,
    expert_params=44_040_192,
    expert_bytes_per_param=1.0,
)
#: Llama-2-7B (meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, intermediate
#: 11008, vocab 32000, untied head): per layer 4 x 4096^2 + 3 x 4096 x 11008 =
#: 202,375,168; head 32000 x 4096. FP16.
LLAMA2_7B_WEIGHTS = Weights(layers=32, layer_params=202_375_168, lm_head_params=32000 * 4096)
#: Kimi-K2.5's EAGLE-3 drafter, one layer + head, 2.004B BF16 (the seed scenario's
#: draft_params, from torchspec-project/TorchSpec kimi_k25_eagle3.json).
KIMI_DRAFTER_WEIGHTS = Weights(layers=1, layer_params=2.004e9)


#: Kernels of a dense decoder layer, from pie #348's count ("~15 kernels/layer"), used for
#: the other dense models (an assumption: the sources do not count their own).
DENSE_KERNELS_PER_LAYER = 15
#: Kimi-K2 (MLA + routed MoE) layer under vLLM's PIECEWISE graphs: an assumption (vLLM's
#: compiled pieces are not counted here; SGLang's eager layer, counted below, issues 28-42).
#: In piecewise mode the CPU issues only the attention op and one launch per piece, so the
#: count only spreads the GPU work: the vllm-42885 prediction is 28.92 / 28.93 / 28.98 ms at
#: 18 / 28 / 42. The attention op's own kernels are counted from vLLM's source below
#: (``VLLM_MLA_DECODE_OPS``); a layer is given room for them (``piecewise_layer_kernels``).
VLLM_KIMI_KERNELS_PER_LAYER = 18


@dataclass(frozen=True, slots=True)
class LayerOps:
    """One op of a decoder layer in eager execution and the kernels it issues (low, high
    where the source's branch depends on the backend, the quantization or the version)."""

    op: str
    low: int
    high: int
    source: str


_KERNELS = read_table("layer_kernels")
_CITATIONS: dict[str, str] = _KERNELS["citations"]


def _ops(name: str) -> tuple[LayerOps, ...]:
    """A ``layer_kernels.toml`` table's ops, their ``{NAME}`` citations written out."""
    return tuple(
        LayerOps(op, low, high, where.format_map(_CITATIONS))
        for op, low, high, where in _KERNELS[name]["ops"]
    )


SGLANG_DEEPSEEK_V2 = _CITATIONS["SGLANG_DEEPSEEK_V2"]
#: A Kimi-K2.5 MoE layer (DeepSeek-V3 architecture, 384 routed experts of INT4 through
#: Marlin, BF16 attention) run eagerly by SGLang at tensor parallel 8: the kernels each op
#: of the forward issues, read from SGLang's source (sim/validation/data/layer_kernels.toml).
SGLANG_KIMI_LAYER_OPS: tuple[LayerOps, ...] = _ops("sglang_kimi_layer")
#: A DeepSeek-V3/R1 MoE layer of a decoding iteration in TensorRT-LLM's PyTorch backend
#: (TRTLLM-Gen MoE backend): the modules the TensorRT-LLM team lists for it, the MLA,
#: routing and expert kernels read from the source (sim/validation/data/layer_kernels.toml).
TRTLLM_DEEPSEEK_V3_LAYER_OPS: tuple[LayerOps, ...] = _ops("trtllm_deepseek_v3_layer")
SGLANG_FUSED_MOE = _CITATIONS["SGLANG_FUSED_MOE"]
SGLANG_FP8_LINEAR = _CITATIONS["SGLANG_FP8_LINEAR"]
#: A DeepSeek-V3 MoE layer (block-FP8 weights, 256 routed experts through the Triton fused
#: MoE) run eagerly by SGLang at tensor parallel 8: the Kimi-K2.5 layer above with the
#: Marlin MoE replaced by the Triton FP8 one and one activation-quant kernel before each of
#: the five block-FP8 linears outside the experts.
SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS: tuple[LayerOps, ...] = (
    *(op for op in SGLANG_KIMI_LAYER_OPS if not op.op.startswith("fused_marlin_moe")),
    *_ops("sglang_deepseek_v3_fp8_layer"),
)


def layer_kernels(ops: tuple[LayerOps, ...]) -> tuple[int, int]:
    """(low, high) kernels a layer issues, summed over its ops."""
    return sum(op.low for op in ops), sum(op.high for op in ops)


VLLM_MLA_ATTENTION = _CITATIONS["VLLM_MLA_ATTENTION"]
VLLM_TRITON_MLA_PRE_FIX = _CITATIONS["VLLM_TRITON_MLA_PRE_FIX"]
#: vLLM's MLA attention op on the decode path (one query token a request), the region
#: vLLM's PIECEWISE graphs run eager, with TRITON_MLA as it was before it could be captured
#: whole: the kernels each op issues, read from the source (low, high where a copy depends
#: on the layout or the version).
VLLM_MLA_DECODE_OPS: tuple[LayerOps, ...] = _ops("vllm_mla_decode")
#: What decode context parallelism (DCP) adds to that op: the query all-gathered over the
#: DCP group along the head dimension, and the partial outputs merged by their LSE.
VLLM_MLA_DCP_OPS: tuple[LayerOps, ...] = _ops("vllm_mla_dcp")


def vllm_mla_decode_kernels(dcp: bool) -> tuple[int, int]:
    """(low, high) kernels of vLLM's eager MLA decode attention op (TRITON_MLA before its
    FULL-graph fix), with decode context parallelism's collectives when ``dcp``."""
    ops = (*VLLM_MLA_DECODE_OPS, *(VLLM_MLA_DCP_OPS if dcp else ()))
    return sum(op.low for op in ops), sum(op.high for op in ops)


def piecewise_layer_kernels(attention_kernels: int) -> int:
    """Kernels a layer is given in piecewise mode so the first segment holds the eager
    attention op after its projection: 2 (attention_kernels + 1) + 2 all-reduces. Only
    spreads the GPU work (the CPU issues the attention op and one launch per piece)."""
    return 2 * (attention_kernels + 1) + 2


#: Qwen2.5-Omni's thinker under enforce_eager: MRotaryEmbedding.forward_cuda
#: (vllm-project/vllm vllm/model_executor/layers/rotary_embedding/mrope.py) issues the
#: cos/sin index, four ``.contiguous()`` copies (q and k, split views of the qkv output,
#: and the cos and sin chunks) and the Triton kernel: 6 kernels where the compiled graph
#: runs one (an assumption: Inductor fuses the gather and the copies into the kernel's
#: producer). RMSNorm and SiLU-and-mul have fused CUDA kernels in eager mode (vLLM PR
#: #42251: RMSNorm's vllm_c path since v0.20; the issue ran v0.29).
QWEN25_OMNI_UNFUSED_KERNELS = 6 - 1

_EAGER = read_table("eager_pairs")
_VOIPMONITOR = _EAGER["voipmonitor"]
VOIPMONITOR_SOURCE: str = _VOIPMONITOR["cited_as"]
#: voipmonitor/rtx6kpro models/kimi-k26-mtp-long-ctx-wip/README.md, single stream, tok/s
#: before (PIECEWISE, TRITON_MLA's attention eager) and after (FULL CUDA graphs) by
#: context (sim/validation/data/eager_pairs.toml).
VOIPMONITOR_TOK_S: dict[int, tuple[float, float]] = {
    int(context): (before, after) for context, before, after in _VOIPMONITOR["tok_s"]
}
#: The graphed cycle at 2k context: the report's interarrival "~19-21 ms p50".
VOIPMONITOR_GRAPHED_CYCLE_MS: float = _VOIPMONITOR["graphed_cycle_ms"]
#: Kernels of the eager attention op down vLLM's MLA prefill path, one context chunk
#: (vllm-project/vllm vllm/v1/attention/backends/mla/common.py, ``forward`` /
#: ``_forward_prefill`` / ``_compute_prefill_context``): concat_and_cache_mla; for the
#: new tokens kv_b_proj, cat, value pad, FlashAttention; for the context gather,
#: kv_b_proj, cat, value pad, FlashAttention; merge_attn_states; the output copy.
VLLM_MLA_PREFILL_KERNELS = 12
#: Kimi-K2.5 MLA a rank at tensor parallel 8: 64 heads / 8 (moonshotai/Kimi-K2
#: config.json: kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128); fp8 KV cache
#: (the report's setting).
KIMI_MLA_TP8 = MlaDims(heads=64 // 8)
KIMI_TARGET_LAYERS = 61


def voipmonitor_pair(context_tokens: int) -> EagerPair:
    """The voipmonitor report at one context: the graphed cycle from the 2k one scaled
    by the graphed tok/s (accept length unchanged), the ungraphed side down the MLA
    prefill branch (sim/hardware/mla.py) over the context in each of the 61 target
    layers."""
    before, after = VOIPMONITOR_TOK_S[context_tokens]
    graphed = VOIPMONITOR_GRAPHED_CYCLE_MS * VOIPMONITOR_TOK_S[2000][1] / after
    prefill = prefill_context_ms(
        KIMI_MLA_TP8, context_tokens, gpu_preset("RTX-PRO-6000"), kv_cache_bytes=1.0
    )
    return EagerPair(
        key="voipmonitor" if context_tokens == 2000 else f"voipmonitor-{context_tokens}",
        title=f"Kimi-K2.5 + EAGLE-3, 8x RTX PRO 6000 PCIe TP 8, vLLM num_spec 3, "
        f"{context_tokens:,} context (PIECEWISE -> FULL CUDA graphs for TRITON_MLA): "
        f"{before} -> {after} tok/s",
        source=VOIPMONITOR_SOURCE,
        layers=KIMI_TARGET_LAYERS + 3,
        kernels_per_layer=piecewise_layer_kernels(VLLM_MLA_PREFILL_KERNELS),
        gpus=8,
        interconnect="pcie-gen5",
        hidden_size=7168,
        tokens=4,
        graphed_ms=graphed,
        eager_ms=graphed * after / before,
        mode="piecewise",
        attention_kernels=VLLM_MLA_PREFILL_KERNELS,
        library="nccl",
        same_kernels=False,
        gpu_floor_ms=gpu_floor_ms(KIMI_WEIGHTS, 4, "RTX-PRO-6000", 8)
        + 3 * gpu_floor_ms(KIMI_DRAFTER_WEIGHTS, 1, "RTX-PRO-6000", 8),
        ungraphed_extra_gpu_ms=KIMI_TARGET_LAYERS * prefill,
        note="A cycle = the 61-layer verify over 4 tokens + 3 one-layer draft forwards, "
        "taken as one 64-layer pass (layers of 28 kernels: room for the eager prefill "
        "branch's 12 in the first segment; a captured piece's kernels cost one launch "
        "whatever their number); graphed cycle 20 ms at 2k (the report's interarrival "
        "'~19-21 ms p50'), ungraphed = graphed x after / before (accept length "
        "unchanged). The fix also routed the verify through the decode attention kernel "
        "instead of the chunked-prefill branch, whose GPU work over the context the "
        "ungraphed side adds (sim/hardware/mla.py)",
    )


#: The same report's graphing-only pair: one user, no speculation, context 0, TP 8 with
#: decode context parallelism 8, the 1-token decode down the decode path on both sides.
#: "User's pre-work baseline" (unmodified triton_mla.py, PIECEWISE, attention eager) and
#: "Phase 3 regression report (user bench on Phase 1 image ...)" (FULL graphs), tok/s. The
#: pre-work run's CLI differed (max-model-len 150000, max-num-batched-tokens 4096,
#: --language-model-only); the same report shows those move one user at context 0 by about
#: 1% (73.6 vs 74.5 tok/s, Phase 5 vs Phase 6).
VOIPMONITOR_NO_MTP_TOK_S: tuple[float, float] = tuple(_VOIPMONITOR["no_mtp_tok_s"])


def voipmonitor_no_mtp_pair() -> EagerPair:
    """The voipmonitor report's no-MTP pair (``VOIPMONITOR_NO_MTP_TOK_S``): piecewise with
    the attention op eager, counted from vLLM's source with DCP's collectives
    (``vllm_mla_decode_kernels``, the low end), against FULL graphs."""
    before, after = VOIPMONITOR_NO_MTP_TOK_S
    attention = vllm_mla_decode_kernels(True)[0]
    return EagerPair(
        key="voipmonitor-no-mtp",
        title=f"Kimi-K2.6, 8x RTX PRO 6000 PCIe TP 8 DCP 8, vLLM TRITON_MLA, one user, no "
        f"speculation, context 0 (PIECEWISE -> FULL CUDA graphs): {before} -> {after} tok/s",
        source=VOIPMONITOR_SOURCE,
        layers=KIMI_TARGET_LAYERS,
        kernels_per_layer=piecewise_layer_kernels(attention),
        gpus=8,
        interconnect="pcie-gen5",
        hidden_size=7168,
        tokens=1,
        graphed_ms=1000.0 / after,
        eager_ms=1000.0 / before,
        mode="piecewise",
        attention_kernels=attention,
        library="nccl",
        gpu_floor_ms=gpu_floor_ms(KIMI_WEIGHTS, 1, "RTX-PRO-6000", 8),
        note="a step = 1000 / tok/s; the FULL side also fixed num_kv_splits at 64 and kept "
        "its buffers across layers (the report's Phase 1), so its attention kernels differ "
        "slightly; DCP's three collectives per layer run inside the eager op",
    )


#: deepspeedai/DeepSpeed PR #8352: GPT-2 BF16 on one H200, batch 1, prompt 128, 32
#: tokens, greedy; mean latency per request (ms), eager vs graphed. A request is taken as
#: 32 steps (its prefill counted as one more step).
_DEEPSPEED = _EAGER["deepspeed_8352"]
DEEPSPEED_8352: str = _DEEPSPEED["source"]
DEEPSPEED_8352_TOKENS: int = _DEEPSPEED["request_tokens"]

#: sgl-project/sglang PR #5090 ("Sanity Check with Deepseek V3 (Send One)", on H200):
#: DeepSeek-V3 tok/s with flashinfer, cuda graph disabled and enabled (send_one.py: one
#: request, output tokens / request latency).
SGLANG_5090: str = _EAGER["sglang_5090"]["source"]
SGLANG_5090_TOK_S: tuple[float, float] = tuple(_EAGER["sglang_5090"]["tok_s"])


def sglang_5090_pair() -> EagerPair:
    """DeepSeek-V3 on 8 H200s, SGLang, one request, --disable-cuda-graph vs graphed: the
    layer's kernels counted from SGLang's source (``SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS``, the
    low end, as the seed's 28 is the Kimi layer's low end)."""
    before, after = SGLANG_5090_TOK_S
    low, _ = layer_kernels(SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS)
    return EagerPair(
        key="sglang-5090-dsv3",
        title=f"DeepSeek-V3, 8x H200 TP 8, SGLang flashinfer MLA, one request "
        f"(--disable-cuda-graph vs graphed): {before} -> {after} tok/s",
        source=SGLANG_5090,
        layers=61,
        kernels_per_layer=low,
        gpus=8,
        interconnect="nvlink4",
        hidden_size=7168,
        tokens=1,
        graphed_ms=1000.0 / after,
        eager_ms=1000.0 / before,
        library="custom",
        gpu_floor_ms=gpu_floor_ms(DEEPSEEK_V3_WEIGHTS, 1, "H200", 8),
        held_out=True,
        note="a step = 1000 / tok/s (send_one: one request, the prefill of its short prompt "
        "inside the latency); the PR gives H200 for its timings and DeepSeek-V3 needs the "
        "8 of a node (TP 8 assumed); SGLang runs the same kernels graphed or not",
    )


#: Weights a pair's GPU floor names (``floor_weights`` in eager_pairs.toml).
FLOOR_WEIGHTS: dict[str, Weights] = {
    "OPT-175B": OPT_175B_WEIGHTS,
    "Qwen2.5-Omni-7B": QWEN25_OMNI_7B_WEIGHTS,
    "Kimi-K2.5": KIMI_WEIGHTS,
}


def _kernels(row: dict[str, Any]) -> dict[str, Any]:
    """The kernel counts of a pair's ``kernels`` (and ``unfused``) name, counted in code."""
    if row["kernels"] == "dense":
        counts: dict[str, Any] = {"kernels_per_layer": DENSE_KERNELS_PER_LAYER}
    else:  # "vllm-mla-piecewise"
        attention = vllm_mla_decode_kernels(False)[0]
        counts = {
            "kernels_per_layer": max(
                VLLM_KIMI_KERNELS_PER_LAYER, piecewise_layer_kernels(attention)
            ),
            "attention_kernels": attention,
        }
    if row.get("unfused") == "qwen2.5-omni-mrope":
        counts["unfused_kernels_per_layer"] = QWEN25_OMNI_UNFUSED_KERNELS
    return counts


def _pair(row: dict[str, Any]) -> EagerPair:
    """One ``[[pairs]]`` row: its times per step (a request's over its tokens), its kernel
    counts and, where it names weights and a GPU, its GPU floor."""
    if "request_tokens" in row:
        graphed_ms = row["graphed_request_ms"] / row["request_tokens"]
        eager_ms = row["eager_request_ms"] / row["request_tokens"]
    else:
        graphed_ms, eager_ms = row["graphed_ms"], row["eager_ms"]
    optional: dict[str, Any] = {
        name: row[name]
        for name in ("mode", "library", "same_kernels", "allreduces_per_layer", "held_out", "note")
        if name in row
    }
    if "floor_weights" in row:
        optional["gpu_floor_ms"] = gpu_floor_ms(
            FLOOR_WEIGHTS[row["floor_weights"]], row["tokens"], row["floor_gpu"], row["gpus"]
        )
    named = ("key", "title", "source", "layers", "gpus", "hidden_size", "tokens")
    return EagerPair(
        **{name: row[name] for name in named},
        interconnect=row.get("interconnect"),
        graphed_ms=graphed_ms,
        eager_ms=eager_ms,
        **_kernels(row),
        **optional,
    )


_PAIRS = {row["key"]: _pair(row) for row in _EAGER["pairs"]}
PIE_348 = _PAIRS["pie-348"]
VLLM_1440: str = _PAIRS["vllm-1440"].source
VLLM_1440_TOKENS: int = next(
    row["request_tokens"] for row in _EAGER["pairs"] if row["key"] == "vllm-1440"
)

EAGER_PAIRS: tuple[EagerPair, ...] = (
    _PAIRS["sglang-1401-triton"],
    _PAIRS["sglang-1401-flashinfer"],
    _PAIRS["metaseq-270"],
    _PAIRS["vllm-omni-7960"],
    _PAIRS["vllm-42885"],
    voipmonitor_pair(2000),
    voipmonitor_no_mtp_pair(),
    *(
        EagerPair(
            key=f"deepspeed-8352-{engine.lower()}",
            title=f"GPT-2, 1x H200, {engine} (DeepSpeed rollout benchmark), batch 1, "
            f"32 tokens ({how})",
            source=DEEPSPEED_8352,
            layers=12,
            kernels_per_layer=DENSE_KERNELS_PER_LAYER,
            gpus=1,
            interconnect=None,
            hidden_size=768,
            tokens=1,
            graphed_ms=graphed / DEEPSPEED_8352_TOKENS,
            eager_ms=eager / DEEPSPEED_8352_TOKENS,
            allreduces_per_layer=0,
            same_kernels=engine == "SGLang",
            gpu_floor_ms=gpu_floor_ms(GPT2_WEIGHTS, 1, "H200", 1),
            split_host=True,
            note=f"mean latency {eager} ms eager vs {graphed} ms graphed over 32 tokens; "
            "the pass's weights take 0.05 ms to read, so the graphed step is nearly all "
            "the engine's host work",
        )
        for engine, how, eager, graphed in _DEEPSPEED["runs"]
    ),
    sglang_5090_pair(),
    _PAIRS["vllm-1440"],
)
