"""``specsim init --replay FILE`` of an SGLang ``python -m sglang.bench_serving
--output-file F --output-details`` result: the same job as a vLLM file gives, told from the
file's fields, with the same refusals.

The files are written in SGLang's format as read at sgl-project/sglang commit
0033168f0f58b2bc05aa0273bd475d9c01bafb1c, ``python/sglang/bench_serving.py``
``benchmark()``: the ``result`` dict's keys (``request_rate`` the float it ran at,
``json.dumps`` writing inf as ``Infinity``; ``max_concurrency`` null without the flag;
``concurrency`` the measured mean in flight, not a limit; ``accept_length`` from the
server) then, with ``--output-details``, ``input_lens`` (every request's prompt),
``output_lens`` (0 for a failed one), ``ttfts``, ``itls``, ``generated_texts`` and
``errors`` ("" for a completed one); ``calculate_metrics`` sums the completed requests
into ``completed``, ``total_input_tokens`` and ``total_output_tokens``. One line appended a
run.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.cli.test_init_replay import INPUTS, OUTPUTS, QUICKSTART, bench

#: a failed request's error as bench_serving records it (a formatted traceback)
TRACEBACK = "Traceback (most recent call last):\n  ...\naiohttp.ClientPayloadError: timeout\n"


def run_record(concurrency: int | None = 2, inputs=INPUTS, outputs=OUTPUTS, **changes) -> dict:
    """One bench_serving run of len(inputs) + 1 requests, the 3rd failed."""
    n = len(inputs)
    ins, outs = [*inputs[:2], 50, *inputs[2:]], [*outputs[:2], 0, *outputs[2:]]
    result = {
        "backend": "sglang",
        "dataset_name": "sharegpt",
        "request_rate": float("inf"),
        "max_concurrency": concurrency,
        "sharegpt_output_len": None,
        "random_input_len": 1024,
        "random_output_len": 1024,
        "random_range_ratio": 0.0,
        "duration": 12.5,
        "completed": n,
        "total_input_tokens": sum(inputs),
        "total_output_tokens": sum(outputs),
        "total_output_tokens_retokenized": sum(outputs),
        "request_throughput": n / 12.5,
        "input_throughput": sum(inputs) / 12.5,
        "output_throughput": sum(outputs) / 12.5,
        "mean_e2e_latency_ms": 4000.0,
        "median_e2e_latency_ms": 3000.0,
        "std_e2e_latency_ms": 2500.0,
        "p99_e2e_latency_ms": 9000.0,
        "mean_ttft_ms": 30.0,
        "median_ttft_ms": 28.0,
        "std_ttft_ms": 5.0,
        "p99_ttft_ms": 45.0,
        "mean_tpot_ms": 10.0,
        "median_tpot_ms": 10.0,
        "std_tpot_ms": 0.5,
        "p99_tpot_ms": 11.5,
        "mean_itl_ms": 10.0,
        "median_itl_ms": 10.0,
        "std_itl_ms": 0.6,
        "p95_itl_ms": 11.0,
        "p99_itl_ms": 12.0,
        "concurrency": 1.6,
        "accept_length": 2.4,
    }
    failed = [i == 2 for i in range(n + 1)]
    details = {
        "input_lens": ins,
        "output_lens": outs,
        "ttfts": [0.0 if f else 0.03 for f in failed],
        "itls": [[] if f else [0.01] * max(o - 1, 0) for f, o in zip(failed, outs, strict=True)],
        "generated_texts": ["" if f else "text" for f in failed],
        "errors": [TRACEBACK if f else "" for f in failed],
    }
    return {**result, **details, **changes}


def write(tmp_path: Path, *records: dict, name: str = "sglang.jsonl") -> Path:
    """The runs appended as bench_serving does: json.dumps, one line each."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def init(tmp_path: Path, replay: Path, *extra: str) -> tuple[int, str]:
    args = ["init", "--config", str(QUICKSTART / "config.json"), "--gpu", "H100", "--gpus", "4"]
    args += ["--engine", "sglang", "--replay", str(replay), "--out", str(tmp_path / "s.toml")]
    result = CliRunner().invoke(main, [*args, *extra])
    return result.exit_code, result.output


