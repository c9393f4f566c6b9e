"""A speculative-only batch-1 measurement on a base that derives its passes from its weights:
the target's decode at the default share of peak, the rest of the cycle per cycle, the share
written with its range (sim/calibration/speculative_split.py)."""

from __future__ import annotations

import pytest

from sim.binding.bind import pass_times
from sim.calibration.calibrate import calibrate, point_tok_s
from sim.calibration.measurements import Measurements, SpecPoint
from sim.calibration.speculative_split import (
    DECODE_EFFICIENCY_RANGE,
    DEFAULT_DECODE_EFFICIENCY,
    split_applies,
)
from sim.scenario.validate import scenario_from_dict

#: Llama-3.1-8B-sized shapes on one H100 (BF16): a roofline of about 4.8 ms at peak.
MODEL = {
    "name": "dense-8b",
    "layers": 32,
    "hidden_size": 4096,
    "layer_params": 218.1e6,
    "lm_head_params": 525.3e6,
    "draft_params": 0.4e9,
    "kv_bytes_per_token": 131072.0,
}


def _base(**hardware):
    return scenario_from_dict(
        {
            "name": "derived",
            "model": MODEL,
            "hardware": {"gpus": 1, "gpu": "H100", "interconnect": "nvlink4", **hardware},
            "timing": {"verify_cuda_graph": True},
            "speculation": {"num_steps": 3},
            "acceptance": {"alpha": 0.7},
        },
        source="test",
    )


#: A cycle of 1000 x 2.5 / 200 = 12.5 ms: far above the derived passes at any share.
POINT = SpecPoint(3, 2.5, 200.0, 2.0, 0.02, "bench.json")


def test_the_rule_applies_only_without_a_plain_figure_a_decode_or_named_fields():
    data = Measurements(points=(POINT,))
    assert split_applies(_base(), data, None)
    assert not split_applies(_base(), data, ("verify_ms",))
    assert not split_applies(_base(bandwidth_efficiency=0.7), data, None)
    assert not split_applies(_base(), Measurements(), None)


def test_the_decode_is_derived_at_the_default_share_and_the_rest_is_per_cycle():
    cal = calibrate(_base(), Measurements(points=(POINT,)))
    sc = cal.scenario
    assert DECODE_EFFICIENCY_RANGE[0] < DEFAULT_DECODE_EFFICIENCY < DECODE_EFFICIENCY_RANGE[1]
    assert sc.hardware.bandwidth_efficiency == pytest.approx(DEFAULT_DECODE_EFFICIENCY, rel=1e-3)
    assert sc.timing.decode_ms is None  # derived, not written
    assert sc.timing.cycle_overhead_ms > 0.0
    # the calibrated scenario reproduces the measured cycle (one figure, one parameter)
    assert point_tok_s(pass_times(sc), POINT, sc) == pytest.approx(POINT.tok_s, rel=1e-4)
    entry = sc.uncertainty.hardware["bandwidth_efficiency"]
    assert entry.resolved_origin == "assumed"
    # the share's 90% interval is the range: a normal of half-width / 1.645
    half = (DECODE_EFFICIENCY_RANGE[1] - DECODE_EFFICIENCY_RANGE[0]) / 2
    assert entry.stderr == pytest.approx(half / 1.6448536269514722, rel=1e-3)
    # a higher share makes a faster decode, so a larger overhead holds the cycle: correlated
    corr = sc.uncertainty.correlation
    assert corr is not None
    i = corr.fields.index("timing.cycle_overhead_ms")
    j = corr.fields.index("hardware.bandwidth_efficiency")
    assert corr.matrix[i][j] > 0.5
