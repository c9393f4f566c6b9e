"""The KV block vLLM forces for an MLA model on a GPU: what ``specsim init`` writes as
``serving.kv_block_tokens``.

vLLM's CUDA platform sets 16 when ``--block-size`` is not given, then, for a model with
``use_mla`` (a config.json with ``kv_lora_rank``), picks the MLA backend and forces its block
(vllm/platforms/cuda.py ``CudaPlatformBase.check_and_update_config``, read at commit 002db49,
the layout of vLLM 0.14's ``vllm/v1/attention``; no ``--attention-backend`` given):

- a sparse MLA model (``index_topk`` in its config, DeepSeek-V3.2): 64 (FlashMLA sparse), on
  any GPU;
- Blackwell data-centre GPUs (compute capability family 100: B200, GB200): FlashInfer MLA
  when ``qk_nope_head_dim`` is 128 and decode context parallelism is off, block 64 (it keeps
  32 or a multiple of 64); otherwise CUTLASS MLA, block 128;
- Hopper (family 90: H100, H200, H20): FlashMLA when built (``is_flashmla_dense_supported``,
  vllm/v1/attention/ops/flashmla.py, read at commit 055e47c: Hopper only), block 64;
- every other CUDA GPU (Ampere, Ada, the RTX PRO 6000's family 120): no MLA backend forces a
  block, so Triton MLA runs on 16.

ROCm (MI300X) has its own platform rule (vllm/platforms/rocm.py), not read here: nothing is
written for it. Decode context parallelism is not a flag of ``init``: ASSUMED off (with it a
Blackwell GPU runs CUTLASS MLA, 128: give ``serving.kv_block_tokens``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUDA_FAMILY", "vllm_mla_block"]

#: The compute-capability family (major x 10) of each CUDA GPU preset
#: (sim/hardware/gpus.py; NVIDIA's CUDA GPU list). MI300X is ROCm: absent.
CUDA_FAMILY: dict[str, int] = {
    "H100": 90,
    "H100-NVL": 90,
    "H100-PCIe": 90,
    "H200": 90,
    "H20": 90,
    "A100": 80,
    "RTX-3090": 80,
    "L40S": 80,
    "B200": 100,
    "GB200": 100,
    "RTX-PRO-6000": 120,
}

_SOURCE = "vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config (commit 002db49)"


def vllm_mla_block(gpu: str, config: dict[str, Any]) -> tuple[int, str] | None:
    """vLLM's KV block (tokens) for the MLA model of ``config`` (its language part, with
    ``kv_lora_rank``) on ``gpu`` (a preset name), and why; None where the rule is not
    read (a GPU without a CUDA family here, ROCm)."""
    family = CUDA_FAMILY.get(gpu)
    if family is None:
        return None
    if config.get("index_topk") is not None:
        return 64, f"sparse MLA (config.json: index_topk): FlashMLA sparse's block ({_SOURCE})"
    if family == 100:
        nope = config.get("qk_nope_head_dim")
        if nope == 128:
            return 64, (
                f"{gpu} (Blackwell) with qk_nope_head_dim 128: FlashInfer MLA's block, decode "
                f"context parallelism ASSUMED off ({_SOURCE})"
            )
        return 128, f"{gpu} (Blackwell), qk_nope_head_dim {nope}: CUTLASS MLA's block ({_SOURCE})"
    if family == 90:
        return 64, f"{gpu} (Hopper): FlashMLA's block ({_SOURCE})"
    return 16, (
        f"{gpu} (compute capability {family // 10}.x): no MLA backend forces a block, Triton "
        f"MLA on vLLM's default ({_SOURCE})"
    )
