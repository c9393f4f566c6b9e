"""``--all-replications``: crossover and best-k stop settled points after 4 replications
by default and say so, and capacity stops rates settled against the share; the flag
runs every replication."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sim.cli import main
from tests.studies.serving.helpers import LLAMA

SMALL = ["--set", "workload.output_tokens=24", "--requests", "6", "--replications", "6"]
GRID = ["--concurrency", "1,4", "--num-steps", "3", "--metric", "per_user_tok_s", "--no-refine"]
GRID += ["--draws", "0", "--json"]


def run(*args: str) -> dict:
    res = CliRunner().invoke(main, ["crossover", str(LLAMA), *SMALL, *GRID, "-q", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_settled_points_stop_early_and_the_document_says_so():
    seq, full = run(), run("--all-replications")
    assert full["replications_run"] == 4 * 6  # 2 loads x 2 policies x 6
    assert seq["replications_run"] < full["replications_run"]
    assert any(a.startswith("replications: sequential") for a in seq["assumptions"])
    assert not any(a.startswith("replications: sequential") for a in full["assumptions"])


def test_capacity_stops_settled_rates_early_and_the_flag_runs_every_replication():
    args = ["capacity", str(LLAMA), *SMALL, "--num-steps", "2", "--tpot-slo-ms", "8"]
    args += ["--draws", "0", "--json", "-q"]
    docs = []
    for extra in ([], ["--all-replications"]):
        res = CliRunner().invoke(main, [*args, *extra])
        assert res.exit_code == 0, res.output
        docs.append(json.loads(res.output))
    seq, full = docs
    assert full["replications_run"] == 6 * full["runs"]  # every rate's 6
    assert seq["replications_run"] < 6 * seq["runs"]  # some rates stopped at 4
    assert any(a.startswith("replications: sequential") for a in seq["assumptions"])
    assert not any(a.startswith("replications: sequential") for a in full["assumptions"])
