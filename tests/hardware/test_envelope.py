"""The critical path's upper envelope is the critical path."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.hardware.envelope import envelope_of, upper_envelope
from sim.hardware.launch import critical_path_ms, kernel_schedule


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 8),
    kernels=st.integers(4, 20),
    allreduce_ms=st.floats(0.0, 0.2),
    launch_ms=st.floats(0.0, 0.02),
    x=st.lists(st.floats(0.0, 50.0), min_size=1, max_size=20),
)
def test_envelope_equals_the_critical_path(layers, kernels, allreduce_ms, launch_ms, x):
    schedule = kernel_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=allreduce_ms,
        tensor_parallel=True,
        launch_ms=launch_ms,
    )
    env = envelope_of(schedule)
    expected = np.array([critical_path_ms(schedule, v) for v in x])
    np.testing.assert_allclose(env.at(np.array(x)), expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 6),
    kernels=st.integers(4, 16),
    launch_ms=st.floats(0.0, 0.02),
    every=st.integers(1, 9),
    sync_ms=st.floats(0.0, 0.05),
    x=st.lists(st.floats(0.0, 50.0), min_size=1, max_size=12),
)
def test_envelope_with_host_syncs_equals_the_critical_path(
    layers, kernels, launch_ms, every, sync_ms, x
):
    """Host synchronisations split a pass into stretches: the envelope is their sum."""
    base = kernel_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=0.05,
        tensor_parallel=True,
        launch_ms=launch_ms,
    )
    syncs = np.zeros(base.num_kernels, dtype=bool)
    syncs[::every] = True
    schedule = replace(base, host_sync=syncs, sync_ms=sync_ms)
    expected = np.array([critical_path_ms(schedule, v) for v in x])
    got = envelope_of(schedule).at(np.array(x))
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 3)), min_size=1, max_size=30),
    x=st.lists(st.floats(0.0, 20.0), min_size=1, max_size=10),
)
def test_envelope_of_arbitrary_lines(lines, x):
    a = np.array([p[0] for p in lines])
    f = np.array([p[1] for p in lines])
    env = upper_envelope(a, f)
    xs = np.array(x)
    expected = np.max(a[:, None] + f[:, None] * xs[None, :], axis=0)
    np.testing.assert_allclose(env.at(xs), expected, rtol=1e-9, atol=1e-9)
    assert np.all(np.diff(env.slopes) > 0) and env.starts[0] == 0.0


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 3)), min_size=2, max_size=30),
    x=st.lists(st.floats(0.0, 20.0), min_size=2, max_size=40),
    spread=st.floats(0.0, 1e-3),
)
def test_an_array_on_one_segment_is_each_value_alone(lines, x, spread):
    """Values on one envelope segment (the arrays of a serving block, whose compute
    times differ by little) take that segment's lines as scalars: the same bits as one
    value at a time, and as values spread over several segments."""
    env = upper_envelope(np.array([p[0] for p in lines]), np.array([p[1] for p in lines]))
    near = x[0] + spread * np.arange(len(x))  # mostly one segment
    for xs in (near, np.array(x)):
        one_by_one = np.array([env.at_scalar(float(v)) for v in xs])
        assert np.array_equal(env.at(xs), one_by_one)


def test_a_compute_curve_between_its_points_is_the_interpolation():
    """All work inside the points: ``ComputeCurve.at`` is the interpolation, the same
    bits as value by value (which go through the points' ends too)."""
    from sim.hardware.compute_curve import ComputeCurve

    curve = ComputeCurve(np.array([1.0, 2.5, 4.0]), np.array([3.0, 5.0, 9.5]))
    rng = np.random.default_rng(7)
    for xs in (rng.uniform(1.0, 4.0, 50), rng.uniform(0.0, 6.0, 50), np.array([1.0, 4.0])):
        assert np.array_equal(curve.at(xs), [curve.at_scalar(float(v)) for v in xs])


def test_a_compute_curve_outside_its_points_is_each_end_line():
    """All work below the first point (a small batch's drafter pass) or beyond the last
    (a large batch): ``ComputeCurve.at`` takes that end's line alone, the same bits as
    value by value and as the values mixed with others."""
    from sim.hardware.compute_curve import ComputeCurve

    rng = np.random.default_rng(11)
    below, beyond, inside = rng.uniform(0.0, 0.99, 40), rng.uniform(4.01, 9.0, 40), [2.0]
    for points in ([1.0, 2.5, 4.0], [1.0]):
        work = np.array(points)
        curve = ComputeCurve(work, 2.0 * work + 1.0, slope=0.7)
        for xs in (below, beyond, np.array([0.5]), np.array([9.0, 9.0])):
            scalar = [curve.at_scalar(float(v)) for v in xs]
            assert np.array_equal(curve.at(xs), scalar)
            mixed = curve.at(np.concatenate([xs, inside, below[:1], beyond[:1]]))
            assert np.array_equal(mixed[: xs.size], scalar)


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.tuples(st.integers(-6, 6), st.integers(0, 5)), min_size=1, max_size=40),
    scale=st.sampled_from([1.0, 0.1, 1e-3]),
)
def test_lines_of_descending_slopes_take_the_sorted_envelope_bit_for_bit(lines, scale):
    """A stretch's lines come in descending slopes (the compute share still to run): their
    envelope is taken without sorting, and it is the sorted path's, bit for bit, with runs
    of equal slopes, ties at x = 0 and lines through one point (small integers make them
    common)."""
    from sim.hardware.envelope import _envelope_by_sort, _envelope_of_descending

    a = np.array([v for v, _ in lines], dtype=float) * scale
    f = np.sort(np.array([s for _, s in lines], dtype=float))[::-1] * scale
    fast, sorted_ = _envelope_of_descending(a, f), _envelope_by_sort(a, f)
    for got, want in zip(
        (fast.intercepts, fast.slopes, fast.starts),
        (sorted_.intercepts, sorted_.slopes, sorted_.starts),
        strict=True,
    ):
        assert got.tobytes() == want.tobytes()


