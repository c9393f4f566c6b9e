"""Batched pass physics: exact at measured points, growth from the physics it names."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from sim.binding.decompose import scenario_hardware
from sim.errors import SpecsimError
from sim.hardware.batched import GEMM_FLOP_EFFICIENCY, BatchedPass
from sim.hardware.calibrated_pass import calibrated_pass
from sim.hardware.compute_curve import ComputeCurve
from sim.hardware.experts import FusedMoeKernel
from sim.hardware.pass_physics import MeasuredPass, PassPhysics, padded_shape
from sim.hardware.pass_terms import PassTerms
from sim.hardware.passes import PassShape, pass_schedule
from sim.scenario.load import load_scenario
from tests.conftest import ROOT, SEED

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"


def physics(path, name="decode", graphed=True, kv=0.0, attn=0.0, sets=()):
    scenario = load_scenario(path, sets)
    hw = scenario_hardware(scenario)
    return PassPhysics(
        name=name,
        weights=hw.target_weights(),
        layers=hw.geom.layers,
        hardware=hw.current,
        geometry=hw.geom,
        graphed=graphed,
        kv_bytes_per_token=kv,
        attention_flops_per_pair=attn,
    )


def test_calibrated_pass_reproduces_every_measured_point():
    p = physics(SEED, kv=70_272.0)
    points = [
        MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed"),
        MeasuredPass(16, 16 * 2001.0, 16 * 2000.0, 19.0, "made-up shape check"),
        MeasuredPass(64, 64 * 2001.0, 64 * 2000.0, 30.0, "made-up shape check"),
    ]
    bp = calibrated_pass(p, points)
    for pt in points:
        assert float(bp.pass_ms(pt.tokens, pt.kv_tokens, pt.pairs)) == pytest.approx(
            pt.ms, rel=1e-12
        )
    # between points compute is linear in the work; beyond, the last slope (never negative:
    # ComputeCurve.end_slopes clamps a falling one at 0)
    c = bp.curve
    r = np.array([float(bp.work_ms(p.tokens, p.kv_tokens, p.pairs)) for p in points])
    mid = (r[0] + r[1]) / 2
    assert float(c.at(mid)) == pytest.approx((c.compute_ms[0] + c.compute_ms[1]) / 2)
    beyond = r[2] + 1.0
    slope = max(0.0, (c.compute_ms[2] - c.compute_ms[1]) / (r[2] - r[1]))
    assert float(c.at(beyond)) == pytest.approx(c.compute_ms[2] + slope)


def test_moe_weights_grow_with_the_expert_union():
    p = physics(SEED)
    bp = calibrated_pass(p, [MeasuredPass(1, 0.0, 0.0, 12.12, "seed")])
    w = p.weights
    gpu = p.hardware.gpu

    def per_rank_ms(t: int) -> float:  # weight bytes at peak bandwidth + FLOPs at 0.75
        memory = w.bytes_read(t) / (gpu.memory_bandwidth_gbps * 1e6)
        flops = w.flops(t) / (GEMM_FLOP_EFFICIENCY * gpu.bf16_tflops * 1e9)
        return (memory + flops) / p.hardware.gpus

    # one point: the measured time above the work is fixed, growth costs the extra
    # weight bytes at peak bandwidth and the extra FLOPs at the GEMMs' efficiency
    for t in (2, 8, 32):
        grown = float(bp.compute_ms(t, 0.0, 0.0) - bp.compute_ms(1, 0.0, 0.0))
        assert grown == pytest.approx(per_rank_ms(t) - per_rank_ms(1), rel=1e-9)
    # a second point sets the slope: a pass at 16 tokens whose compute grew twice the
    # roofline's growth (half the peak bandwidth achieved) gives slope 2
    x1 = float(bp.compute_ms(1, 0.0, 0.0))
    grown = float(bp.work_ms(16, 0.0, 0.0) - bp.work_ms(1, 0.0, 0.0))
    ms16 = float(bp._token_terms(16)[2].at(x1 + 2 * grown))  # its critical path
    points = [MeasuredPass(1, 0.0, 0.0, 12.12, "seed"), MeasuredPass(16, 0.0, 0.0, ms16, "x")]
    two = calibrated_pass(p, points)
    assert two.curve.end_slopes[1] == pytest.approx(2.0, rel=1e-6)
    times = np.array([float(bp.pass_ms(t, 0.0, 0.0)) for t in (1, 2, 4, 8, 16, 32, 64, 128)])
    assert np.all(np.diff(times) > 0)
    per_token = np.diff(times) / np.diff([1, 2, 4, 8, 16, 32, 64, 128])
    assert np.all(np.diff(per_token) < 0)  # concave: the union saturates


def test_kv_reads_add_bandwidth_time_when_memory_bound():
    p = physics(LLAMA, kv=131_072.0)
    bp = calibrated_pass(p, [MeasuredPass(1, 1.0, 0.0, 5.0, "made-up")])
    extra = float(bp.pass_ms(1, 100_001.0, 0.0) - bp.pass_ms(1, 1.0, 0.0))
    expected = 100_000 * 131_072 / (p.hardware.gpu.memory_bandwidth_gbps * 1e6)
    assert extra == pytest.approx(expected, rel=1e-9)


def test_memory_then_compute_bound_beyond_the_knee():
    """Dense weights: memory time is flat in tokens, FLOP time grows linearly; they add,
    and beyond the knee (where FLOP time passes memory time) compute dominates."""
    p = physics(LLAMA)
    bp = BatchedPass(p, ComputeCurve(np.array([0.0]), np.array([0.0])))
    gpu = p.hardware.gpu
    w = p.weights
    memory_ms = w.bytes_read(1) / (gpu.memory_bandwidth_gbps * 1e6)
    per_token_ms = w.flops(1) / (GEMM_FLOP_EFFICIENCY * gpu.bf16_tflops * 1e9)
    knee = memory_ms / per_token_ms
    for t in (1, int(knee / 4), int(knee * 4)):
        assert float(bp.work_ms(t, 0.0, 0.0)) == pytest.approx(memory_ms + t * per_token_ms)
    assert float(bp.work_ms(int(knee * 4), 0.0, 0.0)) > 4 * memory_ms  # compute-bound


def test_allreduce_messages_grow_with_tokens():
    p = physics(SEED)
    bp = calibrated_pass(p, [MeasuredPass(1, 0.0, 0.0, 12.12, "seed")])
    # same compute, more tokens in the messages: the floor (no compute) rises
    floors = [float(bp._token_terms(t)[2].at(0.0)) for t in (1, 64, 1024, 8192)]
    assert floors == sorted(floors) and floors[-1] > floors[0]


def test_a_point_below_the_floor_names_its_source():
    p = physics(SEED, name="verify", graphed=False)
    with pytest.raises(SpecsimError, match="made-up") as err:
        calibrated_pass(p, [MeasuredPass(3, 0.0, 0.0, 0.5, "made-up")], field="timing.verify_ms")
    assert err.value.field == "timing.verify_ms"


def test_two_points_of_one_shape_are_refused():
    p = physics(SEED)
    pts = [MeasuredPass(1, 0.0, 0.0, 12.12, "a"), MeasuredPass(1, 0.0, 0.0, 12.5, "b")]
    with pytest.raises(SpecsimError, match="same work"):
        calibrated_pass(p, pts)


def test_curve_tail_slope_is_capped_and_a_curve_can_be_shifted_through_a_point():
    c = ComputeCurve(np.array([1.0, 2.0]), np.array([2.0, 5.0]), max_tail_slope=1.0)
    # within the points: the measured segment (slope 3); beyond: at most 1
    assert float(c.at(1.5)) == pytest.approx(3.5)
    assert float(c.at(4.0)) == pytest.approx(5.0 + 2.0 * 1.0)
    assert float(ComputeCurve(c.work_ms, c.compute_ms).at(4.0)) == pytest.approx(11.0)
    # one point keeps its slope whatever the cap
    one = ComputeCurve(np.array([1.0]), np.array([2.0]), slope=2.0, max_tail_slope=1.0)
    assert one.end_slopes == (2.0, 2.0)
    # shifted through (1.5, 10): the offset is 10 - 3.5; same segments and cap
    t = c.through(1.5, 10.0)
    assert float(t.at(2.0)) == pytest.approx(11.5)
    assert float(t.at(4.0)) == pytest.approx(13.5)


def test_kernel_costed_experts_and_correlated_union_by_hand():
    base = physics(SEED)
    kernel = FusedMoeKernel(layer_us=30.0, expert_us=0.5, hbm_efficiency=0.8)
    p = dataclasses.replace(base, moe_kernel=kernel, expert_overlap=0.38)
    bp = BatchedPass(p, ComputeCurve(np.array([0.0]), np.array([0.0])))
    w, gpu, gpus = p.weights, p.hardware.gpu, p.hardware.gpus
    dense_ms = w.dense_bytes / gpus / (gpu.memory_bandwidth_gbps * 1e6)
    per_expert_ms = (0.5 + w.expert_bytes / gpus / (0.8 * gpu.memory_bandwidth_gbps * 1e3)) / 1e3

    def distinct(m: float) -> float:
        return w.experts * (1 - (1 - w.experts_per_token / w.experts) ** m)

    # 32 independent tokens, and 8 sequences x 4 tokens = 22.88 independent ones
    for sequences, union in ((None, 32.0), (8, 8 * (1 + 3 * 0.62))):
        memory = bp._token_terms(32, sequences)[0]
        assert memory == pytest.approx(
            dense_ms + w.moe_layers * distinct(union) * per_expert_ms, rel=1e-12
        )
    # without the kernel: bytes at peak, and sequences change nothing
    plain = BatchedPass(base, bp.curve)
    assert plain._token_terms(32, 8)[0] == plain._token_terms(32)[0]
    assert plain._token_terms(32)[0] == pytest.approx(
        w.bytes_read(32) / gpus / (gpu.memory_bandwidth_gbps * 1e6), rel=1e-12
    )
    with pytest.raises(ValueError):
        bp._token_terms(4, 8)


def test_pair_flops_of_routed_experts_run_at_the_kernels_efficiency_by_hand():
    base = physics(SEED)
    p = dataclasses.replace(
        base, moe_kernel=FusedMoeKernel(30.0, 0.5, 0.8, pair_flop_efficiency=0.25)
    )
    bp = BatchedPass(p, ComputeCurve(np.array([0.0]), np.array([0.0])))
    w, gpu, gpus = p.weights, p.hardware.gpu, p.hardware.gpus
    peak_per_ms = gpu.bf16_tflops * 1e9
    for tokens in (1, 64, 512):
        pairs = 2 * w.moe_layers * w.experts_per_token * w.expert_params * tokens
        dense = (w.flops(tokens) - pairs) / GEMM_FLOP_EFFICIENCY
        assert bp._token_terms(tokens)[1] == pytest.approx(
            (dense + pairs / 0.25) / gpus / peak_per_ms, rel=1e-12
        )
    # a kernel at the GEMMs' efficiency, or no kernel: 2 x active params at that efficiency
    alike = dataclasses.replace(
        p, moe_kernel=FusedMoeKernel(30.0, 0.5, 0.8, pair_flop_efficiency=GEMM_FLOP_EFFICIENCY)
    )
    for physics_ in (alike, base):
        flat = BatchedPass(physics_, bp.curve)
        expected = w.flops(64) / GEMM_FLOP_EFFICIENCY / gpus / peak_per_ms
        assert flat._token_terms(64)[1] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="pair_flop_efficiency"):
        FusedMoeKernel(30.0, 0.5, 0.8, pair_flop_efficiency=0.0)


def test_a_single_point_follows_a_kin_curve():
    p = physics(SEED)
    decode = calibrated_pass(
        p,
        [MeasuredPass(1, 0.0, 0.0, 12.12, "seed"), MeasuredPass(8, 0.0, 0.0, 24.0, "x")],
        max_tail_slope=1.0,
    )
    v = physics(SEED, name="verify")
    verify = calibrated_pass(
        v, [MeasuredPass(4, 0.0, 0.0, 16.0, "v", sequences=1)], follow=decode.curve
    )
    assert float(verify.pass_ms(4, 0.0, 0.0, 1)) == pytest.approx(16.0, rel=1e-12)
    # the same compute growth per unit of work as the decode's curve, and its capped tail
    w4 = float(verify.work_ms(4, 0.0, 0.0, 1))
    for w in (w4 + 0.5, w4 + 50.0):
        grown = float(verify.curve.at(w) - verify.curve.at(w4))
        assert grown == pytest.approx(float(decode.curve.at(w) - decode.curve.at(w4)), rel=1e-9)
    assert verify.curve.end_slopes[1] == 1.0


def test_token_terms_are_shared_by_passes_of_equal_physics():
    """A study builds a plan per load and k: passes of equal physics built with one
    ``PassTerms`` keep one table of token-count terms (a second pass computes none again),
    others their own, a pass built without one a table of its own, and a shared entry is
    what a fresh computation gives. Pickled, the table starts empty in the receiving
    process."""
    point = [MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed")]
    terms = PassTerms()
    first = calibrated_pass(physics(SEED, kv=70_272.0), point, terms=terms)
    first.pass_ms(777, 5000.0, 4000.0)
    again = calibrated_pass(physics(SEED, kv=70_272.0), point, terms=terms)
    assert again._per_tokens is first._per_tokens and (777, None) in again._per_tokens
    other = calibrated_pass(physics(SEED, kv=1.0), point, terms=terms)
    assert other._per_tokens is not first._per_tokens
    alone = calibrated_pass(physics(SEED, kv=70_272.0), point)
    assert alone._per_tokens is not first._per_tokens
    shared = again.pass_ms(777, 5000.0, 4000.0)
    assert alone.pass_ms(777, 5000.0, 4000.0) == shared
    copied = pickle.loads(pickle.dumps(again))
    assert (777, None) not in copied._per_tokens
    assert copied.pass_ms(777, 5000.0, 4000.0) == shared


def test_copies_of_one_table_received_by_a_process_are_one_table():
    """A worker receives the study's table with every task: the copies of one owner's
    table are one table in the receiving process (its later tasks reuse the terms its
    earlier ones computed), other owners' tables are others, and at most
    ``RECEIVED_TABLES`` owners are kept there (the oldest dropped)."""
    from sim.hardware.pass_terms import RECEIVED_TABLES

    point = [MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed")]
    terms = PassTerms()
    built = calibrated_pass(physics(SEED, kv=70_272.0), point, terms=terms)
    first = pickle.loads(pickle.dumps(built))
    first.pass_ms(777, 5000.0, 4000.0)
    second = pickle.loads(pickle.dumps(built))
    assert second._per_tokens is first._per_tokens and (777, None) in second._per_tokens
    assert second.pass_ms(777, 5000.0, 4000.0) == built.pass_ms(777, 5000.0, 4000.0)
    other = pickle.loads(pickle.dumps(calibrated_pass(built.physics, point, terms=PassTerms())))
    assert other._per_tokens is not first._per_tokens
    for _ in range(RECEIVED_TABLES):
        pickle.loads(pickle.dumps(PassTerms()))
    assert (777, None) not in pickle.loads(pickle.dumps(built))._per_tokens  # dropped


def test_a_table_keeps_a_studys_draws_and_drops_its_oldest_physics_when_full(monkeypatch):
    """A study's interval draws each bring passes of their own physics, visited in turn:
    a table keeps every one of them (well over the 54 physics of a default crossover's
    nine scenarios) and drops its oldest physics only when a new one would start above
    ``SHARED_PHYSICS`` physics or ``SHARED_TERMS`` entries in all."""
    import sim.hardware.pass_terms as pass_terms

    point = [MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed")]
    terms = PassTerms()
    passes = [calibrated_pass(physics(SEED, kv=1.0 + i), point, terms=terms) for i in range(60)]
    for p in passes:
        p.pass_ms(777, 5000.0, 4000.0)
    assert all(
        calibrated_pass(p.physics, point, terms=terms)._per_tokens is p._per_tokens for p in passes
    )
    monkeypatch.setattr(pass_terms, "SHARED_TERMS", sum(len(p._per_tokens) for p in passes))
    calibrated_pass(physics(SEED, kv=1000.0), point, terms=terms)  # drops the oldest only
    assert (777, None) not in calibrated_pass(passes[0].physics, point, terms=terms)._per_tokens
    kept = calibrated_pass(passes[-1].physics, point, terms=terms)
    assert kept._per_tokens is passes[-1]._per_tokens


def test_a_physics_key_refuses_arrays():
    """The shared table is keyed by the physics' repr, exact for its dataclasses and
    pydantic models; an array's repr may elide its middle, so one is refused."""
    from sim.hardware.pass_terms import physics_key

    p = physics(SEED)
    assert physics_key(p) == physics_key(dataclasses.replace(p))
    assert physics_key(p) != physics_key(dataclasses.replace(p, layers=p.layers + 1))
    with pytest.raises(ValueError, match="arrays"):
        physics_key(dataclasses.replace(p, name=np.arange(2000)))  # type: ignore[arg-type]


