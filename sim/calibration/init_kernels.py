"""The kernels one decoder layer issues eagerly, as ``specsim init`` writes them
(``model.kernels_per_layer`` with its range under ``[uncertainty]``): a prefill's default
for a workload with prompts, and the routed-MoE layers specsim counted per engine."""

from __future__ import annotations

from typing import Any, Literal

from sim.calibration.hf_config import HfModel
from sim.calibration.init_fields import set_field, set_uncertainty
from sim.hardware.passes import DENSE_LAYER_KERNELS, MOE_LAYER_KERNELS, TRTLLM_MOE_LAYER_KERNELS


def prefill_kernels(
    model: HfModel, engine: str, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """``model.kernels_per_layer`` and its range, for a workload with prompts: their
    prefill passes run without CUDA graphs, each kernel launched from the CPU, and init
    does not know the engine's count. The middle of the typical range
    (sim/hardware/passes.py: a dense layer 11-18, a routed-MoE layer 28-42, under
    TensorRT-LLM 19-28), the range under ``[uncertainty]`` so that the serving intervals
    draw it."""
    moe = model.is_moe
    if moe and engine == "trtllm":
        counted_moe_kernels(engine, "middle", "assumed", raw, comments)
        return
    low, high = MOE_LAYER_KERNELS if moe else DENSE_LAYER_KERNELS
    kind = "a routed-MoE layer (SGLang's DeepSeek-V3/Kimi layer, counted from its source)"
    if not moe:
        kind = "a dense transformer layer (docs/reference.md §All-reduce)"
        if model.attention_layers < model.get("layers"):
            kind += "; a Gated DeltaNet layer's own count is not known to specsim"
    reason = (
        f"default: {kind} issues about {low}-{high} kernels run eagerly, as a prefill pass "
        "runs; count one layer of your engine (e.g. nsys) and set model.kernels_per_layer"
    )
    set_field(raw, comments, "model.kernels_per_layer", (low + high) // 2, reason)
    entry = {"range": [low, high], "origin": "assumed", "reason": reason}
    set_uncertainty(raw, comments, "model.kernels_per_layer", entry)


#: SGLang's routed-MoE layer (DeepSeek-V3/Kimi) run eagerly on its fused kernels, counted
#: from its source (sim/validation/hardware_data.py SGLANG_KIMI_LAYER_OPS): the low end of
#: ``MOE_LAYER_KERNELS``, whose high end is the PyTorch-native and triton paths.
SGLANG_MOE_REASON = (
    "default: SGLang's routed-MoE layer run eagerly issues {low} kernels on its fused paths, "
    "up to {high} on the PyTorch-native rotary, triton attention and compiled top-k ones "
    "(counted from its source: sim/validation/hardware_data.py); count one layer of your "
    "server (e.g. nsys) and give --kernels-per-layer"
)


#: TensorRT-LLM's routed-MoE layer (DeepSeek-V3/R1, PyTorch backend, TRTLLM-Gen MoE
#: backend), counted op by op (sim/validation/hardware_data.py
#: TRTLLM_DEEPSEEK_V3_LAYER_OPS; docs/studies/trtllm-engine-costs.md).
TRTLLM_MOE_REASON = (
    "default: TensorRT-LLM's routed-MoE layer (DeepSeek-V3/R1, PyTorch backend, "
    "TRTLLM-Gen MoE) issues {low}-{high} kernels run eagerly: the modules its tech blog 1 "
    "lists, the MLA, routing and expert kernels counted from its source "
    "(sim/validation/data/layer_kernels.toml; docs/studies/trtllm-engine-costs.md); other "
    "MoE backends not counted; count one layer of your server (e.g. nsys) and give "
    "--kernels-per-layer"
)

#: The engines whose routed-MoE layer specsim counted: its (low, high) kernels and the
#: scenario comment's template.
COUNTED_MOE_LAYERS: dict[str, tuple[tuple[int, int], str]] = {
    "sglang": (MOE_LAYER_KERNELS, SGLANG_MOE_REASON),
    "trtllm": (TRTLLM_MOE_LAYER_KERNELS, TRTLLM_MOE_REASON),
}


def counted_moe_kernels(
    engine: str,
    value: Literal["low", "middle"],
    origin: str,
    raw: dict[str, Any],
    comments: dict[str, str],
) -> None:
    """``model.kernels_per_layer`` at ``engine``'s counted routed-MoE layer (its low end or
    the middle, (low + high) // 2), the range under ``[uncertainty]`` as ``origin``."""
    (low, high), template = COUNTED_MOE_LAYERS[engine]
    reason = template.format(low=low, high=high)
    kernels = low if value == "low" else (low + high) // 2
    set_field(raw, comments, "model.kernels_per_layer", kernels, reason)
    entry = {"range": [low, high], "origin": origin, "reason": reason}
    set_uncertainty(raw, comments, "model.kernels_per_layer", entry)
