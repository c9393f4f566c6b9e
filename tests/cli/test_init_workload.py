"""`specsim init` takes the served workload from the user's bench files: the prompt and
answer lengths of `vllm bench serve` results (their totals, and each request's with
--save-detailed), SGLang `bench_one_batch` (a static batch of fixed lengths, which also
gives the baseline's context) and `bench_speculative` (its mean answer), each with the file
it came from; `--input-tokens` / `--output-tokens` override them; `serve` runs on the
result; files of different workloads and bad length fields are one line, exit 2, no file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario

QUICKSTART = Path(__file__).parents[1] / "data" / "quickstart"
FORMATS = Path(__file__).parents[1] / "data" / "formats"

#: Llama-3.1-8B's config.json fields (the model the SGLang sample files were written for).
LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}

#: A short load: 4 users, 2 replications of 8 requests, no draws, one worker.
SERVE = ["--concurrency", "4", "--replications", "2", "--requests", "8", "--draws", "0"]
SHORT = [*SERVE, "--workers", "1", "--json"]


def _quickstart(tmp_path: Path, detailed: dict | None = None) -> list[str]:
    """The quickstart's init command on copies of its files; ``detailed``: keys added to
    both bench results (as --save-detailed writes them)."""
    (tmp_path / "config.json").write_bytes((QUICKSTART / "config.json").read_bytes())
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100", "--gpus", "4"]
    args += ["--engine", "vllm", "--drafter", "eagle3", "--num-steps", "3"]
    for name in ("bench_baseline.json", "bench_eagle3.json"):
        run = json.loads((QUICKSTART / name).read_text())
        (tmp_path / name).write_text(json.dumps({**run, **(detailed or {})}))
        args += ["--vllm-bench", str(tmp_path / name)]
    return args


def _init(args: list[str], out: Path) -> str:
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_vllm_totals_give_the_mean_lengths_as_an_assumed_fixed_workload(tmp_path: Path) -> None:
    """Both quickstart files: 32,768 prompt and 8,192 answer tokens over 32 requests each,
    so 1,024 and 256 tokens a request; without each request's lengths the spread is not
    known: `fixed`, written as an assumption. serve runs on it at 1,024-token prompts."""
    out = tmp_path / "s.toml"
    report = _init(_quickstart(tmp_path), out)
    assert "workload: 1024 prompt / 256 answer tokens a request, fixed (assumed" in report
    text = out.read_text()
    w = load_scenario(out).workload
    assert (w.input_tokens, w.output_tokens, w.lengths) == (1024, 256, "fixed")
    files = f"{tmp_path / 'bench_baseline.json'}, {tmp_path / 'bench_eagle3.json'}"
    assert f"# from {files}: the mean prompt of their 64 completed requests" in text
    assert "# assumed: every request at the mean lengths" in text
    # the prompts' prefill runs eagerly: its kernels a layer are a named default with a range
    assert load_scenario(out).model.kernels_per_layer == 14
    assert 'range = [\n    11.0,\n    18.0,\n], origin = "assumed"' in text
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr
    doc = json.loads(served.stdout)
    assert doc["mean_input_tokens"] == 1024 and doc["mean_output_tokens"] == 256
    assert "lengths: fixed, 1024 prompt and 256 output tokens" in doc["assumptions"]


def test_each_requests_lengths_give_a_lognormal_matched_by_moments(tmp_path: Path) -> None:
    """--save-detailed lists each request: prompts 512 and 1,536 by turns (mean 1,024, sd
    512), answers 128 and 384 (mean 256, sd 128), so sigma = sqrt(ln(1 + (1/2)^2)) on both
    sides. A failed request (an errors entry, 0 output tokens) is not one of them."""
    n = 32
    detailed = {
        "input_lens": [512, 1536] * (n // 2) + [700],
        "output_lens": [128, 384] * (n // 2) + [0],
        "errors": [""] * n + ["timeout"],
    }
    out = tmp_path / "s.toml"
    report = _init(_quickstart(tmp_path, detailed), out)
    assert "workload: 1024 prompt / 256 answer tokens a request, lognormal" in report
    w = load_scenario(out).workload
    sigma = math.sqrt(math.log(1.25))
    assert (w.input_tokens, w.output_tokens, w.lengths) == (1024, 256, "lognormal")
    assert w.input_sigma == pytest.approx(sigma, abs=1e-6)
    assert w.output_sigma == pytest.approx(sigma, abs=1e-6)
    assert "the 64 requests' prompts (input_lens), mean 1024, sd 512" in out.read_text()
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr
    assert any(
        a.startswith("lengths: lognormal, means 1024 / 256 tokens")
        for a in json.loads(served.stdout)["assumptions"]
    )


def test_files_of_different_workloads_are_refused_and_the_flags_override_them(
    tmp_path: Path,
) -> None:
    """Two runs' mean prompts 1,024 and 2,048 tokens apart by more than 10%: one line
    naming both files, exit 2, no file; --input-tokens says which to serve, and
    --output-tokens overrides the files' 256 (one init for both overrides: a fit each)."""
    args = _quickstart(tmp_path)
    eagle = tmp_path / "bench_eagle3.json"
    eagle.write_text(json.dumps({**json.loads(eagle.read_text()), "total_input_tokens": 65536}))
    out = tmp_path / "s.toml"
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 2 and not out.exists()
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"specsim: error: {tmp_path / 'bench_baseline.json'}: mean prompt")
    assert f"in {eagle}: different workloads" in line and "--input-tokens" in line
    _init([*args, "--input-tokens", "1500", "--output-tokens", "100"], out)
    w = load_scenario(out).workload
    assert (w.input_tokens, w.output_tokens) == (1500, 100)
    text = out.read_text()
    assert "# --input-tokens\ninput_tokens = 1500" in text
    assert "# --output-tokens\noutput_tokens = 100" in text


