"""Summary statistics of a Monte Carlo result.

* per-request tok/s: mean, std (ddof 1), p5/p50/p95 over all requests; the 95% confidence
  interval of the mean from the replication means with Student's t (scipy.special.stdtrit,
  the quantile scipy.stats.t.ppf returns), R - 1
  degrees of freedom (with one replication, from the requests, which are independent at
  batch 1);
* accept length: pooled over all cycles (tokens emitted / cycles, as a server log reports
  it) and its pmf, beside the model's long-run pooled pmf (``AcceptanceModel.cycle_pmf``);
* cycle_ms: mean time per cycle, total and by phase;
* per target: P(a request's tok/s >= target) with a Wilson score interval (requests are
  independent and identically distributed in this model).

A streamed result (sim/simulation/stream.py) gives the same statistics from its folded
counts and moments (equal up to rounding), percentiles within 1e-4 relative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.cycle import PHASES
from sim.simulation.results import MonteCarloResult

if TYPE_CHECKING:
    from sim.simulation.stream import Moments


def kept(array: np.ndarray | None) -> np.ndarray:
    """One of a result's per-request arrays, which a streamed result does not keep."""
    if array is None:
        raise ValueError("a streamed result keeps no per-request arrays (read its stream)")
    return array


def mean_ci95(values: np.ndarray) -> tuple[float, float, float]:
    """Mean of the replication means (R,) and its 95% t interval (R - 1 degrees of freedom)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2:
        return mean, mean, mean
    se = float(values.std(ddof=1)) / math.sqrt(values.size)
    if se == 0.0:
        return mean, mean, mean
    # lazy: scipy.special only when an interval is due; stdtrit is what scipy.stats.t.ppf
    # computes, without importing scipy.stats (slow to import: start-up)
    from scipy.special import stdtrit

    half = float(stdtrit(values.size - 1, 0.975)) * se
    return mean, mean - half, mean + half


#: The 97.5% quantile of the standard normal, as scipy.special.ndtri(0.975) gives it.
Z_975 = 1.959963984540054


def wilson_ci95(successes: int, trials: int) -> tuple[float, float]:
    """Wilson score 95% interval of a binomial proportion (no continuity correction).

    Newcombe (1998), method 3, in the arithmetic of scipy.stats.binomtest's
    ``proportion_ci(method="wilson")`` (identical results, without its set-up cost):
    center (2 n p + z^2) / (2 (n + z^2)), half-width z sqrt(4 n p q + z^2) / (2 (n + z^2)),
    with the lower end 0 at k = 0 and the upper end 1 at k = n.
    """
    k, n = int(successes), int(trials)
    z = Z_975
    p = k / n
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    lo = 0.0 if k == 0 else center - delta
    hi = 1.0 if k == n else center + delta
    return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class TargetProbability:
    """P(a request's tok/s >= ``tok_s``) and its 95% interval."""

    tok_s: float
    p_at_least: float
    ci95: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "p_at_least": self.p_at_least,
            "p_at_least_ci95": list(self.ci95),
        }


@dataclass(frozen=True, slots=True)
class ClassSummary:
    """Per-class share of requests and mean tok/s (workload mix only)."""

    name: str
    share: float
    mean_tok_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "share": self.share, "mean_tok_s": self.mean_tok_s}


