"""Serving metrics at load points: the per-replication numbers the serving decisions pair.

A *load* is one point on the axis serving users sweep: a closed loop of C users
(``concurrency``) or Poisson arrivals at R requests per second (``rate``). At each load a
policy (fixed k, a k table, a controller) is simulated for R replications on common random
numbers (sim/simulation/serving/simulate.py: replication r of every policy sees the same
users, arrivals, lengths and acceptance draws), so any two policies at the same load and
seed are compared replication by replication.

``PolicyPoint`` keeps, per metric, the R replication values (``METRICS``: per-user and
aggregate tok/s, TPOT and TTFT quantiles, SLO attainment, goodput); ``gain`` is the paired
ratio of two policies oriented so that > 1 means the first is better (the definition of
sim/simulation/serving/metrics.py ``paired_speedup``: the mean of the per-replication
ratios with a Student-t 95% interval), ``difference`` the paired difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.scenario.sections.bounds import MAX_RATE_PER_S, MAX_REQUESTS, MIN_RATE_PER_S
from sim.simulation.serving.metrics import (
    IntervalOf,
    Ratio,
    SloSpec,
    backlog,
    mean_interval,
    positive_interval,
    request_metrics,
    share_interval,
)
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.workload import ClosedLoop, Poisson

__all__ = [
    "LOAD_KINDS",
    "METRICS",
    "Load",
    "MetricSpec",
    "PolicyPoint",
    "difference",
    "gain",
    "level",
    "paired_difference",
    "paired_gains",
    "paired_values",
    "policy_point",
    "ratio_doc",
    "replication_metrics",
    "replication_values",
]

#: The load axes: a closed loop of users, or Poisson arrivals.
LOAD_KINDS: tuple[str, ...] = ("concurrency", "rate")


@dataclass(frozen=True, order=True)
class Load:
    """One load: ``kind`` ``concurrency`` (``value`` users, an integer >= 1) or ``rate``
    (``value`` requests per second, > 0)."""

    kind: str
    value: float

    def __post_init__(self) -> None:
        if self.kind not in LOAD_KINDS:
            raise ValueError(f"unknown load kind {self.kind!r} ({', '.join(LOAD_KINDS)})")
        if self.kind == "concurrency":
            if not math.isfinite(self.value) or self.value < 1 or self.value != int(self.value):
                raise ValueError(f"concurrency must be an integer >= 1, got {self.value}")
            if self.value > MAX_REQUESTS:
                raise ValueError(
                    f"concurrency must be at most {MAX_REQUESTS:,}, got {self.value:g}"
                )
            object.__setattr__(self, "value", int(self.value))
        elif not (MIN_RATE_PER_S <= self.value <= MAX_RATE_PER_S):
            raise ValueError(
                f"rate must be in [{MIN_RATE_PER_S:g}, {MAX_RATE_PER_S:g}] requests/s, "
                f"got {self.value:g}"
            )
        else:
            object.__setattr__(self, "value", float(self.value))

    @property
    def integer(self) -> bool:
        return self.kind == "concurrency"

    @property
    def field(self) -> str:
        """The scenario field that sets this load."""
        return "serving.concurrency" if self.integer else "serving.rate_per_s"

    def overrides(self) -> dict[str, Any]:
        return {self.field: self.value}

    def arrivals(self, think_ms: float = 0.0) -> ClosedLoop | Poisson:
        if self.integer:
            return ClosedLoop(int(self.value), think_ms)
        return Poisson(float(self.value))

    def at(self, value: float) -> Load:
        """The same kind of load at another value."""
        return Load(self.kind, value)

    def label(self) -> str:
        if self.integer:
            return f"{self.value} user{'s' if self.value != 1 else ''}"
        return f"{self.value:g} requests/s"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A serving metric: ``label`` in words, ``unit``, whether more is better, whether it
    needs SLO limits, and whether it is a share (a value in [0, 1]; its interval is clipped
    to [0, 1])."""

    name: str
    label: str
    unit: str
    higher_is_better: bool
    needs_slo: bool = False
    share: bool = False