def test_sglang_bench_one_batch_gives_the_workload_and_the_context(tmp_path: Path) -> None:
    """bench_one_batch's batch-1 record: prompts of 1,024 and answers of 64 tokens exactly
    (measured fixed), and the baseline's context 1,024 + 64 / 2 = 1,056 tokens, so serve
    needs no --context-tokens."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    args += ["--engine", "sglang", "--drafter", "eagle3", "-k", "3", "--accept-length", "2.9"]
    _init([*args, "--sglang-bench", str(FORMATS / "sglang_bench_one_batch.jsonl")], out)
    scenario = load_scenario(out)
    w = scenario.workload
    assert (w.input_tokens, w.output_tokens, w.lengths) == (1024, 64, "fixed")
    assert scenario.timing.context_tokens == 1056.0
    text = out.read_text()
    assert "line 1: every request's prompt in a static batch (input_len: 1024)" in text
    assert "# measured: every request in" in text
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr
    assert json.loads(served.stdout)["mean_input_tokens"] == 1024


def test_sglang_bench_speculative_gives_the_answer_only(tmp_path: Path) -> None:
    """bench_speculative records each run's mean answer (completion_tokens 512) but not its
    prompts: the answer is written from the file, the prompt left out (said so), and the
    context still comes from --context-tokens."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    args += ["--engine", "sglang", "--drafter", "eagle3", "-k", "3"]
    args += ["--sglang-bench", str(FORMATS / "sglang_bench_speculative.jsonl")]
    report = _init([*args, "--context-tokens", "300"], out)
    assert "prompt not given (default 0) / 512 answer tokens" in report
    assert "--input-tokens sets the prompt" in report
    w = load_scenario(out).workload
    assert (w.input_tokens, w.output_tokens) == (None, 512)
    assert "(completion_tokens: 512)" in out.read_text()
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr


def _one_batch(tmp_path: Path, **change) -> Path:
    record = json.loads((FORMATS / "sglang_bench_one_batch.jsonl").read_text().splitlines()[0])
    path = tmp_path / "one_batch.jsonl"
    path.write_text(json.dumps({**record, **change}) + "\n")
    return path


@pytest.mark.parametrize(
    ("option", "change", "field"),
    [
        ("--vllm-bench", {"input_lens": [1024] * 31 + ["x"]}, "input_lens: entry 31 is 'x'"),
        ("--vllm-bench", {"input_lens": [1024] * 32, "output_lens": [256] * 31}, "output_lens"),
        ("--vllm-bench", {"input_lens": [1000] * 32, "output_lens": [256] * 32}, "input_lens"),
        ("--vllm-bench", {"total_output_tokens": 0}, "total_output_tokens"),
        ("--vllm-bench", {"total_input_tokens": -5}, "total_input_tokens"),
        ("--sglang-bench", {"input_len": -1}, "line 1: input_len"),
        ("--sglang-bench", {"output_len": 64.5}, "line 1: output_len"),
    ],
)
def test_a_bad_length_field_is_one_line(tmp_path: Path, option, change, field) -> None:
    (tmp_path / "config.json").write_bytes((QUICKSTART / "config.json").read_bytes())
    if option == "--vllm-bench":
        bench = tmp_path / "bench.json"
        run = json.loads((QUICKSTART / "bench_baseline.json").read_text())
        bench.write_text(json.dumps({**run, **change}))
        flags = ["--gpus", "4", "--engine", "vllm"]
    else:
        bench = _one_batch(tmp_path, **change)
        flags = ["--gpus", "4", "--engine", "sglang"]
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100", *flags]
    result = CliRunner().invoke(main, [*args, option, str(bench), "--out", str(out)])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"specsim: error: {bench}: {field}"), line
    assert "\n" not in line and "Traceback" not in line
    assert not out.exists()


