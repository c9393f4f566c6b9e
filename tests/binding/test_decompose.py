"""Pass decomposition: exact at the measured point, what-ifs touch only their part."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.bound import bind
from sim.binding.closed_form import pass_times
from sim.binding.decompose import measured_pass_times, scenario_hardware
from sim.binding.provenance import launch_origin
from sim.cli import main
from sim.errors import SpecsimError
from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.experts import expected_distinct_experts
from sim.hardware.interconnects import PRESETS
from sim.hardware.launch import calibrate_compute_ms, critical_path_ms, kernel_schedule
from sim.hardware.passes import PASS_NAMES, pass_schedule
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.validation.hardware_data import SGLANG_KIMI_LAYER_OPS
from tests.conftest import SEED, seed_text_without_uncertainty


@pytest.fixture(scope="module")
def seed():
    return load_scenario(SEED)


def test_measured_on_comes_from_the_file_not_the_overrides():
    s = load_scenario(SEED, ["hardware.interconnect=nvlink4", "timing.verify_cuda_graph=true"])
    ref = s.timing.measured_on
    assert (ref.interconnect, ref.gpus, ref.verify_cuda_graph) == ("pcie-gen4", 8, False)
    assert s.hardware.interconnect == "nvlink4"
    # Survives a second round of overrides (sweeps, search).
    again = with_overrides(s, {"hardware.gpus": 4})
    assert again.timing.measured_on == ref


def test_reproduces_measured_times_exactly(seed):
    hw = scenario_hardware(seed)
    for name in PASS_NAMES:
        b = hw.breakdown(name)
        measured = getattr(seed.timing, f"{name}_ms")
        # the seed states its drafter passes' split as assumed ([uncertainty.timing])
        assert b.origin == ("assumed" if name.startswith("draft") else "measured")
        assert b.total_ms == pytest.approx(measured, rel=1e-12)
    p = pass_times(seed)
    assert p == measured_pass_times(seed.timing, seed.num_steps, slope=hw.verify_slope[0])


def test_breakdown_parts_at_the_seed(seed):
    hw = scenario_hardware(seed)
    v, d = hw.breakdown("verify"), hw.breakdown("decode")
    # 61 layers x 2 all-reduces of 3 x 7168 x 2 bytes, ungraphed, 28 kernels x 61 layers
    # (counted from SGLang's source, sim/validation/hardware_data.py).
    kernels = seed.model.kernels_per_layer
    assert kernels == sum(op.low for op in SGLANG_KIMI_LAYER_OPS) == 28
    assert v.allreduces == 122
    assert v.message_bytes == 3 * 7168 * 2
    # verify_compute = decode: the verify's compute is the graphed decode's plus 2 x 0.7 ms.
    assert v.compute_ms == pytest.approx(d.compute_ms + 2 * 0.7, rel=1e-12)
    # Launch-bound: 30 ms = 1708 kernels x c + the last all-reduce, which fixes c.
    c_ms = (30.0 - v.allreduce.us / 1000) / (kernels * 61)
    assert hw.current.launch_us == pytest.approx(c_ms * 1000, rel=1e-9)
    assert launch_origin(seed, hw, seed.field_origins())[0] == "derived"
    assert v.launch_ms == pytest.approx(kernels * 61 * c_ms, rel=1e-9)
    assert v.launch_bound and v.total_ms == pytest.approx(30.0, rel=1e-12)


@pytest.mark.parametrize("kernels", [28, 35, 42])
def test_the_measured_verify_fixes_the_kernel_cost_at_every_count(seed, kernels):
    """Whatever the count in its range, the seed's 30 ms is honoured: c x count is fixed."""
    s = with_overrides(seed, {"model.kernels_per_layer": kernels})
    hw = scenario_hardware(s)
    v = hw.breakdown("verify")
    assert v.total_ms == pytest.approx(30.0, rel=1e-12)
    c_ms = (30.0 - v.allreduce.us / 1000) / (kernels * 61)
    assert hw.current.launch_us == pytest.approx(c_ms * 1000, rel=1e-9)


