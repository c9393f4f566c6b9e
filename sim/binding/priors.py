"""Decay priors per draft method, from published per-position acceptance profiles.

When a scenario knows one accept length only, how the conditional rate falls with
position decides every answer at another ``num_steps``. The prior below is taken from
public per-position profiles (cumulative rates c_i = a_1 ... a_i as vLLM prints them; each
cited at its entry), per draft method:

* the **shape family** is the one with the lowest forward held-out error over the
  method's profiles (fit the first positions, predict the later ones;
  sim/model/profile_fit.py), not the best fit;
* the **decay** is that family's parameter fitted to each whole profile; the prior is
  their empirical distribution (median, 5-95% range; QMC draws use its quantile function).

Rising pooled profiles (decay > 1) are cut at 1, flat, which is the prior's optimistic
end: a rise in pooled per-position rates comes from mixing easy and hard requests, and does
not carry over to longer drafts; the MTP profile of vllm-project/vllm PR #48892 shows the
position-1 rate falling from 0.8359 at K = 1 to 0.7568 at K = 8 while its pooled
conditional rates rise with position.

None of these profiles is scored in the validation report (sim/validation/), whose
multi-K acceptance cases are all other measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from sim.binding.cross_run import CROSS_RUN, MultiKSeries
from sim.model.profile_fit import ProfileData, fit_profile, holdout_error
from sim.model.shapes import (
    accept_lengths_by_k,
    rates_for_positions,
    scale_for_accept_length,
    shape_factors,
    tilted,
)
from sim.tables import read_package_table

# The decay priors and the shape error's evidence are constants of the published data
# below: ``fit_package_priors`` fits them all (about 25 ms) and ``PACKAGE_PRIORS``, built
# once when this module is imported, holds them read-only for the binder.

#: Draft methods a scenario can name (``acceptance.method``).
METHODS: tuple[str, ...] = ("eagle3", "eagle", "mtp", "draft_model", "generic")
#: Families the prior chooses among (flat has no decay to take a prior of).
PRIOR_FAMILIES: tuple[str, ...] = ("geometric", "step")


@dataclass(frozen=True, slots=True)
class PublishedProfile:
    """One published per-position profile: cumulative rates at positions 1..n."""

    name: str
    method: str  # "eagle3" or "mtp"
    source: str
    cumulative: tuple[float, ...]
    decimals: int  # printed precision (sets the rounding standard error)

    def data(self) -> ProfileData:
        # lazy: a fit is made only when no stored one serves (start-up)
        from sim.model.profile_fit import ProfileData

        sigma = 10.0**-self.decimals / 12**0.5
        n = len(self.cumulative)
        return ProfileData(
            positions=tuple(range(1, n + 1)),
            cumulative=self.cumulative,
            cumulative_sigma=(sigma,) * n,
        )


#: Per-position profiles, copied from their sources (cumulative rates c_1..c_n), in
#: sim/binding/data/profiles.toml with each one's source and figure: EAGLE-3 chains, then
#: MTP heads used as drafters.
PROFILES: tuple[PublishedProfile, ...] = tuple(
    PublishedProfile(
        row["name"], row["method"], row["source"], tuple(row["cumulative"]), row["decimals"]
    )
    for row in read_package_table("sim.binding", "profiles")["profiles"]
)

#: Methods without a published chain per-position profile take the pooled prior.
POOLED_METHODS: dict[str, str] = {
    "eagle": "no published EAGLE-1/2 chain per-position profile was found",
    "draft_model": "no published draft-model per-position profile was found",
    "generic": "no draft method given (acceptance.method)",
}


@dataclass(frozen=True)
class DecayPrior:
    """The decay prior of one draft method.

    ``decays`` are the fitted, flat-capped decays of the profiles, sorted; ``median`` the
    nominal value and ``low``/``high`` the 5% and 95% quantiles (set from them when built).
    """

    method: str
    shape: str
    decays: tuple[float, ...]
    sources: tuple[str, ...]
    note: str
    median: float = field(init=False, repr=False, compare=False)
    low: float = field(init=False, repr=False, compare=False)
    high: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "median", float(np.median(self.decays)))
        object.__setattr__(self, "low", float(self.quantile(0.05)))
        object.__setattr__(self, "high", float(self.quantile(0.95)))

    def quantile(self, u: np.ndarray | float) -> np.ndarray | float:
        """The prior's quantile function (linear between the sorted decays)."""
        values = np.quantile(np.asarray(self.decays), u)
        return float(values) if np.ndim(values) == 0 else values

    @property
    def reason(self) -> str:
        return (
            f"{self.method} decay prior: {self.shape} shape fitted to {len(self.decays)} "
            f"published per-position profiles, median {self.median:.3f}, 5-95% "
            f"{self.low:.3f}-{self.high:.3f} (flat 1 the optimistic end); {self.note}"
        )


