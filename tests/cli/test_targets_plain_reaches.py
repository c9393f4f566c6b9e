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


CONFIGS = ROOT / "tests" / "data" / "configs"


@pytest.fixture(scope="module")
def derived_server(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Qwen3-30B-A3B server on 2x H100 (vLLM, EAGLE-3 k = 3) as ``init`` writes it
    without figures: every pass derived at an assumed bandwidth efficiency of 0.5-1 of
    peak, so plain decoding's speed is uncertain."""
    out = tmp_path_factory.mktemp("server") / "qwen3-30b.toml"
    _invoke("init", "--config", str(CONFIGS / "qwen3-30b-a3b.json"), "--gpu", "H100",
            "--gpus", "2", "--engine", "vllm", "--drafter", "eagle3", "-k", "3",
            "--draft-config", str(CONFIGS / "qwen3-30b-a3b-eagle3.json"),
            "--accept-length", "2.8", "--out", str(out), "-q")  # fmt: skip
    return str(out)


@pytest.mark.parametrize("command", ["run", "search"])
def test_an_uncertain_plain_speed_is_said_with_its_interval(
    command: str, derived_server: str
) -> None:
    """A target below the plain speed's 90% interval is reached; one inside it, though
    below the nominal plain speed, may not be: it gets speculation's answer too."""
    doc = json.loads(_invoke(command, derived_server, "--target", "10", *FAST, "--json"))
    plain = doc["baseline_tok_s"]
    lo, hi = doc["uncertainty"]["baseline_tok_s_interval90"]
    # at the efficiency's top end (1, as written) plain decoding is at its fastest
    assert lo < hi <= plain
    below, inside = round(lo / 2), round((lo + plain) / 2)
    assert below < lo <= inside < plain
    out = _invoke(command, derived_server, "--target", str(below), "--target", str(inside), *FAST)
    within = f"({plain:.1f} tok/s, 90%: {lo:.1f}-{hi:.1f})"
    assert f"{below} tok/s: plain decoding reaches it {within}, no speculation needed" in out
    flat = " ".join(out.split())  # the screen wraps its lines
    assert f"{inside} tok/s: plain decoding may not reach it {within}" in flat
    assert f"{inside} tok/s: plain decoding reaches it" not in flat
    if command == "run":
        assert f"{inside} tok/s: plain decoding may not reach it {within}; at k=3 needs" in flat
    else:
        assert f"target {inside} tok/s: best k =" in flat
