"""trtllm-bench --report_json reports (tests/data/formats/trtllm_bench_report.json, written
as tensorrt_llm/bench/dataclasses/reporting.py writes them): the server, draft length and
accept length they state, tok/s of a streamed one-at-a-time run, the load sweep several
make, and bad input as one line naming the file and the field; TensorRT-LLM's
benchmark_serving results (trtllm_benchmark_serving.json) read as trtllm-serve's, never as
vLLM's plain decoding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sim.calibration.imported_trtllm import trtllm_bench_measurement, trtllm_serving_measurement
from sim.calibration.importers.trtllm_bench import parse_trtllm_bench, read_trtllm_bench
from sim.calibration.importers.trtllm_serving import parse_trtllm_serving
from sim.calibration.load_sweep import parse_load_sweep
from sim.cli import main
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from tests.cli.trtllm_init import REPORT, init_args

DATA = Path(__file__).parents[1] / "data" / "formats"
LLAMA = str(Path(__file__).parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml")


def _doc() -> dict[str, Any]:
    return json.loads(REPORT.read_text())


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "report.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _percentiles(doc: dict[str, Any], key: str) -> dict[str, float]:
    return doc["decoding_stats"][key]


def test_the_sample_report_gives_its_server_draft_and_tok_s() -> None:
    report = read_trtllm_bench(REPORT)
    doc = _doc()
    assert report.model == "meta-llama/Llama-3.1-8B-Instruct" and report.mode == "Eagle3"
    assert (report.tp_size, report.pp_size, report.ep_size) == (1, 1, 1)
    assert report.batch1 and report.speculative and report.num_steps == 3
    al = _percentiles(doc, "acceptance_length_percentiles")["average"]
    rate = _percentiles(doc, "draft_acceptance_rate_percentiles")["average"]
    # per request AL - 1 = k x rate: the draft length the report does not state
    assert (al - 1) / rate == pytest.approx(3, abs=1e-9)
    assert report.accept_length == al and report.draft_acceptance_rate == rate
    tpot = doc["streaming_metrics"]["tpot_percentiles"]["average"]
    assert report.tok_s == pytest.approx(1000 / tpot)
    assert report.context_tokens == 1024 + 256 / 2


def test_its_figures_name_the_file_and_the_field() -> None:
    data = trtllm_bench_measurement(read_trtllm_bench(REPORT), 0.02)
    (point,) = data.points
    (obs,) = data.accept_lengths
    assert point.num_steps == obs.num_steps == 3 and point.context_tokens == 1152
    assert point.source.endswith("streaming_metrics.tpot_percentiles.average")
    assert obs.source.endswith("decoding_stats.acceptance_length_percentiles.average")
    facts = {f.what: (f.value, f.source) for f in data.server}
    assert facts["engine"][0] == "trtllm"
    assert facts["tensor_parallel"] == (1, f"trtllm-bench {REPORT} world_info.tp_size")
    assert facts["model"] == (
        "meta-llama/Llama-3.1-8B-Instruct",
        f"trtllm-bench {REPORT} engine.model",
    )
    (lengths,) = data.lengths
    assert (lengths.input_mean, lengths.output_mean, lengths.requests) == (1024, 256, 32)


def test_a_plain_run_is_the_baseline() -> None:
    doc = _doc()
    del doc["decoding_stats"]
    report = parse_trtllm_bench(json.dumps(doc))
    assert not report.speculative and report.accept_length is None
    data = trtllm_bench_measurement(report, 0.02)
    assert not data.points and not data.accept_lengths
    (base,) = data.baselines
    assert base.tok_s == pytest.approx(report.tok_s)


def test_overlapping_requests_or_no_streaming_give_acceptance_only() -> None:
    doc = _doc()
    doc["request_info"]["avg_num_concurrent_requests"] = 3.9
    data = trtllm_bench_measurement(parse_trtllm_bench(json.dumps(doc)), 0.02)
    assert not data.points and len(data.accept_lengths) == 1
    assert any("batched server's" in n for n in data.notes)
    doc = _doc()
    del doc["streaming_metrics"]
    report = parse_trtllm_bench(json.dumps(doc))
    assert report.tok_s is None
    data = trtllm_bench_measurement(report, 0.02)
    assert not data.points and len(data.accept_lengths) == 1
    assert any("--streaming" in n for n in data.notes)


def test_a_max_batch_size_of_one_is_one_request_at_a_time() -> None:
    doc = _doc()
    doc["request_info"]["avg_num_concurrent_requests"] = 1.2
    assert not parse_trtllm_bench(json.dumps(doc)).batch1
    doc["world_info"]["max_batch_size"] = 1
    assert parse_trtllm_bench(json.dumps(doc)).batch1


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d.pop("world_info"), "world_info"),
        (lambda d: d["world_info"].pop("tp_size"), "world_info: tp_size"),
        (lambda d: d["world_info"].update(tp_size=1.5), "world_info: tp_size"),
        (lambda d: d["request_info"].pop("avg_output_length"), "request_info: avg_output_length"),
        (
            lambda d: d["decoding_stats"].pop("draft_acceptance_rate_percentiles"),
            "decoding_stats: draft_acceptance_rate_percentiles",
        ),
        (
            lambda d: d["decoding_stats"]["draft_acceptance_rate_percentiles"].update(average=0.5),
            "decoding_stats: acceptance_length_percentiles: average",
        ),
        (
            lambda d: d["streaming_metrics"]["tpot_percentiles"].update(average=1e-9),
            "streaming_metrics: tpot_percentiles: average",
        ),
    ],
)
def test_a_missing_or_broken_field_is_named(edit, field: str) -> None:
    doc = _doc()
    edit(doc)
    with pytest.raises(SpecsimError) as err:
        parse_trtllm_bench(json.dumps(doc), source="r.json")
    assert err.value.field == field and err.value.source == "r.json"


def test_another_tools_file_points_to_its_option(tmp_path: Path) -> None:
    runner = CliRunner()
    vllm = str(DATA / "vllm_bench_serve.json")
    result = runner.invoke(main, ["calibrate", "--trtllm-bench", vllm])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("give it as --vllm-bench")
    for option in ("--vllm-bench", "--sglang-bench"):
        result = runner.invoke(main, ["calibrate", option, str(REPORT)])
        assert result.exit_code == 2, option
        assert result.stderr.strip().endswith("give it as --trtllm-bench"), result.stderr


def test_init_writes_the_reports_server_and_figures(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = init_args(tmp_path, "--trtllm-bench", str(REPORT))
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert f"named by trtllm-bench {REPORT} engine.model" in text
    assert "request_info.avg_input_length: 1024" in text
    scenario = load_scenario(str(out))
    assert scenario.server.engine == "trtllm" and scenario.num_steps == 3
    assert scenario.server.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert (scenario.workload.input_tokens, scenario.workload.output_tokens) == (1024, 256)
    assert scenario.timing.context_tokens == 1152


@pytest.mark.parametrize(
    ("edit", "extra", "needle"),
    [
        (lambda d: d["decoding_stats"].pop("acceptance_length_percentiles"), (),
         "decoding_stats: acceptance_length_percentiles: expected percentiles"),
        (lambda d: d.pop("request_info"), (), "request_info: expected an object"),
        (lambda d: None, ("--gpus", "2"), "server.tensor_parallel"),
    ],
)  # fmt: skip
def test_init_refuses_bad_or_contradicting_reports_writing_nothing(
    tmp_path: Path, edit, extra: tuple[str, ...], needle: str
) -> None:
    doc = _doc()
    edit(doc)
    report = _write(tmp_path, doc)
    out = tmp_path / "s.toml"
    args = [*init_args(tmp_path, "--trtllm-bench", report, *extra), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output
    assert not out.exists()


def test_calibrate_refuses_another_server_unless_told_which_wins(tmp_path: Path) -> None:
    """The shipped scenario is SGLang's at num_steps 5; the report TensorRT-LLM's at 3."""
    runner = CliRunner()
    base = ["calibrate", "--scenario", LLAMA, "--trtllm-bench", str(REPORT)]
    result = runner.invoke(main, [*base, "--out", str(tmp_path / "c.toml")])
    assert result.exit_code == 2 and "--prefer" in result.stderr
    assert not (tmp_path / "c.toml").exists()
    result = runner.invoke(main, [*base, "--prefer", "data", "--out", str(tmp_path / "c.toml")])
    assert result.exit_code == 0, result.stderr
    written = load_scenario(str(tmp_path / "c.toml"))
    assert written.num_steps == 3 and written.server.engine == "trtllm"


def _at_load(in_flight: float, tpot_ms: float) -> dict[str, Any]:
    doc = _doc()
    doc["request_info"]["avg_num_concurrent_requests"] = in_flight
    doc["streaming_metrics"]["tpot_percentiles"]["average"] = tpot_ms
    return doc


def test_reports_at_several_concurrencies_are_a_load_sweep(tmp_path: Path) -> None:
    (one,) = parse_load_sweep(REPORT.read_text(), source="r1.json")
    assert one.format == "trtllm-bench" and one.load_kind == "in flight"
    assert one.load == _doc()["request_info"]["avg_num_concurrent_requests"]
    assert (one.num_steps, one.topk, one.num_draft_tokens) == (3, 1, 4)
    assert one.accept_length == read_trtllm_bench(REPORT).accept_length
    doc = _doc()
    del doc["decoding_stats"]
    (plain,) = parse_load_sweep(json.dumps(doc))
    assert not plain.speculative and plain.accept_length == 1.0 and plain.num_steps is None
    init = tmp_path / "s.toml"
    args = init_args(tmp_path, "--trtllm-bench", str(REPORT))
    result = CliRunner().invoke(main, [*args, "--out", str(init)])
    assert result.exit_code == 0, result.stderr
    sweep = [str(REPORT)] + [
        _write(tmp_path, _at_load(c * 0.98, t), f"r{c}.json") for c, t in ((4, 5.3), (16, 7.9))
    ]
    args = ["calibrate", "--scenario", str(init), "--trtllm-bench", str(REPORT)]
    args += [a for path in sweep for a in ("--load-sweep", path)]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "l.toml"), "--json"])
    assert result.exit_code == 0, result.stderr
    written = load_scenario(str(tmp_path / "l.toml"))
    recorded = written.serving.calibrated_on
    assert [r.load for r in recorded] == pytest.approx([one.load, 3.92, 15.68])
    assert [r.measured for r in recorded] == pytest.approx([one.tpot_ms, 5.3, 7.9])


def test_a_forced_acceptance_report_is_a_timing_run(tmp_path: Path) -> None:
    """Its tok/s fits the timings only; the batched report's acceptance the acceptance; a
    report without a one-at-a-time streamed TPOT is refused as a timing run."""
    init = tmp_path / "s.toml"
    args = init_args(tmp_path, "--trtllm-bench", str(REPORT))
    result = CliRunner().invoke(main, [*args, "--out", str(init)])
    assert result.exit_code == 0, result.stderr
    batched = _write(tmp_path, _at_load(3.9, 5.3), "batched.json")
    args = ["calibrate", "--scenario", str(init), "--json", "--timing-run", str(REPORT)]
    result = CliRunner().invoke(main, [*args, "--trtllm-bench", batched])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert any("two-stage" in n for n in doc["notes"])
    result = CliRunner().invoke(main, [*args[:-1], batched])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"specsim: error: {batched}: streaming_metrics: no one-request-at-a-time tok/s in this "
        "report (timing needs a --streaming run at --concurrency 1)"
    )


SERVING = DATA / "trtllm_benchmark_serving.json"


def test_a_benchmark_serving_result_gives_trtllm_figures_at_the_given_k() -> None:
    run = parse_trtllm_serving(SERVING.read_text(), source="s.json")
    doc = json.loads(SERVING.read_text())
    assert run.speculative and run.max_concurrency == 1 and run.completed == 32
    assert run.accept_length == doc["avg_decoded_tokens_per_iter"]["mean"]
    data = trtllm_serving_measurement(run, 0.02, 3)
    (point,) = data.points
    assert point.num_steps == 3 and point.tok_s == pytest.approx(1000 / doc["mean_tpot_ms"])
    assert point.context_tokens == 1024 + 256 / 2
    facts = {f.what: f.value for f in data.server}
    assert facts == {"engine": "trtllm", "model": "meta-llama/Llama-3.1-8B-Instruct"}
    with pytest.raises(SpecsimError) as err:
        trtllm_serving_measurement(run, 0.02, None)
    assert err.value.field == "avg_decoded_tokens_per_iter: mean"
    with pytest.raises(SpecsimError):  # above k + 1 at k = 1
        trtllm_serving_measurement(run, 0.02, 1)


def test_a_serving_run_decoding_one_token_an_iteration_is_the_baseline() -> None:
    doc = json.loads(SERVING.read_text())
    doc["avg_decoded_tokens_per_iter"]["mean"] = 1.0
    data = trtllm_serving_measurement(parse_trtllm_serving(json.dumps(doc)), 0.02, None)
    assert len(data.baselines) == 1 and not data.points and not data.accept_lengths
    doc["avg_decoded_tokens_per_iter"]["mean"] = 0.0  # the server returned none
    with pytest.raises(SpecsimError) as err:
        parse_trtllm_serving(json.dumps(doc))
    assert err.value.field == "avg_decoded_tokens_per_iter: mean"


def test_a_serving_result_read_as_vllms_or_sglangs_points_to_trtllm_bench() -> None:
    for option in ("--vllm-bench", "--sglang-bench", "--load-sweep"):
        args = ["calibrate", option, str(SERVING)]
        if option == "--load-sweep":
            (point,) = parse_load_sweep(SERVING.read_text())
            assert point.format == "trtllm benchmark_serving" and point.speculative
            assert point.accept_length == parse_trtllm_serving(SERVING.read_text()).accept_length
            continue
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2
        assert result.stderr.strip().endswith("give it as --trtllm-bench"), result.stderr


def test_init_reads_a_serving_result_at_its_num_steps(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = init_args(tmp_path, "--trtllm-bench", str(SERVING))
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    scenario = load_scenario(str(out))
    assert scenario.server.engine == "trtllm" and scenario.timing.context_tokens == 1152
    assert scenario.server.model_id == "meta-llama/Llama-3.1-8B-Instruct"


def test_a_detailed_serving_result_replays_as_the_job(tmp_path: Path) -> None:
    doc = json.loads(SERVING.read_text())
    doc.update(input_lens=[1000 + i for i in range(32)], output_lens=[256] * 32, errors=[""] * 32)
    doc["total_input_tokens"] = sum(doc["input_lens"])
    path = _write(tmp_path, doc, "detailed.json")
    out = tmp_path / "s.toml"
    args = [*init_args(tmp_path, "--trtllm-bench", path), "--replay", path, "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    rows = [r for r in (tmp_path / "s.job.csv").read_text().splitlines() if r[0] != "#"]
    assert rows[1:] == [f"0,{1000 + i},256" for i in range(32)]
    assert load_scenario(str(out)).workload.lengths == "ordered"
