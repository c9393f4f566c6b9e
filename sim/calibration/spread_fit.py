"""The per-request spread of acceptance, fitted to per-request counts by maximum likelihood.

The law (the model's, sim/model/acceptance.py): each request draws one rate
a ~ Beta(A, B), A = m kappa, B = (1 - m) kappa (mean m, concentration kappa); each of its
verify steps of a chain at num_steps k then checks its drafts in order, each accepted with
probability a, and stops at the first rejection or after k.

One request that ran n verify steps, accepted S drafts and rejected one in F of them
(F <= n; a step that accepted all k rejected none) has, given a, the likelihood
a^S (1 - a)^F times a count of orders that does not depend on a, whatever rule ended the
request (max tokens, EOS: a stopping rule that looks only at the tokens so far leaves the
likelihood of the steps unchanged). Over the Beta this is the beta-binomial law of S
successes and F failures:

    P(S, F | A, B) = const x B(A + S, B + F) / B(A, B).

When a file gives n and S but not F (SGLang releases without the histogram), F = n - t
with t, the steps that accepted all k drafts, latent. Given n and a,

    P(S | n, a) = sum_t C(n, t) N(n - t, S - k t, k - 1) a^S (1 - a)^(n - t),

N(m, r, c) the number of ways m steps that each accepted 0..c drafts accept r in all
(the coefficient of x^r in (1 + x + ... + x^c)^m, counted here in logs by a dynamic
programme over m), so over the Beta

    P(S | n, A, B) = sum_t C(n, t) N(n - t, S - k t, k - 1) B(A + S, B + n - t) / B(A, B),

the exact law, not a moment approximation: the finite number of steps of each request
(its binomial noise) is in the law, not subtracted afterwards.

The fit maximises the summed log likelihood over (logit m, log kappa) (scipy's L-BFGS-B
within ``KAPPA_BOUNDS``); standard errors come from the observed information (the inverse
Hessian, by central differences, the delta method for m and kappa), and the 95% profile
likelihood interval of kappa (the kappas whose profile log likelihood is within
chi2_1(0.95) / 2 = 1.92 of the maximum). Data consistent with no spread at all leave the
interval open above: kappa is then a range, not a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from sim.calibration.importers.per_request_counts import RequestCounts
from sim.errors import SpecsimError

__all__ = ["KAPPA_BOUNDS", "SpreadFit", "fit_spread", "latent_log_weights"]

#: Concentrations the fit searches: 1e-2 (rates near 0 or 1 per request) to 1e6 (a spread
#: of sd sqrt(m (1 - m) / 1e6) < 5e-4, no spread any measurement can see).
KAPPA_BOUNDS = (1e-2, 1e6)
#: Half the 95% quantile of chi-square with one degree of freedom (the profile interval).
PROFILE_DROP = 0.5 * 3.841458820694124
#: Fewest requests a spread is fitted to (two rates give one difference).
MIN_REQUESTS = 2
_LOGIT_BOUND = 12.0


@dataclass(frozen=True, slots=True)
class SpreadFit:
    """Mean m and concentration kappa of the per-request Beta, with their errors.

    ``kappa_interval`` is the 95% profile likelihood interval; its upper end is None when
    the data cannot bound kappa above (consistent with no spread). ``kappa_stderr`` is
    None then too, and when the observed information is not positive definite.
    """

    num_steps: int
    requests: int
    mean: float
    mean_stderr: float | None
    kappa: float
    kappa_stderr: float | None
    kappa_interval: tuple[float, float | None]
    log_likelihood: float
    latent: int

    @property
    def identified(self) -> bool:
        """Whether the data bound kappa on both sides."""
        return self.kappa_interval[1] is not None and self.kappa_stderr is not None

    @property
    def sd(self) -> float:
        """The standard deviation of the per-request rate, sqrt(m (1 - m) / (kappa + 1))."""
        return math.sqrt(self.mean * (1.0 - self.mean) / (self.kappa + 1.0))

    def as_dict(self) -> dict[str, object]:
        return {
            "num_steps": self.num_steps,
            "requests": self.requests,
            "mean": self.mean,
            "mean_stderr": self.mean_stderr,
            "concentration": self.kappa,
            "concentration_stderr": self.kappa_stderr,
            "concentration_interval95": list(self.kappa_interval),
            "rate_sd": self.sd,
            "identified": self.identified,
            "log_likelihood": self.log_likelihood,
            "latent_rejections": self.latent,
        }


def latent_log_weights(
    steps: np.ndarray, accepted: np.ndarray, num_steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """log C(n, t) + log N(n - t, S - k t, k - 1) for each request (rows, shape (R,)) and
    t = 0..T (columns), -inf where impossible; and the t grid (T + 1,).

    N by one dynamic programme over m = 0..max n in logs: N(m, r) = sum_{j=0}^{k-1}
    N(m - 1, r - j), N(0, r) = [r = 0]; the entries each request needs are gathered from
    row m as it passes.
    """
    k = num_steps
    c = k - 1
    n_max, s_max = int(steps.max()), int(accepted.max())
    t_max = int(min(n_max, s_max // k))
    t = np.arange(t_max + 1)
    # request i needs row m = n_i - t at column r = S_i - k t
    rows = steps[:, None] - t[None, :]
    cols = accepted[:, None] - k * t[None, :]
    valid = (rows >= 0) & (cols >= 0) & (cols <= c * np.maximum(rows, 0))
    out = np.full(rows.shape, -np.inf)
    by_row: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    ii, tt = np.nonzero(valid)
    order = np.argsort(rows[ii, tt], kind="stable")
    ii, tt = ii[order], tt[order]
    ms = rows[ii, tt]
    bounds = np.searchsorted(ms, np.arange(n_max + 2))
    for m in range(n_max + 1):
        lo, hi = bounds[m], bounds[m + 1]
        if hi > lo:
            by_row[m] = (ii[lo:hi], tt[lo:hi])
    row = np.full(s_max + 1, -np.inf)
    row[0] = 0.0
    for m in range(n_max + 1):
        if m > 0:
            shifted = np.full((c + 1, s_max + 1), -np.inf)
            for j in range(c + 1):
                shifted[j, j:] = row[: s_max + 1 - j]
            row = special.logsumexp(shifted, axis=0)
        if m in by_row:
            i_m, t_m = by_row[m]
            out[i_m, t_m] = row[cols[i_m, t_m]]
    n = steps[:, None].astype(float)
    log_choose = special.gammaln(n + 1) - special.gammaln(t + 1.0) - special.gammaln(n - t + 1)
    with np.errstate(invalid="ignore"):
        out = np.where(valid, out + log_choose, -np.inf)
    return out, t


class _Likelihood:
    """The summed log likelihood of (A, B) over the requests (see the module docstring)."""

    def __init__(self, requests: Sequence[RequestCounts], num_steps: int):
        known = [r for r in requests if r.rejected is not None]
        latent = [r for r in requests if r.rejected is None]
        self.s_known = np.array([r.accepted for r in known], dtype=float)
        self.f_known = np.array([r.rejected for r in known], dtype=float)
        self.latent = len(latent)
        if latent:
            steps = np.array([r.verify_steps for r in latent])
            accepted = np.array([r.accepted for r in latent])
            self.log_w, t = latent_log_weights(steps, accepted, num_steps)
            self.s_latent = accepted.astype(float)[:, None]
            # failures n - t; past a request's own n the weight is -inf, the betaln kept finite
            self.f_latent = np.maximum(steps[:, None] - t[None, :], 0).astype(float)
            self.n_requests = len(known) + len(latent)
        else:
            self.n_requests = len(known)

    def __call__(self, a: float, b: float) -> float:
        total = float(np.sum(special.betaln(a + self.s_known, b + self.f_known)))
        if self.latent:
            terms = self.log_w + special.betaln(a + self.s_latent, b + self.f_latent)
            top = terms.max(axis=1, keepdims=True)  # finite: t = 0 or some t is possible
            total += float(np.sum(np.log(np.exp(terms - top).sum(axis=1)) + top[:, 0]))
        return total - self.n_requests * float(special.betaln(a, b))


def _ab(x: np.ndarray) -> tuple[float, float]:
    m = float(special.expit(x[0]))
    kappa = float(math.exp(x[1]))
    return m * kappa, (1.0 - m) * kappa


def _start(requests: Sequence[RequestCounts], num_steps: int) -> np.ndarray:
    """Moment start: each request's rate from S / (S + F), or from its accepted drafts a
    step (the equal rate with sum_{j<=k} a^j = S / n), then the Beta with their mean and
    variance (variance floored: the fit, not the start, decides the spread)."""
    rates = []
    grid = np.linspace(1e-4, 1 - 1e-4, 2001)
    per_step = np.array([np.sum(grid[:, None] ** np.arange(1, num_steps + 1), axis=1)]).ravel()
    for r in requests:
        if r.rejected is not None and r.accepted + r.rejected > 0:
            rates.append(r.accepted / (r.accepted + r.rejected))
        else:
            rates.append(float(np.interp(r.accepted / r.verify_steps, per_step, grid)))
    p = np.clip(np.array(rates), 1e-3, 1 - 1e-3)
    m = float(np.mean(p))
    var = max(float(np.var(p)), 1e-4 * m * (1 - m))
    kappa = float(np.clip(m * (1 - m) / var - 1.0, 1.0, 1e4))
    return np.array([special.logit(m), math.log(kappa)])


def _hessian(f, x: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Central-difference Hessian of ``f`` at ``x`` (2,)."""
    n = x.size
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            val = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h * h)
            out[i, j] = out[j, i] = val
    return out


