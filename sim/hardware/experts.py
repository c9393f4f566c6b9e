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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "H100_FUSED_MOE",
    "STEP_EXPERT_OVERLAP",
    "FusedMoeKernel",
    "expected_distinct_experts",
    "sequence_union_tokens",
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


#: Share of a token's routed experts that the previous token of the same sequence also
#: chose: 38% ("expert overlap (step 1)") in Cohere's measurement on its production MoE
#: models under vLLM (https://cohere.com/blog/mixture-of-experts-models-get-more-from-
#: speculative-decoding, Apr 2026; the stored copy of the post is cut before its figures,
#: the numbers were read from a summary of it, headsupai.io "Cohere proves mixture of
#: experts models amplify speculative decoding gains"). The same post reports that
#: verifying 4 tokens loads ~2.5x the unique expert weights of one, not 4x.
STEP_EXPERT_OVERLAP = 0.38


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


@dataclass(frozen=True, slots=True)
class FusedMoeKernel:
    """Time of one MoE layer's fused kernel: ``layer_us`` + per distinct expert
    (``expert_us`` + its bytes per rank at ``hbm_efficiency`` x the GPU's bandwidth)."""

    layer_us: float
    expert_us: float
    hbm_efficiency: float

    def __post_init__(self) -> None:
        if self.layer_us < 0 or self.expert_us < 0 or not 0 < self.hbm_efficiency <= 1:
            raise ValueError("need layer_us, expert_us >= 0 and 0 < hbm_efficiency <= 1")

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
#: expert, 93.4% of peak bandwidth; every fitted point within 6%.
H100_FUSED_MOE = FusedMoeKernel(layer_us=32.38, expert_us=0.345, hbm_efficiency=0.934)
