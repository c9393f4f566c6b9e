"""The per-request recurrent state of a hybrid target (linear attention, Gated DeltaNet,
Mamba-style layers), read and written by every target pass.

A linear-attention layer keeps no KV that grows with the context; it keeps one fixed-size
state a request instead, and every decode or verify pass reads it and writes it back. In
vLLM (0.30.0, paths under ``vllm/``) a Gated DeltaNet layer's recurrent state is (value
heads / TP) x value head dim x key head dim (model_executor/layers/mamba/mamba_utils.py
``gated_delta_net_state_shape``, lines 274-295), in ``mamba_ssm_cache_dtype``, which the
Qwen3.5 family takes from its checkpoint's ``mamba_ssm_dtype`` (float32;
model_executor/models/config.py ``Qwen3_5ForConditionalGenerationConfig``, lines 801-825).
The decode kernel loads a request's state once and stores it after each of the request's
tokens in the pass (third_party/flash_linear_attention/ops/fused_sigmoid_gating.py, lines
103-120 and 156-166): one read and one write in plain decoding; in a speculative verify of
t tokens one read (the slot of the last accepted position, ``num_accepted_tokens - 1``) and
t writes, one per position, so that the next pass can start from whichever was accepted
(v1/attention/backends/gdn_attn.py ``spec_state_indices_tensor``, k + 1 slots a request). A
request in a target pass therefore moves

    state_bytes x (1 + t) bytes per tensor-parallel rank,

t = 1 in plain decoding, k + 1 for a chain, a tree's draft tokens (``verify_tokens``), at the
GPU's memory bandwidth. The drafter's passes move none (an MTP layer is full attention:
model_executor/models/qwen3_5_mtp.py lines 120-122).

As the logit rows (sim/model/logit_rows.py), what a request costs does not depend on the
batch, so only the requests beyond the batch-1 cycle's are added (``growth_ms``): batch 1
stays the batch-1 cycle exactly, its own state being in its measured or derived passes.
The state also takes room in the KV pool: vLLM (0.30.0) keeps a request's state in the
pool's pages, 1 + ``num_speculative_tokens`` pages a linear layer (v1/kv_cache_interface.py
``MambaSpec``, line 1045; model_executor/layers/mamba/abstract.py lines 81-85), the
attention layers' pages sized to hold one state page (``PooledState``).

Not priced: the conv state beside it (kernel - 1 + k positions of the layer's q, k, v
channels, 2-3% of the recurrent state's bytes for Qwen3.5-style layers), the state a
prefill chunk reads and writes once a request, and the k extra writes a derived batch-1
verify would add to its decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.model.drafts import Draft, verify_tokens

__all__ = ["PooledState", "RecurrentState", "state_io_bytes"]


def state_io_bytes(state_bytes: float, tokens: int) -> float:
    """Bytes one request's recurrent state moves in a target pass over its ``tokens``
    tokens: one read and one write per token, ``state_bytes x (1 + tokens)``."""
    if state_bytes < 0 or not math.isfinite(state_bytes):
        raise ValueError(f"state_bytes must be finite and >= 0, got {state_bytes}")
    if tokens < 1:
        raise ValueError(f"a pass covers at least one token a request, got {tokens}")
    return state_bytes * (1 + tokens)


@dataclass(frozen=True, slots=True)
class RecurrentState:
    """A request's recurrent state per tensor-parallel rank (``bytes_per_request``; 0: the
    target has none, or it is not priced) and the GPU's memory bandwidth it moves at
    (``bandwidth_gbps``, GB/s)."""

    bytes_per_request: float = 0.0
    bandwidth_gbps: float = 0.0

    def __post_init__(self) -> None:
        if self.bytes_per_request < 0 or not math.isfinite(self.bytes_per_request):
            raise ValueError(f"bytes_per_request must be finite and >= 0, got {self}")
        if self.bytes_per_request and not self.bandwidth_gbps > 0:
            raise ValueError(f"a priced state needs a positive bandwidth, got {self}")

    def request_ms(self, draft: Draft) -> float:
        """Milliseconds one request's state traffic takes in the target pass of ``draft``
        (``state_io_bytes`` at ``verify_tokens(draft)`` tokens, at the bandwidth)."""
        if not self.bytes_per_request:
            return 0.0
        moved = state_io_bytes(self.bytes_per_request, verify_tokens(draft))
        return moved / (self.bandwidth_gbps * 1e6)

    def growth_ms(self, batch: int, draft: Draft) -> float:
        """The state traffic of ``batch`` requests beyond one request's: ``(batch - 1) x
        request_ms(draft)``; 0.0 at one request or without a state."""
        if batch < 1:
            raise ValueError(f"an iteration has at least one request, got {batch}")
        if batch == 1 or not self.bytes_per_request:
            return 0.0
        return (batch - 1) * self.request_ms(draft)


@dataclass(frozen=True, slots=True)
class PooledState:
    """A request's recurrent state as vLLM's KV pool holds it, per tensor-parallel rank:
    ``bytes_per_slot`` (a state page of every linear layer) in each of its slots, and the
    pool's bytes a KV token on the speculating server (``kv_bytes_per_token``: target and
    drafter layers) and on the plain one (``plain_kv_bytes_per_token``).

    A request with ``slots`` state slots (1 in plain decoding, 1 + k when speculating: a
    verify's ``verify_tokens``) holds ``slots x bytes_per_slot`` bytes of the pool, charged
    as ``ceil(slots x bytes_per_slot / bytes a token)`` KV tokens from its admission to its
    end. Bytes, not vLLM's pages: the pool's attention block (sized to hold one state page,
    several hundred tokens) rounds each request's context up to whole blocks, and the state
    page up to 16 tokens of attention pages; neither rounding is modelled."""

    bytes_per_slot: float
    kv_bytes_per_token: float
    plain_kv_bytes_per_token: float

    def __post_init__(self) -> None:
        if not (self.bytes_per_slot > 0 and math.isfinite(self.bytes_per_slot)):
            raise ValueError(f"a pooled state has a positive size, got {self}")
        if not (self.kv_bytes_per_token > 0 and self.plain_kv_bytes_per_token > 0):
            raise ValueError(f"a pool token has a positive size, got {self}")

    def tokens(self, slots: int, drafts: bool) -> int:
        """KV tokens a request's ``slots`` state slots take of the pool of the speculating
        server (``drafts``) or of the plain one."""
        if slots < 1:
            raise ValueError(f"a request keeps at least one state slot, got {slots}")
        per_token = self.kv_bytes_per_token if drafts else self.plain_kv_bytes_per_token
        return math.ceil(slots * self.bytes_per_slot / per_token)
