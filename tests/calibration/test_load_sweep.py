"""Load-sweep files: each writer's records become LoadPoints with the right load and TPOT."""

import json

import pytest

from sim.calibration.load_sweep import parse_load_sweep
from sim.errors import SpecsimError


def _vllm(conc, tpot, al=None):
    record = {
        "max_concurrency": conc,
        "request_rate": float("inf") if conc else 4.0,
        "completed": 100,
        "total_input_tokens": 100_000,
        "total_output_tokens": 50_000,
        "request_throughput": 2.0,
        "output_throughput": 1000.0,
        "mean_ttft_ms": 80.0,
        "mean_tpot_ms": tpot,
        "std_tpot_ms": 2.0,
        "mean_itl_ms": tpot,
        "mean_e2el_ms": 4000.0,
    }
    if al is not None:
        record["spec_decode_acceptance_length"] = al
    return json.dumps(record).replace("Infinity", '"inf"')


def test_vllm_bench_serve_runs_at_several_concurrencies():
    text = "\n".join([_vllm(1, 8.0), _vllm(16, 12.0, al=2.9)])
    a, b = parse_load_sweep(text, source="v.json")
    assert (a.format, a.load, a.load_kind) == ("vllm bench serve", 1, "concurrency")
    assert a.speculative is False  # no spec_decode keys: plain decoding
    assert b.speculative is True and b.accept_length == 2.9
    assert a.tpot_se_ms == pytest.approx(2.0 / 10.0)
    # mean context: prompt + half the answer, per request
    assert a.context_tokens == pytest.approx(1000 + 250)


def test_vllm_request_rate_run_takes_littles_law_in_flight():
    (p,) = parse_load_sweep(_vllm(None, 9.0), source="v.json")
    assert p.load_kind == "in flight"
    assert p.load == pytest.approx(2.0 * 4.0)  # 2 req/s x 4 s end to end


def test_sglang_bench_serving_jsonl():
    rows = [
        {"backend": "sglang", "request_rate": 8.0, "max_concurrency": None, "completed": 50,
         "total_input_tokens": 5000, "total_output_tokens": 10000, "output_throughput": 900.0,
         "mean_ttft_ms": 50.0, "mean_tpot_ms": 7.5, "std_tpot_ms": 1.0,
         "mean_e2e_latency_ms": 2000.0, "concurrency": 6.4, "accept_length": 3.1},
        {"backend": "sglang", "request_rate": float("inf"), "max_concurrency": 32,
         "completed": 50, "mean_tpot_ms": 11.0, "mean_e2e_latency_ms": 3000.0,
         "concurrency": 30.2, "accept_length": None},
    ]  # fmt: skip
    text = "\n".join(json.dumps(r).replace("Infinity", "1e309") for r in rows)
    text = text.replace("1e309", '"inf"')
    a, b = parse_load_sweep(text, source="s.jsonl")
    assert (a.format, a.load, a.load_kind, a.accept_length) == ("sglang bench_serving", 6.4,
                                                                 "in flight", 3.1)  # fmt: skip
    assert (b.load, b.load_kind, b.speculative) == (32, "concurrency", False)


def test_sglang_bench_serving_writes_its_default_rate_as_infinity():
    """bench_serving json.dumps its default request_rate, float("inf"): `Infinity`, read
    as no rate (a closed loop at max_concurrency); a NaN stays refused."""
    row = {"backend": "sglang", "request_rate": float("inf"), "max_concurrency": 4,
           "completed": 8, "mean_tpot_ms": 9.0, "mean_e2e_latency_ms": 900.0,
           "accept_length": None}  # fmt: skip
    text = json.dumps(row)
    assert "Infinity" in text
    (p,) = parse_load_sweep(text, source="s.jsonl")
    assert (p.load, p.load_kind, p.rate_per_s) == (4, "concurrency", None)
    with pytest.raises(SpecsimError, match="NaN"):
        parse_load_sweep(text.replace("Infinity", "NaN"), source="s.jsonl")


def test_sglang_offline_benches():
    one = json.dumps({"batch_size": 16, "input_len": 512, "output_len": 256,
                      "median_decode_latency": 0.012})  # fmt: skip
    (p,) = parse_load_sweep(one)
    assert (p.load, p.tpot_ms, p.speculative, p.context_tokens) == (16, 12.0, False, 640.0)
    tree = json.dumps({"batch_size": 8, "steps": 3, "topk": 4, "num_draft_tokens": 8,
                       "acc_length": 3.0, "step_time": 0.015, "speed": 200.0})  # fmt: skip
    (t,) = parse_load_sweep(tree)
    assert t.tree and t.tpot_ms == pytest.approx(5.0) and t.num_draft_tokens == 8


def test_guidellm_report_concurrent_and_rate_benchmarks():
    def summary(mean):
        return {"successful": {"mean": mean, "median": mean}}

    doc = {
        "benchmarks": [
            {"args": {"strategy": {"type_": "concurrent", "streams": 8}},
             "metrics": {"inter_token_latency_ms": summary(9.0),
                         "time_per_output_token_ms": summary(11.0),
                         "prompt_token_count": summary(500), "output_token_count": summary(200),
                         "output_tokens_per_second": summary(800.0)}},
            {"config": {"strategy": {"type_": "constant", "rate": 3.0}},
             "metrics": {"inter_token_latency_ms": summary(10.0),
                         "request_concurrency": summary(5.5)}},
        ]
    }  # fmt: skip
    a, b = parse_load_sweep(json.dumps(doc, indent=2))
    # the decode-only time per token, not the one that includes the first token
    assert (a.load, a.tpot_ms, a.context_tokens) == (8.0, 9.0, 600.0)
    assert a.speculative is None  # guidellm does not say: the scenario decides
    assert (b.load, b.load_kind, b.rate_per_s) == (5.5, "in flight", 3.0)


@pytest.mark.parametrize(
    "text, field",
    [
        ('{"foo": 1}', "line 1"),
        ('{"max_concurrency": 4, "mean_tpot_ms": -1}', "line 1: mean_tpot_ms"),
        ('{"benchmarks": []}', "benchmarks"),
        ('{"mean_tpot_ms": 5.0, "completed": 3}', "line 1"),
    ],
)
def test_bad_files_name_the_field(text, field):
    with pytest.raises(SpecsimError) as err:
        parse_load_sweep(text, source="f.json")
    assert err.value.field == field
