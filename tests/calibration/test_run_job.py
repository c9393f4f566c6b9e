"""A load-sweep run priced as its own job (sim/calibration/run_job.py): exact laws of the
closed loop, the fit on such runs, and the record of them in the calibrated scenario."""

import dataclasses
import json
import math

import numpy as np
import pytest

from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_record import figure_of, point_of, record_load_fit, recorded_refit
from sim.calibration.load_sweep import LoadPoint, parse_load_sweep
from sim.calibration.load_terms import SLOPE_FIELD
from sim.calibration.run_job import RunJob, closed_loop_workers
from sim.calibration.tpot_model import TpotModel, predicted_tpot_ms
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides

SCENARIO = "scenarios/llama31-8b-1xh100-eagle3.toml"
INPUTS = (120, 40, 900, 300, 75, 510, 64)
OUTPUTS = (60, 1, 250, 33, 180, 2, 97)


def _iteration(scenario, spec: bool):
    cost = TpotModel(scenario, []).cost()
    draft = scenario.num_steps if spec else 0
    return cost, draft, (lambda b, sums: cost.decode_ms(b, draft, sums, drafter=spec))


@pytest.mark.parametrize(("spec", "al"), [(False, 1.0), (True, 2.7)])
def test_with_one_worker_the_run_is_the_sum_of_its_requests_alone(spec, al):
    """Exact law: at C = 1 each request runs alone, so each one's decode time (and the
    run's, their sum) is that request's alone, here summed iteration by iteration in
    Python floats (``decode_ms_at``): (n - 1) / AL iterations from context prompt + 1,
    growing AL a iteration, the last at its fraction."""
    scenario = load_scenario(SCENARIO)
    cost, draft, iteration = _iteration(scenario, spec)
    job = RunJob(INPUTS, OUTPUTS, 1)
    alone = []
    for p, n in zip(INPUTS, OUTPUTS, strict=True):
        iterations = (n - 1) / al
        whole = math.floor(iterations)
        ms = 0.0
        for j in range(whole + 1):
            weight = 1.0 if j < whole else iterations - whole
            ms += weight * cost.decode_ms_at(1, draft, p + 1 + al * j, drafter=spec)
        alone.append(ms)
    per_request = job.decode_ms(iteration, al)
    # the same iterations' times, summed in another order (bincount, cumsum): a few ulps
    assert per_request == pytest.approx(alone, rel=1e-12, abs=1e-12)
    assert per_request.sum() == pytest.approx(sum(alone), rel=1e-12)
    # and each request's own one-request job gives the same
    for i, (p, n) in enumerate(zip(INPUTS, OUTPUTS, strict=True)):
        one = RunJob((p,), (n,), 1).decode_ms(iteration, al)
        assert one[0] == pytest.approx(per_request[i], rel=1e-12, abs=1e-12)
    # the run's TPOT: each request of two or more tokens over its n - 1, averaged
    timed = [(ms, n - 1) for ms, n in zip(alone, OUTPUTS, strict=True) if n >= 2]
    assert job.tpot_ms(iteration, al) == pytest.approx(
        np.mean([ms / m for ms, m in timed]), rel=1e-12
    )


def test_the_drain_prices_each_stage_at_the_batch_left():
    """Every request sent at once (C = N), an iteration of b requests costing 1 + b ms
    whatever the context, one token an iteration: a request of m decode tokens runs the
    stages between the shorter ones' ends at the batch left, sum_k (m_k - m_(k-1))
    (1 + b_k) ms (exact in floats: whole numbers)."""
    outputs = (11, 5, 21, 5, 8)  # decode 10, 4, 20, 4, 7 tokens
    job = RunJob((100,) * 5, outputs, 5)

    def flat(b: int, sums: np.ndarray) -> np.ndarray:
        return np.full(sums.shape, 1.0 + b)

    got = job.decode_ms(flat, 1.0)
    # stages: 4 tokens at b 5, 3 at b 3, 3 at b 2, 10 at b 1
    assert list(got) == [4 * 6 + 3 * 4 + 3 * 3, 4 * 6, 4 * 6 + 3 * 4 + 3 * 3 + 10 * 2, 4 * 6,
                         4 * 6 + 3 * 4]  # fmt: skip
    # two workers: the next request is sent when one is answered, in order
    two = RunJob((100,) * 5, outputs, 2).decode_ms(flat, 1.0)
    # 0: [0, 10), 1: [0, 4), 2 from 4 to 24, 3 from 10 to 14, 4 from 14 to 21; both
    # workers busy until 21, request 2 alone from 21 to 24
    assert list(two) == [10 * 3, 4 * 3, 17 * 3 + 3 * 2, 4 * 3, 7 * 3]


def test_requests_sent_together_decode_from_their_summed_contexts():
    """Equal requests all sent at once: one batch of C from context C (p + 1), growing C AL
    an iteration, each iteration priced there (the closed form's batch, its context
    sums one by one)."""
    scenario = load_scenario(SCENARIO)
    cost, draft, iteration = _iteration(scenario, True)
    c, p, n, al = 8, 500, 41, 2.5
    job = RunJob((p,) * c, (n,) * c, c)
    ms = sum(
        (1.0 if j < 16 else 0.0) * cost.decode_ms_at(c, draft, c * (p + 1 + al * j), drafter=True)
        for j in range(17)
    )  # 40 / 2.5 = 16 whole iterations, no fraction
    assert job.tpot_ms(iteration, al) == pytest.approx(ms / (n - 1), rel=1e-12)


