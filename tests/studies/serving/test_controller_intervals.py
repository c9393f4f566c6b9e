"""controllers' 90% intervals from inputs and model (sim/studies/serving/controller_draws.py): each
policy's advantage over the static table per phase, and where the best-k table switches."""

from __future__ import annotations

import pytest

from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.studies.serving.controllers import PHASE_METRICS, Phase, controller_study
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
    assert (lo is None or lo <= switch["at"]) and switch["at"] <= hi
    assert switch["beyond"]  # above batch 1
    doc = drawn.to_dict()
    assert doc["table_switches"][0]["interval90"] == switch["interval90"]
    winner = doc["winners"][0]
    assert "interval90" in winner and isinstance(winner["better_within_inputs"], bool)


def test_without_draws_each_interval_is_the_monte_carlo_one():
    result = _study(draws=0)
    assert result.intervals["draws"] == 0
    for name, by_metric in result.versus.items():
        for m in PHASE_METRICS:
            assert [list(r.ci95) for r in by_metric[m]] == list(result.versus_interval90[name][m])
    (switch,) = result.switches
    assert switch["interval90"] == switch["ci95"]


@pytest.mark.slow
def test_same_seed_same_document_whatever_the_workers(drawn):
    assert _study().to_dict() == drawn.to_dict() == _study(workers=2).to_dict()
