"""The cross-run evidence of the shape error: series of accept lengths measured in
separate runs at several num_steps, one log rho each, and the random effect they give."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.cross_run import CROSS_RUN, MultiKSeries
from sim.binding.priors import PROFILES, cross_run_log_rho, decay_prior, shape_error
from sim.model.shapes import rates_for_positions


def _series(first: float, decay: float, log_rho: float, ks=range(1, 8)) -> MultiKSeries:
    """Accept lengths of a step profile tilted by ``log_rho`` past position 2, exactly."""
    kmax = max(ks)
    rates = rates_for_positions("step", first, decay, kmax)
    past = np.maximum(np.arange(1, kmax + 1) - 2, 0)
    rates = np.clip(rates * np.exp(log_rho * past), 0.0, 1.0)
    al = 1.0 + np.cumsum(np.cumprod(rates))
    return MultiKSeries(
        "synthetic", "eagle3", "synthetic", "", {k: float(al[k - 1]) for k in ks}, decimals=6
    )


@settings(max_examples=25, deadline=None)
@given(
    first=st.floats(0.5, 0.9),
    decay=st.floats(0.8, 1.0),
    log_rho=st.floats(-0.3, 0.0),
)
def test_a_known_tilt_is_recovered(first: float, decay: float, log_rho: float) -> None:
    """Two accept lengths fit the step shape exactly; the longer ones give back the tilt
    (to the grid's step, 5e-4), with a standard error from the printed precision."""
    assert decay_prior("eagle3").shape == "step"
    got = cross_run_log_rho(_series(first, decay, log_rho))
    assert got is not None
    assert got.log_rho == pytest.approx(log_rho, abs=1e-3)
    assert 0.0 < got.stderr < 1e-3


def test_a_series_without_longer_runs_gives_no_evidence() -> None:
    assert cross_run_log_rho(_series(0.7, 0.9, -0.1, ks=(1, 2))) is None


def test_every_cross_run_series_is_cited_and_none_is_a_prior_profile() -> None:
    profiles = {p.source for p in PROFILES}
    for s in CROSS_RUN:
        assert s.source.startswith("https://")
        assert s.source not in profiles
        assert len(s.accept_lengths) >= 2


def test_the_shape_error_is_the_cross_run_mean_and_spread() -> None:
    """Across runs: mean and standard deviation of the series' log rhos, their measurement
    variance taken off; within one run: the method's within-run profiles alone."""
    error = shape_error("eagle3")
    rhos = np.array([c.log_rho for c in error.cross_run])
    se2 = np.mean([c.stderr**2 for c in error.cross_run])
    assert len(error.cross_run) == len(CROSS_RUN)
    assert error.nominal == pytest.approx(rhos.mean())
    assert error.sd == pytest.approx(np.sqrt(rhos.var() - se2))
    assert error.nominal < 0.0  # runs at longer num_steps fall below the short runs' shape
    within = shape_error("eagle3", cross_run=False)
    assert within.nominal == pytest.approx(np.mean(within.log_rhos))
    assert within.sd == pytest.approx(np.std(within.log_rhos))


@pytest.mark.parametrize("source", sorted({s.source for s in CROSS_RUN}))
def test_leaving_a_source_out_drops_exactly_its_series(source: str) -> None:
    kept = shape_error("mtp", leave_out=source).cross_run
    assert all(c.source != source for c in kept)
    assert len(kept) == sum(s.source != source for s in CROSS_RUN)
    assert source in shape_error("mtp", leave_out=source).reason
