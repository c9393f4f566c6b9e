"""The workload init writes from runs' request lengths (sim/calibration/init_workload.py),
by hand: request-weighted means, the 10% rule, the spread matched by moments, a flag
overriding one side."""

from __future__ import annotations

import math

import pytest

from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.init_workload import init_workload
from sim.errors import SpecsimError


def _fields(lengths, **flags) -> dict:
    workload = init_workload(lengths, **flags)
    assert workload is not None
    return {key: (value, why) for key, value, why in workload.fields}


def test_runs_are_weighted_by_their_completed_requests() -> None:
    """32 requests of mean prompt 1,000 and 96 of 1,040 (4% apart): (32 x 1,000 + 96 x
    1,040) / 128 = 1,030 tokens; without a count on one run, the runs' means alike."""
    a = RequestLengths("a.json", 1000.0, 200.0, 32)
    b = RequestLengths("b.json", 1040.0, 210.0, 96)
    f = _fields([a, b])
    assert f["workload.input_tokens"][0] == 1030
    assert f["workload.output_tokens"][0] == round((32 * 200 + 96 * 210) / 128)  # 207.5 -> 208
    assert "of their 128 completed requests" in f["workload.input_tokens"][1]
    assert f["workload.lengths"][0] == "fixed" and "assumed" in f["workload.lengths"][1]
    f = _fields([a, RequestLengths("c.jsonl line 2", None, 220.0)])
    assert f["workload.output_tokens"][0] == 210  # (200 + 220) / 2
    assert "workload.input_tokens" in f  # the prompt from the run that records it


def test_more_than_ten_percent_apart_is_two_workloads() -> None:
    a = RequestLengths("a.json", 1000.0, 200.0, 32)
    b = RequestLengths("b.json", 1000.0, 230.0, 32)  # answers 13% apart
    with pytest.raises(SpecsimError) as err:
        init_workload([a, b])
    assert str(err.value).startswith("a.json: mean answer 200 tokens here, 230 in b.json")
    # the flag says which: the spread of disagreeing runs is no one workload's
    f = _fields([a, b], output_tokens=215)
    assert f["workload.output_tokens"] == (215, "--output-tokens")


def test_the_spread_is_a_lognormal_matched_by_moments() -> None:
    """Prompts 100, 200, 300, 400 (mean 250, population sd sqrt(12,500)): sigma^2 =
    ln(1 + 12,500 / 62,500) = ln 1.2; answers all 50: sigma 0, measured."""
    run = RequestLengths("d.json", 250.0, 50.0, 4, (100, 200, 300, 400), (50, 50, 50, 50))
    f = _fields([run])
    assert f["workload.lengths"][0] == "lognormal"
    assert f["workload.input_sigma"][0] == pytest.approx(math.sqrt(math.log(1.2)), abs=1e-6)
    assert f["workload.output_sigma"][0] == 0.0
    same = RequestLengths("e.json", 250.0, 50.0, 2, (250, 250), (50, 50))
    f = _fields([same])
    assert f["workload.lengths"][0] == "fixed" and f["workload.lengths"][1].startswith("measured")


def test_nothing_given_writes_nothing() -> None:
    assert init_workload([]) is None