def _capture_pair(limit: dict, name: str = "verify"):
    """The Llama pass calibrated at batch 1 with a capture ``limit`` and without one, and
    the same pass ungraphed on the limited pass's curve."""
    sets = ("model.kernels_per_layer=11",)
    point = [MeasuredPass(4, 4 * 385.0, 4 * 384.0 + 10, 7.5, "batch-1 verify", sequences=1)]
    free = calibrated_pass(physics(LLAMA, name, sets=sets, kv=131072.0), point)
    limited = calibrated_pass(
        dataclasses.replace(physics(LLAMA, name, sets=sets, kv=131072.0), **limit), point
    )
    eager = BatchedPass(physics(LLAMA, name, graphed=False, sets=sets, kv=131072.0), limited.curve)
    return free, limited, eager


def test_within_the_capture_limits_a_pass_is_unchanged_to_the_bit():
    free, limited, _ = _capture_pair({"graph_max_tokens": 512, "graph_max_rows": 32})
    for rows in (1, 8, 32):  # 4 tokens a row: up to 128 tokens, 32 rows
        tokens, kv, pairs = 4 * rows, rows * 389.0, rows * 1546.0
        assert limited.graphed(tokens, rows)
        assert float(limited.pass_ms(tokens, kv, pairs, rows)) == float(
            free.pass_ms(tokens, kv, pairs, rows)
        )