#: Metrics of a policy at a load, each one number per replication.
METRICS: dict[str, MetricSpec] = {
    m.name: m
    for m in (
        MetricSpec("per_user_tok_s", "per-user decode speed", "tok/s", True),
        MetricSpec("aggregate_tok_s", "server output throughput", "tok/s", True),
        MetricSpec("tpot_p50_ms", "median time per output token", "ms", False),
        MetricSpec("tpot_p99_ms", "99th-percentile time per output token", "ms", False),
        MetricSpec("ttft_p50_ms", "median time to first token", "ms", False),
        MetricSpec("ttft_p99_ms", "99th-percentile time to first token", "ms", False),
        MetricSpec(
            "slo_attainment", "share of requests meeting the SLOs", "", True, True, share=True
        ),
        MetricSpec("goodput_req_s", "requests per second meeting the SLOs", "req/s", True, True),
    )
}


def _good(m: dict[str, np.ndarray], slo: SloSpec) -> np.ndarray:
    """Requests meeting the TTFT and TPOT limits (one-token requests have no TPOT)."""
    good = np.ones(m["ttft_ms"].shape, dtype=bool)
    if slo.ttft_ms is not None:
        good &= m["ttft_ms"] <= slo.ttft_ms
    if slo.tpot_ms is not None:
        good &= ~(m["tpot_ms"] > slo.tpot_ms)
    return good


def _quantile(values: np.ndarray, q: float) -> float:
    v = values[~np.isnan(values)]
    return float(np.quantile(v, q)) if v.size else float("nan")


def _mean(values: np.ndarray) -> float:
    """The mean of the finite values; NaN when none is (one-token outputs have no decode
    speed), without numpy's empty-slice warning on stderr."""
    v = values[~np.isnan(values)]
    return float(v.mean()) if v.size else float("nan")


