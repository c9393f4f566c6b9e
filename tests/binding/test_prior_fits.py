"""The decay priors and the shape error's evidence are fitted from the published profiles
once, when sim/binding/priors.py is imported, into one read-only ``PACKAGE_PRIORS``.

There is no stored table: the fit of the shipped data is made in each process, so an
edited profile, series or fitting routine is always what a run answers from.
"""

from __future__ import annotations

import dataclasses

import pytest

from sim.binding import priors


def test_a_prior_is_fitted_once_per_process() -> None:
    assert priors.decay_prior("eagle3") is priors.decay_prior("eagle3")
    assert priors.decay_prior("eagle3") is priors.decay_prior("eagle3", "step")


def test_the_prior_a_process_uses_is_the_fit_of_the_published_profiles() -> None:
    for method in priors.METHODS:
        used = priors.decay_prior(method)
        assert used.decays == priors.fit_decays(method, used.shape)
    assert priors.fit_package_priors() == priors.PACKAGE_PRIORS


def test_methods_without_profiles_share_the_pooled_fits() -> None:
    pooled = [m for m in priors.METHODS if m in priors.POOLED_METHODS]
    assert pooled
    first = priors.decay_prior(pooled[0])
    for method in pooled[1:]:
        assert priors.decay_prior(method).decays == first.decays


def test_the_package_priors_are_read_only() -> None:
    table = priors.PACKAGE_PRIORS
    with pytest.raises(TypeError):
        table.decay_priors[("eagle3", "step")] = priors.decay_prior("mtp")  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.cross_run = ()  # type: ignore[misc]


def test_the_shape_error_reads_the_priors_it_is_given() -> None:
    """Passed down, not looked up: without cross-run evidence the shape error is 0."""
    empty = dataclasses.replace(priors.PACKAGE_PRIORS, cross_run=())
    assert priors.shape_error("eagle3").cross_run
    error = priors.shape_error("eagle3", priors=empty)
    assert error.cross_run == () and error.nominal == 0.0 and error.sd == 0.0


def test_unknown_methods_and_families_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown draft method"):
        priors.decay_prior("medusa")
    with pytest.raises(ValueError, match="no decay prior for shape"):
        priors.decay_prior("eagle3", "flat")
