"""The scans and profile ranges of a load fit's non-smooth terms (sim/calibration/load_fit.py's
docstring): where the host work's scan starts the fit, the range the sweep allows it and
the speculative host factor (chi-square within the 90% threshold of the best), whether the
runs can fit the factor at all, and whether a second fit's basin replaces the first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import (
    CHI2_90,
    HOST_FIELD,
    HOST_SCAN_US,
    PROFILE_STEPS,
    SCALES,
    SPEC_FIELD,
    SPEC_SCAN,
)
from sim.calibration.lsq import Fit
from sim.calibration.tpot_model import is_speculative
from sim.scenario.schema import Scenario


def host_start(chi2: Callable[[dict[str, float]], float], base: dict[str, float]) -> float:
    """The scan's value (``HOST_SCAN_US``) of least chi-square, the other terms at
    ``base``; ``base``'s own host work unless a scanned value fits strictly better."""
    best, best_chi2 = base[HOST_FIELD], chi2(base)
    for host in HOST_SCAN_US:
        c = chi2({**base, HOST_FIELD: host})
        if c < best_chi2 * (1.0 - 1e-9):
            best, best_chi2 = host, c
    return best


def cut_range(allowed: tuple[float, float], plausible: tuple[float, float]) -> tuple[float, float]:
    """The range the sweep ``allowed`` cut to the ``plausible`` one; ``allowed`` alone when
    the two do not meet."""
    low, high = max(allowed[0], plausible[0]), min(allowed[1], plausible[1])
    return (low, high) if low <= high else allowed


def better_basin(other: Fit, fit: Fit, term: str = HOST_FIELD) -> bool:
    """True when ``other`` (the fit from the scan's value of ``term``) identifies ``term``
    (a nonzero standard error: a fit that ends on the kink where the host work starts to
    show has none) and lowers the chi-square beyond the 90% threshold of one parameter
    (scaled by ``other``'s reduced chi-square when that exceeds 1)."""
    if other.stderr.get(term, 0.0) <= 0.0:
        return False
    dof = other.n_obs - len(other.stderr)
    scale = max(1.0, other.chi2 / dof) if dof > 0 else 1.0
    return other.chi2 < fit.chi2 - CHI2_90 * scale


def host_profile_range(
    chi2: Callable[[dict[str, float]], float], at: dict[str, float], threshold: float
) -> tuple[float, float]:
    """The host work's values (us) whose chi-square, the other terms at ``at``, is within
    ``threshold``: the scanned ones, each end refined by bisection towards its rejected
    neighbour (``PROFILE_STEPS``); ``at``'s own value when no scanned one is."""
    return _scan_range(
        lambda host: chi2({**at, HOST_FIELD: host}) <= threshold, HOST_SCAN_US, at[HOST_FIELD]
    )


def _scan_range(
    ok: Callable[[float], bool], scan: Sequence[float], at: float
) -> tuple[float, float]:
    """The span of ``scan``'s values that are ``ok``, each end refined by bisection towards
    its rejected neighbour (``PROFILE_STEPS``); ``(at, at)`` when none is."""
    inside = [i for i, h in enumerate(scan) if ok(h)]
    if not inside:
        return (at, at)

    def refine(good: float, bad: float) -> float:
        for _ in range(PROFILE_STEPS):
            mid = 0.5 * (good + bad)
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return good

    first, last = inside[0], inside[-1]
    lo = scan[first] if first == 0 else refine(scan[first], scan[first - 1])
    hi = scan[last] if last == len(scan) - 1 else refine(scan[last], scan[last + 1])
    return (lo, hi)


def spec_factor_runs(scenario: Scenario, points: Sequence[LoadPoint]) -> tuple[str, str]:
    """(the runs that can fit the speculative host factor, "") when ``points`` hold plain
    and speculative runs each at two or more loads; else ("", why they cannot)."""
    loads = {
        kind: sorted({p.load for p in points if is_speculative(scenario, p) is kind})
        for kind in (True, False)
    }
    missing = [
        name for name, kind in (("plain", False), ("speculative", True)) if len(loads[kind]) < 2
    ]
    if missing:
        return "", (
            f"the sweep has no {' and no '.join(missing)} runs at two or more loads: the "
            "speculative runs' growth cannot separate it from the host work"
        )

    def say(kind: bool) -> str:
        n = sum(1 for p in points if is_speculative(scenario, p) is kind)
        return f"{n} {'speculative' if kind else 'plain'} runs at loads " + ", ".join(
            f"{b:g}" for b in loads[kind]
        )

    return f"{say(True)} and {say(False)}", ""


def least_over_host(
    chi2: Callable[[dict[str, float]], float], at: dict[str, float]
) -> tuple[float, float]:
    """The least chi-square over the host work and where (us), the other terms at ``at``:
    ``at``'s own host work and the scan ``HOST_SCAN_US``, the best of these refined by a
    bounded Brent search between its scanned neighbours."""
    scan = HOST_SCAN_US
    values = [chi2({**at, HOST_FIELD: h}) for h in scan]
    i = int(np.argmin(values))
    found = minimize_scalar(
        lambda h: chi2({**at, HOST_FIELD: float(h)}),
        bounds=(scan[max(i - 1, 0)], scan[min(i + 1, len(scan) - 1)]),
        method="bounded",
        options={"xatol": 1e-3 * SCALES[HOST_FIELD]},
    )
    return min((chi2(at), at[HOST_FIELD]), (values[i], scan[i]), (float(found.fun), float(found.x)))


def spec_profile_range(
    chi2: Callable[[dict[str, float]], float],
    at: dict[str, float],
    scale: float,
    memo: dict[float, tuple[float, float]],
) -> tuple[float, float]:
    """The speculative host factor's values whose chi-square, the host work re-fitted at
    each (``least_over_host``) and the other terms at ``at``, is within ``CHI2_90`` x
    ``scale`` of the least found (module docstring); ``memo`` (factor -> least chi-square
    and its host work, at ``at``) is read and filled."""

    def profile(f: float) -> float:
        if f not in memo:
            memo[f] = least_over_host(chi2, {**at, SPEC_FIELD: f})
        return memo[f][0]

    least = min(chi2(at), *(profile(f) for f in SPEC_SCAN))
    threshold = least + CHI2_90 * scale
    return _scan_range(lambda f: profile(f) <= threshold, SPEC_SCAN, at[SPEC_FIELD])