@pytest.mark.parametrize(
    ("limit", "rows"),
    [({"graph_max_tokens": 512}, 129), ({"graph_max_rows": 32}, 33)],
)
def test_beyond_the_capture_limit_a_pass_runs_eagerly_at_the_same_compute(limit, rows):
    # vLLM captures by tokens (512: 128 verify rows of 4), SGLang by batch size: one row
    # more and the pass is the ungraphed pass over the same work (launch work on the CPU's
    # critical path, eager all-reduces), never cheaper than the graphed one
    free, limited, eager = _capture_pair(limit)
    tokens, kv, pairs = 4 * rows, rows * 389.0, rows * 1546.0
    assert not limited.graphed(tokens, rows)
    assert float(limited.compute_ms(tokens, kv, pairs, rows)) == float(
        free.compute_ms(tokens, kv, pairs, rows)
    )
    ms = float(limited.pass_ms(tokens, kv, pairs, rows))
    assert ms == float(eager.pass_ms(tokens, kv, pairs, rows))
    assert ms >= float(free.pass_ms(tokens, kv, pairs, rows))


def test_an_eager_pass_beyond_the_limit_pays_its_launch_work_when_launch_bound():
    # the drafter's kind of pass: one layer's kernels at few tokens is launch-bound, so
    # eager it takes at least every kernel's CPU issue time (the critical path ends after
    # the last kernel is issued), where the graph replays it at GPU speed
    sets = ("model.kernels_per_layer=11",)
    base = physics(LLAMA, "draft_step", sets=sets)
    small = dataclasses.replace(base, layers=1, graph_max_rows=2)
    point = [MeasuredPass(1, 385.0, 385.0, 0.05, "made-up one-layer pass", sequences=1)]
    bp = calibrated_pass(small, point)
    graphed_ms = float(bp.pass_ms(2, 2 * 385.0, 2 * 385.0, 2))
    eager_ms = float(bp.pass_ms(3, 3 * 385.0, 3 * 385.0, 3))
    shape = PassShape(small.name, 3, small.layers, graphed=False)
    launch_ms = float(pass_schedule(shape, small.hardware, small.geometry)[0].cpu_ms.sum())
    assert graphed_ms < launch_ms <= eager_ms


