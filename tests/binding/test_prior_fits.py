"""The decay priors are fitted from the published profiles when a process first asks, once.

There is no stored table: a fit of the shipped data is made on first use and cached, so an
edited profile, series or fitting routine is always what a run answers from.
"""

from __future__ import annotations

from sim.binding import priors


def test_a_prior_is_fitted_once_per_process() -> None:
    assert priors.decay_prior("eagle3") is priors.decay_prior("eagle3")


def test_the_prior_a_process_uses_is_the_fit_of_the_published_profiles() -> None:
    for method in priors.METHODS:
        used = priors.decay_prior(method)
        assert used.decays == priors.fit_decays(method, used.shape)


def test_methods_without_profiles_share_the_pooled_fits() -> None:
    pooled = [m for m in priors.METHODS if m in priors.POOLED_METHODS]
    assert pooled
    first = priors.decay_prior(pooled[0])
    for method in pooled[1:]:
        assert priors.decay_prior(method).decays == first.decays