def _profiles_of(method: str) -> tuple[PublishedProfile, ...]:
    if method in POOLED_METHODS:
        return PROFILES
    return tuple(p for p in PROFILES if p.method == method)


#: The family each method's prior uses: the one with the lowest forward held-out error
#: over its profiles (``family_holdout``; tests/binding/test_priors.py recomputes it, so
#: this table is a cache of that computation, which takes ~1 s, not a choice).
PRIOR_FAMILY: dict[str, str] = {"eagle3": "step", "mtp": "step", "pooled": "step"}


def profile_group(method: str) -> str:
    """The profiles a method's prior is fitted to: its own, or ``pooled`` (all of them)."""
    return "pooled" if method in POOLED_METHODS else method


def family_holdout(method: str) -> dict[str, float]:
    """Mean forward held-out error (sim/model/profile_fit.py) of each candidate family
    over the profiles of ``method``."""

    profiles = _profiles_of(method)
    out: dict[str, float] = {}
    for family in PRIOR_FAMILIES:
        errors = [holdout_error(family, p.data()) for p in profiles]
        out[family] = float(np.mean([e for e in errors if e is not None]))
    return out


def decay_prior(
    method: str, family: str | None = None, priors: PackagePriors | None = None
) -> DecayPrior:
    """The decay prior of ``method`` (one of ``METHODS``) for ``family`` (default: the
    method's held-out choice, ``PRIOR_FAMILY``) in ``priors`` (default
    ``PACKAGE_PRIORS``, fitted once from ``PROFILES``)."""
    table = PACKAGE_PRIORS if priors is None else priors
    prior = table.decay_priors.get((method, family or PRIOR_FAMILY.get(profile_group(method), "")))
    return prior if prior is not None else build_decay_prior(method, family)


def fit_decays(method: str, shape: str) -> tuple[float, ...]:
    """The ``shape`` decays of ``method``'s profiles, fitted now, flat-capped and sorted."""
    return tuple(sorted(min(1.0, fit_profile(shape, p.data()).decay) for p in _profiles_of(method)))


def build_decay_prior(
    method: str, family: str | None = None, decays: tuple[float, ...] | None = None
) -> DecayPrior:
    """The decay prior of ``method`` for ``family`` with ``decays`` (default: fitted now;
    ``decay_prior`` reads the ones ``PACKAGE_PRIORS`` fitted once)."""
    if method not in METHODS:
        raise ValueError(f"unknown draft method {method!r}; known: {', '.join(METHODS)}")
    profiles = _profiles_of(method)
    shape = family or PRIOR_FAMILY[profile_group(method)]
    if shape not in PRIOR_FAMILIES:
        raise ValueError(f"no decay prior for shape {shape!r}")
    if decays is None:
        decays = fit_decays(method, shape)
    note = (
        POOLED_METHODS[method] + ": every method's profiles pooled"
        if method in POOLED_METHODS
        else f"{PRIOR_FAMILY[profile_group(method)]} has the lowest held-out error on them"
    )
    return DecayPrior(
        method, shape, tuple(decays), tuple(dict.fromkeys(p.source for p in profiles)), note
    )


#: Profiles shorter than this cannot show how a shape fitted to positions 1-2 misses later.
SHAPE_ERROR_MIN_POSITIONS = 4
#: The grid of log rho a cross-run series is solved on (least squares in accept length).
_LOG_RHO_GRID = np.linspace(-1.0, 1.0, 4001)


@dataclass(frozen=True, slots=True)
class CrossRunRho:
    """The log rho per position past the fitted num_steps that best matches one cross-run
    series' longer accept lengths, with its standard error from their printed precision."""

    name: str
    source: str
    log_rho: float
    stderr: float


def _cross_run_rates(
    series: MultiKSeries, num_steps: int, prior: DecayPrior
) -> tuple[np.ndarray, int]:
    """(rates (num_steps,), fitted depth) of ``series`` fitted the way ``calibrate`` does:
    the method's prior family to its accept lengths at num_steps <= 2, or one accept length
    anchoring the prior's median decay."""

    used = series.fitted_num_steps
    if len(used) >= 2:
        data = ProfileData(
            num_steps=tuple(used),
            accept_length=tuple(series.accept_lengths[k] for k in used),
            accept_length_sigma=(series.sigma(),) * len(used),
        )
        return fit_profile(prior.shape, data).rates(num_steps), max(used)
    k0 = used[0]
    g = shape_factors(prior.shape, prior.median, num_steps)
    a1 = scale_for_accept_length(series.accept_lengths[k0], g[:k0])
    return rates_for_positions(prior.shape, a1, prior.median, num_steps), k0


