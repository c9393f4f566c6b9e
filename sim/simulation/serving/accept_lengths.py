"""Accept lengths of a batch's cycles from its rows' draws, and the draft extend's width.

Accept length of request b in its c-th cycle at draft length k: with the request's
integer thresholds T_1..T_kmax (``workload.acceptance_thresholds``) and its 32-bit draw U,
L = 1 + #{j <= k : U < T_j}: the inverse cdf of the chain (P(L >= j + 1) = c_j), monotone
in k and in the rates for a fixed draw. A tree's cycle has the law of a chain whose
cumulative rates are the tree's depth survival S_d = P(L >= d + 1) (sim/model/tree/theory.py),
so a tree is the same draw against the request's own S_1..S_D: its threshold columns
(``DecodeBatch.thresholds`` holds the chain's columns and then each tree's; ``columns``
selects a draft's). The same (key, cycle) draw serves every draft, so a chain and a tree
run on the same requests are paired draw by draw.

The draft extend's width (``IterationCost``): the batch's expected accepted path per
request, 1 + the mean of sum_j T_j / 2^32 over its rows (the request's E[L]), rounded;
fixed while the batch is, so a block's plan does not depend on where it is cut.
"""

from __future__ import annotations

import numpy as np

from sim.simulation.serving.counter_rng import weyl_bits_block

__all__ = [
    "STEP_COLUMNS",
    "STEP_ROWS",
    "accept_lengths",
    "expected_path",
    "step_lengths",
]


#: Threshold columns up to which, or rows from which, ``step_lengths`` compares column
#: by column (a row reduce over a few columns costs a call per row; a speed knob only).
#: ``accept_lengths`` compares column by column up to ``STEP_COLUMNS`` columns too.
STEP_COLUMNS, STEP_ROWS = 3, 256


def accept_lengths(weyl: np.ndarray, thresholds: np.ndarray, iterations: int) -> np.ndarray:
    """Tokens per cycle, int8 (B, iterations): request b's next cycles (``weyl`` (B,), the
    Weyl terms of their first: ``DecodeBatch.weyl``) against its thresholds
    ``thresholds`` (B, d): a chain's first k columns or a tree's columns (d < 127).
    Without columns (no drafts) every cycle emits one token and nothing is drawn."""
    b, d = thresholds.shape
    if d == 0:
        return np.ones((b, iterations), dtype=np.int8)
    bits = weyl_bits_block(weyl, iterations)
    if d > STEP_COLUMNS:  # one reduce over (B, iterations, d)
        passed = bits[:, :, None] < thresholds[:, None, :]
        return np.add.reduce(passed, axis=2, dtype=np.int8, initial=1)
    lengths = np.add(bits < thresholds[:, 0, None], 1, dtype=np.int8)
    for j in range(1, d):
        lengths += bits < thresholds[:, j, None]
    return lengths


def step_lengths(bits: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """1 + #{j : bits_b < T_bj}, int64 (B,): each row's accept length from its draw
    ``bits`` (B,) and ``thresholds`` (B, d)."""
    b, d = thresholds.shape
    if d == 0 or (d > STEP_COLUMNS and b < STEP_ROWS):
        return np.add.reduce(bits[:, None] < thresholds, axis=1, initial=1)
    lengths = np.add(bits < thresholds[:, 0], 1, dtype=np.int64)
    for j in range(1, d):
        lengths += bits < thresholds[:, j]
    return lengths


#: 2^32: the thresholds' scale (a draw is a 32-bit integer).
_BITS = float(2**32)


def expected_path(thresholds: np.ndarray) -> int:
    """The batch's expected tokens per cycle per request, rounded (>= 1): 1 + the mean
    over rows of sum_j T_j / 2^32 (``thresholds`` (B, d))."""
    total = np.add.reduce(thresholds, axis=None, dtype=np.float64)
    mean = 1.0 + float(total) / (_BITS * thresholds.shape[0])
    return max(1, int(np.floor(mean + 0.5)))
