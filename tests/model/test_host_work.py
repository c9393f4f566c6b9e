"""Host work per request: serial where the engine does not overlap it, hidden where it
does until it exceeds the iteration, and exactly nothing at one request."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.serving_cost import serving_cost
from sim.model.batched_cost import IterationCost
from sim.model.cycle import PassTimes, cycle_cost
from sim.model.host_work import OVERLAPS, HostWork
from sim.model.pass_curves import LinearCurve, ServingCurves
from sim.scenario.load import load_scenario
from tests.conftest import SEED
from tests.model.test_batched_cost import LINEAR, PASSES


def test_growth_and_which_iterations_pay_it_by_hand():
    host = HostWork(20.0, "baseline")
    assert host.growth_ms(1) == 0.0
    assert host.growth_ms(33) == pytest.approx(32 * 20.0 / 1000.0)  # 0.64 ms
    assert host.serial(True) and not host.serial(False)
    assert HostWork(20.0, "none").serial(False) and HostWork(20.0, "none").serial(True)
    assert not HostWork(20.0, "both").serial(True)
    # serial: the growth whatever the iteration's time; overlapped: only what sticks out
    assert host.extra_ms(33, True, np.array([5.0, 50.0])).tolist() == [0.64, 0.64]
    assert host.extra_ms(33, False, np.array([0.5, 50.0])) == pytest.approx([0.14, 0.0])


@pytest.mark.parametrize("overlap", OVERLAPS)
@pytest.mark.parametrize("k", [0, 1, 3])
def test_one_request_is_the_batch_one_cycle_exactly(overlap, k):
    cost = IterationCost(PASSES, LINEAR, host=HostWork(35.0, overlap))
    for drafter in (False, True):
        got = cost.decode_ms(1, k, np.array([0.0, 0.0]), drafter=drafter)
        assert got.tolist() == [cycle_cost(PASSES, k).total_ms] * 2  # bit for bit


@pytest.mark.parametrize(
    ("overlap", "plain_pays", "speculating_pays"),
    [("baseline", False, True), ("none", True, True), ("both", False, False)],
)
def test_a_batch_pays_where_the_engine_does_not_overlap(overlap, plain_pays, speculating_pays):
    b, s = 16, np.array([4000.0])
    bare = IterationCost(PASSES, LINEAR)
    cost = IterationCost(PASSES, LINEAR, host=HostWork(30.0, overlap))
    growth = 15 * 30.0 / 1000.0
    for k, drafter, pays in (
        (0, False, plain_pays),  # a plain server
        (0, True, speculating_pays),  # a speculating server's plain iteration
        (3, True, speculating_pays),
    ):
        extra = float(cost.decode_ms(b, k, s, drafter=drafter)[0]) - float(
            bare.decode_ms(b, k, s, drafter=drafter)[0]
        )
        assert extra == pytest.approx(growth if pays else 0.0, abs=1e-12)
        # the per-phase path carries it in the overhead phase
        phases = cost.decode_phases(b, k, s, drafter=drafter)
        bare_phases = bare.decode_phases(b, k, s, drafter=drafter)
        assert float(phases[3][0] - bare_phases[3][0]) == pytest.approx(extra, abs=1e-12)
        assert float(sum(p[0] for p in phases)) == pytest.approx(
            float(cost.decode_ms(b, k, s, drafter=drafter)[0]), rel=1e-12
        )


def test_overlapped_host_work_shows_once_it_exceeds_the_iteration():
    tiny = ServingCurves(*(LinearCurve(0.0) for _ in range(6)))
    passes = PassTimes(1.0, 1.0, 2, 0.0, 0.1, 0.1, 0.0)
    cost = IterationCost(passes, tiny, host=HostWork(100.0, "both"))
    # 64 requests: 6.3 ms of host work against a 1 ms plain iteration
    got = float(cost.decode_ms(64, 0, np.array([0.0]))[0])
    assert got == pytest.approx(1.0 + (6.3 - 1.0))


def test_a_host_bound_batch_1_shows_every_requests_host_work_past_the_gpus_growth():
    # share 1: the batch-1 iteration (T1) is the host's loop, so an overlapped iteration
    # lasts max(T(b), T1 + h (b - 1)): the host growth shows beyond the GPU's own growth
    host = HostWork(100.0, "baseline", batch1_share=1.0)
    t1, gpu = 4.0, np.array([4.2, 4.6, 9.0])  # iterations whose GPU growth is 0.2, 0.6, 5
    got = host.extra_ms(5, False, gpu, batch1_ms=t1)  # host: 4 + 0.4 ms
    assert got == pytest.approx([0.2, 0.0, 0.0])
    # half of T1 on the host: 2 + 0.4 ms, below every iteration here
    assert HostWork(100.0, "baseline", 0.5).extra_ms(5, False, gpu, t1).tolist() == [0.0] * 3
    # serial iterations pay the growth alone: the batch-1 host time is in T1 already
    assert host.extra_ms(5, True, gpu, t1).tolist() == [0.4] * 3


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("overlap", OVERLAPS)
def test_one_request_is_the_batch_one_cycle_exactly_whatever_the_share(share, overlap):
    cost = IterationCost(PASSES, LINEAR, host=HostWork(900.0, overlap, share))
    for k in (0, 3):
        got = cost.decode_ms(1, k, np.array([0.0]), drafter=k > 0)
        assert got.tolist() == [cycle_cost(PASSES, k).total_ms]


def test_a_host_bound_iteration_grows_by_the_host_work_where_it_passes_the_gpus_growth():
    tiny = ServingCurves(*(LinearCurve(0.0) for _ in range(6)))  # no GPU growth at all
    passes = PassTimes(4.0, 1.0, 2, 0.0, 0.1, 0.1, 0.0)
    for share, want in ((0.0, 4.0), (1.0, 4.0 + 3 * 0.9)):
        cost = IterationCost(passes, tiny, host=HostWork(900.0, "baseline", share))
        # plain decoding, overlapped: 4 requests add 2.7 ms of host work; at share 0 it
        # hides behind the 4 ms iteration, at share 1 it adds to the host's 4 ms
        got = float(cost.decode_ms(4, 0, np.array([0.0]))[0])
        assert got == pytest.approx(want)
        # the per-phase path and the scalar path agree
        phases = cost.decode_phases(4, 0, np.array([0.0]))
        assert float(sum(p[0] for p in phases)) == pytest.approx(want)


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="batch1_share"):
        HostWork(1.0, "both", 1.5)
    with pytest.raises(ValueError, match="us_per_request"):
        HostWork(-1.0)
    with pytest.raises(ValueError, match="overlap"):
        HostWork(1.0, "sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="spec_factor"):
        HostWork(1.0, spec_factor=-0.5)


def test_the_scenario_sets_the_host_work():
    sc = load_scenario(
        SEED,
        [
            "model.draft_params=2.0e9",
            "serving.host_us_per_request=12.5",
            "serving.host_overlap=none",
        ],
    )
    cost = serving_cost(bind(sc))
    assert cost.host == HostWork(12.5, "none")
    default = serving_cost(bind(load_scenario(SEED, ["model.draft_params=2.0e9"])))
    assert default.host.overlap == "baseline" and default.host.us_per_request == 20.0


def test_the_report_line_says_the_value_its_origin_and_who_hides_it():
    from sim.binding.serving_notes import host_work_note

    default = host_work_note(load_scenario(SEED, []))
    assert "20 us per running request" in default
    assert "assumed, the default; public measurements put it at 7-38 us" in default
    assert "host_overlap = 'baseline'" in default
    set_line = host_work_note(
        load_scenario(SEED, ["serving.host_us_per_request=5", "serving.host_overlap=both"])
    )
    assert "5 us per running request" in set_line and "set by --set" in set_line
    assert "hidden behind the GPU in every iteration (vLLM >= 0.14)" in set_line
    assert "host_spec_factor" not in set_line  # the default factor 1 goes unsaid
    factor = host_work_note(load_scenario(SEED, ["serving.host_spec_factor=3"]))
    assert "3 times that a request in an iteration that drafts and verifies" in factor


def test_iterations_that_draft_pay_the_speculative_factor_and_only_they():
    b, s = 16, np.array([4000.0])
    plain = IterationCost(PASSES, LINEAR, host=HostWork(30.0, "none"))
    cost = IterationCost(PASSES, LINEAR, host=HostWork(30.0, "none", spec_factor=3.0))
    # a speculating server's plain iteration pays the plain work a request
    for k, drafter, factor in ((0, False, 1.0), (0, True, 1.0), (3, True, 3.0)):
        extra = float(cost.decode_ms(b, k, s, drafter=drafter)[0]) - float(
            plain.decode_ms(b, k, s, drafter=drafter)[0]
        )
        assert extra == pytest.approx((factor - 1.0) * 15 * 30.0 / 1000.0, abs=1e-12)
        # the per-phase path agrees with the scalar one
        phases = cost.decode_phases(b, k, s, drafter=drafter)
        assert float(sum(p[0] for p in phases)) == pytest.approx(
            float(cost.decode_ms(b, k, s, drafter=drafter)[0]), rel=1e-12
        )
        # and so does the curve the serving engine prices its iterations with
        assert float(cost.decode_curve(b, k, drafter=drafter).ms(s)[0]) == pytest.approx(
            float(cost.decode_ms(b, k, s, drafter=drafter)[0]), rel=1e-12
        )
    assert HostWork(30.0, spec_factor=3.0).growth_ms(16, drafting=True) == pytest.approx(1.35)


@pytest.mark.parametrize("overlap", OVERLAPS)
def test_the_speculative_factor_changes_nothing_at_one_request(overlap):
    cost = IterationCost(PASSES, LINEAR, host=HostWork(700.0, overlap, 1.0, spec_factor=20 / 7))
    for k in (0, 3):
        got = cost.decode_ms(1, k, np.array([0.0]), drafter=True)
        assert got.tolist() == [cycle_cost(PASSES, k).total_ms]  # bit for bit


def test_a_factor_of_one_is_the_host_work_without_one():
    # the default: every figure made without the factor is unchanged, bit for bit
    a = IterationCost(PASSES, LINEAR, host=HostWork(30.0, "baseline", 0.5))
    b = IterationCost(PASSES, LINEAR, host=HostWork(30.0, "baseline", 0.5, spec_factor=1.0))
    s = np.array([0.0, 900.0, 4000.0])
    for batch, k in ((8, 0), (8, 3), (33, 3)):
        assert (
            a.decode_ms(batch, k, s, drafter=True).tolist()
            == b.decode_ms(batch, k, s, drafter=True).tolist()
        )
        assert (
            a.decode_curve(batch, k, drafter=True).ms(s).tolist()
            == a.decode_ms(batch, k, s, drafter=True).tolist()
        )