def cross_run_log_rho(series: MultiKSeries, prior: DecayPrior | None = None) -> CrossRunRho | None:
    """The series' log rho (None without a num_steps longer than the fitted ones): rates
    past the fitted depth multiplied by rho^(i - depth), rho chosen by weighted least
    squares of the longer accept lengths on a grid of step 5e-4; its standard error
    1 / sqrt(sum (dAL_k / dlog rho / sigma)^2) at the solution (the anchor's own error is
    left out). ``prior``: the decay prior of the series' method (default ``decay_prior``)."""
    kmax = max(series.accept_lengths)
    rates, depth = _cross_run_rates(series, kmax, prior or decay_prior(series.method))
    longer = [k for k in sorted(series.accept_lengths) if k > depth]
    if not longer:
        return None
    al = accept_lengths_by_k(tilted(rates, _LOG_RHO_GRID, depth))[:, np.array(longer) - 1]
    measured = np.array([series.accept_lengths[k] for k in longer])
    best = int(np.argmin(np.sum((al - measured) ** 2, axis=1)))
    j = min(max(best, 1), _LOG_RHO_GRID.size - 2)
    slope = (al[j + 1] - al[j - 1]) / (_LOG_RHO_GRID[j + 1] - _LOG_RHO_GRID[j - 1])
    info = float(np.sum((slope / series.sigma()) ** 2))
    stderr = 1.0 / np.sqrt(info) if info > 0 else float("inf")
    return CrossRunRho(series.name, series.source, float(_LOG_RHO_GRID[best]), float(stderr))


@dataclass(frozen=True)
class ShapeError:
    """How far real accept lengths stray from the method's shape past the fitted positions.

    Two kinds of evidence, one log rho each (rates past the fitted positions multiplied by
    rho^(i - fitted)):

    * **within-run** (``log_rhos``): for each published profile of the method with
      ``SHAPE_ERROR_MIN_POSITIONS`` or more positions, the family fitted to positions 1-2
      and the later conditional rates compared with the fit (least squares through the
      origin of their log ratio against the positions past the fit);
    * **cross-run** (``cross_run``): every series of accept lengths measured in separate
      runs at several num_steps (sim/binding/cross_run.py), fitted at num_steps <= 2 and
      solved for the rho of its longer ones (``cross_run_log_rho``), pooled over methods:
      how runs at different num_steps drift apart is a property of measuring across runs,
      and its evidence is too thin per method.

    The shape error is a random effect, log rho ~ Normal(``nominal``, ``sd``), estimated
    from the evidence of the kind the prediction needs:

    * across runs (the default: an answer at a num_steps other than the measured run's):
      the cross-run series alone, their mean and standard deviation with their measurement
      variance taken off (method of moments). Each series already carries its drafter's
      within-run deviation, so adding the within-run profiles would count that part twice;
      they mostly fall (position-1 rates move with num_steps, see
      sim/binding/cross_run.py), both sides are kept;
    * within one run (``cross_run_used`` False: later positions of the very run whose first
      positions were measured): the method's within-run profiles alone, which rise past
      position 2 about as often as they fall when pooled over requests.

    ``leave_out`` names a source whose cross-run series were left out (the validation
    report scores each source with the shape error estimated without it). Only the kind
    of evidence used is held (``shape_error`` fits only that one): ``log_rhos`` is empty
    across runs and ``cross_run`` within one.
    """

    method: str
    shape: str
    log_rhos: tuple[float, ...]
    cross_run: tuple[CrossRunRho, ...] = ()
    leave_out: str | None = None
    cross_run_used: bool = True

    #: The nominal log rho of a derived shape: the mean of the evidence (set when built).
    nominal: float = field(init=False, repr=False, compare=False)
    #: The random effect's standard deviation (0 without evidence; set when built).
    sd: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nominal", self._nominal())
        object.__setattr__(self, "sd", self._sd())

    def _evidence(self) -> np.ndarray:
        if self.cross_run_used:
            return np.array([c.log_rho for c in self.cross_run])
        return np.array(self.log_rhos)

    def _nominal(self) -> float:
        x = self._evidence()
        return float(np.mean(x)) if x.size else 0.0

    def _sd(self) -> float:
        x = self._evidence()
        if x.size < 2:
            return 0.0
        noise = (
            float(np.mean([c.stderr**2 for c in self.cross_run])) if self.cross_run_used else 0.0
        )
        return float(np.sqrt(max(float(np.var(x)) - noise, 0.0)))

    @property
    def reason(self) -> str:
        left = f", {self.leave_out} left out" if self.leave_out else ""
        evidence = (
            f"the shortest runs of {len(self.cross_run)} published series measured at "
            f"several num_steps{left}"
            if self.cross_run_used
            else f"positions 1-2 of {len(self.log_rhos)} published {self.method} profiles"
        )
        return (
            f"shape error past the measured positions: the {self.shape} shape fitted to "
            f"{evidence} misses the later rates by a factor rho per position, log rho mean "
            f"{self.nominal:+.3f}, sd {self.sd:.3f}"
        )