def test_a_stated_launch_cost_the_measured_verify_fixes_is_an_error(write_scenario):
    text = SEED.read_text().replace(
        'gpu = "RTX-PRO-6000"\n', 'gpu = "RTX-PRO-6000"\nlaunch_us = 18.9\n'
    )
    path = write_scenario(text)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = result.output.strip()
    assert line.count("\n") == 0 and "hardware.launch_us" in line and "17.55 us" in line
    assert str(path) in line  # found while the file is bound, so it names the file
    with pytest.raises(SpecsimError, match="fixes the per-kernel CPU cost") as err:
        bind(load_scenario(path))
    assert err.value.source == str(path)


def test_a_launch_cost_override_is_a_what_if_on_the_measured_verify(seed):
    """--set hardware.launch_us: the timings keep the cost the verify fixed; the hardware
    asked about issues kernels at the override (half the cost: about half the launches)."""
    s = with_overrides(seed, {"hardware.launch_us": 8.0})
    hw = scenario_hardware(s)
    assert hw.reference.launch_us == pytest.approx(scenario_hardware(seed).current.launch_us)
    assert hw.current.launch_us == 8.0 and launch_origin(s, hw, s.field_origins())[0] == "override"
    v = hw.breakdown("verify")
    assert v.launch_ms == pytest.approx(28 * 61 * 8.0 / 1000, rel=1e-9)
    assert v.total_ms < 30.0
    # the answer uses the what-if too: its verify is the re-composed pass, not the 30 ms
    assert not hw.at_reference
    assert pass_times(s).verify_ms == pytest.approx(v.total_ms, rel=1e-12)


def test_measured_verify_compute_is_gpu_bound_at_the_public_launch_cost(seed):
    # at 18 kernels a layer the public cost's launches (20.7 ms) fit the measured 30 ms;
    # at SGLang's counted 28-42 they do not (the next test)
    s = with_overrides(seed, {"timing.verify_compute": "measured", "model.kernels_per_layer": 18})
    v = scenario_hardware(s).breakdown("verify")
    c_ms = EAGER_KERNEL_US / 1000
    assert v.launch_ms == pytest.approx(18 * 61 * c_ms)
    assert not v.launch_bound
    # GPU-bound: total = one launch + compute + communication.
    assert v.total_ms == pytest.approx(c_ms + v.compute_ms + v.comm_ms, rel=1e-12)


@pytest.mark.parametrize(
    ("sets", "changed"),
    [
        (["hardware.interconnect=nvlink4"], {"comm"}),
        (["hardware.interconnect=pcie-gen5"], {"comm"}),
        # The eager cost of an NCCL call is CPU work: graphing changes the launch only.
        (["timing.verify_cuda_graph=true"], {"launch"}),
    ],
)
def test_what_if_changes_only_its_parts(seed, sets, changed):
    before = scenario_hardware(seed).breakdown("verify")
    after = scenario_hardware(load_scenario(SEED, sets)).breakdown("verify")
    assert after.origin == "recomposed"
    assert after.compute_ms == pytest.approx(before.compute_ms, rel=1e-12)
    assert (after.comm_ms != before.comm_ms) == ("comm" in changed)
    assert (after.launch_ms != before.launch_ms) == ("launch" in changed)


def test_fewer_gpus_scale_compute(seed):
    before = scenario_hardware(seed).breakdown("decode")
    after = scenario_hardware(load_scenario(SEED, ["hardware.gpus=4"])).breakdown("decode")
    assert after.compute_ms == pytest.approx(2 * before.compute_ms, rel=1e-12)
    assert after.allreduce.us < before.allreduce.us  # 2(n-1) steps: fewer with 4 GPUs


