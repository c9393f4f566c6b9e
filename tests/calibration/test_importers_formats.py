"""vLLM bench serve JSON, SGLang bench_speculative JSONL, vLLM latency histograms and the
SGLang server_args line, on samples written as those tools write them (tests/data/formats),
and the two-stage calibration they make possible."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.calibration.imported import server_args_measurement
from sim.calibration.importers.sglang_bench import parse_sglang_bench, read_sglang_bench
from sim.calibration.importers.sglang_log import parse_sglang_log
from sim.calibration.importers.sglang_server_args import (
    parse_sglang_server_args,
    read_sglang_server_args,
)
from sim.calibration.importers.vllm_bench import parse_vllm_bench, read_vllm_bench
from sim.calibration.importers.vllm_metrics import read_vllm_latency, read_vllm_metrics
from sim.cli import main
from sim.errors import SpecsimError

DATA = Path(__file__).parents[1] / "data" / "formats"
LLAMA = str(Path(__file__).parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml")


def test_vllm_bench_serve_reads_the_spec_decode_keys() -> None:
    (run,) = read_vllm_bench(DATA / "vllm_bench_serve.json")
    assert run.num_spec_tokens == 3 and run.max_concurrency == 16 and not run.batch1
    # the percent and the fractions agree with the counts they come from
    assert run.acceptance_rate_percent == pytest.approx(100 * 10131 / 18996)
    assert run.accept_length == pytest.approx(1 + 10131 / 6332)
    assert run.accept_length == pytest.approx(1 + sum(run.cumulative))
    assert run.tok_s == pytest.approx(1000 / run.mean_tpot_ms)


def test_vllm_bench_context_is_the_mean_prompt_and_half_the_answer() -> None:
    """(total_input_tokens + total_output_tokens / 2) / completed: the mean context a
    request's decode ran at; None without the totals; a negative total is named."""
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    doc.update(completed=10, total_input_tokens=20_000, total_output_tokens=5_000)
    (run,) = parse_vllm_bench(json.dumps(doc))
    assert run.context_tokens == (20_000 + 2_500) / 10 == 2_250
    del doc["total_output_tokens"]
    assert parse_vllm_bench(json.dumps(doc))[0].context_tokens is None
    doc["total_output_tokens"] = -1
    with pytest.raises(SpecsimError) as err:
        parse_vllm_bench(json.dumps(doc), source="b.json")
    assert err.value.field == "total_output_tokens"


def test_vllm_bench_append_result_is_json_lines() -> None:
    one = (DATA / "vllm_bench_serve.json").read_text().strip()
    runs = parse_vllm_bench(
        one + "\n" + one.replace('"max_concurrency": 16', '"max_concurrency": 1')
    )
    assert [r.line for r in runs] == [1, 2] and runs[1].batch1


def test_a_pretty_printed_bench_file_is_one_object() -> None:
    """``python -m json.tool`` output spans many lines: it is one object, not JSON Lines
    (its first line, "{", is not an object by itself); a broken one names the document's
    own position, not a line of JSON Lines."""
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    (run,) = parse_vllm_bench(json.dumps(doc, indent=4))
    assert run.num_spec_tokens == 3 and run.max_concurrency == 16
    with pytest.raises(SpecsimError, match="not JSON") as err:
        parse_vllm_bench(json.dumps(doc, indent=4)[:-2], source="b.json")
    assert err.value.field is None


def test_vllm_bench_rejects_a_rate_given_as_a_fraction_above_one() -> None:
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    doc["spec_decode_per_position_acceptance_rates"] = [82.0, 53.0, 25.0]  # percents
    with pytest.raises(SpecsimError, match="fractions"):
        parse_vllm_bench(json.dumps(doc), source="b.json")


