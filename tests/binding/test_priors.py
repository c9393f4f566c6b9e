"""The decay priors: published profiles, the held-out family choice, their ranges."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.priors import (
    METHODS,
    PRIOR_FAMILIES,
    PRIOR_FAMILY,
    PROFILES,
    decay_prior,
    family_holdout,
)
from sim.scenario.sections.acceptance import AcceptanceSpec


def test_profiles_are_cited_cumulative_rates() -> None:
    for p in PROFILES:
        assert p.source.startswith("https://"), p.name
        c = np.array(p.cumulative)
        assert np.all((c > 0) & (c <= 1)) and np.all(np.diff(c) <= 0), p.name


@pytest.mark.parametrize("group", ["eagle3", "mtp", "generic"])
def test_prior_family_is_the_held_out_choice(group: str) -> None:
    """PRIOR_FAMILY caches the held-out comparison; recompute it."""
    errors = family_holdout(group)
    key = "pooled" if group == "generic" else group
    assert PRIOR_FAMILY[key] == min(PRIOR_FAMILIES, key=lambda f: errors[f])


@pytest.mark.parametrize("method", METHODS)
def test_priors_run_from_a_decay_to_flat(method: str) -> None:
    prior = decay_prior(method)
    assert all(0 < d <= 1.0 for d in prior.decays)
    assert prior.low <= prior.median <= prior.high <= 1.0
    assert prior.low < 1.0  # published profiles decay
    assert prior.sources and method in prior.reason


def test_schema_names_every_method() -> None:
    assert set(AcceptanceSpec.model_fields["method"].annotation.__args__) == set(METHODS)
