"""The stored decay-prior fits are the fits of the data and code as they are now.

sim/scenario/prior_fits_table.py is generated (``make prior-fits``). A process uses it only
when its digest matches the sources it was fitted from, so a stale table costs time, never
a wrong answer; these tests keep it from going stale unnoticed, and check that it holds
what a fresh fit gives (floating-point agreement across platforms, 1e-12 relative).
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.scenario import prior_fits, prior_fits_table, priors


def test_the_stored_table_is_current() -> None:
    assert prior_fits.source_digest() == prior_fits_table.SOURCE_DIGEST, (
        "a profile, series or fit changed since the table was generated: run make prior-fits"
    )


@pytest.mark.parametrize("method", priors.METHODS)
@pytest.mark.parametrize("family", priors.PRIOR_FAMILIES)
def test_stored_decays_are_a_fresh_fit(method: str, family: str) -> None:
    stored = prior_fits_table.DECAYS[priors.profile_group(method), family]
    fresh = priors.fit_decays(method, family)
    np.testing.assert_allclose(stored, fresh, rtol=1e-12, atol=0)


def test_stored_cross_run_evidence_is_a_fresh_fit() -> None:
    fresh = priors.fit_cross_run_evidence()
    stored = prior_fits_table.CROSS_RUN_RHOS
    assert [(r.name, r.source) for r in fresh] == [row[:2] for row in stored]
    np.testing.assert_allclose(
        [row[2:] for row in stored], [(r.log_rho, r.stderr) for r in fresh], rtol=1e-12, atol=0
    )


def test_the_priors_a_process_uses_are_the_stored_ones() -> None:
    assert priors._stored_fits() is prior_fits_table
    for method in priors.METHODS:
        built = priors.build_decay_prior(method, stored=False)
        used = priors.decay_prior(method)
        assert used.shape == built.shape and used.sources == built.sources
        np.testing.assert_allclose(used.decays, built.decays, rtol=1e-12, atol=0)


def test_a_changed_source_is_never_answered_from_the_table(monkeypatch) -> None:
    monkeypatch.setattr(prior_fits, "source_digest", lambda: "edited")
    priors._stored_fits.cache_clear()
    try:
        assert priors._stored_fits() is None
        fresh = priors.build_decay_prior("eagle3", stored=True)  # asks for the table
        assert fresh.decays == priors.fit_decays("eagle3", fresh.shape)
    finally:
        priors._stored_fits.cache_clear()


def test_the_generated_text_is_the_table() -> None:
    """What ``make prior-fits`` writes, read back, holds the stored values."""
    namespace: dict = {}
    exec(compile(prior_fits.table_text(), "prior_fits_table", "exec"), namespace)
    assert namespace["SOURCE_DIGEST"] == prior_fits_table.SOURCE_DIGEST
    assert namespace["DECAYS"].keys() == prior_fits_table.DECAYS.keys()
    for key, values in namespace["DECAYS"].items():
        np.testing.assert_allclose(values, prior_fits_table.DECAYS[key], rtol=1e-12, atol=0)
