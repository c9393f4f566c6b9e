"""Distinct routed experts a pass over m tokens reads, and what reading them costs.

With E routed experts, e chosen per token and independent uniform routing, one expert is
missed by all m tokens with probability (1 - e/E)^m, so the expected number of distinct
experts per MoE layer is E (1 - (1 - e/E)^m) (docs/reference.md §Seed). It is e at m = 1, grows
concavely, and tends to E. Tokens of different sequences route close to independently;
consecutive tokens of one sequence do not (``sequence_union_tokens``).

What a MoE layer costs (``FusedMoeKernel``): a fused-MoE kernel (vLLM/SGLang Triton
``fused_moe``) sorts the tokens by expert and streams every activated expert's weights once,
so its time is a fixed part per layer plus, per distinct expert, a small fixed cost and its
bytes at a fraction of peak bandwidth:

    layer_us + distinct x (expert_us + expert bytes per rank / (hbm_efficiency x bandwidth)).

The constants are fitted on public ``benchmark_moe.py`` curves (``H100_FUSED_MOE``); the
validation case "fused-MoE kernel time against tokens" scores them on other curves.

Past the union's saturation (every expert read) the kernel's time keeps growing with the
token-expert pairs it multiplies: their FLOPs (2 x the expert's parameters per rank a pair)
run at ``pair_flop_efficiency`` x the GPU's dense BF16 peak, well below the peak the rest
of a pass's FLOPs are priced at (``PAIR_FLOP_EFFICIENCY``).

Tile padding (``tile_extra_rows``): the Triton fused-MoE kernel pads each expert's rows up
to its block of rows B (``moe_align_block_size``), so an expert routed r rows computes
ceil(r / B) B. SGLang's default config (no tuned config file) picks B = 16 for M <= E
tokens and 64 beyond, for unquantized experts (``sglang_default_block_rows``). The rows a
16-row block already pays are the kernel model's own (its fits ran at that floor or
above), so only the rows a larger block adds are priced (docs/studies/moe-tile-padding.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

__all__ = [
    "H100_FUSED_MOE",
    "PAIR_FLOP_EFFICIENCY",
    "PAIR_FLOP_EFFICIENCY_RANGE",
    "SERVING_STEP_SKEW",
    "SKEW_RANGE",
    "STEP_EXPERT_OVERLAP",
    "STEP_EXPERT_OVERLAP_RANGE",
    "TILE_FLOOR_ROWS",
    "TRACE_SKEW",
    "FusedMoeKernel",
    "expected_distinct_experts",
    "log_miss",
    "padded_expert_rows",
    "selection_probabilities",
    "sequence_union_tokens",
    "sglang_default_block_rows",
    "skewed_distinct_experts",
    "tile_extra_rows",
]


def expected_distinct_experts(experts: int, per_token: int, tokens: ArrayLike) -> np.ndarray:
    """E (1 - (1 - e/E)^m); same shape as ``tokens`` (m may be fractional: the effective
    independent tokens of ``sequence_union_tokens``)."""
    if experts <= 0 or not 0 < per_token <= experts:
        raise ValueError(f"need 0 < per_token <= experts, got {per_token}, {experts}")
    m = np.asarray(tokens, dtype=float)
    if np.any(m < 0):
        raise ValueError("tokens must be >= 0")
    return experts * (1.0 - (1.0 - per_token / experts) ** m)


def selection_probabilities(experts: int, per_token: int, skew: float) -> np.ndarray:
    """Probability (E,) that one token selects each expert when expert popularity follows a
    Zipf law of exponent ``skew`` (p_i proportional to i^-skew, i = 1..E) and the token
    picks ``per_token`` distinct experts: q_i = e p_i, the experts a share above 1 would
    take capped at 1 and the rest renormalised so that the q_i sum to e. ``skew`` 0 is
    uniform routing (q_i = e / E)."""
    if skew < 0:
        raise ValueError(f"skew must be >= 0, got {skew}")
    p = np.arange(1, experts + 1, dtype=float) ** -skew
    q = per_token * p / p.sum()
    for _ in range(experts):  # each pass caps at least one more expert, or stops
        over = q > 1.0
        if not over.any():
            break
        capped = q >= 1.0
        free = ~capped
        q = np.where(capped, 1.0, p * (per_token - capped.sum()) / p[free].sum())
    return q


def skewed_distinct_experts(
    experts: int, per_token: int, tokens: ArrayLike, skew: float, miss: np.ndarray | None = None
) -> np.ndarray:
    """Expected distinct experts over m independent tokens under Zipf popularity (``skew``,
    ``selection_probabilities``): sum_i 1 - (1 - q_i)^m, same shape as ``tokens``; at
    skew 0 exactly ``expected_distinct_experts``. It is e at m = 1 and grows more slowly
    than the uniform union: popular experts are read again by the batch's other tokens.
    ``miss``: ``log_miss(experts, per_token, skew)`` when the caller holds it (a pass
    prices thousands of token counts with one)."""
    if skew == 0.0:
        return expected_distinct_experts(experts, per_token, tokens)
    if experts <= 0 or not 0 < per_token <= experts:
        raise ValueError(f"need 0 < per_token <= experts, got {per_token}, {experts}")
    m = np.asarray(tokens, dtype=float)
    if np.any(m < 0):
        raise ValueError("tokens must be >= 0")
    if miss is None:
        miss = log_miss(experts, per_token, skew)  # (E,)
    # add.reduce: ``np.sum`` without its Python wrapper (the same reduction)
    return np.add.reduce(1.0 - np.exp(np.multiply.outer(m, miss)), axis=-1)


def log_miss(experts: int, per_token: int, skew: float) -> np.ndarray:
    """log(1 - q_i) (E,) of ``selection_probabilities``, read-only: the same for every
    token count of a pass, where a serving run prices thousands of prompt lengths (a
    batched pass builds it once, sim/hardware/batched.py ``BatchedPass``)."""
    q = selection_probabilities(experts, per_token, skew)
    miss = np.log1p(-np.minimum(q, 1.0 - 1e-15))
    miss.flags.writeable = False
    return miss


#: Zipf exponent of expert popularity within one serving step, from the one public
#: measurement of a fused-MoE kernel under real routing in serving traffic: DeepSeek-V3.1
#: (256 experts, top-8, block FP8, TP8) on H200 under vLLM at 16 concurrent requests, "2
#: triton MoE kernels take about 109us" (vllm-project/vllm issue #32832, nsys of one
#: generation step). ``H100_FUSED_MOE`` prices that layer at 109 us with 48.8 distinct
#: experts (32.4 us + 1.57 us each), against 102 for 16 tokens routed uniformly; a Zipf
#: popularity of exponent 1.30 gives 48.8 (``skewed_distinct_experts``). It is the high end
#: of the evidence: the kernel model fitted on H100 curves may price an H200 FP8 expert
#: above what it costs there, and a cheaper expert would mean more distinct ones (less
#: skew); uniform routing (0) is the low end.
TRACE_SKEW = 1.30
#: The plausible range of the exponent (uniform routing to the trace) and its middle, the
#: default (assumed, as ``DEFAULT_SLOPE`` is the middle of its evidence): a load sweep of
#: the user's server fits it (serving.expert_skew, sim/calibration/load_fit.py).
SKEW_RANGE: tuple[float, float] = (0.0, TRACE_SKEW)
SERVING_STEP_SKEW = 0.5 * (SKEW_RANGE[0] + SKEW_RANGE[1])


#: Share of a token's routed experts that the previous token of the same sequence also
#: chose: 38% ("expert overlap (step 1)") in Cohere's measurement on its production MoE
#: models under vLLM (https://cohere.com/blog/mixture-of-experts-models-get-more-from-
#: speculative-decoding, Apr 2026; the stored copy of the post is cut before its figures,
#: the numbers were read from a summary of it, headsupai.io "Cohere proves mixture of
#: experts models amplify speculative decoding gains"). The same post reports that
#: verifying 4 tokens loads ~2.5x the unique expert weights of one, not 4x. The default of
#: ``serving.expert_overlap``.
STEP_EXPERT_OVERLAP = 0.38
#: Its plausible range (docs/studies/moe-routing-ranges.md), drawn where a scenario states
#: ``serving.expert_overlap`` with it as an ``[uncertainty]`` range; not drawn by default
#: (drawn, it widened the scored gain intervals past its pre-registered rule). High end
#: 0.5: the same post's 2.5x for a 4-token verify read through ``sequence_union_tokens``
#: (1 + 3 (1 - o) = 2.5). Low end 0: no locality beyond chance, the union of independent
#: tokens; how consistently consecutive tokens route varies widely between models, least
#: with shared experts (Liang et al., arXiv 2505.16056, 20 MoE LLMs). One direct
#: measurement: a wide range on purpose.
STEP_EXPERT_OVERLAP_RANGE: tuple[float, float] = (0.0, 0.5)


def sequence_union_tokens(
    sequences: ArrayLike, tokens_per_sequence: ArrayLike, overlap: float = STEP_EXPERT_OVERLAP
) -> np.ndarray:
    """Independent tokens equivalent, for the expert union, to ``sequences`` sequences of
    ``tokens_per_sequence`` m consecutive tokens each (broadcast shapes):
    sequences x (1 + (m - 1)(1 - overlap)).

    Each token after a sequence's first brings the (1 - overlap) share of its experts its
    predecessor did not choose; sequences route independently. At overlap 0 it is the
    plain token count; at m = 1 the sequence count. With ``STEP_EXPERT_OVERLAP`` a 4-token
    verify counts as 2.86 tokens (Cohere measured ~2.5x the unique weights of one token).
    """
    if not 0.0 <= overlap < 1.0:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    b = np.asarray(sequences, dtype=float)
    m = np.asarray(tokens_per_sequence, dtype=float)
    if np.any(b < 0) or np.any(m < 1):
        raise ValueError("need sequences >= 0 and tokens_per_sequence >= 1")
    return b * (1.0 + (m - 1.0) * (1.0 - overlap))


#: The fraction of the GPU's dense BF16 peak at which a fused-MoE kernel multiplies its
#: token-expert pairs once every expert is read: 1 / the slope of kernel time against the
#: pairs' FLOPs at peak beyond 256 tokens (sim/validation/moe_kernel_cases.py
#: ``pair_flop_efficiency``) on the two public H100 curves ``H100_FUSED_MOE`` is fitted on
#: (vllm-project/vllm PR #24700): 0.80 for Mixtral-8x7B BF16 TP2 (8 large experts, 88M
#: parameters each a rank, its tuned config) and 0.22 for Qwen3-30B-A3B FP8 TP1 (128 small
#: experts, 4.7M, main's default config). Dense GEMMs of a few thousand rows reach 0.75
#: (``sim/hardware/batched.py`` SLOPE_RANGE); many small per-expert GEMMs reach less. The
#: range is that evidence; the default its geometric middle, as ``DEFAULT_SLOPE`` is the
#: middle of its own (the shape and the kernel's config move it across the range). The
#: default of ``serving.pair_flop_efficiency``; the range is drawn where a scenario states
#: it as an ``[uncertainty]`` range, not by default (docs/studies/moe-routing-ranges.md).
PAIR_FLOP_EFFICIENCY_RANGE: tuple[float, float] = (0.22, 0.80)
PAIR_FLOP_EFFICIENCY = 0.42


@dataclass(frozen=True, slots=True)
class FusedMoeKernel:
    """Time of one MoE layer's fused kernel: ``layer_us`` + per distinct expert
    (``expert_us`` + its bytes per rank at ``hbm_efficiency`` x the GPU's bandwidth) + the
    FLOPs of its token-expert pairs at ``pair_flop_efficiency`` x the GPU's dense peak
    (priced by the pass, sim/hardware/batched.py; 1: at peak)."""

    layer_us: float
    expert_us: float
    hbm_efficiency: float
    pair_flop_efficiency: float = 1.0

    def __post_init__(self) -> None:
        if self.layer_us < 0 or self.expert_us < 0 or not 0 < self.hbm_efficiency <= 1:
            raise ValueError("need layer_us, expert_us >= 0 and 0 < hbm_efficiency <= 1")
        if not 0 < self.pair_flop_efficiency <= 1:
            raise ValueError(f"need 0 < pair_flop_efficiency <= 1, got {self.pair_flop_efficiency}")

    def per_expert_us(self, expert_bytes: float, bandwidth_gbps: float) -> float:
        """Microseconds one more distinct expert of ``expert_bytes`` (per rank) costs."""
        return self.expert_us + expert_bytes / (self.hbm_efficiency * bandwidth_gbps * 1e3)

    def layer_time_us(
        self, distinct: ArrayLike, expert_bytes: float, bandwidth_gbps: float
    ) -> np.ndarray:
        """Microseconds of one MoE layer that activates ``distinct`` experts (any shape)."""
        d = np.asarray(distinct, dtype=float)
        return self.layer_us + d * self.per_expert_us(expert_bytes, bandwidth_gbps)


#: Fitted by least squares (sim/validation/moe_kernel_cases.py ``fit_fused_moe``) on two
#: vLLM benchmarks/kernels/benchmark_moe.py curves on an H100 (vllm-project/vllm PR #24700):
#: Mixtral-8x7B BF16 TP2 with its tuned config (E=8, top-2, 176 MB per expert per rank) and
#: Qwen3-30B-A3B FP8 TP1 with main's default config (E=128, top-8, 4.7 MB per expert), 1 to
#: 128 tokens each (the memory-bound range). 32.4 us per layer, 0.345 us per distinct
#: expert, 93.4% of peak bandwidth; every fitted point within 6%. Beyond 128 tokens the
#: same curves give the pairs' FLOP efficiency (``PAIR_FLOP_EFFICIENCY``).
H100_FUSED_MOE = FusedMoeKernel(
    layer_us=32.38, expert_us=0.345, hbm_efficiency=0.934, pair_flop_efficiency=PAIR_FLOP_EFFICIENCY
)


#: The smallest block of rows a fused-MoE config picks (SGLang's default at M <= E, and the
#: 16-row granularity of the GPU's BF16 MMA): the rows the kernel model already prices.
TILE_FLOOR_ROWS = 16


def sglang_default_block_rows(tokens: int, experts: int) -> int:
    """``BLOCK_SIZE_M`` of SGLang's default fused-MoE config for unquantized (BF16/FP16),
    non-Marlin experts: 16 when the pass's ``tokens`` M <= ``experts`` E, else 64
    (python/sglang/srt/layers/moe/fused_moe_triton/fused_moe_triton_config.py
    ``get_default_config``, the stored version at commit 083d6013)."""
    if tokens < 0 or experts < 1:
        raise ValueError(f"need tokens >= 0 and experts >= 1, got {tokens}, {experts}")
    return TILE_FLOOR_ROWS if tokens <= experts else 64


def padded_expert_rows(
    experts: int, per_token: int, tokens: int, skew: float, block_rows: int
) -> float:
    """Expected rows the fused-MoE kernel computes over one MoE layer when ``tokens`` M
    tokens route ``per_token`` e of ``experts`` E each (Zipf popularity ``skew``,
    ``selection_probabilities``) and every expert's rows are padded to ``block_rows`` B:

        sum_i B E[ceil(r_i / B)],   r_i ~ Binomial(M, q_i),
        E[ceil(r / B)] = sum_{j >= 0} P(r > j B).

    Tokens route independently (a sequence's consecutive tokens share experts, which moves
    the union, not the expected rows). At B = 1 it is the pairs M e."""
    if block_rows < 1 or tokens < 0:
        raise ValueError(f"need block_rows >= 1 and tokens >= 0, got {block_rows}, {tokens}")
    if tokens == 0:
        return 0.0
    q = selection_probabilities(experts, per_token, skew)  # (E,)
    starts = np.arange(0, tokens, block_rows, dtype=float)  # j B for j B < M
    # bdtrc(k, n, p) = P(r > k): scipy.special, as serving avoids importing scipy.stats
    blocks = special.bdtrc(starts[:, None], tokens, q[None, :])  # (J, E)
    return float(block_rows * blocks.sum())


def tile_extra_rows(experts: int, per_token: int, tokens: int, skew: float) -> float:
    """Rows a MoE layer computes beyond the 16-row floor under SGLang's default config:
    ``padded_expert_rows`` at ``sglang_default_block_rows`` minus at ``TILE_FLOOR_ROWS``;
    0 whenever M <= E (the default block is the floor)."""
    block = sglang_default_block_rows(tokens, experts)
    if block == TILE_FLOOR_ROWS:
        return 0.0
    padded = padded_expert_rows(experts, per_token, tokens, skew, block)
    return padded - padded_expert_rows(experts, per_token, tokens, skew, TILE_FLOOR_ROWS)
