"""Rank-profile presets: valid profiles, derived shares, the published figures kept."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.tree.presets import RANK_PROFILES, rank_profile


@pytest.mark.parametrize("name", sorted(RANK_PROFILES))
def test_presets_are_valid_profiles(name):
    p = rank_profile(name)
    rates = np.asarray(p.rates)
    assert np.all(rates >= 0.0) and rates.sum() <= 1.0
    assert p.source and p.note
    h = p.shares()
    assert h.shape == (p.width - 1,) and h.sum() <= 1.0 + 1e-12
    np.testing.assert_allclose(rates[1:], (1.0 - rates[0]) * h)


def test_published_figures():
    seq = rank_profile("sequoia-jf68m-llama2-7b")
    assert seq.width == 32 and sum(seq.rates) == pytest.approx(0.9265, abs=2e-4)
    medusa = rank_profile("medusa-vicuna-7b-head0")
    np.testing.assert_allclose(medusa.rates, [0.5604, 0.1113, 0.0554, 0.0328, 0.0200], atol=1e-4)


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(KeyError, match="known: medusa-vicuna-13b-head0"):
        rank_profile("eagle-9")