def test_a_real_passs_envelope_is_the_sorted_one_bit_for_bit():
    """The eager 61-layer pass of the serving scenario, at prompt lengths from 1 to 8,000
    tokens: every stretch's envelope is the sorted path's, bit for bit."""
    from sim.binding.decompose import scenario_hardware
    from sim.hardware.envelope import _envelope_by_sort, _envelope_of_descending
    from sim.hardware.passes import PassShape, pass_schedule
    from sim.scenario.load import load_scenario
    from tests.conftest import ROOT

    scenario = load_scenario(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
    hw = scenario_hardware(scenario)
    for tokens in (1, 7, 300, 2048, 8000):
        for graphed in (False, True):
            shape = PassShape("prefill", tokens, hw.geom.layers, graphed)
            schedule, _, _ = pass_schedule(shape, hw.current, hw.geom)
            for a, f in schedule.stretch_terms():
                fast, sorted_ = _envelope_of_descending(a, f), _envelope_by_sort(a, f)
                assert fast.intercepts.tobytes() == sorted_.intercepts.tobytes()
                assert fast.slopes.tobytes() == sorted_.slopes.tobytes()
                assert fast.starts.tobytes() == sorted_.starts.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 6),
    kernels=st.integers(8, 16),  # piecewise: 2+ compute kernels after the projection
    launch_ms=st.floats(0.0, 0.02),
    mode=st.sampled_from(["graphed", "eager", "piecewise"]),
    unfused=st.integers(0, 3),
    syncs=st.integers(0, 2),
    allreduce_ms=st.lists(st.floats(0.0, 5.0), min_size=1, max_size=4),
)
def test_a_schedule_given_its_allreduce_time_afterwards_is_the_one_built_with_it(
    layers, kernels, launch_ms, mode, unfused, syncs, allreduce_ms
):
    """A pass's kernels are built once with all-reduces of 0 ms and each token count sets
    their time (``with_allreduce_ms``): its stretch terms and envelope are the schedule
    built with that time, bit for bit (the same arrays, the same additions). Schedules
    with unfused head kernels (fixed times off the all-reduces), host syncs (several
    stretches), graphed, eager and piecewise."""
    from sim.hardware.eager import EagerCosts, eager_schedule

    costs = EagerCosts(kernel_us=launch_ms * 1e3, syncs_per_layer=syncs)
    extra = {"attention_kernels": int(mode == "piecewise"), "unfused_kernels": unfused}
    if mode != "eager":
        extra["unfused_kernels"] = 0
    kwargs = {"layers": layers, "kernels_per_layer": kernels, "allreduces_per_layer": 2}
    base = eager_schedule(
        **kwargs, allreduce_ms=0.0, tensor_parallel=True, costs=costs, mode=mode, **extra
    )
    for ms in allreduce_ms:
        built = eager_schedule(
            **kwargs, allreduce_ms=ms, tensor_parallel=True, costs=costs, mode=mode, **extra
        )
        got, want = base.with_allreduce_ms(ms).stretch_terms(), built.stretch_terms()
        assert len(got) == len(want)
        for (a, f), (wa, wf) in zip(got, want, strict=True):
            assert a.tobytes() == wa.tobytes() and f.tobytes() == wf.tobytes()
        fast, slow = envelope_of(base.with_allreduce_ms(ms)), envelope_of(built)
        assert fast.intercepts.tobytes() == slow.intercepts.tobytes()
        assert fast.starts.tobytes() == slow.starts.tobytes()


def test_a_real_passs_terms_are_its_schedules_at_every_prompt_length():
    """The serving scenario's passes (the target's 61 layers and the drafter's one, eager
    and graphed) at prompt lengths 1-4,096: the envelope from the kernels and the
    all-reduce time is the one of the whole schedule, bit for bit."""
    from sim.binding.decompose import scenario_hardware
    from sim.hardware.passes import PassShape, pass_allreduce, pass_kernels, pass_schedule
    from sim.scenario.load import load_scenario
    from tests.conftest import ROOT

    scenario = load_scenario(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
    hw = scenario_hardware(scenario)
    for layers in (hw.geom.layers, hw.geom.draft_layers):
        for graphed in (False, True):
            kernels = pass_kernels(PassShape("prefill", 1, layers, graphed), hw.current, hw.geom)
            for tokens in (*range(1, 300), *range(300, 4097, 37)):
                shape = PassShape("prefill", tokens, layers, graphed)
                schedule, allreduce, _ = pass_schedule(shape, hw.current, hw.geom)
                assert pass_allreduce(shape, hw.current, hw.geom)[0] == allreduce
                fast = envelope_of(kernels.with_allreduce_ms(allreduce.us / 1000.0))
                slow = envelope_of(schedule)
                for got, want in zip(
                    (fast.intercepts, fast.slopes, fast.starts),
                    (slow.intercepts, slow.slopes, slow.starts),
                    strict=True,
                ):
                    assert got.tobytes() == want.tobytes()
