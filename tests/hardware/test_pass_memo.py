"""The hardware model's memo (sim/hardware/passes.py ``PassMemo``): the same answers as
computing afresh, keyed by every field of the hardware point and each number's type, and,
held by a study and passed to every bind, each distinct pass worked out once however many
times the study re-validates its scenario."""

from __future__ import annotations

import collections
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import sim.binding.decompose as decompose
import sim.hardware.launch as launch
import sim.hardware.passes as passes
from sim.binding.bound import bind
from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.tpot_model import predicted_tpot_ms
from sim.cli import main
from sim.errors import SpecsimError
from sim.hardware.eager import calibrate_kernel_us
from sim.hardware.interconnects import PRESETS, InlineInterconnect, resolve_interconnect
from sim.hardware.launch import calibrate_compute_ms
from sim.hardware.passes import (
    Geometry,
    HardwarePoint,
    PassMemo,
    PassShape,
    calibrate_launch_us,
    calibrate_pass,
    compose_pass,
    pass_schedule,
)
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.acceptance_lever import acceptance_levers
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.uncertainty.perturb import perturbed
from tests.conftest import SEED

SERVING = SEED.with_name("kimi-k25-8xpcie-eagle3-serving.toml")
LLAMA = SEED.with_name("llama31-8b-1xh100-eagle3.toml")
QUICKSTART = Path(__file__).parents[1] / "data" / "quickstart"

GEOM = Geometry(61, 1, 7168, 28, 2, 2)
VERIFY = PassShape("verify", 3, 61, False)


def _point(interconnect=None, launch_us: float = 10.0) -> HardwarePoint:
    return HardwarePoint(interconnect or PRESETS["pcie-gen4"], 8, None, False, launch_us)


def test_memoised_answers_are_the_ones_computed_afresh():
    hw, memo = _point(), PassMemo()
    schedule = pass_schedule(VERIFY, hw, GEOM)[0]

    def schedule_for(kernel_us: float):
        return pass_schedule(VERIFY, hw.with_launch_us(kernel_us), GEOM)[0]

    for _ in range(2):  # a miss, then a hit
        got = calibrate_pass(VERIFY, hw, GEOM, 30.0, "f", memo=memo)
        assert got == calibrate_compute_ms(schedule, 30.0)
        afresh = compose_pass(VERIFY, hw, GEOM, 9.5, "x")
        assert compose_pass(VERIFY, hw, GEOM, 9.5, "x", memo) == afresh
        assert calibrate_launch_us(VERIFY, hw, GEOM, 12.0, 30.0, memo) == calibrate_kernel_us(
            schedule_for, 12.0, 30.0
        )
    assert [len(t) for t in (memo.composed, memo.computes, memo.launches)] == [1, 1, 1]


def test_a_number_is_kept_with_its_type():
    """``1`` and ``1.0`` are equal keys of a dict: the memo keeps them apart, as the
    breakdown keeps the compute time as given."""
    memo = PassMemo()
    whole = compose_pass(VERIFY, _point(), GEOM, 1, "x", memo)
    real = compose_pass(VERIFY, _point(), GEOM, 1.0, "x", memo)
    assert type(whole.compute_ms) is int and type(real.compute_ms) is float


def test_a_memo_pickles_empty():
    memo = PassMemo()
    compose_pass(VERIFY, _point(), GEOM, 9.5, "x", memo)
    copy = pickle.loads(pickle.dumps(memo))
    assert memo.composed and not copy.composed


def test_interconnects_sharing_a_name_are_not_taken_as_one():
    """The point's hash stands the interconnect's name for it; equality compares every
    field, so an inline interconnect of the same name with other figures is another key."""
    memo = PassMemo()
    slow = resolve_interconnect("link", {"link": InlineInterconnect(based_on="pcie-gen4")})
    fast = resolve_interconnect(
        "link", {"link": InlineInterconnect(based_on="pcie-gen4", bus_bandwidth_gbps=400.0)}
    )
    a, b = _point(slow), _point(fast)
    assert hash(a) == hash(b) and a != b
    shape = PassShape("verify", 512, 61, True)  # a message large enough for bandwidth to show
    comm = [compose_pass(shape, hw, GEOM, 5.0, "x", memo).comm_ms for hw in (a, b)]
    assert comm[0] > comm[1]
    assert comm == [compose_pass(shape, hw, GEOM, 5.0, "x").comm_ms for hw in (a, b)]


def test_errors_are_raised_on_every_call():
    memo = PassMemo()
    for _ in range(2):
        with pytest.raises(SpecsimError, match="is less than the modelled"):
            calibrate_pass(VERIFY, _point(), GEOM, 0.5, "timing.verify_ms", memo=memo)
    with pytest.raises(ValueError):  # the GPU work alone is longer than the pass
        calibrate_launch_us(VERIFY, _point(), GEOM, 40.0, 30.0, memo)
    assert not memo.launches


