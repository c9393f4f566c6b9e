"""search at a serving load: agrees with the batch-1 search at concurrency 1; JSON and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario
from sim.studies.search import search_acceptance
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.search import search_at_load
from tests.studies.serving.helpers import SCENARIOS

SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"
SMALL = ["workload.output_tokens=64", "workload.requests=30", "simulation.replications=4"]
TINY = ["workload.output_tokens=32", "workload.requests=8", "simulation.replications=2"]


def overlap(a, b) -> bool:
    """Two search answers agree: each estimate inside the other's widened interval."""
    (lo_a, hi_a), (lo_b, hi_b) = a.alpha_ci95, b.alpha_ci95
    return lo_a <= hi_b and lo_b <= hi_a and abs(a.alpha - b.alpha) <= (hi_a - lo_a) + (hi_b - lo_b)


@pytest.mark.parametrize(
    "quantile",
    # the mean's agreement at concurrency 1 is slow here: the fast
    # test_search_at_a_load_scales_the_acceptance_shape below checks it on a smaller run
    [pytest.param(None, marks=pytest.mark.slow), 0.5],
    ids=["mean", "median"],
)
def test_concurrency_one_agrees_with_the_batch_one_search(quantile: float | None):
    scenario = load_scenario(SEED, SMALL)
    batch1 = search_acceptance(scenario, [100.0], [3], quantile=quantile)
    served = search_at_load(scenario, [100.0], [3], Load("concurrency", 1), quantile=quantile)
    a, b = batch1.targets[0].per_num_steps[0], served.targets[0].per_num_steps[0]
    assert a.reachable and b.reachable
    assert overlap(a, b), (quantile, a.alpha, a.alpha_ci95, b.alpha, b.alpha_ci95)
    assert served.engine == "serving"
    assert served.settings["load"] == {"kind": "concurrency", "value": 1, "label": "1 user"}


def test_search_at_a_load_scales_the_acceptance_shape():
    """A falling shape (geometric, decay 0.8) is searched as the batch-1 search does: the
    first-position rate scaled with the shape kept, so its answer at concurrency 1 agrees
    with the batch-1 one and needs a higher first rate than a flat shape (an engine that
    ignored the shape would answer the flat rate)."""
    tiny = ["workload.output_tokens=32", "workload.requests=10", "simulation.replications=3"]
    falling = load_scenario(SEED, [*tiny, 'acceptance.shape="geometric"', "acceptance.decay=0.8"])
    flat = load_scenario(SEED, [*tiny, 'acceptance.shape="flat"'])
    one = Load("concurrency", 1)
    served = search_at_load(falling, [70.0], [3], one).targets[0].per_num_steps[0]
    served_flat = search_at_load(flat, [70.0], [3], one).targets[0].per_num_steps[0]
    batch1 = search_acceptance(falling, [70.0], [3]).targets[0].per_num_steps[0]
    assert served.reachable and served_flat.reachable and batch1.reachable
    assert served.first_rate < 1.0  # uncapped: the rates are the shape times a_1
    np.testing.assert_allclose(
        np.array(served.per_position) / served.first_rate, [1.0, 0.8, 0.64], rtol=1e-9
    )
    assert served.first_rate_ci95[0] > served_flat.first_rate_ci95[1]
    (lo_a, hi_a), (lo_b, hi_b) = served.first_rate_ci95, batch1.first_rate_ci95
    assert lo_a <= hi_b and lo_b <= hi_a, (served.first_rate_ci95, batch1.first_rate_ci95)


def test_more_users_need_more_acceptance():
    scenario = load_scenario(SEED, TINY)
    one = search_at_load(scenario, [70.0], [3], Load("concurrency", 1))
    four = search_at_load(scenario, [70.0], [3], Load("concurrency", 4))
    a, b = one.targets[0].per_num_steps[0], four.targets[0].per_num_steps[0]
    assert a.reachable and b.reachable and b.alpha > a.alpha


def test_cli_search_at_a_rate_json():
    res = CliRunner().invoke(
        main,
        [
            "search",
            str(SEED),
            *(x for s in TINY for x in ("--set", s)),
            "--rate",
            "2",
            "--num-steps",
            "3",
            "--target",
            "70",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["kind"] == "search" and doc["engine"] == "serving"
    assert doc["load"]["kind"] == "rate" and doc["load"]["value"] == 2.0
    res = CliRunner().invoke(main, ["search", str(SEED), "--concurrency", "2", "--rate", "1"])
    assert res.exit_code == 2
