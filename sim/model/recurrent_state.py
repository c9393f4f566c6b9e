"""The per-request state of a hybrid target (linear attention, Gated DeltaNet, Mamba-style
layers), read and written by every target pass and kept in the KV pool.

A linear-attention layer keeps no KV that grows with the context; it keeps fixed-size
states a request instead, and every decode or verify pass reads them and writes them back.
In vLLM (0.30.0, paths under ``vllm/``) a Gated DeltaNet layer keeps two
(model_executor/layers/mamba/mamba_utils.py ``gated_delta_net_state_shape``, lines 274-295):

* the recurrent state, (value heads / TP) x value head dim x key head dim, in
  ``mamba_ssm_cache_dtype``, which the Qwen3.5 family takes from its checkpoint's
  ``mamba_ssm_dtype`` (float32; model_executor/models/config.py
  ``Qwen3_5ForConditionalGenerationConfig``, lines 801-825). The decode kernel loads a
  request's state once and stores it after each of the request's tokens in the pass
  (third_party/flash_linear_attention/ops/fused_sigmoid_gating.py, lines 103-120 and
  156-166): one read and one write in plain decoding; in a speculative verify of t tokens
  one read (the slot of the last accepted position, ``num_accepted_tokens - 1``) and t
  writes, one per position, so that the next pass can start from whichever was accepted
  (v1/attention/backends/gdn_attn.py ``spec_state_indices_tensor``, k + 1 slots a request);
* the conv state, (kernel - 1 + ``num_speculative_tokens``) positions x conv channels / TP
  (2 x key heads x key dim + value heads x value dim) in the model's dtype
  (``mamba_cache_dtype`` "auto"; mamba_utils.py lines 98-110). The update kernel
  (model_executor/layers/mamba/ops/causal_conv1d.py ``_causal_conv1d_update_kernel``)
  reads the kernel - 1 positions before the pass (at the last accepted position when
  speculating; the window's shifted rows it loads are those same positions) and stores
  the whole window, kernel - 1 + k positions, into the request's slot.

So a request in a target pass over t tokens (1 in plain decoding, k + 1 for a chain, a
tree's draft tokens: ``verify_tokens``) moves, per tensor-parallel rank,

    recurrent x (1 + t) + conv position x (2 (kernel - 1) + t - 1) bytes

at a fraction f of the GPU's peak memory bandwidth (``io_bytes``; ``RecurrentState.fraction``,
the scenario's ``serving.state_bandwidth_fraction``; not given, the server's measured
batch-1 memory efficiency, sim/binding/state_shape.py ``state_bandwidth_fraction``; 1, peak,
here when built without one). f is the state
kernels' achieved share of peak on the server, which no public timing fixes for vLLM's
kernels with an FP32 state (docs/studies/hybrid-state-bandwidth.md: plain decoding runs the Triton
``fused_recurrent_gated_delta_rule_packed_decode``, the verify the compiled
``fused_gdn_decode_post_conv_mtp``); the public readings of other GDN decode kernels span
``STATE_BANDWIDTH_READINGS``, and a serving answer draws f over
``STATE_BANDWIDTH_FRACTION_RANGE`` when the scenario leaves it at its default. The
drafter's passes move none (an MTP layer is full attention:
model_executor/models/qwen3_5_mtp.py lines 120-122).

As the logit rows (sim/model/logit_rows.py), what a request costs does not depend on the
batch, so only the requests beyond the batch-1 cycle's are added (``growth_ms``): batch 1
stays the batch-1 cycle exactly, its own state being in its measured or derived passes.
The states also take room in the KV pool: vLLM keeps them in the pool's pages, 1 +
``num_speculative_tokens`` pages a linear layer, each holding both states
(v1/kv_cache_interface.py ``MambaSpec``, line 1045; model_executor/layers/mamba/abstract.py
lines 81-85), the attention layers' pages sized to hold one state page (``PooledState``);
in its block layout, 2 + ``num_speculative_tokens`` whole blocks a group of linear layers
under prefix caching's align mode, 1 + ``num_speculative_tokens`` without prefix caching
(``BlockLayout``).

Not priced: the state a prefill chunk reads and writes once a request, and the k extra
writes a derived batch-1 verify would add to its decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.model.drafts import Draft, verify_tokens
from sim.model.kv_blocks import VLLM_PREFIX_CACHING

__all__ = [
    "DEFAULT_STATE_BANDWIDTH_FRACTION",
    "STATE_BANDWIDTH_FRACTION_RANGE",
    "STATE_BANDWIDTH_READINGS",
    "VLLM_KERNEL_BLOCK_TOKENS",
    "BlockLayout",
    "PooledState",
    "RecurrentState",
    "StateShape",
    "block_layout",
    "state_io_bytes",
]

#: The attention kernel's block alignment vLLM 0.30.0 sizes a hybrid's block from:
#: max(the backend's smallest kernel block, the block size), 16 for FlashInfer (the first
#: causal backend on a B200, platforms/cuda.py lines 154-165; its kernel blocks 16, 32, 64,
#: v1/attention/backends/flashinfer.py lines 426-445), FlashAttention and Triton (multiples
#: of 16) at vLLM's default block size 16.
VLLM_KERNEL_BLOCK_TOKENS = 16

#: The share of the GPU's peak memory bandwidth the state kernels reach when nothing says
#: otherwise: peak, the physics bound no public reading exceeds. A scenario's binding
#: takes its server's measured batch-1 memory efficiency instead when it has one
#: (sim/binding/state_shape.py ``state_bandwidth_fraction``). ASSUMED: a batch-1
#: calibration cannot identify the state kernels' own share.
DEFAULT_STATE_BANDWIDTH_FRACTION = 1.0
#: The lowest and highest public readings of Gated DeltaNet decode kernels' achieved share
#: of peak, one read and one write a request against the GPU's peak
#: (docs/studies/hybrid-state-bandwidth.md): the lowest at a
#: serving batch on a datacenter GPU, 0.40 (vLLM PR #31722, the Triton
#: ``fused_recurrent_gated_delta_rule_fwd`` on a B200 at 128 requests, if its state was
#: BF16; 0.80 if FP32), the highest 0.95 (FlashInfer's GDN decode against its own
#: state-traffic floor, flashinfer-ai/flashinfer PR #4481). Other kernels, GPUs and dtypes
#: than a given server's.
STATE_BANDWIDTH_READINGS = (0.40, 0.95)
#: What a serving answer draws the share over when the scenario leaves it at its default:
#: the lowest reading up to peak (the default, which no reading exceeds). A range, not a
#: value: none of the readings is a given server's kernels with its state dtype.
STATE_BANDWIDTH_FRACTION_RANGE = (STATE_BANDWIDTH_READINGS[0], 1.0)


def state_io_bytes(state_bytes: float, tokens: int) -> float:
    """Bytes one request's recurrent state moves in a target pass over its ``tokens``
    tokens: one read and one write per token, ``state_bytes x (1 + tokens)``."""
    if state_bytes < 0 or not math.isfinite(state_bytes):
        raise ValueError(f"state_bytes must be finite and >= 0, got {state_bytes}")
    if tokens < 1:
        raise ValueError(f"a pass covers at least one token a request, got {tokens}")
    return state_bytes * (1 + tokens)


@dataclass(frozen=True, slots=True)
class StateShape:
    """A request's states per tensor-parallel rank, all linear layers: the recurrent state
    (``recurrent_bytes``) and the conv state's window, ``conv_bytes_per_position`` bytes a
    position over ``conv_positions`` positions in plain decoding (kernel - 1; a server
    speculating k tokens keeps k more). All 0: the target has none."""

    recurrent_bytes: float = 0.0
    conv_bytes_per_position: float = 0.0
    conv_positions: int = 0

    def __post_init__(self) -> None:
        for size in (self.recurrent_bytes, self.conv_bytes_per_position):
            if size < 0 or not math.isfinite(size):
                raise ValueError(f"a state's bytes must be finite and >= 0, got {self}")
        if self.conv_positions < 0 or (self.conv_bytes_per_position and not self.conv_positions):
            raise ValueError(f"a conv state has a window of at least one position, got {self}")

    def __bool__(self) -> bool:
        return bool(self.recurrent_bytes or self.conv_bytes_per_position)

    def io_bytes(self, tokens: int) -> float:
        """Bytes a request's states move in a target pass over ``tokens`` tokens (the
        module docstring): ``recurrent x (1 + tokens) + conv position x (2 conv_positions
        + tokens - 1)``."""
        conv = self.conv_bytes_per_position * (2 * self.conv_positions + tokens - 1)
        return state_io_bytes(self.recurrent_bytes, tokens) + conv

    def page_bytes(self, speculative_tokens: int) -> float:
        """Bytes one state slot holds on a server speculating ``speculative_tokens`` (k)
        tokens, all linear layers: a recurrent state and a conv window of
        ``conv_positions + k`` positions."""
        window = self.conv_positions + speculative_tokens
        return self.recurrent_bytes + self.conv_bytes_per_position * window

    def slot_bytes(self, slots: int) -> float:
        """Bytes a request's states hold with ``slots`` slots a layer (1 + k on a server
        speculating k tokens): ``slots`` pages (``page_bytes(slots - 1)``)."""
        if slots < 1:
            raise ValueError(f"a request keeps at least one state slot, got {slots}")
        return slots * self.page_bytes(slots - 1)


@dataclass(frozen=True, slots=True)
class RecurrentState:
    """A request's states per tensor-parallel rank (``shape``; empty: the target has none,
    or they are not priced), the GPU's peak memory bandwidth (``bandwidth_gbps``, GB/s) and
    the share of it the state kernels reach (``fraction``, 0 < f <= 1): they move at
    ``bandwidth_gbps x fraction``."""

    shape: StateShape = StateShape()
    bandwidth_gbps: float = 0.0
    fraction: float = DEFAULT_STATE_BANDWIDTH_FRACTION

    def __post_init__(self) -> None:
        if self.shape and not self.bandwidth_gbps > 0:
            raise ValueError(f"a priced state needs a positive bandwidth, got {self}")
        if not 0.0 < self.fraction <= 1.0:
            raise ValueError(f"a share of peak bandwidth is in (0, 1], got {self.fraction}")

    @property
    def bytes_per_request(self) -> float:
        """The recurrent state's bytes (the larger of the two; 0: none)."""
        return self.shape.recurrent_bytes

    def request_ms(self, draft: Draft) -> float:
        """Milliseconds one request's state traffic takes in the target pass of ``draft``:
        ``StateShape.io_bytes`` at ``verify_tokens(draft)`` tokens over ``bandwidth_gbps x
        fraction``."""
        if not self.shape:
            return 0.0
        return self.shape.io_bytes(verify_tokens(draft)) / (
            self.bandwidth_gbps * self.fraction * 1e6
        )

    def growth_ms(self, batch: int, draft: Draft) -> float:
        """The state traffic of ``batch`` requests beyond one request's: ``(batch - 1) x
        request_ms(draft)``; 0.0 at one request or without a state."""
        if batch < 1:
            raise ValueError(f"an iteration has at least one request, got {batch}")
        if batch == 1 or not self.shape:
            return 0.0
        return (batch - 1) * self.request_ms(draft)