def _counted(monkeypatch) -> tuple[list, list]:
    """(the launch calibrations, the compute calibrations) made from now on."""
    scale_calls: list = []
    compute_calls: list = []
    scale, compute = launch.calibrate_cpu_scale, launch.calibrate_compute_ms

    def counted_scale(*args):
        scale_calls.append(args)
        return scale(*args)

    def counted_compute(schedule, measured_ms):
        compute_calls.append((schedule.num_kernels, float(schedule.fixed_ms.sum()), measured_ms))
        return compute(schedule, measured_ms)

    monkeypatch.setattr(passes, "calibrate_cpu_scale", counted_scale)
    monkeypatch.setattr(passes, "calibrate_compute_ms", counted_compute)
    return scale_calls, compute_calls


@pytest.mark.parametrize("shared", [True, False])
def test_a_study_calibrates_the_seed_launch_once_over_its_draft_lengths(monkeypatch, shared):
    """The seed's ungraphed verify fixes the per-kernel CPU cost; a study that validates the
    scenario at k = 1..16 and binds each with its one memo, where only the draft extend's
    token count moves: one launch calibration (16 with a memo each), and each distinct pass
    calibrated once."""
    seed = load_scenario(SEED)
    scale_calls, compute_calls = _counted(monkeypatch)
    memo = PassMemo()
    for lever in acceptance_levers(seed, range(1, 17)).values():
        bind(lever.base, memo if shared else None)
    if not shared:
        assert len(scale_calls) == 16
        return
    assert len(scale_calls) == 1
    assert len(compute_calls) == len(set(compute_calls))
    # the decode, the draft step and the draft extend over k + 1 tokens at each k
    assert len(compute_calls) == 2 + 16


def test_a_serving_studys_binds_share_its_memo(monkeypatch):
    """A serving study's plans at every load and k bind with the memo its pass terms
    carry (sim/studies/serving/scenario_plans.py ``ScenarioPlans.setup``): each distinct pass
    calibrated once over all of them."""
    builder = ScenarioPlans.of(load_scenario(SERVING))
    _, compute_calls = _counted(monkeypatch)
    for k in (1, 2, 3):
        for users in (1, 8):
            builder(Load("concurrency", users), k)
    assert compute_calls and len(compute_calls) == len(set(compute_calls))
    assert builder.terms.passes.computes


def test_a_draw_is_bound_with_its_models_memo():
    """A drawn scenario (sim/uncertainty/perturb.py ``perturbed``) binds with the hardware
    answers of the model it was drawn from."""
    bound = bind(load_scenario(SERVING))
    drawn = perturbed(bound, (("timing.cycle_overhead_ms", 0.5),))
    assert drawn.hardware.memo is bound.hardware.memo
    assert bind(bound.scenario).hardware.memo is not bound.hardware.memo


def _memos_bound(monkeypatch) -> collections.Counter:
    """The memo (its id; None: the pass model's own) of every hardware model taken apart
    from a scenario from now on (sim/binding/decompose.py ``scenario_hardware``)."""
    seen: collections.Counter = collections.Counter()
    built = decompose.pass_model

    def counted(inputs, memo=None):
        seen[None if memo is None else id(memo)] += 1
        return built(inputs, memo)

    monkeypatch.setattr(decompose, "pass_model", counted)
    return seen


def test_init_binds_every_scenario_its_fits_try_with_one_memo(monkeypatch, tmp_path):
    """``specsim init`` on bench files fits timings at the efficiency each trial decode
    implies: every trial scenario (dozens a fit) is bound with the command's one memo."""
    seen = _memos_bound(monkeypatch)
    args = ["init", "--config", str(QUICKSTART / "config.json"), "--gpu", "H100"]
    args += ["--gpus", "4", "--engine", "vllm", "--drafter", "eagle3", "--num-steps", "3"]
    for name in ("bench_baseline.json", "bench_eagle3.json"):
        args += ["--vllm-bench", str(QUICKSTART / name)]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "s.toml")])
    assert result.exit_code == 0, result.stderr
    assert len(seen) == 1 and None not in seen
    assert sum(seen.values()) > 20  # the fits' trials, not the command's few binds


def test_a_load_fit_binds_its_scenario_once_with_one_memo(monkeypatch):
    """The load fit moves serving terms only, which no binding step reads: the scenario
    is bound once for every step (and the fitted scenario once for its rows), with the
    fit's one memo, and each distinct pass is worked out once over the whole fit."""
    base = load_scenario(LLAMA)
    points = [
        LoadPoint("synthetic", f"b{b}", "test", float(b), "concurrency", False, None,
                  context_tokens=1000.0)
        for b in (1, 8, 32)
    ]  # fmt: skip
    truth = with_overrides(base, {"serving.host_us_per_request": 30.0})
    tpot = predicted_tpot_ms(truth, points)
    sweep = [replace(p, tpot_ms=float(t)) for p, t in zip(points, tpot, strict=True)]
    seen = _memos_bound(monkeypatch)
    _, compute_calls = _counted(monkeypatch)
    fit_load_sweep(base, sweep)
    assert len(seen) == 1 and None not in seen and sum(seen.values()) == 2
    assert len(compute_calls) == len(set(compute_calls))