@settings(max_examples=25, deadline=None)
@given(
    interconnect=st.sampled_from(list(PRESETS)),
    gpus=st.sampled_from([1, 2, 4, 8]),
    launch_us=st.floats(0.0, 16.5),
    tokens=st.integers(1, 12),
    compute=st.sampled_from(["measured", "decode"]),
)
def test_graphing_the_verify_never_makes_it_slower(
    seed, interconnect, gpus, launch_us, tokens, compute
):
    base = {
        "hardware.interconnect": interconnect,
        "hardware.gpus": gpus,
        "timing.verify_compute": compute,
    }
    # launch_us is a model assumption (under "decode" the measured verify fixes it and an
    # override is a what-if): keep it below the seed's floor (the verify line's lowest
    # point, 28.6 ms over 1 token, across 61 x 28 kernels: 16.7 us) for the measured line
    # to stay valid under "measured".
    base["hardware.launch_us"] = launch_us
    ungraphed = with_overrides(seed, {**base, "timing.verify_cuda_graph": False})
    graphed = with_overrides(seed, {**base, "timing.verify_cuda_graph": True})
    u = scenario_hardware(ungraphed).breakdown("verify", tokens).total_ms
    g = scenario_hardware(graphed).breakdown("verify", tokens).total_ms
    assert g <= u + 1e-12


def test_below_the_floor_names_both_numbers_and_the_field(write_scenario):
    text = seed_text_without_uncertainty().replace("decode_ms = 12.12", "decode_ms = 2.0")
    path = write_scenario(text)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert str(path) in line and "timing.decode_ms" in line
    # 122 graphed all-reduces of 14 KB at 22.7 us: 2.768 ms, no launch work.
    assert "communication 2.768 ms" in line and "launch 0 ms" in line


@pytest.mark.parametrize(
    ("stated", "field"), [(None, "model.kernels_per_layer"), (18.9, "hardware.launch_us")]
)
def test_launches_beyond_a_measured_eager_verify_name_the_stated_field(
    write_scenario, stated, field
):
    """verify_compute = measured at SGLang's 28 kernels: 1708 launches at the public (or a
    stated) cost exceed the 30 ms; the line names the field and the largest cost that fits
    (30 ms less the last all-reduce over 1708 kernels)."""
    text = seed_text_without_uncertainty().replace(
        'verify_compute = "decode"', 'verify_compute = "measured"'
    )
    if stated is not None:
        text = text.replace(
            'gpu = "RTX-PRO-6000"\n', f'gpu = "RTX-PRO-6000"\nlaunch_us = {stated}\n'
        )
    path = write_scenario(text)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert str(path) in line and f"{field}:" in line and "verify_compute = 'decode'" in line
    launch = 28 * 61 * (stated or EAGER_KERNEL_US) / 1000
    assert f"take {launch:.4g} ms to launch" in line and "at most 17.55 us" in line


def test_verify_from_decode_below_its_gpu_work_names_the_field(write_scenario):
    text = seed_text_without_uncertainty().replace("verify_ms = 30.0", "verify_ms = 5.0")
    path = write_scenario(text)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert str(path) in line and "timing.verify_ms" in line and "GPU work alone" in line


def test_unknown_interconnect_lists_the_presets():
    with pytest.raises(SpecsimError) as err:
        load_scenario(SEED, ["hardware.interconnect=infiniband"])
    assert err.value.field == "hardware.interconnect"
    for name in PRESETS:
        assert name in str(err.value)


def test_inline_custom_interconnect(write_scenario):
    text = SEED.read_text() + (
        '\n[hardware.interconnects.fast-pcie]\nbased_on = "pcie-gen4"\neager_extra_us = 0.0\n'
    )
    path = write_scenario(text)
    s = load_scenario(path, ["hardware.interconnect=fast-pcie"])
    v = scenario_hardware(s).breakdown("verify")
    ref = scenario_hardware(load_scenario(path)).breakdown("verify")
    assert v.allreduce.us == pytest.approx(ref.allreduce.us - PRESETS["pcie-gen4"].eager_extra_us)
    bad = write_scenario(text.replace('based_on = "pcie-gen4"', 'based_on = "pcie-gen9"'))
    with pytest.raises(SpecsimError, match="based_on"):
        load_scenario(bad, ["hardware.interconnect=fast-pcie"])