def fit_spread(
    requests: Sequence[RequestCounts], num_steps: int, *, source: str = "<per-request>"
) -> SpreadFit:
    """The per-request Beta of ``requests`` at ``num_steps`` k (module docstring)."""
    if len(requests) < MIN_REQUESTS:
        raise SpecsimError(
            f"{len(requests)} request with a verify step: a per-request spread needs at "
            f"least {MIN_REQUESTS}",
            source=source,
        )
    none = all(r.accepted == 0 for r in requests)
    every = all(r.accepted == num_steps * r.verify_steps or r.rejected == 0 for r in requests)
    if none or every:
        raise SpecsimError(
            "every draft was rejected or every one accepted: a rate of 0 or 1 has no spread to fit",
            source=source,
        )
    like = _Likelihood(requests, num_steps)
    lo_k, hi_k = (math.log(b) for b in KAPPA_BOUNDS)
    bounds = [(-_LOGIT_BOUND, _LOGIT_BOUND), (lo_k, hi_k)]

    def nll(x: np.ndarray) -> float:
        return -like(*_ab(x))

    best = None
    for x0 in (_start(requests, num_steps), np.array([0.0, math.log(10.0)])):
        res = optimize.minimize(nll, x0, method="L-BFGS-B", bounds=bounds)
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    x = best.x
    m = float(special.expit(x[0]))
    kappa = float(math.exp(x[1]))
    interval = _profile_interval(nll, x, float(best.fun), bounds)
    mean_se: float | None = None
    kappa_se: float | None = None
    inner = lo_k + 1e-3 < x[1] < hi_k - 1e-3
    if inner:
        h = _hessian(nll, x)
        if np.all(np.linalg.eigvalsh(h) > 0):
            cov = np.linalg.inv(h)
            mean_se = m * (1 - m) * math.sqrt(cov[0, 0])
            kappa_se = kappa * math.sqrt(cov[1, 1]) if interval[1] is not None else None
    if mean_se is None:  # the mean's error at the profile of m alone
        h_m = _hessian(lambda v: nll(np.array([v[0], x[1]])), x[:1])
        if h_m[0, 0] > 0:
            mean_se = m * (1 - m) / math.sqrt(h_m[0, 0])
    return SpreadFit(
        num_steps, len(requests), m, mean_se, kappa, kappa_se, interval, -float(best.fun),
        like.latent,
    )  # fmt: skip