@pytest.mark.parametrize(
    ("rates", "note"),
    [
        ([0.53, 0.82, 0.25], "increase with position"),  # rising: vLLM's cannot
        ([0.82, 0.53, 0.10], "sum to -9.4% of the accepted tokens"),  # 1 + 1.45 != 2.6
        ([0.8199620972836387, 0.5300063171193936, 0.25], None),  # the file as written
    ],
)
def test_vllm_bench_per_position_rates_it_contradicts_are_noted(
    rates: list[float], note: str | None, tmp_path: Path
) -> None:
    """The bench importer took per-position rates that rise with position, or that
    disagree with the accept length, without the note the /metrics importer gives (the fit
    uses the per-position rates, a batch-1 point the accept length)."""
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    doc["spec_decode_per_position_acceptance_rates"] = rates
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    result = _cli("--vllm-bench", str(path))
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note: ")]
    checks = [n for n in notes if "per-position" in n or "position somewhere" in n]
    if note is None:
        assert checks == []
    else:
        assert len(checks) == 1 and note in checks[0] and str(path) in checks[0]


def test_sglang_bench_speculative_records() -> None:
    bench = read_sglang_bench(DATA / "sglang_bench_speculative.jsonl")
    plain, chain = bench.records[0], bench.records[1]
    assert plain.steps == 0 and plain.speed_tok_s == pytest.approx(1 / plain.step_time_s, rel=1e-3)
    assert chain.chain and chain.speed_tok_s == pytest.approx(
        chain.acc_length / chain.step_time_s, rel=1e-3
    )
    with pytest.raises(SpecsimError, match="line 2: acc_length"):
        parse_sglang_bench(
            (DATA / "sglang_bench_speculative.jsonl").read_text().replace('"acc_length": 2.962',
                                                                            '"acc_length": 9.0')
        )  # fmt: skip


def test_vllm_latency_histograms_current_and_deprecated_names() -> None:
    new = read_vllm_latency(DATA / "vllm_metrics_tpot.txt")
    old = read_vllm_latency(DATA / "vllm_metrics_tpot_legacy_v0.10_v0.12.txt")
    assert new.step.family == "vllm:inter_token_latency_seconds"
    # one observation per engine step: as many as drafts at batch 1 in these samples
    assert new.step.count == pytest.approx(
        read_vllm_metrics(DATA / "vllm_metrics_tpot.txt").num_drafts
    )
    assert new.request_tpot is not None and new.request_tpot.mean_ms < new.step.mean_ms
    assert old.step.mean_ms == pytest.approx(9.8168, rel=1e-4)


def test_server_args_line_gives_the_speculative_settings() -> None:
    args = read_sglang_server_args(DATA / "sglang_server_args.log")
    assert (args.speculative_algorithm, args.num_steps, args.topk, args.num_draft_tokens) == (
        "EAGLE3", 3, 1, 4,
    )  # fmt: skip
    real = (DATA / "sglang_server_args.log").read_text().split("\n")
    off = next(ln for ln in real if "speculative_algorithm=None" in ln)
    assert parse_sglang_server_args(off).num_steps is None


@pytest.mark.parametrize(
    "parse, text",
    [
        (parse_sglang_log, "Decode batch, " + "k: v, " * 200_000 + "accept len: 2.0\n"),
        (parse_sglang_log, "Decode batch, #running-req: 1, " + "x" * 1_000_000),
        (parse_sglang_server_args, "server_args=ServerArgs(" + "a=1, " * 50_000 + "b=2)"),
        (parse_vllm_bench, json.dumps({"mean_tpot_ms": 3.0, "x": "y" * 1_000_000})),
    ],
)
def test_parsers_finish_on_megabyte_lines(parse, text) -> None:
    """A 1 MB line parses (or is refused with one line): the pattern that was quadratic
    took 28 s at 40k characters, so it would not finish here. The linear growth itself is
    measured as a ratio by ``make bench`` (benchmarks/bench_parsers.py), not asserted on
    a clock here."""
    with contextlib.suppress(SpecsimError):
        parse(text)


def _cli(*args: str):
    return CliRunner().invoke(main, ["calibrate", *args])


