"""Acceptance-metric conversions: by hand, round trips, and the vLLM reference profile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli.group import cli_error
from sim.errors import SpecsimError
from sim.model import metrics


def test_vllm_reference_profile():
    # vLLM test_acceptance_length, Llama-3.1-8B + EAGLE-3, K=3: AL 2.60 from cumulative rates
    forms = metrics.from_cumulative([0.7296, 0.5208, 0.3545])
    assert forms.accept_length == pytest.approx(1 + 0.7296 + 0.5208 + 0.3545)
    assert forms.accept_length == pytest.approx(2.60, abs=0.01)
    np.testing.assert_allclose(
        forms.per_position, [0.7296, 0.5208 / 0.7296, 0.3545 / 0.5208], rtol=1e-12
    )
    assert forms.draft_acceptance_rate == pytest.approx((0.7296 + 0.5208 + 0.3545) / 3)
    assert forms.sglang_accept_rate == pytest.approx(forms.accept_length / 4)
    assert forms.assumption is None


def test_marginal_numbers_say_they_assume_equal_rates():
    for forms in (
        metrics.from_accept_length(2.0, 2),
        metrics.from_draft_acceptance_rate(0.5, 2),
        metrics.from_sglang_accept_rate(2.0 / 3.0, 2),
    ):
        assert forms.assumption == metrics.EQUAL_RATES
        assert forms.accept_length == pytest.approx(2.0)
        assert forms.alpha == pytest.approx((5**0.5 - 1) / 2)
    assert metrics.from_alpha(0.6, 3).assumption is None


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=10))
def test_cumulative_round_trip(rates):
    forms = metrics.from_conditional(rates)
    back = metrics.from_cumulative(forms.cumulative)
    np.testing.assert_allclose(back.cumulative, forms.cumulative, atol=1e-12)
    assert back.accept_length == pytest.approx(forms.accept_length)


@given(st.floats(0.0, 1.0), st.integers(1, 12))
def test_marginal_round_trips_recover_alpha(alpha, k):
    forms = metrics.from_alpha(alpha, k)
    for back in (
        metrics.from_accept_length(forms.accept_length, k),
        metrics.from_draft_acceptance_rate(forms.draft_acceptance_rate, k),
        metrics.from_sglang_accept_rate(forms.sglang_accept_rate, k),
    ):
        assert back.accept_length == pytest.approx(forms.accept_length, abs=1e-9)
        assert back.alpha == pytest.approx(alpha, abs=1e-6)


def test_unreached_positions_get_rate_zero():
    forms = metrics.from_cumulative([0.5, 0.0, 0.0])
    assert forms.per_position == (0.5, 0.0, 0.0)


@pytest.mark.parametrize(
    ("call", "source"),
    [
        (lambda: metrics.from_cumulative([0.5, 0.6]), "--cumulative"),
        (lambda: metrics.from_accept_length(3.5, 2), "--accept-length"),
        (lambda: metrics.from_accept_length(0.5, 2), "--accept-length"),
        (lambda: metrics.from_draft_acceptance_rate(1.2, 2), "--draft-acceptance-rate"),
        (lambda: metrics.from_sglang_accept_rate(0.2, 2), "--sglang-accept-rate"),
        (lambda: metrics.from_alpha(-0.1, 2), "--alpha"),
        (lambda: metrics.from_alpha(0.5, 0), "--num-steps"),
    ],
)
def test_out_of_range_inputs_name_their_option(call, source):
    """The library names its parameter; the CLI shows it as the flag that sets it."""
    with pytest.raises(SpecsimError) as err:
        call()
    assert err.value.source is None
    assert cli_error(err.value).source == source
