"""The paired interval of capacity's "vs plain decoding" ratio: the jackknife over
replications, checked against the band inversion it must reproduce and against a pairing
that leaves the ratio no noise at all."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sim.studies.serving.capacity_ratio import crossing_log_rate, paired_ratio_ci95

SHARE = 0.9
SLOPE = 0.5  # attainment lost per unit of log rate
LOG_RATES = np.linspace(-1.0, 3.0, 41)  # (P,)


def curves(offsets: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """Attainment (P, R) linear in log rate, replication r raised by ``offsets[r]`` and
    the whole curve moved right by ``shift`` in log rate."""
    return 1.0 + offsets[None, :] - SLOPE * (LOG_RATES[:, None] - shift)


def test_the_crossing_is_linear_between_the_rates_around_the_first_failure():
    att = np.array([1.0, 0.95, 0.85, 0.95, 0.5])
    x = crossing_log_rate(np.array([0.0, 1.0, 2.0, 3.0, 4.0]), att, 0.9)
    assert x == pytest.approx(1.5)
    assert crossing_log_rate(LOG_RATES, np.full(41, 0.95), 0.9) is None  # never fails
    assert crossing_log_rate(LOG_RATES, np.full(41, 0.5), 0.9) is None  # fails at once


def test_one_capacity_alone_matches_the_band_inversion_exactly():
    """Capacity over a policy that never moves (a flat bottom curve): the jackknife's
    interval is where the mean's t band crosses the share, for linear curves."""
    rng = np.random.default_rng(3)
    offsets = rng.normal(0.0, 0.02, size=8)
    top = curves(offsets)
    mean = top.mean(axis=1)
    x_hat = crossing_log_rate(LOG_RATES, mean, SHARE)
    assert x_hat is not None
    half_att = stats.t.ppf(0.975, 7) * offsets.std(ddof=1) / math.sqrt(8)
    band = (
        crossing_log_rate(LOG_RATES, mean - half_att, SHARE),
        crossing_log_rate(LOG_RATES, mean + half_att, SHARE),
    )
    flat = np.tile((1.0 - SLOPE * LOG_RATES)[:, None], (1, 8))  # no noise: a fixed capacity
    x_flat = crossing_log_rate(LOG_RATES, flat.mean(axis=1), SHARE)
    ratio = math.exp(x_hat - x_flat)
    lo, hi = paired_ratio_ci95(ratio, (LOG_RATES, top), (LOG_RATES, flat), SHARE)
    assert math.log(lo) + x_flat == pytest.approx(band[0], abs=1e-12)
    assert math.log(hi) + x_flat == pytest.approx(band[1], abs=1e-12)


def test_noise_shared_by_both_policies_leaves_the_ratio_none():
    """The same replication offsets in both policies (common random numbers at their
    extreme): each capacity has a wide interval, their ratio none, where dividing the
    intervals' ends would give a wide one."""
    offsets = np.random.default_rng(4).normal(0.0, 0.03, size=10)
    top, bottom = curves(offsets, shift=0.4), curves(offsets)
    x_top = crossing_log_rate(LOG_RATES, top.mean(axis=1), SHARE)
    x_bottom = crossing_log_rate(LOG_RATES, bottom.mean(axis=1), SHARE)
    ratio = math.exp(x_top - x_bottom)
    assert ratio == pytest.approx(math.exp(0.4))
    lo, hi = paired_ratio_ci95(ratio, (LOG_RATES, top), (LOG_RATES, bottom), SHARE)
    assert lo == pytest.approx(ratio, rel=1e-12) and hi == pytest.approx(ratio, rel=1e-12)


def test_the_half_width_is_the_t_error_of_the_paired_differences():
    """Different offsets per policy: the log ratio's half-width is Student's t times the
    standard error of the replications' paired offset differences over the slope."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(0.0, 0.02, size=12), rng.normal(0.0, 0.03, size=12)
    top, bottom = curves(a, shift=0.3), curves(b)
    ratio = 1.3
    lo, hi = paired_ratio_ci95(ratio, (LOG_RATES, top), (LOG_RATES, bottom), SHARE)
    t = stats.t.ppf(0.975, 11)
    se = np.std(a - b, ddof=1) / math.sqrt(12) / SLOPE
    assert math.log(hi / ratio) == pytest.approx(t * se, rel=1e-9)
    assert math.log(ratio / lo) == pytest.approx(t * se, rel=1e-9)


def test_one_replication_or_no_crossing_has_no_interval():
    one = curves(np.zeros(1))
    assert paired_ratio_ci95(1.0, (LOG_RATES, one), (LOG_RATES, one), SHARE) is None
    never = np.full((41, 3), 1.0)
    some = curves(np.array([0.0, 0.01, -0.01]))
    assert paired_ratio_ci95(1.0, (LOG_RATES, never), (LOG_RATES, some), SHARE) is None
