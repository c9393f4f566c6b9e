"""Streaming statistics: a Monte Carlo summarized block by block, in memory that does not
grow with the number of requests.

Each block of replications is folded into a ``StreamStats`` where it was simulated (in the
worker), and blocks are merged in block order (so the result does not depend on the
worker count):

* counts and sums are exact: requests, requests reaching each target, cycles per emitted
  length, time per phase, per-class shares and tok/s sums;
* mean and variance of per-request tok/s, and of the replication means (for the t
  interval), merge by Chan et al.'s pairwise formulas (Chan, Golub & LeVeque 1979,
  "Updating formulae and a pairwise algorithm for computing sample variances"): equal to the
  two-pass values up to rounding;
* quantiles come from ``LogHistogram``: counts in bins of equal width in log(tok/s). An
  order statistic is replaced by the geometric middle of its bin, so each lies within a
  relative ``LogHistogram.relative_error`` of the exact one, and a percentile interpolated
  between two of them (``np.percentile``'s linear rule) within the same relative error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.simulation.engines.common import EngineOutput

#: Width of a histogram bin in log(tok/s): order statistics within +-1e-4 relative.
LOG_BIN = 2e-4


@dataclass
class Moments:
    """Count, mean and sum of squared deviations of a sample, mergeable."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @staticmethod
    def of(values: np.ndarray) -> Moments:
        if values.size == 0:
            return Moments()
        mean = float(values.mean())
        return Moments(int(values.size), mean, float(((values - mean) ** 2).sum()))

    def merge(self, other: Moments) -> None:
        if other.n == 0:
            return
        if self.n == 0:
            self.n, self.mean, self.m2 = other.n, other.mean, other.m2
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean += delta * other.n / n
        self.m2 += other.m2 + delta * delta * self.n * other.n / n
        self.n = n

    def std(self) -> float:
        """Sample standard deviation (ddof 1); 0 for fewer than two values."""
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0


@dataclass
class LogHistogram:
    """Counts of positive values in bins [e^(i w), e^((i + 1) w)), w = ``LOG_BIN``."""

    first: int = 0  # bin index of counts[0]
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    relative_error = math.expm1(LOG_BIN / 2)  # of a value against its bin's middle

    def add(self, values: np.ndarray) -> None:
        idx = np.floor(np.log(values.ravel()) / LOG_BIN).astype(np.int64)
        lo = int(idx.min())
        self._merge(lo, np.bincount(idx - lo))

    def merge(self, other: LogHistogram) -> None:
        if other.counts.size:
            self._merge(other.first, other.counts)

    def _merge(self, first: int, counts: np.ndarray) -> None:
        if not self.counts.size:
            self.first, self.counts = first, counts.astype(np.int64).copy()
            return
        lo = min(self.first, first)
        hi = max(self.first + self.counts.size, first + counts.size)
        out = np.zeros(hi - lo, dtype=np.int64)
        out[self.first - lo : self.first - lo + self.counts.size] += self.counts
        out[first - lo : first - lo + counts.size] += counts
        self.first, self.counts = lo, out

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def middles(self) -> np.ndarray:
        """The geometric middle of each bin, shape (len(counts),)."""
        return np.exp((np.arange(self.counts.size) + self.first + 0.5) * LOG_BIN)

    def order_statistic(self, rank: int) -> float:
        """The (0-based) ``rank``-th smallest value, as its bin's middle."""
        i = int(np.searchsorted(np.cumsum(self.counts), rank, side="right"))
        return float(np.exp((i + self.first + 0.5) * LOG_BIN))

    def percentile(self, q: float) -> float:
        """``np.percentile(values, q)`` (linear rule), within ``relative_error``."""
        h = (self.total - 1) * q / 100.0
        lo, hi = math.floor(h), math.ceil(h)
        a, b = self.order_statistic(lo), self.order_statistic(hi)
        return a + (b - a) * (h - lo)

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """(bin middles, counts) of the occupied bins, for histograms and figures."""
        keep = self.counts > 0
        return self.middles()[keep], self.counts[keep]


@dataclass
class StreamStats:
    """The summary statistics of any number of replications, folded block by block.

    ``targets`` are the tok/s thresholds whose hits are counted exactly (fixed when the run
    starts); accept counts are totals over all replications, (k + 1,).
    """

    targets: tuple[float, ...]
    classes: int
    num_steps: int
    replications: int = 0
    tok_s: Moments = field(default_factory=Moments)
    replication_means: Moments = field(default_factory=Moments)
    histogram: LogHistogram = field(default_factory=LogHistogram)
    hits: np.ndarray = field(init=False)
    accept_counts: np.ndarray = field(init=False)
    phase_ms: np.ndarray = field(init=False)
    class_requests: np.ndarray = field(init=False)
    class_tok_s: np.ndarray = field(init=False)
    cycles: int = 0
    emitted_tokens: int = 0

    def __post_init__(self) -> None:
        self.hits = np.zeros(len(self.targets), dtype=np.int64)
        self.accept_counts = np.zeros(self.num_steps + 1, dtype=np.int64)
        self.phase_ms = np.zeros(4)
        self.class_requests = np.zeros(self.classes, dtype=np.int64)
        self.class_tok_s = np.zeros(self.classes)

    @staticmethod
    def of(out: EngineOutput, targets: Sequence[float], classes: int) -> StreamStats:
        """The statistics of one block of replications (arrays (B, Q) of ``out``)."""
        stats = StreamStats(
            tuple(float(t) for t in targets), classes, out.accept_counts.shape[1] - 1
        )
        tok = out.tok_s
        stats.replications = int(tok.shape[0])
        stats.tok_s = Moments.of(tok.ravel())
        stats.replication_means = Moments.of(tok.mean(axis=1))
        stats.histogram.add(tok)
        stats.hits = np.array([int((tok >= t).sum()) for t in stats.targets], dtype=np.int64)
        stats.accept_counts = out.accept_counts.sum(axis=0)
        stats.phase_ms = out.phase_ms.sum(axis=0)
        stats.class_requests = np.bincount(out.request_class.ravel(), minlength=classes)
        stats.class_tok_s = np.bincount(
            out.request_class.ravel(), weights=tok.ravel(), minlength=classes
        )
        stats.cycles = int(out.cycles.sum())
        stats.emitted_tokens = int(out.emitted_tokens.sum())
        return stats

    def merge(self, other: StreamStats) -> None:
        """Add another block's statistics (blocks are merged in block order)."""
        self.replications += other.replications
        self.tok_s.merge(other.tok_s)
        self.replication_means.merge(other.replication_means)
        self.histogram.merge(other.histogram)
        self.hits += other.hits
        self.accept_counts += other.accept_counts
        self.phase_ms += other.phase_ms
        self.class_requests += other.class_requests
        self.class_tok_s += other.class_tok_s
        self.cycles += other.cycles
        self.emitted_tokens += other.emitted_tokens

    @property
    def requests(self) -> int:
        return self.tok_s.n