def _bench_serving(path: Path, details: bool = True) -> Path:
    """Two ``sglang.bench_serving --output-file`` runs at --max-concurrency 1 (as its
    json.dumps writes them: request_rate Infinity), plain and EAGLE-3, 16 requests each
    of prompts 300 / 900 by turns and answers of 200; the first with --output-details."""
    runs = []
    for tpot, accept in ((7.1, None), (4.0, 2.9)):
        run = {"backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
               "max_concurrency": 1, "completed": 16, "total_input_tokens": 16 * 600,
               "total_output_tokens": 16 * 200, "mean_tpot_ms": tpot, "std_tpot_ms": 0.2,
               "mean_e2e_latency_ms": 200 * tpot, "concurrency": 1.0,
               "accept_length": accept}  # fmt: skip
        if details and not runs:
            run |= {"input_lens": [300, 900] * 8, "output_lens": [200] * 16, "errors": [""] * 16}
        runs.append(json.dumps(run))
    path.write_text("\n".join(runs) + "\n")
    assert "Infinity" in path.read_text()
    return path


def test_sglang_bench_serving_gives_figures_workload_and_context(tmp_path: Path) -> None:
    """bench_serving at max_concurrency 1: 1000 / 7.1 ms plain and 1000 / 4.0 ms at accept
    length 2.9 (k from --num-steps) are fitted; its requests give the workload (prompts 300
    and 900: mean 600, sd 300, a lognormal sigma sqrt(ln 1.25); answers all 200) and the
    context, 600 + 200 / 2 = 700 tokens; serve runs on it without --context-tokens."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    bench = _bench_serving(tmp_path / "serving.jsonl")
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    args += ["--engine", "sglang", "--drafter", "eagle3", "-k", "3", "--sglang-bench", str(bench)]
    report = _init(args, out)
    assert "workload: 600 prompt / 200 answer tokens a request, lognormal" in report
    scenario = load_scenario(out)
    w = scenario.workload
    assert (w.input_tokens, w.output_tokens, w.lengths) == (600, 200, "lognormal")
    assert w.input_sigma == pytest.approx(math.sqrt(math.log(1.25)), abs=1e-6)
    assert w.output_sigma == 0.0
    assert scenario.timing.context_tokens == 700.0
    assert scenario.acceptance.accept_length is None  # refitted: per-position or alpha
    # the spread from the run that lists its requests, the other's totals said
    assert f"{bench} line 2 gives means only" in out.read_text()
    ran = CliRunner().invoke(main, ["run", str(out), "--json", "--replications", "1"])
    assert ran.exit_code == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["baseline_tok_s"] == pytest.approx(1000 / 7.1, rel=0.02)
    assert doc["analytic"]["throughput_tok_s"] == pytest.approx(1000 / 4.0, rel=0.02)
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr


def test_sglang_bench_serving_without_k_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    bench = _bench_serving(tmp_path / "serving.jsonl", details=False)
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    result = CliRunner().invoke(
        main, [*args, "--engine", "sglang", "--sglang-bench", str(bench), "--out", str(out)]
    )
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr.startswith(f"specsim: error: {bench}: line 2: accept_length: ")
    assert "--num-steps" in result.stderr


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_plain_decoding_from_a_baseline_file(tmp_path: Path, engine: str) -> None:
    """No drafter, one plain-decoding file: the decode is fitted (its drafter passes are
    none, not parameters: init failed on them as NaN before), the workload and context
    come from the file, and serve runs on it."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    if engine == "vllm":
        run = json.loads((QUICKSTART / "bench_baseline.json").read_text())
        # Llama-3.1-8B on one H100: 7.1 ms a token (the quickstart's 70B TP4 took 19.1)
        (tmp_path / "b.json").write_text(json.dumps({**run, "mean_tpot_ms": 7.1}))
        given = ["--vllm-bench", str(tmp_path / "b.json")]
        context = 1024 + 256 / 2
    else:
        given = ["--sglang-bench", str(FORMATS / "sglang_bench_one_batch.jsonl")]
        context = 1024 + 64 / 2
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    _init([*args, "--engine", engine, *given], out)
    scenario = load_scenario(out)
    assert scenario.num_steps == 0 and scenario.timing.context_tokens == context
    assert scenario.workload.input_tokens == 1024
    served = CliRunner().invoke(main, ["serve", str(out), *SHORT])
    assert served.exit_code == 0, served.stderr