@dataclass(frozen=True, slots=True)
class BlockLayout:
    """vLLM's block layout of a hybrid's KV pool on one server (0.30.0, paths under
    ``vllm/``): ``block_tokens`` (B) a block, ``linear_groups`` groups of linear layers,
    ``pool_tokens_per_block`` the pool tokens one block's bytes hold (B x g / attention
    layers, g the layers a group); ``prefix_caching``: the server runs with prefix caching
    (vLLM's default, sim/model/kv_blocks.py ``VLLM_PREFIX_CACHING``) or with
    ``--no-enable-prefix-caching``."""

    block_tokens: int
    linear_groups: int
    pool_tokens_per_block: float
    prefix_caching: bool = True

    def state_blocks(self, slots: int) -> int:
        """State blocks a running request keeps in each linear group with ``slots`` (1 + k)
        state slots: 1 + ``slots`` (2 + ``num_speculative_tokens``) under prefix caching's
        ``align`` mode (v1/kv_cache_interface.py lines 1040-1043: the running state, its k
        speculative blocks and the previous step's, freed a step later,
        v1/core/single_type_kv_cache_manager.py ``MambaManager``); ``slots`` (1 + k)
        without prefix caching (mode ``none``: one block of ``max_model_len`` tokens and
        ``num_speculative_blocks`` more, line 1045)."""
        if slots < 1:
            raise ValueError(f"a request keeps at least one state slot, got {slots}")
        return slots + 1 if self.prefix_caching else slots

    def state_tokens(self, slots: int) -> int:
        """Pool tokens a running request's states take: ``state_blocks(slots)`` blocks in
        each linear group."""
        blocks = self.state_blocks(slots)
        return math.ceil(self.linear_groups * blocks * self.pool_tokens_per_block)