def test_a_batch_between_captured_sizes_runs_the_next_captured_size_at_its_own_kv():
    # SGLang v0.4.4.post2 with EAGLE captures 1-8, 9-31 odd, 64, ...: 10 rows replay the
    # 11-row graph, 32 rows the 64-row one; the padded rows' tokens go through every GEMM
    # (4 a row for a chain of 3), their KV reads are nothing (sequence length 1)
    sizes = (*range(1, 9), *range(9, 33, 2), 64)
    free, padded, _ = _capture_pair({"graph_rows": sizes, "graph_max_rows": 64})
    assert padded_shape(padded.physics, 40, 10) == (44, 11)
    assert padded_shape(padded.physics, 128, 32) == (256, 64)
    assert padded_shape(padded.physics, 36, 9) == (36, 9)  # captured: unchanged
    assert padded_shape(padded.physics, 260, 65) == (260, 65)  # eager: unchanged
    assert padded_shape(padded.physics, 10, None) == (11, None)  # one token a row
    for rows, ran in ((1, 1), (8, 8), (10, 11), (32, 64)):
        kv, pairs = rows * 389.0, rows * 1546.0
        assert float(padded.pass_ms(4 * rows, kv, pairs, rows)) == float(
            free.pass_ms(4 * ran, kv, pairs, ran)
        )
    # more rows never cost less than the padded pass's own
    kv = 32 * 389.0
    assert float(padded.pass_ms(128, kv, 0.0, 32)) > float(free.pass_ms(128, kv, 0.0, 32))


