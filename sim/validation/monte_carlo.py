"""The Monte Carlo standard error of a simulated figure, read from its 95% interval.

A serving run's 95% interval of a mean over R replications is the Student-t interval
(sim/simulation/serving/metrics.py ``mean_interval``)::

    mean +- t(0.975, R - 1) s / sqrt(R)

so its standard error s / sqrt(R) is the interval's width over 2 t(0.975, R - 1), not over
2 x 1.96 (the normal quantile: 2.2 times too large at R = 3, t(0.975, 2) = 4.30). Exact
for an unclipped interval; ``mean_interval`` clips at the quantity's domain, which a mean
whose standard error is below mean / t(0.975, R - 1) never reaches. A crossover's load
interval (sim/studies/serving/break_even.py: the gain's t band inverted) gives the
delta-method standard error on the same scale.
"""

from __future__ import annotations

from scipy.special import stdtrit

__all__ = ["sd_from_ci95"]


def sd_from_ci95(ci95: tuple[float | None, float | None] | None, replications: int) -> float:
    """(hi - lo) / (2 t(0.975, ``replications`` - 1)) of ``ci95`` = (lo, hi), a 95%
    Student-t interval over ``replications`` replication means; 0.0 where there is no
    interval (None, or an end None: a band that never crosses), as ``Row.sd``'s "none"."""
    lo, hi = (None, None) if ci95 is None else ci95
    if lo is None or hi is None:
        return 0.0
    if replications < 2:
        raise ValueError(f"a 95% interval needs at least 2 replications, got {replications}")
    return (hi - lo) / (2.0 * float(stdtrit(replications - 1, 0.975)))