def shape_error(
    method: str,
    leave_out: str | None = None,
    *,
    cross_run: bool = True,
    priors: PackagePriors | None = None,
) -> ShapeError:
    """The shape error of ``method``'s prior family (see ``ShapeError``) from the evidence
    in ``priors`` (default ``PACKAGE_PRIORS``); ``leave_out``: a source whose cross-run
    series are not used; ``cross_run`` False: none of them."""
    table = PACKAGE_PRIORS if priors is None else priors
    shape = decay_prior(method, priors=table).shape
    if cross_run:
        kept = tuple(r for r in table.cross_run if r.source != leave_out)
        return ShapeError(method, shape, (), kept, leave_out, True)
    within = _within_run_log_rhos(method, shape)  # fitted now: the validation report's only
    return ShapeError(method, shape, within, (), leave_out, False)


def fit_cross_run_evidence(
    priors: Mapping[str, DecayPrior] | None = None,
) -> tuple[CrossRunRho, ...]:
    """Every cross-run series' log rho, fitted now with its method's decay prior
    (``priors`` by method; default: ``decay_prior``)."""
    by_method = priors or {m: decay_prior(m) for m in dict.fromkeys(s.method for s in CROSS_RUN)}
    return tuple(
        r for s in CROSS_RUN if (r := cross_run_log_rho(s, by_method[s.method])) is not None
    )


def _within_run_log_rhos(method: str, shape: str) -> tuple[float, ...]:
    """One log rho per published profile of ``method`` with ``SHAPE_ERROR_MIN_POSITIONS``
    or more positions: ``shape`` fitted to positions 1-2, the later conditional rates'
    log ratio to the fit against the positions past it (least squares through the origin)."""
    out = []
    for p in _profiles_of(method):
        c = np.asarray(p.cumulative)
        if c.size < SHAPE_ERROR_MIN_POSITIONS:
            continue
        fit = fit_profile(shape, p.data().upto(3))
        observed = c / np.concatenate([[1.0], c[:-1]])
        predicted = fit.rates(c.size)
        i = np.arange(3, c.size + 1) - 2.0  # positions past the fitted two
        logs = np.log(observed[2:] / predicted[2:])
        out.append(float(np.sum(i * logs) / np.sum(i * i)))
    return tuple(out)


@dataclass(frozen=True)
class PackagePriors:
    """What the binder takes from the package's published data, fitted once, read-only.

    ``decay_priors``: the ``DecayPrior`` of every (method, family) in ``METHODS`` x
    ``PRIOR_FAMILIES``; ``cross_run``: every cross-run series' log rho
    (``fit_cross_run_evidence``, each with its method's default prior). The within-run
    evidence (``ShapeError``) is fitted when asked: only the validation report asks.
    """

    decay_priors: Mapping[tuple[str, str], DecayPrior]
    cross_run: tuple[CrossRunRho, ...]


def fit_package_priors() -> PackagePriors:
    """Fit every decay prior and the shape error's evidence from ``PROFILES`` and
    ``CROSS_RUN`` now: each profile once per family, its decay shared by every group that
    holds it (``fit_decays`` of the group: the same fits, flat-capped and sorted; the
    methods without profiles of their own share the pooled ones)."""
    fitted = {
        (p, f): min(1.0, fit_profile(f, p.data()).decay) for p in PROFILES for f in PRIOR_FAMILIES
    }
    groups = {profile_group(m): m for m in METHODS}
    decays = {
        (g, f): tuple(sorted(fitted[(p, f)] for p in _profiles_of(m)))
        for g, m in groups.items()
        for f in PRIOR_FAMILIES
    }
    table = {
        (m, f): build_decay_prior(m, f, decays[(profile_group(m), f)])
        for m in METHODS
        for f in PRIOR_FAMILIES
    }
    default = {m: table[(m, PRIOR_FAMILY[profile_group(m)])] for m in METHODS}
    return PackagePriors(MappingProxyType(table), fit_cross_run_evidence(default))


#: The priors every bind reads (``decay_prior``, ``shape_error``): a constant of the
#: package's data, fitted once when this module is first imported.
PACKAGE_PRIORS: PackagePriors = fit_package_priors()
