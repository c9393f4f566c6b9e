"""Exact finite-request laws: how many cycles a request of N tokens needs.

A request stops at the first cycle count n with L_1 + ... + L_n >= N
(docs/reference.md §Acceptance), L_i i.i.d. with pmf ``length_pmf`` (entry j for
L = j + 1). The distribution of n follows by dynamic programming over the tokens emitted so
far (mass below N carried, mass reaching N retired): P(n <= m) = P(S_m >= N). With cycles of
a fixed T ms, a request's tok/s is 1000 N / (n T), so its exact distribution, mean and
P(tok/s >= target) follow; the long-run renewal-reward value 1000 E[L] / T is the
N -> infinity limit.

When a cycle's duration depends on its L through the draft extend, T(L) = T + s (L - t)
(sim/model/cycle.py), a request's time is n (T - s t) + s E with E = L_1 + ... + L_n the
tokens its cycles emitted (N .. N + k), so the joint law of (n, E) gives its tok/s exactly
(``cycles_and_emitted_pmf``, the step-by-step programme).

Cost. P(S_m >= N) is one Parseval sum over the DFT of the pmf of L (``SumTails``), so the
law of n needs only the window of cycle counts around N / E[L] that carries probability:
``cycles_law`` checks that the probability outside it is below ``TAIL`` (widening it
otherwise), and ``p_cycles_at_most`` is a single sum. The probability left out (``TAIL`` at
each end plus rounding, about 1e-15) is carried in ``CyclesLaw.error_bound``; tests compare
with the step-by-step dynamic programme.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Probability allowed outside the window at each end (FFT rounding is ~1e-15).
TAIL = 1e-12


@dataclass(frozen=True, slots=True)
class CyclesLaw:
    """P(n = first + i) = ``pmf[i]``: the law of the cycles a request of ``tokens`` needs.

    ``error_bound`` bounds the probability not represented (``TAIL`` plus rounding).
    """

    tokens: int
    first: int
    pmf: np.ndarray
    error_bound: float

    @property
    def cycles(self) -> np.ndarray:
        """The support, shape (len(pmf),): first, first + 1, ..."""
        return np.arange(self.first, self.first + self.pmf.size)

    def mean(self) -> float:
        return float(self.pmf @ self.cycles)

    def mean_inverse(self) -> float:
        """E[1 / n]."""
        return float(self.pmf @ (1.0 / self.cycles))

    def cdf(self, m: float) -> float:
        """P(n <= m)."""
        top = math.floor(m) - self.first
        if top < 0:
            return 0.0
        return float(self.pmf[: top + 1].sum())


class SumTails:
    """P(S_m >= N) for cycle counts m, by Parseval: Re sum_f c_f phi_f^m.

    S_m = L_1 + ... + L_m; phi_f is the DFT of the pmf of L on ``n_fft`` points (covering
    S_m for every m <= ``max_cycles``, so nothing wraps around) and c_f the DFT of the
    indicator of t >= N with the real-FFT weights. Only frequencies with
    |phi_f|^min_cycles >= e^-70 are kept: the others add less than 1e-27 in all.
    """

    def __init__(
        self,
        length_pmf: np.ndarray,
        tokens: int,
        min_cycles: int,
        max_cycles: int,
        points: np.ndarray | None = None,
    ):
        kernel = np.concatenate([[0.0], length_pmf])  # index = tokens
        n_fft = 1 << max(1, (max_cycles * length_pmf.size).bit_length())
        phi = np.fft.rfft(kernel, n_fft)
        indicator = np.zeros(n_fft)
        indicator[tokens:] = 1.0
        weights = np.full(phi.size, 2.0 / n_fft)
        weights[0] = weights[-1] = 1.0 / n_fft
        c = weights * np.conj(np.fft.rfft(indicator))
        if min_cycles == 0:  # |phi_f|^0 = 1: S_0 = 0 needs every frequency
            keep = np.ones(phi.size, dtype=bool)
        else:
            with np.errstate(divide="ignore"):
                keep = min_cycles * np.log(np.abs(phi)) > -70.0
        self.phi, self.c = phi[keep], c[keep]
        # point masses P(S_m = t): the DFT of the indicator of t is e^(-2 pi i f t / n)
        self.point_c = None
        if points is not None:
            f = np.arange(phi.size)[keep][:, None]
            angle = 2.0 * np.pi * f * np.asarray(points)[None, :] / n_fft
            self.point_c = weights[keep][:, None] * np.exp(1j * angle)  # (F, len(points))

    def at(self, m: int) -> float:
        """P(S_m >= N)."""
        return float(np.real(self.c @ self.phi**m))

    def window(self, m0: int, m1: int) -> np.ndarray:
        """P(S_m >= N) for m = m0 .. m1, shape (m1 - m0 + 1,)."""
        weighted = self.phi**m0 * self.c
        out = np.empty(m1 - m0 + 1)
        out[0] = np.real(weighted.sum())
        steps = np.broadcast_to(self.phi, (m1 - m0, self.phi.size))
        # einsum, not @: a BLAS gemv this small is slower with its thread pool on a busy host
        out[1:] = np.real(np.einsum("ij,j->i", np.cumprod(steps, axis=0), weighted))
        return out

    def window_points(self, m0: int, m1: int) -> np.ndarray:
        """P(S_m = t) for m = m0 .. m1 and the ``points`` t, shape (m1 - m0 + 1, points)."""
        assert self.point_c is not None
        start = self.phi**m0
        steps = np.broadcast_to(self.phi, (m1 - m0, self.phi.size))
        powers = np.concatenate([start[None, :], start * np.cumprod(steps, axis=0)])
        return np.real(np.einsum("mf,fp->mp", powers, self.point_c))


def _window(pmf: np.ndarray, tokens: int, spread: float, pad: int = 2) -> tuple[int, int]:
    """Cycle counts m0 < n <= m1 around N / E[L] (renewal CLT), ``spread`` sd below and
    1.5 ``spread`` above (the right tail of n is the longer), plus ``pad`` cycles."""
    top = pmf.size
    lengths = np.arange(1, top + 1)
    mu = float(pmf @ lengths)
    sd = math.sqrt(tokens * max(float(pmf @ lengths**2) - mu**2, 0.0) / mu**3)
    lo_floor = max(0, -(-tokens // top) - 1)  # S_m <= m (k + 1) < N up to here: nobody done
    m0 = max(lo_floor, math.floor(tokens / mu - spread * sd) - pad)
    m1 = min(tokens, math.ceil(tokens / mu + 1.5 * spread * sd) + pad)
    return m0, m1


def _deterministic_length(pmf: np.ndarray) -> int | None:
    """The one length L takes, or None when it varies."""
    support = np.flatnonzero(pmf > 0.0)
    return int(support[0]) + 1 if support.size == 1 else None


def cycles_law(length_pmf: np.ndarray, tokens: int) -> CyclesLaw:
    """The exact law of the cycle count n for a request of ``tokens`` (>= 1) tokens.

    P(n <= m) = P(S_m >= N) on a window m0 < n <= m1 around N / E[L] wide enough that
    both ends carry less than ``TAIL`` (checked; the window widens until they do).
    """
    pmf = np.asarray(length_pmf, dtype=float)
    sure = _deterministic_length(pmf)
    if sure is not None:  # one length l: n = ceil(N / l)
        return CyclesLaw(tokens, -(-tokens // sure), np.ones(1), 0.0)
    spread, pad = 8.0, 2
    while True:
        m0, m1 = _window(pmf, tokens, spread, pad)
        done = SumTails(pmf, tokens, m0, m1).window(m0, m1)  # P(n <= m), m = m0 .. m1
        early, late = float(done[0]), 1.0 - float(done[-1])
        whole = m1 == tokens and m0 == max(0, -(-tokens // pmf.size) - 1)
        if (early <= TAIL and late <= TAIL) or whole:
            break
        spread, pad = 1.5 * spread, 2 * pad  # (a near-constant L has a tiny sd)
    probs = np.clip(np.diff(done), 0.0, None)
    nonzero = np.flatnonzero(probs > 1e-300)
    first, last = (int(nonzero[0]), int(nonzero[-1])) if nonzero.size else (0, 0)
    error = max(early, 0.0) + max(late, 0.0) + 1e-15
    return CyclesLaw(tokens, m0 + 1 + first, probs[first : last + 1], error)


@dataclass(frozen=True, slots=True)
class JointLaw:
    """P(n = first + i, E = N + o) = ``probs[i, o]``: the cycles a request of ``tokens``
    needs and the tokens its cycles emit (overshoot o = 0..k)."""

    tokens: int
    first: int
    probs: np.ndarray


def cycles_and_emitted_law(length_pmf: np.ndarray, tokens: int) -> JointLaw:
    """The exact joint law of (n, E): P(n = m, E = N + o) = sum over the last cycle's
    length l > o of P(S_(m-1) = N + o - l) P(L = l), point masses by Parseval sums on the
    window of ``cycles_law``."""
    pmf = np.asarray(length_pmf, dtype=float)
    k1 = pmf.size  # k + 1
    sure = _deterministic_length(pmf)
    if sure is not None:
        n = -(-tokens // sure)
        probs = np.zeros((1, k1))
        probs[0, n * sure - tokens] = 1.0
        return JointLaw(tokens, n, probs)
    law = cycles_law(pmf, tokens)
    m0, m1 = law.first - 1, law.first + law.pmf.size - 1  # n in (m0, m1]
    points = np.arange(tokens - k1, tokens)  # S_(m - 1) just below N
    sums = SumTails(pmf, tokens, max(m0 - 1, 0), m1, points)
    below = sums.window_points(max(m0, 0), m1 - 1)  # (m1 - m0, k1): rows m - 1 = m0 .. m1 - 1
    below = np.clip(below, 0.0, None)
    probs = np.zeros((m1 - m0, k1))
    for o in range(k1):
        for length in range(o + 1, k1 + 1):  # the last cycle brings S from N + o - l to N + o
            t = tokens + o - length  # index in points: t - (N - k1)
            if t >= 0:
                probs[:, o] += below[:, t - (tokens - k1)] * pmf[length - 1]
    return JointLaw(tokens, m0 + 1, probs)


def p_cycles_at_most(length_pmf: np.ndarray, tokens: int, cycles: int) -> float:
    """P(n <= ``cycles``) = P(S_cycles >= N), one Parseval sum (no window needed)."""
    pmf = np.asarray(length_pmf, dtype=float)
    if cycles <= 0:
        return 0.0
    if cycles >= tokens:
        return 1.0
    sure = _deterministic_length(pmf)
    if sure is not None:
        return 1.0 if cycles * sure >= tokens else 0.0
    return min(1.0, max(0.0, SumTails(pmf, tokens, cycles, cycles).at(cycles)))


def cycles_pmf(length_pmf: np.ndarray, tokens: int) -> np.ndarray:
    """P(n = m) for m = 0..tokens (shape (tokens + 1,); entry 0 is 0 for tokens >= 1)."""
    law = cycles_law(length_pmf, tokens)
    out = np.zeros(tokens + 1)
    out[law.first : law.first + law.pmf.size] = law.pmf
    return out


def cycles_and_emitted_pmf(length_pmf: np.ndarray, tokens: int) -> np.ndarray:
    """P(n = m, E = N + o) for m = 0..N and overshoot o = 0..k, shape (N + 1, k + 1): the
    joint law of a request's cycle count and the tokens its cycles emitted."""
    pmf = np.asarray(length_pmf, dtype=float)
    k = pmf.size - 1
    out = np.zeros((tokens + 1, k + 1))
    below = np.zeros(tokens)
    below[0] = 1.0
    step = np.concatenate([[0.0], pmf])
    for m in range(1, tokens + 1):
        nxt = np.convolve(below, step)  # emitted after m cycles, 0 .. tokens - 1 + k + 1
        reached = nxt[tokens:]
        out[m, : reached.size] = reached[: k + 1]
        below = nxt[:tokens]
        if below.sum() < 1e-15:
            break
    return out


