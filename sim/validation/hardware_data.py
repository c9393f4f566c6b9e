"""Published hardware figures the hardware model is scored on: nccl-tests all-reduce points
(read from sim/validation/data/nccl_points.toml, each with its source and setting) and
graphed-vs-eager decode pairs.

Figures are copied from the sources (times in microseconds or milliseconds as named);
settings the source does not state are marked as assumptions where they are used.
"""

from __future__ import annotations

from dataclasses import dataclass

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


PIE_348 = EagerPair(
    key="pie-348",
    title="Qwen2.5-72B-Instruct-AWQ, 1x A100-SXM4-80GB, vLLM model code run by pie, single "
    "sequence (FULL_DECODE_ONLY graphs vs eager)",
    source="https://github.com/pie-project/pie/pull/348",
    layers=80,
    kernels_per_layer=15,
    gpus=1,
    interconnect=None,
    hidden_size=8192,
    tokens=1,
    graphed_ms=15.39,
    eager_ms=22.68,
    allreduces_per_layer=0,
    note="'~1200 individual CUDA kernels (80 layers x ~15 kernels/layer)' (the source)",
)

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


SGLANG_DEEPSEEK_V2 = "sgl-project/sglang python/sglang/srt/models/deepseek_v2.py (00114aef)"
#: A Kimi-K2.5 MoE layer (DeepSeek-V3 architecture, 384 routed experts of INT4 through
#: Marlin, BF16 attention) run eagerly by SGLang at tensor parallel 8: the kernels each op
#: of the forward issues, read from SGLang's source (forward_absorb_prepare / _core,
#: DeepseekV2MoE.forward_normal, LayerCommunicator; fused_marlin_moe; topk.py).
SGLANG_KIMI_LAYER_OPS: tuple[LayerOps, ...] = (
    LayerOps("input RMSNorm (fused residual add)", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps("fused_qkv_a_proj_with_mqa GEMM", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps("q_a_layernorm, kv_a_layernorm", 2, 2, SGLANG_DEEPSEEK_V2),
    LayerOps("q_b_proj GEMM", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps("q_nope x w_kc bmm (BF16)", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps(
        "rotary on q_pe, k_pe",
        1,
        8,
        "1 fused kernel, or ~8 in the PyTorch-native DeepseekScalingRotaryEmbedding "
        "(vllm-project/vllm PR #51480)",
    ),
    LayerOps(
        "cat q, cat k",
        0,
        2,
        f"{SGLANG_DEEPSEEK_V2}: triton backend only (flashinfer/fa3 take q_rope apart)",
    ),
    LayerOps("KV-cache write + attention kernels", 2, 3, "RadixAttention backend"),
    LayerOps("attention x w_vc bmm, transpose/flatten copy", 2, 2, SGLANG_DEEPSEEK_V2),
    LayerOps("o_proj GEMM", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps("all-reduce, post-attention RMSNorm", 2, 2, SGLANG_DEEPSEEK_V2),
    LayerOps(
        "shared expert gate_up, silu_and_mul, down",
        3,
        3,
        f"{SGLANG_DEEPSEEK_V2}: shared-expert fusion needs 256 routed experts",
    ),
    LayerOps("router gate GEMM", 1, 1, SGLANG_DEEPSEEK_V2),
    LayerOps(
        "top-k",
        1,
        4,
        "sgl-project/sglang python/sglang/srt/layers/moe/topk.py: kimi_k2_moe_fused_gate "
        "(000328a8), or the compiled biased_grouped_topk_impl",
    ),
    LayerOps(
        "fused_marlin_moe: align (fill + 1-2 kernels), workspace zeros, 2 GEMMs, "
        "silu_and_mul, sum-reduce",
        7,
        8,
        "sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/"
        "fused_marlin_moe.py (027f557a), moe_align_block_size.py (0fd46783)",
    ),
    LayerOps("routed + shared add, all-reduce", 2, 2, SGLANG_DEEPSEEK_V2),
)


SGLANG_FUSED_MOE = (
    "sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py "
    "invoke_fused_moe_kernel: block FP8 quantizes its input (sglang_per_token_group_quant_fp8) "
    "before each of the two expert GEMMs"
)
SGLANG_FP8_LINEAR = (
    "sgl-project/sglang python/sglang/srt/layers/quantization/fp8_utils.py "
    "apply_w8a8_block_fp8_linear: per_token_group_quant_fp8, then fp8_blockwise_scaled_mm "
    "(or the Triton w8a8_block_fp8_matmul)"
)
#: A DeepSeek-V3 MoE layer (block-FP8 weights, 256 routed experts through the Triton fused
#: MoE) run eagerly by SGLang at tensor parallel 8: the Kimi-K2.5 layer above with the
#: Marlin MoE replaced by the Triton FP8 one and one activation-quant kernel before each of
#: the five block-FP8 linears outside the experts (fused_qkv_a_proj_with_mqa, q_b_proj,
#: o_proj, the shared expert's gate_up and down; the router gate is unquantized, and the
#: absorbed w_kc / w_vc bmm run in BF16, sgl-project/sglang issue #2591 "Use BF16 for bmm").
SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS: tuple[LayerOps, ...] = (
    *(op for op in SGLANG_KIMI_LAYER_OPS if not op.op.startswith("fused_marlin_moe")),
    LayerOps(
        "fused MoE (Triton, block FP8): align (fill, zeros, align kernel), 2 x (activation "
        "quant + GEMM), silu_and_mul, sum-reduce",
        7,
        9,
        SGLANG_FUSED_MOE,
    ),
    LayerOps("activation quant before the five block-FP8 linears", 5, 5, SGLANG_FP8_LINEAR),
)


def layer_kernels(ops: tuple[LayerOps, ...]) -> tuple[int, int]:
    """(low, high) kernels a layer issues, summed over its ops."""
    return sum(op.low for op in ops), sum(op.high for op in ops)


VLLM_MLA_ATTENTION = (
    "vllm-project/vllm vllm/model_executor/layers/attention/mla_attention.py (0014ca6b) "
    "forward / forward_impl, decode branch"
)
VLLM_TRITON_MLA_PRE_FIX = (
    "TRITON_MLA forward_mqa before FULL CUDA graphs: the lines voipmonitor/rtx6kpro "
    "models/kimi-k26-mtp-long-ctx-wip/patches/triton_mla_full_cg_WIN.patch removes "
    "(vllm-project/vllm vllm/v1/attention/backends/mla/triton_mla.py, 0155494b)"
)
#: vLLM's MLA attention op on the decode path (one query token a request), the region
#: vLLM's PIECEWISE graphs run eager, with TRITON_MLA as it was before it could be captured
#: whole: the kernels each op issues, read from the source (low, high where a copy depends
#: on the layout or the version).
VLLM_MLA_DECODE_OPS: tuple[LayerOps, ...] = (
    LayerOps("KV-cache write (concat_and_cache_mla)", 1, 1, VLLM_MLA_ATTENTION),
    LayerOps("q_nope x W_UK_T bmm", 1, 1, VLLM_MLA_ATTENTION),
    LayerOps("cat(q_nope W_UK, q_pe)", 1, 1, f"{VLLM_MLA_ATTENTION}; {VLLM_TRITON_MLA_PRE_FIX}"),
    LayerOps("o, lse torch.zeros", 2, 2, VLLM_TRITON_MLA_PRE_FIX),
    LayerOps("decode attention stage 1 + stage 2 (Triton)", 2, 2, VLLM_TRITON_MLA_PRE_FIX),
    LayerOps(
        "v up-projection bmm (+ a copy when its output view is strided)",
        1,
        2,
        VLLM_MLA_ATTENTION,
    ),
)
#: What decode context parallelism (DCP) adds to that op: the query all-gathered over the
#: DCP group along the head dimension, and the partial outputs merged by their LSE.
VLLM_MLA_DCP_OPS: tuple[LayerOps, ...] = (
    LayerOps(
        "all-gather q over heads (NCCL) + the reshape copy of a dim-1 gather",
        2,
        2,
        f"{VLLM_MLA_ATTENTION}; vllm/distributed/device_communicators "
        "base_device_communicator.all_gather",
    ),
    LayerOps(
        "cp_lse_ag_out_rs: all-gather LSE (NCCL), LSE correction (Triton), movedim copy + "
        "reduce-scatter (NCCL), and a copy back where the version makes it contiguous",
        4,
        5,
        "vllm-project/vllm vllm/v1/attention/ops/common.py cp_lse_ag_out_rs; "
        "cuda_communicator.reduce_scatter",
    ),
)


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

VOIPMONITOR_SOURCE = "voipmonitor/rtx6kpro models/kimi-k26-mtp-long-ctx-wip/README.md"
#: voipmonitor/rtx6kpro models/kimi-k26-mtp-long-ctx-wip/README.md, single stream, tok/s
#: before (PIECEWISE, TRITON_MLA's attention eager) and after (FULL CUDA graphs) by
#: context: 2,000 75.0 -> 116.6; 10,000 32.2 -> 112.8; 30,000 25.3 -> 107.5.
VOIPMONITOR_TOK_S: dict[int, tuple[float, float]] = {
    2000: (75.0, 116.6),
    10000: (32.2, 112.8),
    30000: (25.3, 107.5),
}
#: The graphed cycle at 2k context: the report's interarrival "~19-21 ms p50".
VOIPMONITOR_GRAPHED_CYCLE_MS = 20.0
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
#: "User's pre-work baseline" (unmodified triton_mla.py, PIECEWISE, attention eager) 51.7
#: tok/s; "Phase 3 regression report (user bench on Phase 1 image ...)" (FULL graphs)
#: 69.7 tok/s ("Single-stream up +35 %"). The pre-work run's CLI differed (max-model-len
#: 150000, max-num-batched-tokens 4096, --language-model-only); the same report shows
#: those move one user at context 0 by about 1% (73.6 vs 74.5 tok/s, Phase 5 vs Phase 6).
VOIPMONITOR_NO_MTP_TOK_S = (51.7, 69.7)


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
DEEPSPEED_8352 = "https://github.com/deepspeedai/DeepSpeed/pull/8352"
DEEPSPEED_8352_TOKENS = 32

#: sgl-project/sglang PR #5090 ("Sanity Check with Deepseek V3 (Send One)", the PR's timings
#: "on H200"): "Deepseek V3 with flashinfer + cuda graph: speed=41.59 token/s", "Deepseek V3
#: with flashinfer + disabled cuda graph: speed=4.60 token/s" (send_one.py: one request,
#: output tokens / request latency).
SGLANG_5090 = "https://github.com/sgl-project/sglang/pull/5090"
SGLANG_5090_TOK_S = (4.60, 41.59)


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


#: vllm-project/vllm PR #1440 (Oct 2023, before vLLM used torch.compile): "I'm getting about
#: 1.05s for 5 input 100 output token with CUDA graph batch size = 1; vs about 1.2s without
#: CUDA graph, on llama 2 7b no tensor parallelism". The GPU is not named.
VLLM_1440 = "https://github.com/vllm-project/vllm/pull/1440"
VLLM_1440_TOKENS = 100

EAGER_PAIRS: tuple[EagerPair, ...] = (
    EagerPair(
        key="sglang-1401-triton",
        title="Llama-3-8B, 1 GPU, SGLang bench_latency bs 1, triton attention "
        "(--disable-cuda-graph vs graphed)",
        source="https://github.com/sgl-project/sglang/pull/1401",
        layers=32,
        kernels_per_layer=DENSE_KERNELS_PER_LAYER,
        gpus=1,
        interconnect=None,
        hidden_size=4096,
        tokens=1,
        graphed_ms=7.06,
        eager_ms=9.28,
        allreduces_per_layer=0,
    ),
    EagerPair(
        key="sglang-1401-flashinfer",
        title="Llama-3-8B, 1 GPU, SGLang bench_latency bs 1, flashinfer attention "
        "(--disable-cuda-graph vs graphed)",
        source="https://github.com/sgl-project/sglang/pull/1401",
        layers=32,
        kernels_per_layer=DENSE_KERNELS_PER_LAYER,
        gpus=1,
        interconnect=None,
        hidden_size=4096,
        tokens=1,
        graphed_ms=7.35,
        eager_ms=8.23,
        allreduces_per_layer=0,
    ),
    EagerPair(
        key="metaseq-270",
        title="OPT-175B, 8x A100 (Azure) tensor parallel, metaseq, n_best 1 (CUDA graph vs not)",
        source="https://github.com/facebookresearch/metaseq/pull/270",
        layers=96,
        kernels_per_layer=DENSE_KERNELS_PER_LAYER,
        gpus=8,
        interconnect="nvlink3",
        hidden_size=12288,
        tokens=1,
        graphed_ms=66.0,
        eager_ms=95.0,
        library="nccl",
        same_kernels=False,
        gpu_floor_ms=gpu_floor_ms(OPT_175B_WEIGHTS, 1, "A100", 8),
        note="'~95 ms/token' vs '~66 ms/token'; the graph PR also reworked the decoding "
        "path (its kernels are not known to be the same); its one graph covers 2048 "
        "positions of attention. Azure A100s taken at the 80 GB part's 2,039 GB/s",
    ),
    EagerPair(
        key="vllm-omni-7960",
        title="Qwen2.5-Omni-7B thinker, A800, vLLM-omni, enforce_eager true vs false",
        source="https://github.com/vllm-project/vllm-omni/issues/7960",
        layers=28,
        kernels_per_layer=DENSE_KERNELS_PER_LAYER,
        gpus=1,
        interconnect=None,
        hidden_size=3584,
        tokens=1,
        graphed_ms=13.0,
        eager_ms=22.5,
        allreduces_per_layer=0,
        same_kernels=False,
        unfused_kernels_per_layer=QWEN25_OMNI_UNFUSED_KERNELS,
        gpu_floor_ms=gpu_floor_ms(QWEN25_OMNI_7B_WEIGHTS, 1, "A100", 1),
        note="TPOT '~22-23 -> ~13 ms' (22.5 taken); vLLM's enforce_eager also turns "
        "torch.compile off, so the eager side runs unfused kernels; A800 80GB = A100 "
        "80GB's 2,039 GB/s (the A800 differs in NVLink only)",
    ),
    EagerPair(
        key="vllm-42885",
        title="Kimi-K2.6, 8x A100 TP 8, vLLM, 16 concurrent decodes (PIECEWISE vs "
        "FULL_AND_PIECEWISE for TRITON_MLA)",
        source="https://github.com/vllm-project/vllm/pull/42885",
        layers=61,
        kernels_per_layer=max(
            VLLM_KIMI_KERNELS_PER_LAYER, piecewise_layer_kernels(vllm_mla_decode_kernels(False)[0])
        ),
        gpus=8,
        interconnect="nvlink3",
        hidden_size=7168,
        tokens=16,
        graphed_ms=28.9,
        eager_ms=32.0,
        mode="piecewise",
        attention_kernels=vllm_mla_decode_kernels(False)[0],
        library="custom",
        gpu_floor_ms=gpu_floor_ms(KIMI_WEIGHTS, 16, "A100", 8),
        note="TPOT median; 16 decodes in flight, so every all-reduce carries 16 tokens",
    ),
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
        for engine, how, eager, graphed in (
            ("vLLM", "enforce_eager vs the compiled, graphed path", 154.1, 41.8),
            ("SGLang", "eager vs CUDA graph", 156.0, 33.2),
        )
    ),
    sglang_5090_pair(),
    EagerPair(
        key="vllm-1440",
        title="Llama-2-7B, 1 GPU, vLLM (Oct 2023, PR #1440's CUDA graph per batch size), "
        "batch 1, 5 input + 100 output tokens (graph vs not)",
        source=VLLM_1440,
        layers=32,
        kernels_per_layer=DENSE_KERNELS_PER_LAYER,
        gpus=1,
        interconnect=None,
        hidden_size=4096,
        tokens=1,
        graphed_ms=1050.0 / VLLM_1440_TOKENS,
        eager_ms=1200.0 / VLLM_1440_TOKENS,
        allreduces_per_layer=0,
        held_out=True,
        note="'about 1.05s' vs 'about 1.2s' for a request of 100 output tokens, taken as 100 "
        "steps (the 5-token prefill, eager on both sides, counted as one); the vLLM of "
        "then had no torch.compile, so the two sides run the same kernels; the GPU is not "
        "named (no floor)",
    ),
)
