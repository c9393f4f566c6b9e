"""``specsim crossover`` through click's runner: text, JSON kind, bad input."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sim.cli import main
from tests.studies.serving_helpers import LLAMA

SMALL = [
    "--set",
    "workload.output_tokens=24",
    "--requests",
    "6",
    "--replications",
    "2",
    "-q",
]


def invoke(*args: str):
    return CliRunner().invoke(main, ["crossover", str(LLAMA), *SMALL, *args])


def test_json_document():
    res = invoke("--concurrency", "1,4", "--num-steps", "3", "--no-refine", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["kind"] == "crossover"
    assert doc["load_kind"] == "concurrency"
    assert doc["grid"] == [1.0, 4.0]
    assert doc["seed"] == 20261130 and doc["replications"] == 2 and doc["requests"] == 6
    metrics = {c["metric"] for c in doc["curves"]}
    assert metrics == {"per_user_tok_s", "aggregate_tok_s", "tpot_p50_ms", "tpot_p99_ms"}
    for curve in doc["curves"]:
        assert [p["load"] for p in curve["points"]] == [1.0, 4.0]
        assert curve["summary"]
        for p in curve["points"]:
            assert p["gain"]["mean"] > 0 and len(p["gain"]["ci95"]) == 2


def test_text_and_rates():
    res = invoke("--rate", "1,8", "--num-steps", "2", "--metric", "per_user_tok_s", "--no-refine")
    assert res.exit_code == 0, res.output
    assert "Poisson" in res.output and "req/s" in res.output
    assert "per-user decode speed (tok/s): gain by k" in res.output
    assert "k=2:" in res.output


def test_bad_input_is_one_line_and_exit_2():
    for args, needle in (
        (("--concurrency", "0,4"), "--concurrency"),
        (("--concurrency", "4"), "at least two loads"),
        (("--concurrency", "inf,1"), "integer >= 1, got inf"),  # was an OverflowError
        (("--concurrency", "1,nan"), "integer >= 1, got nan"),
        (("--metric", "bogus"), "--metric"),
        (("--num-steps", "0"), "--num-steps"),
        (("--set", "speculation.num_steps=0"), "does not speculate"),
    ):
        res = invoke(*args)
        assert res.exit_code == 2, (args, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("specsim: error:"), res.output
        assert needle in lines[0], (args, lines[0])