def request_tok_s_distribution(
    length_pmf: np.ndarray,
    tokens: int,
    cycle_ms: float,
    extend_per_token_ms: float = 0.0,
    extend_tokens: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Support (tok/s values) and probabilities of a request's tok/s.

    A cycle that emits L tokens takes ``cycle_ms + extend_per_token_ms (L -
    extend_tokens)``. Fixed cycles: values 1000 N / (m T) for m = 1..N with P(n = m);
    otherwise 1000 N / (m (T - s t) + s E) over the joint law of (n, E).
    """
    if extend_per_token_ms == 0.0:
        p = cycles_pmf(length_pmf, tokens)[1:]
        m = np.arange(1, tokens + 1)
        return 1000.0 * tokens / (m * cycle_ms), p
    joint = cycles_and_emitted_pmf(length_pmf, tokens)[1:]  # (N, k + 1)
    m = np.arange(1, tokens + 1)[:, None]
    emitted = tokens + np.arange(joint.shape[1])[None, :]
    time_ms = m * (cycle_ms - extend_per_token_ms * extend_tokens) + extend_per_token_ms * emitted
    keep = joint > 0
    return 1000.0 * tokens / time_ms[keep], joint[keep]


@dataclass(frozen=True, slots=True)
class RequestLaw:
    """The exact law of one request's tok/s: support ``values`` (tok/s) and ``probs``.

    ``fixed``: cycles of a fixed T ms, tok/s = 1000 N / (n T); ``with_extend``: a cycle that
    emits L tokens takes T + s (L - t), tok/s = 1000 N / (n (T - s t) + s E).
    """

    tokens: int
    values: np.ndarray
    probs: np.ndarray

    @staticmethod
    def fixed(cycles: CyclesLaw, cycle_ms: float) -> RequestLaw:
        values = 1000.0 * cycles.tokens / (cycles.cycles * cycle_ms)
        return RequestLaw(cycles.tokens, values, cycles.pmf)

    @staticmethod
    def with_extend(
        joint: JointLaw, cycle_ms: float, per_token_ms: float, at_tokens: float
    ) -> RequestLaw:
        n = np.arange(joint.first, joint.first + joint.probs.shape[0])[:, None]
        emitted = joint.tokens + np.arange(joint.probs.shape[1])[None, :]
        time_ms = n * (cycle_ms - per_token_ms * at_tokens) + per_token_ms * emitted
        keep = joint.probs > 0
        return RequestLaw(joint.tokens, 1000.0 * joint.tokens / time_ms[keep], joint.probs[keep])

    def tok_s_values(self) -> np.ndarray:
        """The support of tok/s (same order as ``probs``)."""
        return self.values

    def mean_tok_s(self) -> float:
        return float(self.probs @ self.values)

    def std_tok_s(self) -> float:
        mean = self.mean_tok_s()
        return math.sqrt(max(0.0, float(self.probs @ (self.values - mean) ** 2)))

    def p_at_least(self, target_tok_s: float) -> float:
        """P(tok/s >= target), on the same float comparison the Monte Carlo makes."""
        return float(self.probs[self.values >= target_tok_s].sum())

    def quantile(self, q: float) -> float:
        """The lower q-quantile of tok/s: the least value v with P(tok/s <= v) >= q."""
        order = np.argsort(self.values, kind="stable")
        values, cum = self.values[order], np.cumsum(self.probs[order])
        i = int(np.searchsorted(cum, q * cum[-1] - 1e-15))
        return float(values[min(i, values.size - 1)])
