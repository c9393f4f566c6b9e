"""``specsim init --replay FILE``: a vllm bench serve --save-detailed run replayed as the
served job (``workload.lengths = "ordered"``), its rows written beside the scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

QUICKSTART = Path(__file__).parents[1] / "data" / "quickstart"
INPUTS = [100, 120, 90, 300, 80]
OUTPUTS = [40, 400, 7, 60, 25]


def bench(tmp_path: Path, **changes) -> Path:
    """A vllm bench serve result of 6 requests at max_concurrency 2, the 3rd failed."""
    record = {
        "max_concurrency": 2,
        "completed": 5,
        "failed": 1,
        "total_input_tokens": sum(INPUTS),
        "total_output_tokens": sum(OUTPUTS),
        "mean_tpot_ms": 10.0,
        "input_lens": [*INPUTS[:2], 50, *INPUTS[2:]],
        "output_lens": [*OUTPUTS[:2], 0, *OUTPUTS[2:]],
        "errors": ["", "", "timeout", "", "", ""],
        **changes,
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(record))
    return path


def init(tmp_path: Path, replay: Path) -> tuple[int, str]:
    args = ["init", "--config", str(QUICKSTART / "config.json"), "--gpu", "H100", "--gpus", "4"]
    args += ["--engine", "vllm", "--replay", str(replay), "--out", str(tmp_path / "s.toml")]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def test_the_run_s_completed_requests_become_the_job_in_order(tmp_path):
    code, out = init(tmp_path, bench(tmp_path))
    assert code == 0, out
    assert "job: 5 requests of" in out and "s.job.csv" in out
    rows = (tmp_path / "s.job.csv").read_text().splitlines()
    body = [r for r in rows if not r.startswith("#")]
    assert body[0] == "arrival_s,input_tokens,output_tokens"
    assert body[1:] == [f"0,{i},{o}" for i, o in zip(INPUTS, OUTPUTS, strict=True)]
    scenario = (tmp_path / "s.toml").read_text()
    assert 'lengths = "ordered"' in scenario and 'lengths_trace = "s.job.csv"' in scenario
    result = CliRunner().invoke(
        main,
        ["serve", str(tmp_path / "s.toml"), "--draws", "0", "--replications", "2", "--json"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["load"] == "job of 5 tasks of s.job.csv in order, 2 users"
    assert doc["requests"] == 5 and doc["mean_output_tokens"] == sum(OUTPUTS) / 5


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_concurrency": None}, "bench.json: max_concurrency: no concurrency limit"),
        (
            {"input_lens": None, "output_lens": None, "errors": None},
            "bench.json: output_lens: the run lists no request's lengths",
        ),
    ],
)
def test_a_run_that_is_not_a_listed_closed_loop_job_is_refused(tmp_path, changes, message):
    code, out = init(tmp_path, bench(tmp_path, **changes))
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1, out
    assert not (tmp_path / "s.toml").exists() and not (tmp_path / "s.job.csv").exists()


def test_the_rows_are_not_left_behind_when_the_scenario_cannot_be_written(tmp_path, monkeypatch):
    import sim.files

    write = sim.files.atomic_write_text

    def full_disk(path, text):
        if str(path).endswith(".toml"):
            raise OSError(28, "No space left on device")
        write(path, text)

    monkeypatch.setattr(sim.files, "atomic_write_text", full_disk)
    code, out = init(tmp_path, bench(tmp_path))
    assert code != 0 and "Traceback" not in out, out
    assert not (tmp_path / "s.toml").exists() and not (tmp_path / "s.job.csv").exists()