def rows(tmp_path: Path, name: str = "s.job.csv") -> list[str]:
    lines = (tmp_path / name).read_text().splitlines()
    return [r for r in lines if not r.startswith("#")]


def test_the_run_s_completed_requests_become_the_job_in_order(tmp_path):
    code, out = init(tmp_path, write(tmp_path, run_record()))
    assert code == 0, out
    assert "job: 5 requests of" in out and "by 2 workers" in out, out
    assert rows(tmp_path) == [
        "arrival_s,input_tokens,output_tokens",
        *(f"0,{i},{o}" for i, o in zip(INPUTS, OUTPUTS, strict=True)),
    ]
    scenario = (tmp_path / "s.toml").read_text()
    assert 'lengths = "ordered"' in scenario and 'lengths_trace = "s.job.csv"' in scenario
    assert "concurrency = 2" in scenario and "max_concurrency" in scenario
    result = CliRunner().invoke(
        main, ["serve", str(tmp_path / "s.toml"), "--draws", "0", "--replications", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["load"] == "job of 5 tasks of s.job.csv in order, 2 users"
    assert doc["requests"] == 5 and doc["mean_output_tokens"] == sum(OUTPUTS) / 5


@pytest.mark.parametrize("writer", ["vllm", "sglang"])
def test_without_a_limit_at_an_infinite_rate_every_request_has_its_worker(tmp_path, writer):
    """No max_concurrency at request_rate inf (both clients' default): every request sent
    at once, a closed loop of one worker a completed request (vLLM writes "inf", SGLang
    Infinity)."""
    if writer == "vllm":
        replay = bench(tmp_path, max_concurrency=None, request_rate="inf")
    else:
        replay = write(tmp_path, run_record(None))
    code, out = init(tmp_path, replay)
    assert code == 0, out
    assert "by 5 workers" in out, out
    scenario = (tmp_path / "s.toml").read_text()
    assert "no max_concurrency at request_rate inf: all 5 completed requests sent at once" in (
        scenario
    )
    assert "concurrency = 5" in scenario


def test_the_format_is_told_from_the_fields_not_the_name(tmp_path):
    """The same requests as a vLLM --save-detailed result and as SGLang's, under the same
    file name, give the same rows."""
    code, out = init(tmp_path, bench(tmp_path))
    assert code == 0, out
    from_vllm = rows(tmp_path)
    code, out = init(tmp_path, write(tmp_path, run_record(), name="bench.json"))
    assert code == 0, out
    assert rows(tmp_path) == from_vllm


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [run_record(None, request_rate=4.0)],
            "sglang.jsonl: line 1: max_concurrency: no concurrency limit: the run was not a "
            "closed-loop job (sent at request_rate 4 a second) (sglang.bench_serving "
            "--max-concurrency C)",
        ),
        (
            [run_record(None, request_rate=10**400)],
            "line 1: max_concurrency: no concurrency limit: the run was not a closed-loop job "
            "(sglang.bench_serving --max-concurrency C)",
        ),
        (
            [run_record(None, request_rate=None)],
            "line 1: max_concurrency: no concurrency limit: the run was not a closed-loop job "
            "(sglang.bench_serving --max-concurrency C)",
        ),
        (
            [
                {
                    k: v
                    for k, v in run_record().items()
                    if k not in ("input_lens", "output_lens", "ttfts", "itls", "errors")
                    and k != "generated_texts"
                }
            ],
            "sglang.jsonl: line 1: output_lens: the run lists no request's lengths "
            "(sglang.bench_serving --output-details writes them)",
        ),
        (
            [run_record(), run_record(4)],
            "sglang.jsonl: 2 runs in the file (lines 1, 2); --replay takes the file of one "
            "run (bench_serving appends a line a run to its --output-file): copy the run's "
            "line to a file of its own",
        ),
        (
            # a completed request of 0 tokens (success, no error): nothing to replay
            [run_record(outputs=[40, 400, 0, 60, 25])],
            "line 1: output_lens: completed request 2 has 0 answer tokens",
        ),
        (
            [run_record(total_output_tokens=sum(OUTPUTS) + 9)],
            "line 1: output_lens: the completed requests' entries sum to 532, "
            "total_output_tokens is 541",
        ),
        (
            # every error empty: the failed request (0 tokens) is told by its count only,
            # and completed says one fewer again (an empty-error failure alone is left
            # out: tests/cli/test_calibrate_load_sweep.py)
            [run_record(errors=["", "", "", "", "", ""], completed=4)],
            "line 1: errors: 6 requests without an error (5 of them with answer tokens), "
            "but completed is 4",
        ),
    ],
)
def test_what_is_not_one_listed_closed_loop_run_is_refused(tmp_path, records, message):
    code, out = init(tmp_path, write(tmp_path, *records))
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1, out
    assert "Traceback" not in out
    assert not (tmp_path / "s.toml").exists() and not (tmp_path / "s.job.csv").exists()