def test_captured_sizes_must_ascend():
    with pytest.raises(ValueError, match="graph_rows"):
        dataclasses.replace(physics(LLAMA, "verify"), graph_rows=(1, 4, 2))


def test_a_capture_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="graph_max_tokens"):
        dataclasses.replace(physics(LLAMA), graph_max_tokens=0)


def test_a_tables_key_prints_each_hardware_point_once_and_still_tells_them_apart():
    """``PassTerms`` keeps the repr of each hardware point object it has keyed (about 95%
    of printing a physics): the key is the one printed afresh, equal physics on distinct
    but equal hardware objects share a table, and a physics on other hardware (another
    launch cost) gets its own after the first's repr was kept."""
    from sim.hardware.pass_terms import physics_key

    point = [MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed")]
    p, q = physics(SEED, kv=70_272.0), physics(SEED, kv=70_272.0)
    assert p.hardware is not q.hardware and p.hardware == q.hardware
    assert physics_key(p, repr(p.hardware)) == physics_key(p)
    terms = PassTerms()
    first = calibrated_pass(p, point, terms=terms)
    assert calibrated_pass(q, point, terms=terms)._per_tokens is first._per_tokens
    slower = dataclasses.replace(p, hardware=p.hardware.with_launch_us(p.hardware.launch_us + 1))
    other = calibrated_pass(slower, point, terms=terms)
    assert other._per_tokens is not first._per_tokens
    assert calibrated_pass(p, point, terms=terms)._per_tokens is first._per_tokens


def test_a_tables_measured_points_are_calibrated_once_a_physics():
    """A load fit calibrates the same batch-1 points at every step: ``PassTerms`` keeps each
    point's (work, compute) for its physics, a second calibration reads it, and the curve
    is the one a fresh table gives; another physics calibrates the point for itself."""
    point = MeasuredPass(1, 2001.0, 2000.0, 12.12, "seed")
    terms = PassTerms()
    first = calibrated_pass(physics(SEED, kv=70_272.0), [point], terms=terms)
    assert set(first._points) == {point}
    again = calibrated_pass(physics(SEED, kv=70_272.0), [point], terms=terms)
    assert again._points is first._points
    fresh = calibrated_pass(physics(SEED, kv=70_272.0), [point])
    assert np.array_equal(again.curve.work_ms, fresh.curve.work_ms)
    assert np.array_equal(again.curve.compute_ms, fresh.curve.compute_ms)
    other = calibrated_pass(physics(SEED, kv=1.0), [point], terms=terms)
    assert other._points is not first._points and point in other._points
    assert other._points[point] != first._points[point]  # its context reads another work