@dataclass(frozen=True, slots=True)
class Summary:
    """Statistics of a ``MonteCarloResult`` (see module docstring for their definitions).

    ``accept_pmf``/``theory_pmf`` have shape (k + 1,), entry j for L = j + 1. ``method``:
    ``monte_carlo``, or ``exact`` for the exact law of sim/simulation/exact.py (then
    ``engine`` is "exact", ``seed``/``replications``/``requests`` are None and every
    interval has zero width).
    """

    engine: str
    fidelity: str
    seed: int | None
    replications: int | None
    requests: int | None
    tok_s_mean: float
    tok_s_std: float
    tok_s_ci95: tuple[float, float]
    tok_s_p5: float
    tok_s_p50: float
    tok_s_p95: float
    accept_length_mean: float
    accept_pmf: np.ndarray
    theory_pmf: np.ndarray
    theory_accept_length: float
    cycle_ms: dict[str, float]
    targets: tuple[TargetProbability, ...]
    classes: tuple[ClassSummary, ...]
    method: str = "monte_carlo"

    def to_dict(self) -> dict[str, Any]:
        """The Monte Carlo keys of ``specsim run --json`` (plain floats, JSON-ready)."""
        return {
            "method": self.method,
            "engine": self.engine,
            "fidelity": self.fidelity,
            "seed": self.seed,
            "replications": self.replications,
            "requests": self.requests,
            "throughput_tok_s": {
                "mean": self.tok_s_mean,
                "std": self.tok_s_std,
                "ci95": list(self.tok_s_ci95),
                "p5": self.tok_s_p5,
                "p50": self.tok_s_p50,
                "p95": self.tok_s_p95,
            },
            "accept_length": {
                "mean": self.accept_length_mean,
                "pmf": self.accept_pmf.tolist(),
                "theory_mean": self.theory_accept_length,
                "theory_pmf": self.theory_pmf.tolist(),
            },
            "cycle_ms": dict(self.cycle_ms),
            "targets": [t.to_dict() for t in self.targets],
            "classes": [c.to_dict() for c in self.classes],
        }


def _moments_ci95(m: Moments) -> tuple[float, float, float]:
    """``mean_ci95`` from streamed moments (the same t interval, up to rounding)."""
    if m.n < 2 or m.std() == 0.0:
        return m.mean, m.mean, m.mean
    from scipy.special import stdtrit  # lazy: as in mean_ci95

    half = float(stdtrit(m.n - 1, 0.975)) * m.std() / math.sqrt(m.n)
    return m.mean, m.mean - half, m.mean + half


def throughput_mean_ci95(result: MonteCarloResult) -> tuple[float, float, float]:
    """Mean per-request tok/s and its 95% t interval over the replication means.

    With one replication the requests themselves are the sample.
    """
    if result.stream is not None:
        s = result.stream
        return _moments_ci95(s.replication_means if result.replications > 1 else s.tok_s)
    tok = kept(result.tok_s)
    return mean_ci95(tok.mean(axis=1) if result.replications > 1 else tok.ravel())


def accept_count_totals(result: MonteCarloResult) -> np.ndarray:
    """Cycles that emitted L = j + 1 tokens over all replications, shape (k + 1,)."""
    if result.stream is not None:
        return result.stream.accept_counts
    return kept(result.accept_counts).sum(axis=0)


def pooled_accept_length(result: MonteCarloResult) -> float:
    """Mean tokens per cycle over every simulated cycle (as a server log reports it)."""
    counts = accept_count_totals(result)  # (k + 1,)
    return float(counts @ np.arange(1, result.num_steps + 2) / counts.sum())


def target_probabilities(
    result: MonteCarloResult, targets: Sequence[float]
) -> tuple[TargetProbability, ...]:
    """P(a request's tok/s >= t) with its Wilson 95% interval, for each target t.

    A streamed result knows only the targets it counted (``simulate(targets=...)``)."""
    rows = []
    if result.stream is not None:
        s = result.stream
        for t in targets:
            if float(t) not in s.targets:
                raise SpecsimError(
                    f"a streamed run counted targets {list(s.targets)} only; give {t:g} to "
                    "simulate(targets=...)",
                    param="targets",
                )
            hits = int(s.hits[s.targets.index(float(t))])
            rows.append(
                TargetProbability(float(t), hits / s.requests, wilson_ci95(hits, s.requests))
            )
        return tuple(rows)
    flat = kept(result.tok_s).ravel()
    for t in targets:
        hits = int((flat >= t).sum())
        rows.append(TargetProbability(float(t), hits / flat.size, wilson_ci95(hits, flat.size)))
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class Stats:
    """What a root finder needs of a Monte Carlo run (or of a closed form, with a zero-width
    interval): mean per-request tok/s with its 95% interval, the pooled accept length and
    P(tok/s >= target) per target. ``Summary`` carries the same fields and more.
    ``simulated``: False for the stand-in of a point that was refused without a run (a
    load above its service bound, sim/studies/serving/search.py ``unstable_stats``)."""

    tok_s_mean: float
    tok_s_ci95: tuple[float, float]
    accept_length_mean: float
    targets: tuple[TargetProbability, ...]
    simulated: bool = True


