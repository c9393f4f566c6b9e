"""Whole blocks of vLLM's paged KV cache: what a running request holds of the pool.

vLLM hands a request's KV out in blocks of ``block_size`` tokens, never in tokens: the
scheduler asks for slots for the computed tokens, the new ones and the lookahead
(vllm/v1/core/kv_cache_manager.py ``KVCacheManager.allocate_slots``) and each group's
manager gives ``cdiv(num_tokens, block_size)`` blocks
(vllm/v1/core/single_type_kv_cache_manager.py
``SingleTypeKVCacheManager.get_num_blocks_to_allocate`` and ``allocate_new_blocks``),
freed whole when the request ends or is preempted. So a request whose context and
lookahead slots are c tokens holds

    B x ceil(c / B) tokens of the pool

with B the block size: ``serving.kv_block_tokens`` when given (vLLM's ``--block-size``, or
the MLA backend's forced block), else 16 (``VLLM_BLOCK_TOKENS``); a hybrid's attention
block enlarged to its state page with its block layout (sim/model/recurrent_state.py
``block_layout``).
SGLang's token pool is per token (``--page-size``, "the number of tokens in a page", 1 for
its default backends): B = 1 there, and everywhere the rounding is not modelled.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "VLLM_BLOCK_SIZES",
    "VLLM_BLOCK_TOKENS",
    "VLLM_PREFIX_CACHING",
    "whole_blocks",
    "whole_blocks_array",
]

#: vLLM's KV block size when ``--block-size`` is not given: the CUDA platform sets 16
#: (vllm/platforms/cuda.py ``CudaPlatformBase.check_and_update_config``; ROCm the same).
#: An MLA model's backend then forces a larger one (same function): FlashMLA (Hopper) 64,
#: FlashInfer MLA (Blackwell, ``qk_nope_head_dim`` 128) 64, CUTLASS MLA (Blackwell
#: otherwise, or with decode context parallelism) 128, FlashMLA sparse 64; Triton MLA (every
#: other GPU) keeps 16. The scenario does not know the backend: ``serving.kv_block_tokens``
#: carries it (``specsim init`` writes it for an MLA config, sim/calibration/mla_blocks.py).
VLLM_BLOCK_TOKENS = 16

#: The block sizes vLLM accepts (vllm/config/cache.py ``BlockSize``):
#: ``serving.kv_block_tokens``'s values.
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)

#: vLLM's ``enable_prefix_caching`` default (vllm/config/cache.py ``CacheConfig``): on.
#: With it a hybrid's linear groups run ``mamba_cache_mode = "align"``, 2 + k state blocks a
#: request; ``--no-enable-prefix-caching`` leaves 1 + k (sim/model/recurrent_state.py
#: ``BlockLayout``).
VLLM_PREFIX_CACHING = True


def whole_blocks(tokens: int, block_tokens: int) -> int:
    """``tokens`` rounded up to whole blocks of ``block_tokens``: B x ceil(tokens / B)."""
    if block_tokens < 1 or tokens < 0:
        raise ValueError(f"a block holds at least one token, got {block_tokens} for {tokens}")
    return -(-tokens // block_tokens) * block_tokens


def whole_blocks_array(tokens: np.ndarray, block_tokens: int) -> np.ndarray:
    """``whole_blocks`` of every entry of ``tokens`` (int64, any shape)."""
    return -(-tokens // block_tokens) * block_tokens
