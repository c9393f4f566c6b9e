"""Tree validation cases: a chain predicts itself, calibration figures are never scored."""

from __future__ import annotations

import math

import pytest

from sim.validation import tree_data as pub
from sim.validation.tree_cases import PRIOR, _predict, tree_cases


def test_a_chain_calibrated_on_itself_predicts_itself():
    chain = pub.EAGLE_132_CHAIN
    assert _predict(chain, chain, PRIOR, chain.accept_length) == pytest.approx(3.0, abs=1e-9)


def test_tree_cases_score_only_trees_and_are_finite():
    cases = tree_cases()
    assert len(cases) == 3
    for case in cases:
        scored = {r.figure for r in case.rows}
        assert not scored & set(case.calibrated_on)
        assert all(math.isfinite(r.predicted) and r.predicted > 1.0 for r in case.rows)
        assert all("chain" not in r.figure for r in case.rows)
