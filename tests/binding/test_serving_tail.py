"""Beyond its last measured point a pass grows at most at the kernel slope, so a tree's
verify over batch x draft tokens does not extrapolate a steep small-batch segment."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.closed_form import pass_times
from sim.binding.serving_cost import serving_cost
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides

SCENARIO = "scenarios/llama31-8b-1xh100-eagle3.toml"


def _cost(slope: float | None):
    base = load_scenario(SCENARIO)
    b1 = pass_times(base).decode_ms
    # a steep measured segment: 8 users take 1.6x the batch-1 decode (host work, launches)
    point = {"kind": "decode", "batch": 8, "ms": 1.6 * b1, "source": "test"}
    sets = {"timing.points": [point]}
    if slope is not None:
        sets["serving.kernel_slope"] = slope
    sc = with_overrides(base, sets)
    return serving_cost(
        bind(sc),
        kv_bytes_per_token=sc.model.kv_bytes_per_token or 0.0,
        attention_flops_per_pair=sc.model.attention_flops_per_pair or 0.0,
        reference_context_tokens=sc.timing.context_tokens or 0.0,
    )


@pytest.mark.parametrize("slope", [None, 0.5, 1.3])
def test_growth_beyond_the_last_point_is_capped_at_the_kernel_slope(slope):
    curve = _cost(slope).curves.decode.curve
    low, high = curve.end_slopes
    assert low > 1.0  # the measured segment is steeper than the kernels
    assert high == pytest.approx(1.0 if slope is None else min(slope, low), rel=1e-12)


def test_a_wide_verify_grows_from_the_last_point_at_the_cap():
    cost = _cost(None)
    verify = cost.curves.verify
    zero = np.array([0.0])
    # 32 users verifying 16 draft tokens each: work far beyond the decode's 8 tokens
    wide = verify.work_ms(512, zero, zero, sequences=32)[0]
    last = verify.curve.work_ms[-1]
    grown = verify.compute_ms(512, zero, zero, sequences=32)[0]
    at_last = verify.curve.at(np.array([last]))[0]
    assert grown - at_last == pytest.approx(1.0 * (wide - last), rel=1e-9)