def test_gpu_change_needs_the_measured_gpu(write_scenario):
    path = write_scenario(SEED.read_text().replace('gpu = "RTX-PRO-6000"\n', ""))
    with pytest.raises(SpecsimError, match=r"timing\.measured_on\.gpu") as err:
        bind(load_scenario(path, ["hardware.gpu=H200"]))
    assert err.value.source == f"{path} (--set)"
    s = load_scenario(SEED, ["hardware.gpu=H200"])
    ratio = (
        scenario_hardware(s).breakdown("decode").compute_ms
        / scenario_hardware(load_scenario(SEED)).breakdown("decode").compute_ms
    )
    assert ratio == pytest.approx(1792.0 / 4800.0)


def test_calibration_closed_form_is_the_largest_consistent_compute():
    sched = kernel_schedule(
        layers=4,
        kernels_per_layer=6,
        allreduces_per_layer=2,
        allreduce_ms=0.05,
        tensor_parallel=True,
        launch_ms=0.01,
    )
    for measured in (1.0, 3.7):
        x = calibrate_compute_ms(sched, measured)
        assert critical_path_ms(sched, x) == pytest.approx(measured, rel=1e-12)
        assert critical_path_ms(sched, x * (1 + 1e-9) + 1e-12) > measured
    with pytest.raises(ValueError):
        calibrate_compute_ms(sched, 0.1)  # below 24 kernels x 10 us of launch


def test_launch_bound_when_cpu_is_slower():
    sched = kernel_schedule(
        layers=10,
        kernels_per_layer=10,
        allreduces_per_layer=2,
        allreduce_ms=0.0,
        tensor_parallel=True,
        launch_ms=0.02,
    )
    # 100 kernels x 20 us = 2 ms of launch against 1 ms of GPU work: launch-bound.
    assert critical_path_ms(sched, 1.0) == pytest.approx(2.0 + 0.0, abs=1e-3)
    # GPU-bound: one launch delay + GPU work.
    assert critical_path_ms(sched, 5.0) == pytest.approx(0.02 + 5.0, rel=1e-9)


def test_expert_union():
    assert expected_distinct_experts(384, 8, 1) == pytest.approx(8.0)
    m = np.arange(1, 200)
    d = expected_distinct_experts(384, 8, m)
    assert np.all(np.diff(d) > 0) and np.all(np.diff(d, 2) < 0)  # increasing, concave
    assert d[-1] < 384 and expected_distinct_experts(384, 8, 10_000) == pytest.approx(384)
    assert expected_distinct_experts(384, 8, 3) == pytest.approx(384 * (1 - (1 - 8 / 384) ** 3))


def test_derived_verify_grows_with_distinct_experts():
    """The compute of a derived verify grows by the weight reads of the new distinct
    experts (concave); the total also carries the all-reduce model, whose algorithm
    switch at a message size may step it down once."""
    s = load_scenario(
        SEED.parent / "kimi-k25-8xh200-nvlink-eagle3.toml", ["timing.verify_cuda_graph=true"]
    )
    hw = scenario_hardware(s)
    compute = np.array([hw.breakdown("verify", m).compute_ms for m in range(1, 34)])
    steps = np.diff(compute)
    assert np.all(steps > 0)  # more tokens, more experts read
    assert np.all(np.diff(steps) < 1e-12)  # and each extra token adds fewer new experts
    p = pass_times(s)
    assert p.verify_over_ms(33) > p.verify_over_ms(1)