def _profile_interval(nll, x, best, bounds) -> tuple[float, float | None]:
    """The 95% profile likelihood interval of kappa: the log kappas where the negative log
    likelihood, minimised over logit m, rises ``PROFILE_DROP`` above its minimum (the
    search bound below when it never does there; None above)."""

    # logit m moves little along the profile: search it within 4 of the fit (the bounds)
    near = (max(bounds[0][0], x[0] - 4.0), min(bounds[0][1], x[0] + 4.0))

    def profile(lk: float) -> float:
        for where in (near, bounds[0]):  # the full range when the minimum is at near's edge
            res = optimize.minimize_scalar(
                lambda lm: nll(np.array([lm, lk])),
                bounds=where,
                method="bounded",
                options={"xatol": 1e-5},
            )
            if min((abs(res.x - e) for e in near if e not in bounds[0]), default=1.0) > 1e-3:
                break
        return float(res.fun) - best - PROFILE_DROP

    lo_k, hi_k = bounds[1]
    at = float(min(max(x[1], lo_k), hi_k))
    lower = lo_k if profile(lo_k) < 0 else optimize.brentq(profile, lo_k, at, xtol=1e-4)
    upper = None if profile(hi_k) < 0 else optimize.brentq(profile, at, hi_k, xtol=1e-4)
    return math.exp(lower), (math.exp(upper) if upper is not None else None)