def _record(conc, outputs=OUTPUTS, inputs=INPUTS, **changes):
    """A ``vllm bench serve --save-result --save-detailed`` record of these requests (one
    more, failed, as the writer lists it: 0 output tokens and its error)."""
    return {
        "backend": "vllm",
        "model_id": "m",
        "max_concurrency": conc,
        "request_rate": "inf",
        "completed": len(outputs),
        "total_input_tokens": sum(inputs),
        "total_output_tokens": sum(outputs),
        "mean_tpot_ms": 5.0,
        "std_tpot_ms": 0.5,
        "mean_e2el_ms": 500.0,
        "input_lens": [*inputs, 77],
        "output_lens": [*outputs, 0],
        "errors": [""] * len(outputs) + ["timeout"],
        **changes,
    }


def _parse(*records):
    return parse_load_sweep("\n".join(json.dumps(r) for r in records), source="s.jsonl")


def test_a_listed_run_carries_its_job_and_a_run_without_lists_none():
    listed, bare, open_loop, unlimited = _parse(
        _record(4),
        {k: v for k, v in _record(4).items() if k not in ("input_lens", "output_lens", "errors")},
        _record(None, request_rate=3.0, request_throughput=2.0),
        _record(None, request_throughput=2.0),
    )
    assert listed.job == RunJob(INPUTS, OUTPUTS, 4)  # the completed ones, in order
    assert bare.job is None and bare.job_note == ""
    assert open_loop.job is None and "open loop" in open_loop.job_note
    assert unlimited.job == RunJob(INPUTS, OUTPUTS, len(OUTPUTS))  # all sent at once


def test_a_run_without_lists_is_priced_as_before():
    """The closed form at the run's load and mean context (``T_iter(C, C c) / AL``), bit
    for bit: the job is the only thing a listed run adds."""
    scenario = load_scenario(SCENARIO)
    listed, bare = _parse(
        _record(4),
        {k: v for k, v in _record(4).items() if k not in ("input_lens", "output_lens", "errors")},
    )
    assert dataclasses.replace(listed, job=None, where=bare.where) == bare
    cost, draft, _ = _iteration(scenario, False)
    context = (sum(INPUTS) + sum(OUTPUTS) / 2) / len(OUTPUTS)
    closed = float(cost.decode_ms(4, draft, np.array([4 * context]))[0])
    assert predicted_tpot_ms(scenario, [bare])[0] == closed
    assert predicted_tpot_ms(scenario, [listed])[0] != closed


def _own_job_sweep(truth):
    """Runs of 16 requests sent at once at 4, 8 and 16 workers, with and without
    speculation, their TPOTs the truth's own-job prediction: the drain (the batch falls
    as requests finish) is what the closed form at load C misses."""
    rng = np.random.default_rng(3)
    ins = tuple(int(x) for x in rng.integers(100, 1500, 16))
    outs = tuple(int(x) for x in rng.integers(20, 600, 16))
    points = []
    for c in (1, 4, 8, 16):
        for spec in (False, True):
            points.append(
                LoadPoint("synthetic", f"c{c}", "test", float(c), "concurrency", spec, 1.0,
                          accept_length=3.0 if spec else 1.0,
                          context_tokens=float(np.mean(ins) + np.mean(outs) / 2),
                          job=RunJob(ins, outs, c))
            )  # fmt: skip
    tpot = predicted_tpot_ms(truth, points)
    return [dataclasses.replace(p, tpot_ms=float(t)) for p, t in zip(points, tpot, strict=True)]


@pytest.mark.slow
def test_the_fit_on_own_jobs_finds_the_truth_and_the_mean_lengths_do_not():
    base = load_scenario(SCENARIO)
    runs = _own_job_sweep(with_overrides(base, {SLOPE_FIELD: 1.3}))
    fit = fit_load_sweep(base, runs)
    assert SLOPE_FIELD in fit.identified
    # noiseless figures: the optimiser's tolerance, far below the 3% floor's SE
    assert fit.values[SLOPE_FIELD] == pytest.approx(1.3, rel=1e-4)
    assert max(abs(r.relative) for r in fit.rows) < 1e-4
    # recorded with their jobs, a draw at the nominal inputs re-fits the slope where it was
    refit = recorded_refit(record_load_fit(fit))
    assert refit is not None and refit.terms == (SLOPE_FIELD,)
    assert refit({})[SLOPE_FIELD] == pytest.approx(fit.values[SLOPE_FIELD], rel=1e-4)
    # the same figures at load C and the mean context: the batch never drains there, so
    # the growth the runs show is read as a flatter slope (1.04 here), the truth outside
    # its 90% range
    mean = fit_load_sweep(base, [dataclasses.replace(p, job=None) for p in runs])
    assert SLOPE_FIELD in mean.identified
    assert mean.ranges[SLOPE_FIELD][1] < 1.3


def test_the_record_keeps_the_job_and_prices_it_again():
    base = load_scenario(SCENARIO)
    runs = _own_job_sweep(with_overrides(base, {SLOPE_FIELD: 1.3}))[:4]
    fit = fit_load_sweep(base, runs)
    figure = figure_of(fit.rows[2].point)
    assert figure["workers"] == 4 and figure["output_lens"] == list(runs[2].job.output_lens)
    recorded = record_load_fit(fit)
    back = [point_of(f) for f in recorded.serving.calibrated_on]
    assert [p.job for p in back] == [p.job for p in runs]
    assert list(predicted_tpot_ms(recorded, back)) == [r.predicted_ms for r in fit.rows]


def test_a_closed_loop_has_its_limit_or_one_worker_a_request_sent_at_once() -> None:
    assert closed_loop_workers(4, 2.0, 100) == 4
    assert closed_loop_workers(None, math.inf, 100) == 100
    assert closed_loop_workers(None, 2.0, 100) is None  # an open loop: times not recorded
    assert closed_loop_workers(None, None, 100) is None