@pytest.mark.parametrize("efficiency", [1.0, 0.18])
def test_growth_adds_only_the_weight_reads_and_flops(efficiency):
    """A longer verify adds the extra distinct experts as the fused-MoE kernel reads them
    (per expert and rank 0.345 us + its bytes at hardware.expert_read_efficiency 0.934 of
    the GPU's peak, whatever the pass's own efficiency) and the extra FLOPs at
    hardware.bandwidth_efficiency x peak to the calibrated compute, not a multiple of it."""
    s = load_scenario(
        SEED, ["timing.verify_growth=experts", f"hardware.bandwidth_efficiency={efficiency}"]
    )
    hw = scenario_hardware(s)
    w = scenario_hardware(s).target_weights()
    gpu = hw.current.gpu
    assert s.hardware.expert_read_efficiency == 0.934 and w.moe_layers == 60
    distinct = expected_distinct_experts(384, 8, 14) - expected_distinct_experts(384, 8, 3)
    expert_us = 0.345 + w.expert_bytes / 8 / (0.934 * gpu.memory_bandwidth_gbps * 1e9) * 1e6
    reads = 60 * distinct * expert_us / 1e3
    flops = (w.flops(14) - w.flops(3)) / (8 * gpu.bf16_tflops * 1e12 * efficiency) * 1e3
    grown = hw.breakdown("verify", 14).compute_ms - hw.breakdown("verify", 3).compute_ms
    assert grown == pytest.approx(reads + flops, rel=1e-9)
    # unset, the extra experts are read at the pass's own efficiency, as before
    whole_pass = scenario_hardware(with_overrides(s, {"hardware.expert_read_efficiency": None}))
    at_pass = (w.bytes_read(14) - w.bytes_read(3)) / (8 * gpu.memory_bandwidth_gbps * 1e9)
    old = (
        whole_pass.breakdown("verify", 14).compute_ms - whole_pass.breakdown("verify", 3).compute_ms
    )
    assert old == pytest.approx(at_pass * 1e3 / efficiency + flops, rel=1e-9)
    # not the whole calibrated compute scaled by the bytes (most of it does not grow)
    whole = hw.breakdown("verify", 3).compute_ms * (w.bytes_read(14) / w.bytes_read(3) - 1)
    assert grown < 0.5 * whole


def test_unmeasured_slope_is_derived_by_the_hardware_model(write_scenario):
    text = seed_text_without_uncertainty().replace("verify_ms_per_extra_token = 0.7\n", "")
    s = load_scenario(write_scenario(text))
    slope, origin, reason = scenario_hardware(s).verify_slope
    assert origin == "derived" and "weight reads" in reason
    hw = scenario_hardware(s)
    # verify_compute = decode: the decode's GPU work plus the extra tokens' weight reads,
    # composed at every token count; the slope is its one-token step at 3 tokens (under
    # the eager launch work of the ungraphed pass, which hides most of it)
    step = hw.breakdown("verify", 4).total_ms - hw.breakdown("verify", 3).total_ms
    assert slope == pytest.approx(step, rel=1e-9)
    p = pass_times(s)
    assert p.verify_over_ms(3) == pytest.approx(30.0, rel=1e-9)
    assert p.verify_over_ms(14) > p.verify_over_ms(4) + 10 * slope  # GPU-bound beyond
    # at 18 kernels a layer, where the public per-kernel cost's launches fit the 30 ms
    measured = load_scenario(
        write_scenario(text), ["timing.verify_compute=measured", "model.kernels_per_layer=18"]
    )
    m_slope, origin, _ = scenario_hardware(measured).verify_slope
    assert origin == "derived" and m_slope > 0.5  # reads, FLOPs and larger all-reduces
    assert pass_times(measured).verify_over_ms(5) == pytest.approx(30.0 + 2 * m_slope)


def test_unmeasured_slope_without_weights_is_a_listed_default(write_scenario):
    s = load_scenario(write_scenario())  # timings only, no model
    slope, origin, reason = scenario_hardware(s).verify_slope
    assert (slope, origin) == (0.0, "default") and "optimistic" in reason


def test_dense_model_verify_is_flat_in_tokens_while_memory_bound():
    s = load_scenario(SEED.parent / "llama31-8b-1xh100-eagle3.toml")
    p = pass_times(s)
    assert p.verify_over_ms(6) == pytest.approx(p.verify_over_ms(1))
    assert p.verify_over_ms(6) == pytest.approx(15.0e9 / 3350e9 * 1e3, rel=0.01)


