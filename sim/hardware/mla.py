"""GPU work of vLLM's MLA chunked-prefill branch over a request's cached context.

vLLM's MLA backends run a query either down the decode path (attention in the latent space,
the context read once as compressed latents) or down the prefill path, which up-projects
the cached context into full keys and values first (vllm-project/vllm
vllm/v1/attention/backends/mla/common.py, ``_compute_prefill_context``). A multi-token
verify goes down the prefill path unless the backend declares it can take uniform
multi-token queries as decodes: voipmonitor/rtx6kpro's TRITON_MLA fix "rout[ed]
spec-verify batches through the decode path instead of the expensive chunked-prefill
branch" (models/kimi-k26-mtp-long-ctx-wip/README.md), and that report's gain grew with
context (1.55x at 2k, 3.5x at 10k, 4.3x at 30k).

Per context chunk the prefill path runs, for ``C`` cached tokens and ``H`` heads a rank
(latent ``L``, rope ``R``, no-rope key ``P``, value ``V`` dimensions):

1. ``gather_and_maybe_dequant_cache``: reads C (L + R) cache bytes, writes them as
   activations;
2. ``kv_b_proj``: [C, L] x [L, H (P + V)], 2 C L H (P + V) FLOPs, writes C H (P + V);
3. ``torch.cat`` of the no-rope keys and the broadcast rope part: writes C H (P + R);
4. the value padded to the key's head size for FlashAttention when V < P + R
   (``_pad_v``): writes C H (P + R);
5. attention of the few query tokens over those keys and values: reads them.

Each kernel takes max(bytes / bandwidth, FLOPs / peak) at the GPU's peak (a floor); the
branch's new-token part and its merge are independent of the context and small at a few
tokens, and left out. Physics only.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.hardware.gpus import GpuPreset


@dataclass(frozen=True, slots=True)
class MlaDims:
    """MLA dimensions of one tensor-parallel rank (DeepSeek-V3 / Kimi-K2 defaults:
    kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128)."""

    heads: int
    latent: int = 512
    nope: int = 128
    rope: int = 64
    value: int = 128

    def __post_init__(self) -> None:
        if min(self.heads, self.latent, self.nope, self.rope, self.value) <= 0:
            raise ValueError("MLA dimensions must be positive")


def prefill_context_kernels(
    dims: MlaDims, context_tokens: int, kv_cache_bytes: float, act_bytes: float = 2.0
) -> list[tuple[float, float]]:
    """(bytes, FLOPs) of each context-proportional kernel of the prefill branch, in order
    (module docstring); shape: one pair per kernel."""
    c, h = float(context_tokens), dims.heads
    key = dims.nope + dims.rope
    padded = dims.value < key
    value_width = key if padded else dims.value
    kernels = [
        (c * (dims.latent + dims.rope) * (kv_cache_bytes + act_bytes), 0.0),
        (
            (c * dims.latent + dims.latent * h * (dims.nope + dims.value)) * act_bytes
            + c * h * (dims.nope + dims.value) * act_bytes,
            2.0 * c * dims.latent * h * (dims.nope + dims.value),
        ),
        ((c * h * dims.nope + c * dims.rope + c * h * key) * act_bytes, 0.0),
    ]
    if padded:
        kernels.append((c * h * (dims.value + key) * act_bytes, 0.0))
    kernels.append((c * h * (key + value_width) * act_bytes, 0.0))
    return kernels


def prefill_context_ms(
    dims: MlaDims,
    context_tokens: int,
    gpu: GpuPreset,
    kv_cache_bytes: float,
    act_bytes: float = 2.0,
) -> float:
    """GPU time (ms) of the prefill branch's context part in one layer at its floor."""
    if context_tokens < 0:
        raise ValueError("context_tokens must be >= 0")
    bandwidth = gpu.memory_bandwidth_gbps * 1e9
    peak = gpu.bf16_tflops * 1e12
    return 1e3 * sum(
        max(nbytes / bandwidth, flops / peak)
        for nbytes, flops in prefill_context_kernels(
            dims, context_tokens, kv_cache_bytes, act_bytes
        )
    )
