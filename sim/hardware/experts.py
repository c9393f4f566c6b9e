"""Distinct routed experts a pass over m tokens reads (MoE verify growth).

With E routed experts, e chosen per token and independent uniform routing, one expert is
missed by all m tokens with probability (1 - e/E)^m, so the expected number of distinct
experts per MoE layer is E (1 - (1 - e/E)^m) (docs/reference.md §Seed). It is e at m = 1, grows
concavely, and tends to E. Real routing is correlated across neighbouring tokens, so this
is an upper estimate of the growth.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def expected_distinct_experts(experts: int, per_token: int, tokens: ArrayLike) -> np.ndarray:
    """E (1 - (1 - e/E)^m); same shape as ``tokens``."""
    if experts <= 0 or not 0 < per_token <= experts:
        raise ValueError(f"need 0 < per_token <= experts, got {per_token}, {experts}")
    m = np.asarray(tokens, dtype=float)
    if np.any(m < 0):
        raise ValueError("tokens must be >= 0")
    return experts * (1.0 - (1.0 - per_token / experts) ** m)
