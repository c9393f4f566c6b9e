"""The seed's eager verify under load: launch-bound while its GPU work is below the CPU's."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.decompose import scenario_hardware
from sim.binding.serving_cost import serving_cost
from sim.hardware.launch import critical_path_ms
from sim.hardware.passes import pass_schedule
from sim.scenario.load import load_scenario
from tests.conftest import SEED


def test_a_launch_bound_eager_verify_absorbs_a_batch_until_its_gpu_work_catches_up():
    """verify_compute = decode: the batch-1 verify's compute is the graphed decode's plus
    its growth, not the remainder of its 30 ms; so a batch costs only its launches (the
    same kernels) until the GPU work passes them, then grows with the decode's curve."""
    seed = load_scenario(SEED)
    hw = scenario_hardware(seed)
    verify = serving_cost(bind(seed)).curves.verify
    zero = np.array([0.0])

    def at(batch: int) -> float:
        return float(verify.pass_ms(3 * batch, zero, zero, sequences=batch)[0])

    assert at(1) == pytest.approx(30.0, rel=1e-9)
    # the anchor's compute is the decode-derived one (13.5 ms), not 30 ms less the floor
    compute = float(verify.compute_ms(3, zero, zero, sequences=1)[0])
    assert compute == pytest.approx(hw.compute_ms("verify", 3)[0], rel=1e-9)
    shape = hw.shape("verify", 3, hw.current)
    cpu_floor = critical_path_ms(pass_schedule(shape, hw.current, hw.geom)[0], 0.0)
    assert compute < cpu_floor - 10.0
    # 2-6 users ride on the launches (only their larger all-reduce messages cost more: the
    # skewed expert union keeps their GPU work below the launches); 8 users' just reaches them
    for batch in (2, 4, 6):
        assert at(1) <= at(batch) < at(1) + 0.05
    assert at(1) + 0.05 < at(8) < at(1) + 1.0
    # by 16 users the GPU work exceeds the 30 ms of launches and the pass grows
    assert at(32) > at(16) > at(1) + 1.0
