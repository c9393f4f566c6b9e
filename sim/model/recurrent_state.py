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
Not priced: the conv state beside it (kernel - 1 + k positions of the layer's q, k, v
channels, 2-3% of the recurrent state's bytes for Qwen3.5-style layers), the state a
prefill chunk reads and writes once a request, and the k extra writes a derived batch-1
verify would add to its decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.model.drafts import Draft, verify_tokens

__all__ = ["RecurrentState", "state_io_bytes"]


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
