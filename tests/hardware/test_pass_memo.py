"""The hardware model's memos (sim/hardware/passes.py): the same answers as computing
afresh, keyed by every field of the hardware point, and each distinct pass worked out once
however many times a study re-validates its scenario."""

from __future__ import annotations

import pytest

import sim.hardware.launch as launch
import sim.hardware.passes as passes
from sim.binding.bound import bind
from sim.errors import SpecsimError
from sim.hardware.eager import calibrate_kernel_us
from sim.hardware.interconnects import PRESETS, InlineInterconnect, resolve_interconnect
from sim.hardware.launch import calibrate_compute_ms
from sim.hardware.passes import (
    Geometry,
    HardwarePoint,
    PassShape,
    calibrate_launch_us,
    calibrate_pass,
    compose_pass,
    pass_schedule,
)
from sim.scenario.load import load_scenario
from sim.studies.acceptance_lever import acceptance_levers
from tests.conftest import SEED

GEOM = Geometry(61, 1, 7168, 28, 2, 2)
VERIFY = PassShape("verify", 3, 61, False)


def _clear() -> None:
    for memo in (passes._compose_pass, passes._calibrated_compute_ms, passes._launch_us):
        memo.cache_clear()


def _point(interconnect=None, launch_us: float = 10.0) -> HardwarePoint:
    return HardwarePoint(interconnect or PRESETS["pcie-gen4"], 8, None, False, launch_us)


def test_memoised_answers_are_the_ones_computed_afresh():
    _clear()
    hw = _point()
    schedule = pass_schedule(VERIFY, hw, GEOM)[0]
    for _ in range(2):  # a miss, then a hit
        assert calibrate_pass(VERIFY, hw, GEOM, 30.0, "f") == calibrate_compute_ms(schedule, 30.0)
        assert compose_pass(VERIFY, hw, GEOM, 9.5, "x") == passes._compose_pass.__wrapped__(
            VERIFY, hw, GEOM, 9.5, "x"
        )

        def schedule_for(kernel_us: float):
            return pass_schedule(VERIFY, hw.with_launch_us(kernel_us), GEOM)[0]

        assert calibrate_launch_us(VERIFY, hw, GEOM, 12.0, 30.0) == calibrate_kernel_us(
            schedule_for, 12.0, 30.0
        )


def test_interconnects_sharing_a_name_are_not_taken_as_one():
    """The point's hash stands the interconnect's name for it; equality compares every
    field, so an inline interconnect of the same name with other figures is another key."""
    _clear()
    slow = resolve_interconnect("link", {"link": InlineInterconnect(based_on="pcie-gen4")})
    fast = resolve_interconnect(
        "link", {"link": InlineInterconnect(based_on="pcie-gen4", bus_bandwidth_gbps=400.0)}
    )
    a, b = _point(slow), _point(fast)
    assert hash(a) == hash(b) and a != b
    shape = PassShape("verify", 512, 61, True)  # a message large enough for bandwidth to show
    comm = [compose_pass(shape, hw, GEOM, 5.0, "x").comm_ms for hw in (a, b)]
    assert comm[0] > comm[1]
    assert comm == [
        passes._compose_pass.__wrapped__(shape, hw, GEOM, 5.0, "x").comm_ms for hw in (a, b)
    ]


def test_errors_are_raised_on_every_call():
    _clear()
    for _ in range(2):
        with pytest.raises(SpecsimError, match="is less than the modelled"):
            calibrate_pass(VERIFY, _point(), GEOM, 0.5, "timing.verify_ms")


def test_a_search_calibrates_the_seed_launch_once_over_its_draft_lengths(monkeypatch):
    """The seed's ungraphed verify fixes the per-kernel CPU cost; the search validates the
    scenario at k = 1..16 and binds each, where only the draft extend's token count moves:
    one launch calibration (16 before the memo), and each distinct pass calibrated once."""
    seed = load_scenario(SEED)
    _clear()
    scale_calls, compute_calls = [], []
    scale, compute = launch.calibrate_cpu_scale, launch.calibrate_compute_ms

    def counted_scale(*args):
        scale_calls.append(args)
        return scale(*args)

    def counted_compute(schedule, measured_ms):
        compute_calls.append((schedule.num_kernels, float(schedule.fixed_ms.sum()), measured_ms))
        return compute(schedule, measured_ms)

    monkeypatch.setattr(passes, "calibrate_cpu_scale", counted_scale)
    monkeypatch.setattr(passes, "calibrate_compute_ms", counted_compute)
    for lever in acceptance_levers(seed, range(1, 17)).values():
        bind(lever.base)
    assert len(scale_calls) == 1
    assert len(compute_calls) == len(set(compute_calls))
    # the decode, the draft step and the draft extend over k + 1 tokens at each k
    assert len(compute_calls) == 2 + 16
