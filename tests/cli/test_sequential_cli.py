"""``--all-replications``: crossover and best-k stop settled points after 4 replications
by default and say so; the flag runs every replication; capacity has no such flag."""

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


def test_capacity_has_no_sequential_flag():
    res = CliRunner().invoke(main, ["capacity", str(LLAMA), "--all-replications"])
    assert res.exit_code == 2 and "--all-replications" in res.output