def test_measured_verify_can_grow_with_distinct_experts():
    # at 18 kernels a layer, where the public per-kernel cost's launches fit the 30 ms
    s = load_scenario(
        SEED,
        [
            "timing.verify_growth=experts",
            "timing.verify_compute=measured",
            "model.kernels_per_layer=18",
        ],
    )
    p = pass_times(s)
    assert p.verify_over_ms(3) == pytest.approx(30.0, rel=1e-12)  # the measured point
    steps = np.diff([p.verify_over_ms(m) for m in range(1, 34)])
    # Increasing; concave (fewer new experts per token) once GPU-bound; never below the
    # ungraphed pass's launch floor.
    assert np.all(steps > 0) and np.all(np.diff(steps)[1:] < 1e-12)
    assert p.verify_over_ms(1) >= floor_ms_of_seed_verify(s, 1) - 1e-9


def floor_ms_of_seed_verify(scenario, tokens):
    hw = scenario_hardware(scenario)
    shape = hw.shape("verify", tokens, hw.current)
    return critical_path_ms(pass_schedule(shape, hw.current, hw.geom)[0], 0.0)


def test_experts_growth_needs_the_weights(write_scenario):
    text = SEED.read_text().replace("layer_params = 145.2e6\n", "")
    with pytest.raises(SpecsimError, match=r"model\.layer_params"):
        load_scenario(write_scenario(text), ["timing.verify_growth=experts"])


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 80),
    kernels=st.integers(4, 30),
    allreduce_ms=st.floats(0.0, 0.2),
    launch_ms=st.floats(0.0, 0.05),
    extra_ms=st.floats(0.0, 50.0),
)
def test_calibrate_then_compose_is_the_identity(layers, kernels, allreduce_ms, launch_ms, extra_ms):
    sched = kernel_schedule(
        layers=layers,
        kernels_per_layer=kernels,
        allreduces_per_layer=2,
        allreduce_ms=allreduce_ms,
        tensor_parallel=True,
        launch_ms=launch_ms,
    )
    measured = critical_path_ms(sched, 0.0) + extra_ms  # anything at or above the floor
    x = calibrate_compute_ms(sched, measured)
    assert x >= -1e-9
    assert critical_path_ms(sched, x) == pytest.approx(measured, rel=1e-12, abs=1e-12)


def test_missing_kernel_count_cites_the_count_for_the_layer_kind(tmp_path):
    """The mix scenario (Kimi-K2.5, an MoE) without model.kernels_per_layer refused the
    layer pass citing 11-18 kernels a layer, a dense layer's count, where the seed cites the
    28-42 counted from SGLang's source for this very layer."""
    from sim.hardware.passes import DENSE_LAYER_KERNELS, MOE_LAYER_KERNELS
    from tests.helpers import mix_without_kernel_count

    assert (
        sum(op.low for op in SGLANG_KIMI_LAYER_OPS),
        sum(op.high for op in SGLANG_KIMI_LAYER_OPS),
    ) == MOE_LAYER_KERNELS
    mix = mix_without_kernel_count(tmp_path)
    result = CliRunner().invoke(main, ["run", str(mix), "--fidelity", "layer", "-q"])
    assert result.exit_code == 2
    assert "model.kernels_per_layer" in result.output and "28-42 kernels" in result.output
    from sim.hardware.passes import Geometry, HardwarePoint, PassShape

    dense = Geometry(
        layers=32, draft_layers=1, hidden_size=4096, kernels_per_layer=None,
        allreduces_per_layer=0, activation_bytes=2,
    )  # fmt: skip
    hw = HardwarePoint(PRESETS["pcie-gen4"], 1, None, False, EAGER_KERNEL_US)
    with pytest.raises(SpecsimError, match=f"{DENSE_LAYER_KERNELS[0]}-{DENSE_LAYER_KERNELS[1]}"):
        pass_schedule(PassShape("verify", 3, 32, graphed=False), hw, dense)