def block_layout(
    shape: StateShape,
    *,
    linear_layers: int,
    attention_layers: int,
    drafter_layers: int,
    kv_bytes_per_layer: float,
    speculative_tokens: int,
    kernel_block_tokens: int = VLLM_KERNEL_BLOCK_TOKENS,
    prefix_caching: bool = VLLM_PREFIX_CACHING,
) -> BlockLayout:
    """vLLM's layout (``BlockLayout``) for a target of ``attention_layers`` attention layers
    (``kv_bytes_per_layer`` bytes a token each) and ``linear_layers`` linear ones holding
    ``shape``, a drafter of ``drafter_layers`` attention layers, on a server speculating
    ``speculative_tokens`` tokens:

    * block size (platforms/interface.py ``_align_hybrid_block_size``, lines 778-960):
      B = a x ceil(m / (a x q)), m a linear layer's state page (the recurrent state and a
      conv window of kernel - 1 + k positions), q = ``kv_bytes_per_layer``, a the kernel
      alignment; the state page is padded to B x q;
    * groups (v1/core/kv_cache_utils.py ``_get_kv_cache_groups_uniform_page_size``, lines
      1435-1571): the attention layers (the drafter's with the target's: ASSUMED one spec)
      and the linear ones are two buckets; g is the smaller's count (the larger's when it
      is under 1.5 times it), each bucket ceil(layers / g) groups; a block is g pages;
    * state blocks a request (``BlockLayout.state_blocks``): 2 + k with ``prefix_caching``
      (vLLM's default), 1 + k without."""
    if min(linear_layers, attention_layers, kernel_block_tokens) < 1 or drafter_layers < 0:
        raise ValueError("a hybrid has linear and attention layers, and a kernel block")
    if not kv_bytes_per_layer > 0 or speculative_tokens < 0:
        raise ValueError("an attention layer has KV, and a server speculates k >= 0 tokens")
    k, a = speculative_tokens, kernel_block_tokens
    page = shape.page_bytes(k) / linear_layers
    block = a * math.ceil(page / (a * kv_bytes_per_layer))
    attention = attention_layers + drafter_layers
    group = min(attention, linear_layers)
    if max(attention, linear_layers) < 1.5 * group:
        group = max(attention, linear_layers)
    return BlockLayout(
        block, math.ceil(linear_layers / group), block * group / attention, prefix_caching
    )


