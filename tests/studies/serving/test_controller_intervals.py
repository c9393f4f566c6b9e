"""controllers' 90% intervals from inputs and model (sim/studies/serving/controller_draws.py): each
policy's advantage over the static table per phase, and where the best-k table switches."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from sim.model.model_error import DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, Z90, gain_sigma
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.studies.serving.controller_phases import Phase
from sim.studies.serving.controller_replay import (
    DECODE_BATCH,
    PHASE_METRICS,
    _decode_batch,
    phase_batches,
)
from sim.studies.serving.controllers import controller_study
from sim.studies.serving.paired_metrics import METRICS
from sim.studies.serving.serve import serving_study
from tests.studies.serving.helpers import LLAMA

MIX = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.8},{name="code",weight=0.3,alpha=0.95}]'
SMALL = [MIX, "workload.output_tokens=96", "workload.requests=16", "simulation.replications=3"]
PHASES = [
    Phase(12, 20.0, (("chat", 0.9), ("code", 0.1))),
    Phase(12, 80.0, (("chat", 0.1), ("code", 0.9))),
]


def _study(sets=(), draws: int = 3, workers: int = 1):
    sc = load_scenario(LLAMA, [*SMALL, *sets])
    builder, evaluator = serving_study(sc, draws=draws, executor=LocalExecutor(workers))
    return controller_study(builder, evaluator, PHASES, [1, 3])


@pytest.fixture(scope="module")
def drawn():
    return _study()


def test_each_advantage_interval_holds_the_nominal_and_its_monte_carlo(drawn):
    assert drawn.intervals["draws"] == drawn.intervals["draws_run"] == 3
    for name, by_metric in drawn.versus.items():
        for m in PHASE_METRICS:
            for r, iv in zip(by_metric[m], drawn.versus_interval90[name][m], strict=True):
                assert iv[0] <= r.mean <= iv[1]
                assert iv[0] <= r.ci95[0] and r.ci95[1] <= iv[1]
    # the batched costs are measured at batch 1 only; the replay's batches run above it
    assert (
        drawn.max_batch > 1 and "beyond the highest measured batch (1)" in drawn.intervals["note"]
    )


def test_the_table_switch_interval_holds_its_crossing(drawn):
    """alpha 0.8 / 0.95 on one H100: k 3 up to about 10 users, plain decoding above."""
    (switch,) = drawn.switches
    assert (switch["from_k"], switch["to_k"]) == (3, 0) and switch["between"] == [8, 16]
    lo, hi = switch["interval90"]
    assert (lo is None or lo <= switch["at"]) and (hi is None or switch["at"] <= hi)
    assert switch["beyond"]  # above batch 1
    doc = drawn.to_dict()
    assert doc["table_switches"][0]["interval90"] == switch["interval90"]
    winner = doc["winners"][0]
    assert "interval90" in winner and isinstance(winner["better_within_inputs"], bool)


def test_without_draws_or_model_error_each_interval_is_the_monte_carlo_one():
    result = _study(["serving.model_error={level_per_sqrt_log_load=0,gain_ceiling=0}"], draws=0)
    assert result.intervals["draws"] == 0
    for name, by_metric in result.versus.items():
        for m in PHASE_METRICS:
            assert [list(r.ci95) for r in by_metric[m]] == list(result.versus_interval90[name][m])
    (switch,) = result.switches
    assert switch["interval90"] == switch["ci95"]


@pytest.mark.slow
def test_same_seed_same_document_whatever_the_workers(drawn):
    assert _study().to_dict() == drawn.to_dict() == _study(workers=2).to_dict()


def test_each_advantage_takes_the_model_error_of_its_ratio_at_the_phase_batch(drawn):
    """The term's band of the ratio policy / table at each phase's decode batch (costs
    measured at batch 1 only: s ln B), mapped back to the advantage; with s = 0 the
    intervals are the inputs' alone, and a switch's interval the inputs' one."""
    bare = _study(["serving.model_error={level_per_sqrt_log_load=0,gain_ceiling=0}"])
    assert bare.intervals["model_error"]["included"] is False
    assert drawn.intervals["model_error"]["included"]
    batches = drawn.phase_batches
    assert len(batches) == 2 and all(1.0 < b <= drawn.max_batch for b in batches)
    assert drawn.intervals["phase_decode_batches"] == list(batches)
    ref = drawn.reference
    for name, by_metric in drawn.versus_interval90.items():
        for m in PHASE_METRICS:
            up = METRICS[m].higher_is_better
            for p, (iv0, iv) in enumerate(
                zip(bare.versus_interval90[name][m], by_metric[m], strict=True)
            ):
                if name == ref:
                    assert iv == iv0 == [0.0, 0.0]
                    continue
                level = drawn.levels[ref][m][p].mean
                ratio = 1.0 + (1 if up else -1) * drawn.versus[name][m][p].mean / level
                sig = gain_sigma(DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, math.log(batches[p]))
                band = [ratio * math.exp(x * Z90 * sig)
                        for x in (-1.0, 1.0)]  # fmt: skip
                ends = sorted((1 if up else -1) * level * (r - 1.0) for r in band)
                assert iv[0] == pytest.approx(min(iv0[0], ends[0]), rel=1e-9, abs=1e-12)
                assert iv[1] == pytest.approx(max(iv0[1], ends[1]), rel=1e-9, abs=1e-12)
    (switch0,), (switch,) = bare.switches, drawn.switches
    lo0, hi0 = switch0["interval90"]
    lo, hi = switch["interval90"]
    assert lo is None or (lo0 is not None and lo <= lo0)
    assert hi is None or (hi0 is not None and hi >= hi0)


def test_a_phase_decode_batch_is_the_mean_number_decoding_over_its_span():
    """Requests decoding over [0, 10] and [5, 15] ms: the first's span [0, 10] holds 10 +
    5 ms of decoding, a mean batch of 1.5; the second's [5, 15] likewise."""
    rec = SimpleNamespace(
        decode_start_ms=np.array([0.0, 5.0, -1.0]),
        finish_ms=np.array([10.0, 15.0, 3.0]),
        stride=1,
    )
    assert _decode_batch(rec, np.array([True, False, False])) == pytest.approx(1.5)
    assert _decode_batch(rec, np.array([False, True, False])) == pytest.approx(1.5)
    assert math.isnan(_decode_batch(rec, np.array([False, False, True])))  # never decodes
    # per phase: the mean over the replications where it decodes, the largest policy's, >= 1
    per_rep = {
        "a": [{DECODE_BATCH: np.array([2.0, np.nan])}, {DECODE_BATCH: np.array([4.0, np.nan])}],
        "b": [{DECODE_BATCH: np.array([1.5, 0.5])}, {DECODE_BATCH: np.array([np.nan, 0.7])}],
    }
    assert phase_batches(per_rep) == pytest.approx((3.0, 1.0))