def replication_metrics(
    rec: ServingRecord, slo: SloSpec
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Every metric of ``METRICS`` for one replication (SLO metrics only with limits), and
    the per-request values they are taken over (sim/simulation/serving/metrics.py
    ``request_metrics``: (Q,) each), which a point keeping samples pools.

    ``per_user_tok_s`` and ``aggregate_tok_s`` are what sim/simulation/serving/metrics.py
    averages across replications (the mean per-request decode speed; output tokens
    delivered over the window); quantiles are of the replication's measured requests;
    goodput counts measured requests meeting the SLOs per second of the window.
    """
    m = request_metrics(rec)
    out = {
        "per_user_tok_s": _mean(m["per_user_tok_s"]),
        "aggregate_tok_s": 1000.0 * rec.tokens_delivered / rec.window_ms,
        "tpot_p50_ms": _quantile(m["tpot_ms"], 0.5),
        "tpot_p99_ms": _quantile(m["tpot_ms"], 0.99),
        "ttft_p50_ms": _quantile(m["ttft_ms"], 0.5),
        "ttft_p99_ms": _quantile(m["ttft_ms"], 0.99),
    }
    if slo.ttft_ms is not None or slo.tpot_ms is not None:
        good = _good(m, slo)
        out["slo_attainment"] = float(good.mean())
        out["goodput_req_s"] = 1000.0 * float(good.sum()) / rec.window_ms
    return out, m


@dataclass(frozen=True, slots=True)
class PolicyPoint:
    """One policy at one load: ``values[metric]`` has shape (R,), replication r's value.

    ``samples`` (only when asked for): pooled per-request TTFT and TPOT (ms) of every
    replication, for latency CDFs. ``mean_batch``: time-weighted mean decode batch per
    replication (R,). ``not_steady``: replications whose requests in the system grew
    through the measurement window (sim/simulation/serving/metrics.py ``Backlog``, serve's
    NOT STEADY; never in a closed loop).
    """

    values: dict[str, np.ndarray]
    mean_batch: np.ndarray
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    not_steady: int = 0

    @property
    def replications(self) -> int:
        return int(self.mean_batch.shape[0])


def replication_values(records: list[ServingRecord], slo: SloSpec) -> dict[str, np.ndarray]:
    """Every metric of ``METRICS`` (SLO metrics only with limits) per replication of
    ``records``, shape (R,) each: a ``PolicyPoint``'s ``values`` without its batch and
    backlog (what a draw of a 90% interval reads)."""
    rows = [replication_metrics(r, slo)[0] for r in records]
    return {name: np.array([row[name] for row in rows]) for name in rows[0]}


def policy_point(
    records: list[ServingRecord], slo: SloSpec, keep_samples: bool = False
) -> PolicyPoint:
    """The ``PolicyPoint`` of R replications of one policy."""
    rows, per_request = zip(*(replication_metrics(r, slo) for r in records), strict=True)
    values = {name: np.array([row[name] for row in rows]) for name in rows[0]}
    batch = []
    for r in records:
        sizes = np.arange(r.batch_time_ms.shape[0])
        total = r.batch_time_ms.sum()
        batch.append(float(r.batch_time_ms @ sizes / total) if total > 0 else 0.0)
    samples: dict[str, np.ndarray] = {}
    if keep_samples:  # the per-request values the replications' metrics were taken over
        for name in ("ttft_ms", "tpot_ms"):
            pooled = np.concatenate([m[name] for m in per_request])
            samples[name] = pooled[~np.isnan(pooled)]
    not_steady = sum(backlog(r).overloaded for r in records)
    return PolicyPoint(values, np.array(batch), samples, not_steady)


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def ratio_doc(r: Ratio) -> dict[str, Any]:
    """A ``Ratio`` as JSON (NaN and infinities become null)."""
    ci = None if r.ci95 is None else [_finite(r.ci95[0]), _finite(r.ci95[1])]
    return {"mean": _finite(r.mean), "ci95": ci}


def _ratio(values: np.ndarray, interval: IntervalOf = positive_interval) -> Ratio:
    """``Ratio.across`` the replications, NaN without an interval when a value is not
    finite."""
    if not np.all(np.isfinite(values)):
        return Ratio(float("nan"), None)
    return Ratio.across(values, interval)


def level(point: PolicyPoint, metric: str) -> Ratio:
    """Mean of the replication values of ``metric`` with its 95% interval (clipped to
    [0, 1] for a share, such as SLO attainment, and at 0 for the rest)."""
    return _ratio(
        point.values[metric], share_interval if METRICS[metric].share else positive_interval
    )


def paired_values(a: PolicyPoint, b: PolicyPoint, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The two points' values of ``metric`` on the replications both ran: their first n
    (replication i is the same seed in both; a point stopped early by sequential
    replications, sim/studies/serving/sequential.py, has fewer)."""
    x, y = a.values[metric], b.values[metric]
    n = min(x.size, y.size)
    return x[:n], y[:n]


def paired_gains(a: PolicyPoint, b: PolicyPoint, metric: str) -> np.ndarray | None:
    """Gain of ``a`` over ``b`` per replication both ran (n,): a / b for metrics where more
    is better, b / a for latencies (> 1: ``a`` is better); None when a denominator is not
    positive."""
    x, y = paired_values(a, b, metric)
    num, den = (x, y) if METRICS[metric].higher_is_better else (y, x)
    if not np.all(den > 0):
        return None
    return num / den


def gain(a: PolicyPoint, b: PolicyPoint, metric: str) -> Ratio:
    """Paired gain of ``a`` over ``b`` (``paired_gains``) averaged with its 95% interval."""
    gains = paired_gains(a, b, metric)
    return Ratio(float("nan"), None) if gains is None else _ratio(gains)


#: A paired difference within this share of the values compared is rounding noise: the
#: same simulation reached by two routes (a best-k table choosing plain decoding against
#: plain decoding itself) differs by ~1e-15 relative from the order of its sums.
NOISE_RELATIVE = 1e-9


def paired_difference(a: np.ndarray, b: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Advantage of ``a`` over ``b`` per replication (same shape as ``a`` and ``b``, e.g.
    (R,) or (R, phases)): ``a - b`` where more is better, ``b - a`` for latencies; a
    difference within ``NOISE_RELATIVE`` of max(|a|, |b|) is exact 0 (rounding noise would
    otherwise print as ``-7.11e-15 [-2.78e-13, 2.64e-13]``, or be called significant)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = x - y if higher_is_better else y - x
    noise = np.abs(d) <= NOISE_RELATIVE * np.maximum(np.abs(x), np.abs(y))
    return np.where(noise, 0.0, d)


def difference(a: PolicyPoint, b: PolicyPoint, metric: str) -> Ratio:
    """Paired advantage of ``a`` over ``b`` in the metric's unit (> 0: ``a`` is better),
    over the replications both ran (``paired_values``)."""
    d = paired_difference(*paired_values(a, b, metric), METRICS[metric].higher_is_better)
    return _ratio(d, mean_interval)  # signed
