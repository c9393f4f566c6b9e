"""One replication, one request, one user: the text says so in the singular."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
ONE = ["--replications", "1", "--requests", "1"]


def test_run_with_one_replication_of_one_request() -> None:
    result = CliRunner().invoke(main, ["run", LLAMA, *ONE, "--set", "workload.output_tokens=1"])
    assert result.exit_code == 0, result.output
    assert "1 replication x 1 request of 1 token, seed" in result.output


def test_serve_with_one_replication() -> None:
    args = ["serve", LLAMA, *ONE, "-q", "--concurrency", "1", "--verbose"]
    result = CliRunner().invoke(main, [*args, "--set", "workload.output_tokens=16"])
    assert result.exit_code == 0, result.output
    assert "; 1 replication x 1 measured request (" in result.output
    assert "replications" not in result.output.splitlines()[0]
    assert "  - warm-up: 1 request discarded (default)" in result.output.splitlines()


def test_serve_a_trace_of_one_request(tmp_path) -> None:
    trace = tmp_path / "one.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,16,8\n")
    args = ["serve", LLAMA, "-q", "--trace", str(trace), "--replications", "1", "--verbose"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"trace {trace} (1 request);" in result.output.splitlines()[0]
