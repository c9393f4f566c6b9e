"""``crossover --rate``, ``search --rate`` and ``sweep`` over rates answer an overload
without simulating it, in serve's words and naming the bounds (text, JSON and CSV)."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

import sim.studies.serving.point_tasks as point_tasks
import sim.studies.serving.search as serving_search
import sim.studies.sweep as sweep_module
from sim.cli import main
from tests.conftest import ROOT
from tests.studies.serving.helpers import LLAMA

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
LLAMA_SMALL = ["workload.output_tokens=32", "workload.requests=8", "simulation.replications=2"]


@pytest.fixture
def no_simulation(monkeypatch):
    """Any serving simulation fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("an overloaded point was simulated")

    for module in (point_tasks, serving_search, sweep_module):
        monkeypatch.setattr(module, "simulate_serving", refuse)


def run(*args: str):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def test_crossover_above_every_bound(no_simulation):
    """The serving scenario answers about 3.4 (k = 2) and 3.8 (plain) requests a second."""
    common = ["crossover", SERVING, "--rate", "1000,2000", "--num-steps", "2", "-q"]
    code, out = run(*common, "--verbose")
    assert code == 0, out
    assert "UNSTABLE: 1000 requests/s is more than the server answers with plain decoding " in out
    assert "or k = 2: such a load has no steady state" in out and "Not simulated." in out
    assert "neither is stable at 1000, 2000 requests/s" in out
    assert "(0 policy runs)" in out
    code, out = run(*common, "--json")
    doc = json.loads(out)
    assert doc["runs"] == 0 and [c["offered_rate_per_s"] for c in doc["overloads"]] == [1e3, 2e3]
    for c in doc["overloads"]:
        assert c["stable"] is False and c["unstable"] == ["0", "2"]
        assert all(1.0 < b["rate_per_s"] < 10.0 for b in c["service_bounds"].values())
    curve = doc["curves"][0]
    assert curve["points"] == [] and [o["winner"] for o in curve["overloaded"]] == [
        "neither",
        "neither",
    ]


def test_search_at_a_rate_above_every_bound(no_simulation):
    common = ["search", SERVING, "--rate", "1000", "--target", "50", "--num-steps", "2", "-q"]
    code, out = run(*common, "--verbose")
    assert code == 0, out
    assert (
        "unreachable: 1000 requests/s is more than the server answers with k = 2 even with "
        "every draft accepted (k = 2: at most" in out
    )
    code, out = run(*common, "--json")
    doc = json.loads(out)
    (row,) = doc["stability"]["per_num_steps"]
    assert row["least_stable_alpha"] is None and 1.0 < row["service_bound_at_top_per_s"] < 10.0
    assert (
        f"at most {row['service_bound_at_top_per_s']:.3g} requests/s" in doc["targets"][0]["reason"]
    )


def test_sweep_marks_the_rates_above_a_bound(monkeypatch, tmp_path):
    """A rate grid over the Llama scenario: 2 requests a second runs, 1e6 does not (its
    row says so and names both bounds); the stable row is the one a sweep of it alone
    writes."""
    calls = []
    real = sweep_module.simulate_serving

    def counted(plan, policies, **kw):
        calls.append(plan.workload.arrivals.rate_per_s)
        return real(plan, policies, **kw)

    monkeypatch.setattr(sweep_module, "simulate_serving", counted)
    sets = [x for s in LLAMA_SMALL for x in ("--set", s)]
    code, out = run(
        "sweep", LLAMA, *sets, "--grid", "serving.rate_per_s=2,1e6", "--out", tmp_path / "a", "-q"
    )
    assert code == 0, out
    assert calls == [2.0]
    assert "UNSTABLE: 1 point (stable = false in the tables" in out
    assert "1e+06 requests/s is more than the server answers with baseline or speculative" in out
    rows = list(csv.DictReader((tmp_path / "a" / "sweep.csv").open()))
    assert [r["stable"] for r in rows] == ["", "false"]
    assert float(rows[1]["offered_rate_per_s"]) == 1e6
    assert 1.0 < float(rows[1]["speculative_service_bound_per_s"]) < 1e6
    assert rows[1]["speculative_per_user_tok_s_mean"] == ""
    doc = json.loads((tmp_path / "a" / "sweep.json").read_text())
    assert doc["rows"][1]["stable"] is False and "stable" not in doc["rows"][0]
    code, out = run(
        "sweep", LLAMA, *sets, "--grid", "serving.rate_per_s=2", "--out", tmp_path / "b", "-q"
    )
    assert code == 0 and "UNSTABLE" not in out
    alone = json.loads((tmp_path / "b" / "sweep.json").read_text())["rows"][0]
    assert alone == doc["rows"][0]