@dataclass(frozen=True, slots=True)
class PooledState:
    """A request's states as vLLM's KV pool holds them, per tensor-parallel rank (``shape``),
    and the pool's bytes a KV token on the speculating server (``kv_bytes_per_token``:
    target and drafter layers) and on the plain one (``plain_kv_bytes_per_token``).

    A request with ``slots`` state slots (1 in plain decoding, 1 + k when speculating: a
    verify's ``verify_tokens``) holds ``shape.slot_bytes(slots)`` bytes of the pool, charged
    as ``ceil(those bytes / bytes a token)`` KV tokens from its admission to its end; with
    ``layouts`` (vLLM's block layout of the speculating server and of the plain one), its
    whole state blocks instead (``BlockLayout.state_tokens``); each context's rounding up
    to whole blocks is the serving engine's (sim/model/kv_blocks.py)."""

    shape: StateShape
    kv_bytes_per_token: float
    plain_kv_bytes_per_token: float
    layouts: tuple[BlockLayout, BlockLayout] | None = None

    def __post_init__(self) -> None:
        if not self.shape:
            raise ValueError(f"a pooled state has a positive size, got {self}")
        if not (self.kv_bytes_per_token > 0 and self.plain_kv_bytes_per_token > 0):
            raise ValueError(f"a pool token has a positive size, got {self}")

    def tokens(self, slots: int, drafts: bool) -> int:
        """KV tokens a request's ``slots`` state slots take of the pool of the speculating
        server (``drafts``) or of the plain one."""
        if self.layouts is not None:
            return self.layouts[0 if drafts else 1].state_tokens(slots)
        per_token = self.kv_bytes_per_token if drafts else self.plain_kv_bytes_per_token
        return math.ceil(self.shape.slot_bytes(slots) / per_token)