SPECULATION = ("--drafter", "eagle3", "-k", "3", "--accept-length", "2.4")


def _job_ms(doc: dict, arm: str) -> float:
    """The job's time (ms) from serve's JSON: its output tokens over its aggregate tok/s
    (an ordered job is measured whole, first request to last answer)."""
    tok_s = doc[arm]["aggregate_tok_s"]
    lo, hi = tok_s["ci95"]
    assert lo == hi, tok_s  # acceptance fixed: nothing drawn, every replication the same
    return 1000.0 * doc["requests"] * doc["mean_output_tokens"] / tok_s["mean"]


@pytest.mark.parametrize("arm", ["baseline", "speculative"])
def test_at_one_user_the_job_lasts_the_sum_of_its_tasks_alone(tmp_path, arm):
    """Exact law of an ordered job with acceptance fixed (plain decoding; speculation
    with every draft accepted): at C = 1 the job's time is the sum of its tasks' times
    each run alone (each a job of one row of the same scenario)."""
    code, out = init(tmp_path, write(tmp_path, run_record(1)), *SPECULATION)
    assert code == 0, out
    scenario = str(tmp_path / "s.toml")
    fixed = ["--draws", "0", "--replications", "2", "--json", "--set", "acceptance.alpha=1"]

    def job_ms(*extra: str) -> float:
        result = CliRunner().invoke(main, ["serve", scenario, *fixed, *extra])
        assert result.exit_code == 0, result.output
        return _job_ms(json.loads(result.output), arm)

    alone = []
    for i, (n_in, n_out) in enumerate(zip(INPUTS, OUTPUTS, strict=True)):
        one = tmp_path / f"task{i}.csv"
        one.write_text(f"arrival_s,input_tokens,output_tokens\n0,{n_in},{n_out}\n")
        alone.append(job_ms("--set", f'workload.lengths_trace="{one}"'))
    # the same iterations' times summed in another grouping, through tok/s: a few ulps
    assert job_ms() == pytest.approx(sum(alone), rel=1e-9)


def _fenced(text: str, lang: str, after: str) -> list[str]:
    """The lines of the first ```lang block after the line ``after``."""
    rest = text[text.index(after) :]
    start = rest.index(f"```{lang}\n") + len(lang) + 4
    return rest[start : rest.index("```", start)].splitlines()


def test_the_docs_example_runs_as_shown(tmp_path, monkeypatch):
    """docs/traces.md's example: its SGLang line, its command, its shown lines and rows."""
    doc = (Path(__file__).parents[2] / "docs" / "traces.md").read_text()
    heading = "## A benchmark run replayed as its job"
    (line,) = _fenced(doc, "json", heading)
    (command,) = _fenced(doc, "sh", heading)
    shown = _fenced(doc, "text", heading)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sglang.jsonl").write_text(line + "\n")
    (tmp_path / "config.json").write_bytes((QUICKSTART / "config.json").read_bytes())
    result = CliRunner().invoke(main, shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    printed = result.output.splitlines()
    header = shown.index("arrival_s,input_tokens,output_tokens")
    assert all(s in printed for s in shown[:header]), (shown, printed)
    assert rows(tmp_path, "job.job.csv") == shown[header:]