def quick_stats(result: MonteCarloResult, targets: Sequence[float]) -> Stats:
    """``Stats`` of a result: the statistics of ``summarize`` that search needs, without the
    theoretical pmf (a numerical integration per call for heterogeneous acceptance)."""
    mean, lo, hi = throughput_mean_ci95(result)
    probabilities = target_probabilities(result, targets)
    return Stats(mean, (lo, hi), pooled_accept_length(result), probabilities)


def _spread(result: MonteCarloResult) -> tuple[float, float, float, float]:
    """(std, p5, p50, p95) of per-request tok/s (streamed: moments and the histogram)."""
    if result.stream is not None:
        s = result.stream
        p5, p50, p95 = (s.histogram.percentile(q) for q in (5, 50, 95))
        return s.tok_s.std(), p5, p50, p95
    flat = kept(result.tok_s).ravel()
    p5, p50, p95 = (float(x) for x in np.percentile(flat, [5, 50, 95]))
    return (float(flat.std(ddof=1)) if flat.size > 1 else 0.0), p5, p50, p95


def _phase_totals(result: MonteCarloResult) -> np.ndarray:
    """Total ms per phase over all replications, (4,) in ``PHASES`` order."""
    return (
        result.stream.phase_ms if result.stream is not None else kept(result.phase_ms).sum(axis=0)
    )


def _classes(result: MonteCarloResult) -> tuple[ClassSummary, ...]:
    """Per-class share and mean tok/s (a workload mix only)."""
    names = result.class_names if len(result.class_names) > 1 else ()
    out = []
    for i, name in enumerate(names):
        if result.stream is not None:
            n_i, total = int(result.stream.class_requests[i]), result.stream.requests
            share, mean = n_i / total, float(result.stream.class_tok_s[i] / n_i) if n_i else 0.0
        else:
            rows = kept(result.request_class) == i
            share = float(rows.mean())
            mean = float(kept(result.tok_s)[rows].mean()) if rows.any() else 0.0
        out.append(ClassSummary(name, share, mean))
    return tuple(out)


def summarize(result: MonteCarloResult, targets: Sequence[float] | None = None) -> Summary:
    """Statistics of a Monte Carlo result; ``targets`` default to the scenario's.

    A streamed result (``result.stream``) gives the same statistics from its folded
    counts and moments, percentiles within ``LogHistogram.relative_error`` (1e-4)."""
    if targets is None:
        targets = result.scenario.target_tok_s
    mean, lo, hi = throughput_mean_ci95(result)
    std, p5, p50, p95 = _spread(result)
    counts = accept_count_totals(result)
    n_cycles = int(counts.sum())
    model = result.acceptance
    phase_tot = _phase_totals(result)
    cycle_ms = {"mean": float(phase_tot.sum() / n_cycles)}
    cycle_ms.update({p: float(phase_tot[i] / n_cycles) for i, p in enumerate(PHASES)})
    return Summary(
        engine=result.engine,
        fidelity=result.fidelity,
        seed=result.seed,
        replications=result.replications,
        requests=result.requests,
        tok_s_mean=mean,
        tok_s_std=std,
        tok_s_ci95=(lo, hi),
        tok_s_p5=p5,
        tok_s_p50=p50,
        tok_s_p95=p95,
        accept_length_mean=pooled_accept_length(result),
        accept_pmf=counts / n_cycles,
        theory_pmf=model.cycle_pmf(),
        theory_accept_length=model.cycle_mean_accept_length(),
        cycle_ms=cycle_ms,
        targets=target_probabilities(result, targets),
        classes=_classes(result),
    )
