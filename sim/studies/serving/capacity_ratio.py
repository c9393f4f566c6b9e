"""The 95% interval of one policy's capacity over another's (``capacity``'s "vs plain
decoding"), paired over replications.

A capacity is where the mean SLO attainment of R replications crosses the required share
as the rate rises (sim/studies/serving/capacity_search.py); its 95% interval inverts that
mean's Student-t band, so it reflects Monte Carlo noise across replications only. The
ratio's interval comes from the same noise, and paired: replication r of every policy runs
on the same seed (the same unit arrival gaps, lengths and acceptance draws), so a
replication whose arrivals bunch lowers both capacities and moves their ratio less than
either. Dividing one interval's ends by the other's would ignore that pairing (and is not
an interval of the ratio at any level).

The jackknife over replications keeps the pairing. Leaving replication r out of both
policies, each capacity is found again on the rates its search simulated (the mean
attainment of the other R - 1 replications, linear between the two rates around its first
fall below the share, on log rate; a rate above the service bound, not simulated, counts
as attainment 0, as in the search). The log ratio's jackknife standard error, with
Student's t on R - 1 degrees of freedom, gives the interval around the ratio reported.
For one capacity alone, on attainment curves linear in log rate, that is exactly the band
inversion's interval (a jackknife of a mean is its t standard error; tested), without its
clipping of the band to [0, 1]; its ends are as fine as the simulated rates near each
crossing (the search's ``rtol`` apart there).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import stdtrit

__all__ = ["crossing_log_rate", "paired_ratio_ci95"]


def crossing_log_rate(log_rates: np.ndarray, attainment: np.ndarray, share: float) -> float | None:
    """Log rate where ``attainment`` (P,), at increasing ``log_rates`` (P,), first falls
    below ``share``: linear between that rate and the one before it. None when the first
    rate already fails or none does (no crossing among the rates)."""
    below = np.flatnonzero(attainment < share)
    if below.size == 0 or below[0] == 0:
        return None
    j = int(below[0])
    a0, a1 = float(attainment[j - 1]), float(attainment[j])
    x0, x1 = float(log_rates[j - 1]), float(log_rates[j])
    return x0 + (a0 - share) / (a0 - a1) * (x1 - x0)


def _jackknife_crossings(
    log_rates: np.ndarray, attainment: np.ndarray, share: float
) -> np.ndarray | None:
    """Crossing log rate with each replication left out, shape (R,); ``attainment`` has
    shape (P, R), NaN for a replication a rate did not run (sequential replications,
    sim/studies/serving/sequential.py: a rate whose attainment was settled against the
    share; leaving that replication out leaves the mean of those it ran). None if some
    leave-one-out curve does not cross."""
    r = attainment.shape[1]
    ran = np.isfinite(attainment)  # a rate settled early (NaN) keeps the mean of its own
    n = ran.sum(axis=1, keepdims=True)
    total = np.where(ran, attainment, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        others = np.where(ran, (total - np.where(ran, attainment, 0.0)) / (n - 1), total / n)
    out = [crossing_log_rate(log_rates, others[:, i], share) for i in range(r)]
    if any(x is None for x in out):
        return None
    return np.array(out, dtype=float)


def paired_ratio_ci95(
    ratio: float,
    top: tuple[np.ndarray, np.ndarray],
    bottom: tuple[np.ndarray, np.ndarray],
    share: float,
) -> tuple[float, float] | None:
    """95% interval of ``ratio`` (the capacity of ``top`` over that of ``bottom``), each a
    policy's (log rates simulated (P,), increasing; attainment per rate and replication
    (P, R)), the same R replications (seeds) in both. None with one replication, or when
    a capacity left without some replication has no crossing among its rates."""
    r = top[1].shape[1]
    if r < 2 or bottom[1].shape[1] != r or not ratio > 0:
        return None
    a = _jackknife_crossings(*top, share)
    b = _jackknife_crossings(*bottom, share)
    if a is None or b is None:
        return None
    d = a - b  # log ratio without replication i, (R,)
    se = math.sqrt((r - 1) / r * float(np.sum((d - d.mean()) ** 2)))
    half = float(stdtrit(r - 1, 0.975)) * se
    return ratio * math.exp(-half), ratio * math.exp(half)
