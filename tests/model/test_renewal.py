"""The finite-N law of cycles per request against the step-by-step dynamic programme."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sim.model.rates import accept_length_pmf
from sim.model.renewal import (
    TAIL,
    RequestLaw,
    cycles_and_emitted_law,
    cycles_and_emitted_pmf,
    cycles_law,
    cycles_pmf,
    p_cycles_at_most,
    request_tok_s_distribution,
)


def step_by_step(length_pmf: np.ndarray, tokens: int) -> np.ndarray:
    """P(n = m), m = 0..N, one cycle at a time (the textbook recursion)."""
    kernel = np.concatenate([[0.0], length_pmf])
    out = np.zeros(tokens + 1)
    below = np.zeros(tokens)
    below[0] = 1.0
    for m in range(1, tokens + 1):
        nxt = np.convolve(below, kernel)
        out[m] = nxt[tokens:].sum()
        below = nxt[:tokens]
    return out


@pytest.mark.parametrize(
    ("k", "alpha", "tokens"),
    [(2, 0.618, 512), (6, 0.9, 512), (16, 0.91, 512), (16, 0.99, 300), (3, 0.5, 7), (1, 0.3, 64)],
)
def test_law_matches_the_step_by_step_recursion(k, alpha, tokens):
    pmf = accept_length_pmf(np.full(k, alpha))
    ref = step_by_step(pmf, tokens)
    law = cycles_law(pmf, tokens)
    assert np.abs(cycles_pmf(pmf, tokens) - ref).max() < 1e-12
    m = np.arange(1, tokens + 1)
    assert law.mean_inverse() == pytest.approx(float(ref[1:] @ (1.0 / m)), rel=1e-11)
    assert law.mean() == pytest.approx(float(ref[1:] @ m), rel=1e-11)
    assert law.error_bound <= 2 * TAIL + 1e-14
    for cycles in (law.first - 1, law.first + law.pmf.size // 2, law.first + law.pmf.size):
        assert p_cycles_at_most(pmf, tokens, cycles) == pytest.approx(
            float(ref[: cycles + 1].sum()), abs=1e-12
        )


@given(
    rates=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
    tokens=st.integers(1, 400),
)
@example(rates=[0.5], tokens=1)  # a window from 0 cycles: S_0 = 0 needs every frequency
@settings(max_examples=40, deadline=None)
def test_law_is_a_distribution_on_the_right_support(rates, tokens):
    pmf = accept_length_pmf(rates)
    law = cycles_law(pmf, tokens)
    k1 = len(rates) + 1
    assert law.pmf.sum() == pytest.approx(1.0, abs=1e-9)
    assert (law.pmf >= 0).all()
    assert law.first >= -(-tokens // k1)  # at least ceil(N / (k + 1)) cycles
    assert law.first + law.pmf.size - 1 <= tokens  # at most N cycles (L >= 1)


def test_deterministic_lengths_need_ceil_n_over_l_cycles():
    assert cycles_law(accept_length_pmf([1.0, 1.0]), 512).cycles.tolist() == [171]
    assert cycles_law(accept_length_pmf([0.0, 0.7]), 512).cycles.tolist() == [512]
    assert p_cycles_at_most(accept_length_pmf([1.0, 1.0]), 512, 170) == 0.0
    assert p_cycles_at_most(accept_length_pmf([1.0, 1.0]), 512, 171) == 1.0


def test_long_requests_stay_exact_and_cheap():
    """N = 20000: the window carries the law; the mean tends to the renewal-reward value."""
    pmf = accept_length_pmf(np.full(6, 0.9))
    law = cycles_law(pmf, 20_000)
    assert law.pmf.sum() == pytest.approx(1.0, abs=1e-9)
    mu = float(pmf @ np.arange(1, 8))
    # E[n] = N / mu + O(1) (renewal): the overshoot adds less than one cycle
    assert 0.0 <= law.mean() - 20_000 / mu < 1.0


def test_request_law_statistics():
    pmf = accept_length_pmf([0.618, 0.618])
    cycles = cycles_law(pmf, 512)
    law = RequestLaw.fixed(cycles, 33.3)
    values, probs = law.tok_s_values(), law.probs
    assert law.mean_tok_s() == pytest.approx(1000 * 512 * cycles.mean_inverse() / 33.3, rel=1e-12)
    assert law.p_at_least(0.0) == pytest.approx(1.0)
    assert law.p_at_least(values.max() + 1.0) == 0.0
    med = law.quantile(0.5)
    below = float(probs[values <= med].sum())
    assert below >= 0.5 and below - float(probs[values == med].sum()) < 0.5


@pytest.mark.parametrize(("k", "alpha", "tokens"), [(2, 0.618, 512), (6, 0.9, 300), (3, 0.5, 7)])
def test_joint_law_of_cycles_and_emitted_tokens(k, alpha, tokens):
    """Against the step-by-step joint programme; a growing extend's tok/s law matches
    request_tok_s_distribution's."""
    pmf = accept_length_pmf(np.full(k, alpha))
    joint = cycles_and_emitted_law(pmf, tokens)
    ref = cycles_and_emitted_pmf(pmf, tokens)[joint.first : joint.first + joint.probs.shape[0]]
    assert np.abs(joint.probs - ref).max() < 1e-12
    law = RequestLaw.with_extend(joint, 33.3, 0.4, k + 1.0)
    values, probs = request_tok_s_distribution(pmf, tokens, 33.3, 0.4, k + 1.0)
    assert law.mean_tok_s() == pytest.approx(float(values @ probs), rel=1e-10)
    for target in np.quantile(values, [0.1, 0.5, 0.9]):
        assert law.p_at_least(target) == pytest.approx(
            float(probs[values >= target].sum()), abs=1e-10
        )
