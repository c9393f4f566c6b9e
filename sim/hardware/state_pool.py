"""SGLang's pool of a hybrid target's per-request states (Mamba, Gated DeltaNet layers),
sized apart from its KV cache out of the same memory.

Read in SGLang v0.5.23 (paths under ``python/sglang/srt/``). After the weights, the memory
the static fraction leaves (``rest``, per GPU: ``mem_cache/kv_cache_configurator.py``
lines 3007-3040) is split by ``_handle_max_mamba_cache`` (lines 3229-3409) when no
``--max-mamba-cache-size`` is given:

    state budget = rest x r / (1 + r)             r = --mamba-full-memory-ratio (0.9)
    plain:         K = floor((budget - p) / p)
    speculating:   K = floor((budget - p (1 + D)) / (p (1 + D / s)))
                   intermediate = p x (min(max_running_requests, K // s) + 1) x D
    KV left        = rest - (K + 1) p - intermediate          (the + 1: a padding slot)
    running       <= K // s                 (``resolve_max_num_reqs``, lines 3119-3160)

with ``p`` a request's states on one rank (``mamba_cache_per_req``, configs/mamba_utils.py
lines 116-125: the recurrent state and a conv window of kernel - 1 positions, every linear
layer), ``D`` = ``--speculative-num-draft-tokens`` (the verify's tokens; the intermediate
states the verify writes, one a draft token and running request: mem_cache/memory_pool.py
lines 866-886), ``s`` the state slots SGLang keeps a running request
(``_calculate_mamba_ratio``, lines 3062-3090): 3 with the radix cache on (its default), 2
more with the ``extra_buffer`` strategy under the overlap scheduler, which
``--mamba-radix-cache-strategy auto`` picks for the Qwen3.5 family, Qwen3-Next and
Kimi-Linear on the default triton linear-attention backend (arg_groups/overrides.py lines
403-415 and 476-486, mem_cache/allocation_sizing.py lines 11-19): ``s`` = 5. The
recurrent state's dtype is the checkpoint's ``mamba_ssm_dtype`` unless
``--mamba-ssm-dtype`` is given (arg_groups/fields/exec_.py lines 490-496), as in vLLM.

Not modelled: a given ``--max-mamba-cache-size`` or ``--disable-radix-cache`` (then
``s`` = 1), ReplaySSM verification, pipeline parallelism, and the activation reserve
SGLang raises for a hybrid whose KV cache is sized after CUDA graph capture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "SGLANG_MAMBA_FULL_MEMORY_RATIO",
    "SGLANG_STATE_SLOTS_PER_REQUEST",
    "StatePool",
    "sglang_state_pool",
]

#: ``--mamba-full-memory-ratio``'s default (arg_groups/fields/schedule.py lines 220-227,
#: ``fallback=0.9``): the state pool's bytes over the KV cache's.
SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.9

#: State slots a running request keeps (``_calculate_mamba_ratio``): 3 with the radix
#: cache, + 2 tracking slots of the ``extra_buffer`` strategy under the overlap scheduler
#: (the default for the Qwen3.5 family and Qwen3-Next; module docstring).
SGLANG_STATE_SLOTS_PER_REQUEST = 5

_GIB = float(2**30)


@dataclass(frozen=True, slots=True)
class StatePool:
    """SGLang's state pool on one GPU: ``slots`` (``max_mamba_cache_size``, K), the
    running requests whose states fit (``requests`` = K // slots a request), and the GiB
    it takes of the memory left after the weights (``state_gib``: its K + 1 slots and the
    speculative verify's intermediate states)."""

    slots: int
    requests: int
    state_gib: float
    slots_per_request: int
    draft_tokens: int


def sglang_state_pool(
    rest_gib: float,
    request_bytes: float,
    *,
    draft_tokens: int,
    max_running_requests: int,
    slots_per_request: int = SGLANG_STATE_SLOTS_PER_REQUEST,
    memory_ratio: float = SGLANG_MAMBA_FULL_MEMORY_RATIO,
) -> StatePool:
    """SGLang's state pool (module docstring) on a GPU with ``rest_gib`` GiB after the
    weights and reserve, a request's states ``request_bytes`` bytes on one rank, a verify
    of ``draft_tokens`` tokens (0: plain decoding) and the admission cap
    ``max_running_requests``. ValueError when no request's state fits (SGLang refuses to
    start)."""
    if not (request_bytes > 0 and math.isfinite(request_bytes)):
        raise ValueError(f"a request's states have a positive size, got {request_bytes}")
    if draft_tokens < 0 or slots_per_request < 1 or max_running_requests < 1:
        raise ValueError(
            f"draft_tokens >= 0, slots_per_request >= 1 and max_running_requests >= 1, got "
            f"{draft_tokens}, {slots_per_request}, {max_running_requests}"
        )
    p, d, s = request_bytes, draft_tokens, slots_per_request
    budget = rest_gib * memory_ratio / (1 + memory_ratio) * _GIB
    slots = int((budget - p * (1 + d)) // (p * (1 + d / s)))  # D = 0: (budget - p) // p
    if slots // s <= 0:
        raise ValueError(
            f"no request's states fit SGLang's state pool ({budget / _GIB:.2f} GiB a GPU for "
            f"states of {p / 1e6:,.1f} MB a request)"
        )
    requests = slots // s
    intermediate = p * (min(max_running_requests, requests) + 1) * d
    return StatePool(slots, requests, ((slots + 1) * p + intermediate) / _GIB, s, d)
