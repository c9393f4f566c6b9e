"""Serving metrics with the names serving users know, per replication and across them.

Per measured request (times from its arrival):

* TTFT: first token - arrival; queueing delay: first admission - arrival;
* E2E: finish - arrival;
* TPOT: (finish - first token) / (output tokens - 1), as ``vllm bench serve`` computes it
  (requests of one token have none);
* per-user tok/s: the request's decoding speed, 1000 x (tokens after decoding began) /
  (finish - decoding began). Decoding begins when the first prefill ends (the prefill
  emits the first token) or, without prefill, at admission; so at concurrency 1 without
  prefill this is exactly the batch-1 engines' per-request tok/s, and with prefill it is
  1000 / TPOT up to preemption stalls;
* ITL: the gaps between successive deliveries to a request, as a streaming client sees
  them: a speculative iteration delivers its L tokens at once, so ITL is the iteration
  time (plus stalls), not the time per token (that is TPOT). Pooled over all deliveries
  in the window.

Server-wide (over the measurement window): aggregate output tok/s, the time-weighted
decode batch-size distribution and mean, KV utilisation (time-weighted KV tokens held
over capacity), preemptions per request, pooled accept length (tokens per decode cycle),
and Little's law: time-average number in system L against arrival rate x mean time in
system (arrivals inside the window, the measured requests' mean E2E; edge effects vanish
as the window grows), and its finite-window form, which holds exactly on every run: L =
lambda W' + edge, W' the mean time the window's arrivals spend in the system inside it,
edge the time inside it of the requests already there when it opened, over its length.

Across replications: each metric's mean is the mean of replication means with a
Student-t 95% interval (R - 1 degrees of freedom; none with one replication, since
requests of one replication share the server and are not independent), and its p50, p90,
p99 pool the requests (or deliveries) of every replication. The interval of a share (SLO
attainment, the share of requests at or above a tok/s target, KV utilisation) is clipped
to [0, 1] (``share_interval``): a symmetric interval over few replications of a share near
0 or 1 would otherwise reach values no share can take.

Long runs (sim/simulation/serving/kept_rows.py): a replication keeps every measured
request's row up to 65,536 of them. Beyond, the means stay exact (streamed sums), the
p50/p90/p99 come from a quantile sketch within 0.1% relative of the exact pooled quantile
(``sketched_estimate``), and the shares (SLO attainment, tok/s targets) and studies'
per-request computations read a systematic sample of 32,768 to 65,536 of the requests
(every 2^j-th by arrival), with its sampling error. ITL likewise beyond 262,144 gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from sim.simulation.serving.serving_record import REQUEST_METRICS, ServingRecord, metric_values
from sim.simulation.serving.sketch import QuantileSketch

__all__ = [
    "LATENCY_METRICS",
    "Backlog",
    "Estimate",
    "IntervalOf",
    "PolicySummary",
    "Ratio",
    "ServingSummary",
    "SloSpec",
    "backlog",
    "estimate",
    "little_terms",
    "little_window_terms",
    "mean_interval",
    "positive_interval",
    "request_metrics",
    "share_interval",
    "sketched_estimate",
    "summarize_serving",
    "weighted_quantiles",
]

#: Metrics where smaller is better (their speedup is baseline / speculative).
LATENCY_METRICS: frozenset[str] = frozenset({"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms"})
QUANTILES = (0.5, 0.9, 0.99)


def request_metrics(rec: ServingRecord) -> dict[str, np.ndarray]:
    """Per measured request kept (Q,: every one, or the record's sample): per-user tok/s,
    TTFT, TPOT (NaN for one-token requests), E2E, queueing delay; ms unless named
    otherwise."""
    return metric_values(
        rec.arrival_ms,
        rec.admitted_ms,
        rec.first_token_ms,
        rec.decode_start_ms,
        rec.finish_ms,
        rec.output_tokens,
        rec.decode_tokens,
    )


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Quantiles of a weighted sample (the smallest value whose cumulative weight reaches
    q of the total); shape (len(qs),), NaN for an empty sample."""
    if values.size == 0:
        return np.full(len(qs), np.nan)
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    idx = np.searchsorted(cum, np.asarray(qs) * cum[-1], side="left")
    return values[order][np.minimum(idx, values.size - 1)]


def _mean_e2e(rec: ServingRecord) -> float:
    """The measured requests' mean E2E: from their rows, or streamed when sampled."""
    if rec.sampled:
        return rec.request_stats["e2e_ms"].mean
    return float(np.mean(rec.finish_ms - rec.arrival_ms))


def little_terms(rec: ServingRecord) -> tuple[float, float, float]:
    """(L, lambda, W) over the window: time-average number of requests in the system,
    arrivals per ms inside the window, mean time in system of the measured requests."""
    span = rec.window_end_ms - rec.window_start_ms
    w = rec.window
    return w.in_system_ms / span, w.arrivals_before(rec.window_end_ms) / span, _mean_e2e(rec)


def little_window_terms(rec: ServingRecord) -> tuple[float, float]:
    """(lambda W', edge) over the window [lo, hi], which add up to ``little_terms``'s L
    exactly (the area under the in-system count, split by arrival): lambda W', the time
    inside the window of the requests arriving in it, and edge, that of the requests
    already in the system when it opened, each over the window's length (a sample-path
    identity: no steady state needed, so it holds on short or busy runs, where lambda x the
    measured requests' mean E2E differs from L by the edges)."""
    span = rec.window_end_ms - rec.window_start_ms
    return rec.window.arrived_ms / span, rec.window.carried_ms / span


#: A replication is flagged when the requests in the system grew over its measurement
#: window by at least this share of the window's arrivals, and by at least
#: ``OVERLOAD_MIN_REQUESTS``: in a steady state the backlog at the end is the system's
#: usual occupancy give or take its fluctuation (of order the square root of the
#: arrivals), not a growing share of them.
OVERLOAD_SHARE = 0.2
OVERLOAD_MIN_REQUESTS = 10


@dataclass(frozen=True, slots=True)
class Backlog:
    """Requests in the system (arrived, not answered) when one replication's measurement
    window opens and when the run ends, and the arrivals inside the window."""

    start: int
    end: int
    arrivals: int

    @property
    def overloaded(self) -> bool:
        """Requests arrived faster than they were answered over the window (see
        ``OVERLOAD_SHARE``): a load above the server's capacity, which has no steady state,
        or a run that ended while the system was still filling towards a fuller one."""
        growth = self.end - self.start
        return growth >= max(OVERLOAD_MIN_REQUESTS, OVERLOAD_SHARE * self.arrivals)


def backlog(rec: ServingRecord) -> Backlog:
    """The replication's ``Backlog``: at the window's start, the requests that arrived
    before it and finished after it opened; at its end, those left unanswered."""
    return Backlog(rec.window.carried, rec.unfinished_at_end, rec.window.arrivals)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric across replications: mean of replication means with its 95% interval
    (None with one replication) and pooled quantiles."""

    mean: float
    ci95: tuple[float, float] | None
    p50: float
    p90: float
    p99: float

    def to_dict(self) -> dict[str, object]:
        return {
            "mean": self.mean,
            "ci95": None if self.ci95 is None else list(self.ci95),
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
        }


def mean_interval(
    per_replication: np.ndarray, *, lower: float | None = None, upper: float | None = None
) -> tuple[float, tuple[float, float] | None]:
    """Mean of replication values (R,) and its Student-t 95% interval (None if R < 2),
    clipped to [``lower``, ``upper``] where given: the quantity's own domain.

    The t interval is symmetric about the mean; over few replications of a skewed
    quantity it reaches past what the quantity can be (a queueing delay's interval
    [-37.6, 736.7] ms over two replications). Clipping keeps every value inside the
    interval a possible value; the mean is unchanged.
    """
    x = np.asarray(per_replication, dtype=float)
    mean = float(x.mean())
    if x.size < 2:
        return mean, None
    half = float(stdtrit(x.size - 1, 0.975) * x.std(ddof=1) / np.sqrt(x.size))
    lo, hi = mean - half, mean + half
    if lower is not None:
        lo, hi = max(lo, lower), max(hi, lower)
    if upper is not None:
        lo, hi = min(lo, upper), min(hi, upper)
    return mean, (lo, hi)


def positive_interval(per_replication: np.ndarray) -> tuple[float, tuple[float, float] | None]:
    """``mean_interval`` of a quantity that cannot be negative (a latency, a rate, a batch
    size, a paired ratio): the interval clipped at 0."""
    return mean_interval(per_replication, lower=0.0)


def share_interval(per_replication: np.ndarray) -> tuple[float, tuple[float, float] | None]:
    """``mean_interval`` of a share (each replication's value in [0, 1]: a fraction of
    requests, of the KV cache), with the Student-t interval clipped to [0, 1] (over two
    replications of SLO attainment 0.98 it would reach past 1, which no share can be)."""
    return mean_interval(per_replication, lower=0.0, upper=1.0)


#: An interval rule: replication values (R,) -> (mean, 95% interval or None).
IntervalOf = Callable[[np.ndarray], tuple[float, tuple[float, float] | None]]


def estimate(
    per_replication: np.ndarray, pooled: np.ndarray, weights: np.ndarray | None = None
) -> Estimate:
    """An ``Estimate`` from replication means (R,) and the pooled sample (n,) of a
    per-request metric (none is negative: the interval is clipped at 0)."""
    mean, ci = positive_interval(per_replication)
    w = np.ones(pooled.shape) if weights is None else weights
    q = weighted_quantiles(pooled, w, QUANTILES)
    return Estimate(mean, ci, float(q[0]), float(q[1]), float(q[2]))


def sketched_estimate(per_replication: np.ndarray, sketches: Sequence[QuantileSketch]) -> Estimate:
    """``estimate`` from replication means (R,) and each replication's sketch: the pooled
    quantiles within the sketch's relative error (0.1%, sim/simulation/serving/sketch.py)
    of the exact pooled quantiles."""
    mean, ci = positive_interval(per_replication)
    q = QuantileSketch.merged(sketches).quantiles(QUANTILES)
    return Estimate(mean, ci, float(q[0]), float(q[1]), float(q[2]))


@dataclass(frozen=True, slots=True)
class SloSpec:
    """Targets: per-user tok/s thresholds, and TTFT / TPOT limits for SLO attainment."""

    tok_s: tuple[float, ...] = ()
    ttft_ms: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Ratio:
    """A paired ratio (speculative over baseline, or baseline over speculative for
    latencies) per replication: mean and 95% interval across replications."""

    mean: float
    ci95: tuple[float, float] | None

    @staticmethod
    def across(values: np.ndarray, interval: IntervalOf = positive_interval) -> Ratio:
        """Mean and 95% interval of one value per replication (R,), by ``interval``: the
        default clips at 0 (levels, paired ratios), ``share_interval`` to [0, 1],
        ``mean_interval`` not at all (signed differences)."""
        mean, ci = interval(values)
        return Ratio(mean, ci)

    def to_dict(self) -> dict[str, object]:
        return {"mean": self.mean, "ci95": None if self.ci95 is None else list(self.ci95)}


@dataclass(frozen=True, slots=True)
class PolicySummary:
    """One policy's metrics across R replications; the shares (``kv_utilisation``,
    ``p_tok_s``, ``slo_attainment``) have their intervals clipped to [0, 1]. ``little``:
    (L, lambda W) with W the measured requests' mean E2E, the long-run check;
    ``little_window``: (lambda W', edge) of the finite-window identity L = lambda W' +
    edge (``little_window_terms``)."""

    metrics: dict[str, Estimate]
    aggregate_tok_s: Ratio
    mean_batch: Ratio
    batch_share: np.ndarray
    kv_utilisation: Ratio | None
    preemptions_per_request: Ratio
    accept_length: Ratio
    p_tok_s: dict[float, Ratio]
    slo_attainment: Ratio | None
    little: tuple[Ratio, Ratio]
    little_window: tuple[Ratio, Ratio]
    per_replication: dict[str, np.ndarray]
    backlogs: tuple[Backlog, ...] = ()

    @property
    def overloaded(self) -> int:
        """Replications in which requests arrived faster than they were answered."""
        return sum(b.overloaded for b in self.backlogs)


@dataclass(frozen=True, slots=True)
class ServingSummary:
    """Every policy's summary, and paired speedups of each policy over ``baseline``."""

    policies: dict[str, PolicySummary]
    baseline: str | None
    speedup: dict[str, dict[str, Ratio]]
    replications: int


def _nanmean(values: np.ndarray) -> float:
    """Mean of the values that are not NaN; NaN (without numpy's warning) when none is,
    e.g. per-user tok/s when every request ended with its prefill's token."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")


def _share_at_least(values: np.ndarray, target: float) -> float:
    """Share of the requests with a value (not NaN) at or above ``target``: a request that
    never decoded (its prefill emitted its only token) has no per-user speed, so it counts
    neither for nor against a tok/s target, as it is left out of the mean speed."""
    kept = values[~np.isnan(values)]
    return float(np.mean(kept >= target)) if kept.size else float("nan")


def summarize_policy(records: Sequence[ServingRecord], slo: SloSpec) -> PolicySummary:
    """Summary of R replications of one policy."""
    per_request = [request_metrics(r) for r in records]
    metrics: dict[str, Estimate] = {}
    per_rep: dict[str, np.ndarray] = {}
    sampled = any(r.sampled for r in records)
    for name in REQUEST_METRICS:
        if sampled:  # every request's exact mean, quantiles within the sketch's 0.1%
            stats = [r.request_stats[name] for r in records]
            means = np.array([s.mean for s in stats])
            metrics[name] = sketched_estimate(means, [s.sketch for s in stats])
        else:
            means = np.array([_nanmean(m[name]) for m in per_request])
            pooled = np.concatenate([m[name] for m in per_request])
            pooled = pooled[~np.isnan(pooled)]
            metrics[name] = estimate(means, pooled)
        per_rep[name] = means
    if all(r.itl_exact for r in records):
        itl_means = np.array(
            [
                np.average(r.itl_ms, weights=r.itl_weight) if r.itl_ms.size else np.nan
                for r in records
            ]
        )
        metrics["itl_ms"] = estimate(
            itl_means,
            np.concatenate([r.itl_ms for r in records]),
            np.concatenate([r.itl_weight for r in records]),
        )
    else:
        itl_means = np.array([r.itl_stats.mean for r in records])
        metrics["itl_ms"] = sketched_estimate(itl_means, [r.itl_stats.sketch for r in records])
    per_rep["itl_ms"] = itl_means
    aggregate = np.array([1000.0 * r.tokens_delivered / r.window_ms for r in records])
    per_rep["aggregate_tok_s"] = aggregate
    batch_time = np.stack([r.batch_time_ms for r in records])
    sizes = np.arange(batch_time.shape[1])
    with np.errstate(invalid="ignore"):  # no decode iteration (one-token requests): NaN
        mean_batch = (batch_time @ sizes) / batch_time.sum(axis=1)
    total = batch_time.sum()
    # the share of decode time at each batch size; none at all without a decode iteration
    share = batch_time.sum(axis=0) / total if total > 0 else np.zeros(0)
    kv = None
    capacity = records[0].kv_capacity_tokens  # one plan: every replication's
    if capacity is not None:
        kv = Ratio.across(
            np.array([r.kv_token_ms / (capacity * r.window_ms) for r in records]),
            share_interval,
        )
    preempt = np.array(
        [r.request_stats["preemptions"].mean if sampled else r.preemptions.mean() for r in records]
    )
    accept = np.array(
        [r.cycle_tokens / r.request_cycles if r.request_cycles else np.nan for r in records]
    )
    p_tok = {
        t: Ratio.across(
            np.array([_share_at_least(m["per_user_tok_s"], t) for m in per_request]),
            share_interval,
        )
        for t in slo.tok_s
    }
    attain = None
    if slo.ttft_ms is not None or slo.tpot_ms is not None:
        ok = []
        for m in per_request:
            good = np.ones(m["ttft_ms"].shape, dtype=bool)
            if slo.ttft_ms is not None:
                good &= m["ttft_ms"] <= slo.ttft_ms
            if slo.tpot_ms is not None:
                good &= ~(m["tpot_ms"] > slo.tpot_ms)  # one-token requests have no TPOT
            ok.append(good.mean())
        attain = Ratio.across(np.array(ok), share_interval)
    little = np.array([little_terms(r) for r in records])  # (R, 3)
    window = np.array([little_window_terms(r) for r in records])  # (R, 2)
    return PolicySummary(
        metrics=metrics,
        aggregate_tok_s=Ratio.across(aggregate),
        mean_batch=Ratio.across(mean_batch),
        batch_share=share,
        kv_utilisation=kv,
        preemptions_per_request=Ratio.across(preempt),
        accept_length=Ratio.across(accept),
        p_tok_s=p_tok,
        slo_attainment=attain,
        little=(Ratio.across(little[:, 0]), Ratio.across(little[:, 1] * little[:, 2])),
        little_window=(Ratio.across(window[:, 0]), Ratio.across(window[:, 1])),
        backlogs=tuple(backlog(r) for r in records),
        per_replication=per_rep,
    )


def paired_speedup(spec: PolicySummary, base: PolicySummary) -> dict[str, Ratio]:
    """Per metric, the ratio of replication means (speculative / baseline for rates,
    baseline / speculative for latencies): > 1 means speculation helps."""
    out = {}
    for name, s in spec.per_replication.items():
        b = base.per_replication[name]
        num, den = (b, s) if name in LATENCY_METRICS else (s, b)
        if np.all(den > 0) and np.all(np.isfinite(num)):
            out[name] = Ratio.across(num / den)
        else:  # e.g. no queueing in either: no ratio
            out[name] = Ratio(float("nan"), None)
    return out


def summarize_serving(
    records: Mapping[str, Sequence[ServingRecord]],
    slo: SloSpec = SloSpec(),
    baseline: str | None = "baseline",
) -> ServingSummary:
    """Summaries of every policy (``records[name]``: its R replications, replication r of
    every policy run on the same arrivals) and paired speedups over ``baseline``."""
    policies = {name: summarize_policy(recs, slo) for name, recs in records.items()}
    speedup = {}
    if baseline is not None and baseline in policies:
        base = policies[baseline]
        speedup = {
            name: paired_speedup(p, base) for name, p in policies.items() if name != baseline
        }
    replications = len(next(iter(records.values())))
    return ServingSummary(policies, baseline, speedup, replications)
