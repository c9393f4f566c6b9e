"""A tok/s target that plain decoding already reaches is said so by ``run`` and ``search``
("plain decoding reaches it (X tok/s), no speculation needed"), not as an accept length
below 1 and first-position rates of 0.000 (a Qwen3-30B-A3B server at 694 tok/s plain was
told 150 tok/s "needs accept length 0.46")."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

SCENARIO = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
FAST = ["--replications", "2", "--requests", "20"]


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, [*args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ["run", "search"])
def test_a_target_plain_decoding_reaches_is_said_so(command: str) -> None:
    doc = json.loads(_invoke(command, str(SCENARIO), "--target", "10", *FAST, "--json"))
    plain = doc["baseline_tok_s"]
    assert plain > 10
    out = _invoke(command, str(SCENARIO), "--target", "10", "--target", f"{2 * plain:.0f}", *FAST)
    said = f"10 tok/s: plain decoding reaches it ({plain:.1f} tok/s), no speculation needed"
    assert said in out
    assert "needs accept length 0." not in out and "rate 0.000" not in out
    assert f"{2 * plain:.0f} tok/s:" in out  # a target above it still gets its answer