def test_import_only_prints_what_it_read() -> None:
    result = _cli("--vllm-bench", str(DATA / "vllm_bench_serve.json"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "import"
    (figures,) = doc["imported"]
    assert figures["format"] == "vllm bench serve JSON"
    assert figures["accept_length"] == pytest.approx(2.6, abs=1e-4)
    assert [c["rate"] for c in doc["cumulative"]] == pytest.approx([0.82, 0.53, 0.25], abs=1e-4)


def test_two_stage_timing_from_synthetic_runs_acceptance_from_real(tmp_path: Path) -> None:
    """Timing from a forced-acceptance run, acceptance from the real drafter's run; the
    real run's own tok/s is held out and scored, not fitted."""
    real = json.loads((DATA / "vllm_bench_serve.json").read_text())
    real["max_concurrency"] = 1
    (tmp_path / "real.json").write_text(json.dumps(real))
    out = tmp_path / "cal.toml"
    result = _cli(
        "--scenario", LLAMA, "--timing-run", str(DATA / "sglang_bench_speculative.jsonl"),
        "--vllm-bench", str(tmp_path / "real.json"), "--json", "--out", str(out),
        "--prefer", "base",  # the fixtures ran k 3, the base k 5
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    fitted = {v["field"]: v for v in doc["values"] if v["fitted"]}
    # timing from the SGLang run: the baseline record (step_time 7.11 ms) and the chain and
    # tree records together fix decode_ms (the tree row 5/4/8 is a point on its own cycle)
    assert fitted["timing.decode_ms"]["value"] == pytest.approx(7.11, rel=5e-3)
    assert any(r["what"].startswith("tok/s at tree 5/4/8") for r in doc["residuals"])
    # acceptance from the vLLM run's per-position rates, a_1 = c_1
    assert fitted["acceptance.per_position[0]"]["value"] == pytest.approx(0.82, abs=1e-3)
    (check,) = doc["checks"]
    assert check["measured"] == pytest.approx(1000 / real["mean_tpot_ms"])
    assert "held out" in check["what"]
    assert doc["calibrated_scenario"]["name"].endswith("-calibrated")
    assert any("vllm bench" in s for s in doc["calibrated_scenario"]["sources"])
    assert 'name = "llama31-8b-1xh100-eagle3-calibrated"' in out.read_text()


def test_sglang_bench_one_batch_gives_the_baseline() -> None:
    result = _cli("--sglang-bench", str(DATA / "sglang_bench_one_batch.jsonl"), "--json")
    assert result.exit_code == 0, result.output
    (baseline,) = json.loads(result.stdout)["baselines"]
    assert baseline["tok_s"] == pytest.approx(1 / 0.007046768015381171)


@pytest.mark.parametrize(
    ("option", "record", "fragment"),
    [
        # a 400-digit integer: math.isfinite raised OverflowError (a traceback)
        ("--vllm-bench", '{"mean_tpot_ms": 1' + "0" * 400 + "}", "mean_tpot_ms: not a finite"),
        (
            "--sglang-bench",
            '{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 2.0,'
            ' "step_time": 1' + "0" * 400 + ', "speed": 100, "completion_tokens": 512}',
            "step_time: not a finite",
        ),
        # completed -5: the tok/s spread took sqrt(-5) (math domain error, a traceback)
        ("--vllm-bench", '{"mean_tpot_ms": 9, "max_concurrency": 1, "completed": -5}', "completed"),
        ("--vllm-bench", '{"mean_tpot_ms": 10, "completed": 2.5}', "completed"),
        ("--vllm-bench", '{"mean_tpot_ms": 10, "std_tpot_ms": -1}', "std_tpot_ms: -1 must be"),
    ],
)
def test_impossible_bench_figures_are_one_line(option, record, fragment, tmp_path) -> None:
    path = tmp_path / "result.json"
    path.write_text(record + "\n")
    result = _cli(option, str(path))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"specsim: error: {path}") and fragment in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_server_args_line_gives_the_kv_cache_dtype() -> None:
    real = (DATA / "sglang_server_args.log").read_text().split("\n")
    fp8 = parse_sglang_server_args(next(ln for ln in real if "kv_cache_dtype='fp8_e4m3'" in ln))
    auto = read_sglang_server_args(DATA / "sglang_server_args.log")
    assert (fp8.kv_cache_dtype, auto.kv_cache_dtype) == ("fp8_e4m3", "auto")
    said = [n for n in server_args_measurement(fp8).notes if "kv_cache_dtype" in n]
    assert said and "specsim init --kv-cache-dtype fp8_e4m3" in said[0]
    assert not [n for n in server_args_measurement(auto).notes if "kv_cache_dtype" in n]
