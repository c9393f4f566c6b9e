"""The bench's yardsticks simulate the engine's model: the 20-line NumPy alternative and the
stdlib loop give the exact finite-N law's per-request tok/s (a bench that timed a different
or wrong computation would flatter or wrong the engine)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from sim.model.rates import accept_length_pmf
from sim.model.renewal import request_tok_s_distribution

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "alternatives.py"
_SPEC = importlib.util.spec_from_file_location("bench_alternatives", _PATH)
alternatives = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(alternatives)
numpy_alternative, stdlib_loop = alternatives.numpy_alternative, alternatives.stdlib_loop

RATES = [0.9, 0.8, 0.6, 0.4]
TOKENS, CYCLE_MS = 100, 20.0


def exact_mean() -> float:
    values, probs = request_tok_s_distribution(accept_length_pmf(RATES), TOKENS, CYCLE_MS)
    return float(values @ probs)


@pytest.mark.parametrize("alternative", [numpy_alternative, stdlib_loop])
def test_the_alternatives_follow_the_exact_law(alternative):
    tok_s = np.asarray(alternative(RATES, TOKENS, 300, 4, CYCLE_MS, 7), dtype=float).ravel()
    se = tok_s.std(ddof=1) / math.sqrt(tok_s.size)
    assert abs(tok_s.mean() - exact_mean()) < 4 * se


def test_a_rate_of_zero_accepts_nothing():
    """Rates 1 then 0: every cycle emits exactly 2 tokens, so 9 tokens take 5 cycles (a
    threshold of ceil(0) - 1 wrapped to 2^32 - 1 would accept every draw)."""
    for alternative in (numpy_alternative, stdlib_loop):
        tok_s = np.asarray(alternative([1.0, 0.0], 9, 5, 2, 10.0, 1), dtype=float)
        assert np.allclose(tok_s, 1000 * 9 / (5 * 10.0))
