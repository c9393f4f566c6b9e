"""``specsim serve`` in a closed loop of fixed lengths: plain requests run in lockstep waves
(every plain request's TTFT is its wave's prefill, the same for all) and the first screen
says so in one line; lengths with a spread, or think time between requests, break the waves
and the line is not printed (docs/commands.md, serve)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.report.serving import LOCKSTEP_LINE
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
SMALL = ["--replications", "2", "--requests", "24", "-q", "--concurrency", "4", "--draws", "0"]
FIXED = ["--set", 'workload.lengths="fixed"']


def _serve(*args: str) -> str:
    result = CliRunner().invoke(main, ["serve", str(SERVING), *SMALL, *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_fixed_lengths_in_a_closed_loop_serve_plain_requests_in_waves() -> None:
    doc = json.loads(_serve(*FIXED, "--json"))
    ttft = doc["baseline"]["ttft_ms"]
    assert doc["lockstep"] is True
    assert ttft["p50"] == pytest.approx(ttft["p99"], rel=1e-9)  # one wave's prefill, for all
    spread = json.loads(_serve("--json"))  # the scenario's lognormal lengths
    assert spread["lockstep"] is False
    assert spread["baseline"]["ttft_ms"]["p99"] > 1.5 * spread["baseline"]["ttft_ms"]["p50"]


def test_the_first_screen_says_why_in_one_line() -> None:
    assert len(LOCKSTEP_LINE) <= 100
    lines = _serve(*FIXED).splitlines()
    assert lines.count(LOCKSTEP_LINE) == 1 and len(lines) <= 25
    assert LOCKSTEP_LINE not in _serve()
    assert LOCKSTEP_LINE not in _serve(*FIXED, "--set", "serving.think_time_ms=50")
    assert LOCKSTEP_LINE not in _serve(*FIXED, "--concurrency", "1")


def test_the_line_and_the_slo_still_fit_a_screen() -> None:
    """The serving scenario with fixed lengths, SLOs and the 90% intervals beyond the
    measured batch took 26 lines; over 25 the blank lines go, nothing else."""
    args = ["--draws", "2", "--concurrency", "16", *FIXED, "--set", "serving.ttft_slo_ms=200"]
    result = CliRunner().invoke(main, ["serve", str(SERVING), "--replications", "2",
                                       "--requests", "24", "-q", *args])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100, (len(lines), result.output)
    assert LOCKSTEP_LINE in lines and any(ln.startswith("SLO attainment") for ln in lines)
    assert any("beyond the highest measured batch" in ln for ln in lines)
