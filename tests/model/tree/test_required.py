"""Required top-1 rates: the chain answer at topk = 1, the table against exact bisection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.closed_forms import alpha_for_accept_length
from sim.model.tree.build import candidate_count
from sim.model.tree.required import (
    RankShape,
    accept_length,
    lowest_crossing,
    required_top1,
    required_top1_table,
)

SHAPE = RankShape(shares=(0.3, 0.15, 0.06))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.floats(1.01, 12.9))
def test_topk_one_is_the_chain_alpha(k, need):
    expected = alpha_for_accept_length(need, k)
    got = required_top1(need, SHAPE, (k, 1, k + 1))
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-8)


def test_exact_root_reaches_the_need():
    cfg = (6, 3, 16)
    x = required_top1(4.0, SHAPE, cfg)
    assert x is not None
    assert accept_length(SHAPE, x, cfg) >= 4.0 > accept_length(SHAPE, x - 1e-6, cfg)


@settings(max_examples=10, deadline=None)
@given(st.floats(1.5, 5.0))
def test_best_tree_needs_no_more_than_sglangs(need):
    cfg = (4, 3, 12)
    best = required_top1(need, SHAPE, cfg, kind="optimal")
    sglang = required_top1(need, SHAPE, cfg)
    assert best is not None and sglang is not None
    assert best <= sglang + 1e-9


def test_table_interpolation_matches_bisection():
    needs = {(s, k, n): 0.6 * (s + 1) for s in (2, 5, 8) for k in (1, 2, 4) for n in (s + 1, 12)}
    needs = {c: v for c, v in needs.items() if c[2] <= candidate_count(c[0], c[1]) + 1}
    needs = {c: v for c, v in needs.items() if not (c[1] == 1 and c[2] != c[0] + 1)}
    table = required_top1_table(needs, SHAPE)
    for cfg, need in needs.items():
        exact = required_top1(need, SHAPE, cfg)
        if exact is None:
            assert table[cfg] is None
        else:
            assert table[cfg] == pytest.approx(exact, abs=2e-4)


def test_depth_scale_repeats_its_last_entry():
    shape = RankShape(shares=(0.3,), depth_scale=(1.0, 0.9))
    np.testing.assert_allclose(shape.top1(0.8, 4), [0.8, 0.72, 0.72, 0.72])
    np.testing.assert_allclose(shape.rates(0.8, 1, 2), [[0.8, 0.06]])
    with pytest.raises(ValueError, match="2 ranks"):
        shape.rates(0.8, 2, 3)


def test_table_refuses_trees_sglang_cannot_build():
    with pytest.raises(ValueError, match="not a tree SGLang builds"):
        required_top1_table({(2, 2, 12): 3.0}, SHAPE)


@pytest.mark.parametrize("root", [0.0, 1e-7, 0.3, 0.731, 0.999])
def test_the_crossing_visits_each_x_once(root):
    """The scan down the grid and the bisection never ask twice (no memo is needed), and
    the answer is the crossing to ``xtol``."""
    seen: list[float] = []

    def f(x: float) -> float:
        seen.append(x)
        return x - root

    found = lowest_crossing(f, 1.0, 1e-9)
    assert len(seen) == len(set(seen))
    assert found is not None and root <= found <= root + 1e-9
