"""The held-out acceptance cases and the MoE growth cases of the validation report."""

from __future__ import annotations

import numpy as np

from sim.binding.priors import PROFILES, shape_error
from sim.validation import data as pub
from sim.validation.acceptance_cases import calibrate_series, multi_k_cases
from sim.validation.growth_cases import growth_cases


def test_at_least_four_public_multi_k_sources_none_in_the_priors() -> None:
    sources = {s.source for s in pub.MULTI_K}
    assert len(sources) >= 4
    assert not sources & {p.source for p in PROFILES}
    for s in pub.MULTI_K:
        assert s.source.startswith("https://") and len(s.accept_lengths) >= 2


def test_series_calibrate_on_short_drafts_and_score_the_rest() -> None:
    for s in pub.MULTI_K:
        cal, flat, used = calibrate_series(s)
        assert cal.scenario.acceptance.method == s.method
        assert max(used) <= max(pub.MULTI_K_CALIBRATE_UP_TO, min(s.accept_lengths))
        assert flat.scenario.acceptance is not None
    cases = multi_k_cases()
    scored = [r for c in cases for r in c.rows]
    assert len(scored) >= 30
    for r in scored:
        lo, hi = r.interval90
        assert lo <= r.predicted <= hi and r.flat is not None


def test_no_series_informs_its_own_score() -> None:
    """Each series is scored with the shape error estimated without its own source."""
    for s in pub.MULTI_K:
        cal, _, _ = calibrate_series(s)
        acc = cal.scenario.acceptance
        error = shape_error(s.method, leave_out=s.source)
        assert all(c.source != s.source for c in error.cross_run)
        assert acc.tilt == error.nominal
        assert cal.scenario.uncertainty.entries()["acceptance.tilt"].stderr == error.sd


def test_decay_aware_extrapolation_beats_flat_on_the_held_out_cases() -> None:
    rows = [r for c in multi_k_cases() for r in c.rows]
    new = np.median([abs(r.error) for r in rows])
    old = np.median([abs(r.flat_error) for r in rows])
    assert new < old


def test_growth_cases_score_what_they_did_not_fit() -> None:
    for case in growth_cases():
        assert case.rows and not set(case.calibrated_on) & {r.figure for r in case.rows}
