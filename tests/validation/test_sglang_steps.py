"""SGLang's step time by batch from its ``Decode batch`` lines (sim/validation/sglang_steps.py):
the reading of a line, the fit, the model's step against the batched pass it restates, and the
published series as docs/studies/sglang-step-time.md reports it."""

from __future__ import annotations

import numpy as np
import pytest

from sim.hardware.batched import BatchedPass
from sim.hardware.compute_curve import ComputeCurve
from sim.hardware.pass_physics import PassPhysics
from sim.scenario.load import load_scenario
from sim.validation.data_files import read_table
from sim.validation.sglang_steps import (
    HOST_BOUND_MS,
    LineFit,
    SeriesComparison,
    compare_series,
    fit_line,
    published_series,
    report_lines,
    series_weights,
    step_lines,
    trial_lines,
)
from tests.conftest import ROOT, decode_physics

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
KIMI = ROOT / "scenarios" / "kimi-k25-8xh200-nvlink-eagle3.toml"
DOC = ROOT / "docs" / "studies" / "sglang-step-time.md"


def _line(running: int, tokens: int, gen: float, graph: str = "True", queue: int = 0) -> str:
    return (
        f"[2025-11-11 04:06:30] Decode batch, #running-req: {running}, #token: {tokens}, "
        f"token usage: 0.10, cuda graph: {graph}, gen throughput (token/s): {gen}, "
        f"#queue-req: {queue},"
    )


def test_a_line_is_an_interval_at_the_mean_of_its_two_batches():
    """step_ms = 1000 x B_int / gen throughput; B_int = (previous + this) / 2, this line's alone
    first; eager, queued and prefill-crossed intervals are kept but not used."""
    text = "\n".join(
        [
            _line(40, 30000, 1000.0, graph="False"),
            _line(30, 25000, 1200.0),
            "[2025-11-11 04:06:31] Prefill batch, #new-seq: 1, #new-token: 158, #running-req: 30",
            _line(30, 24000, 1100.0),
            _line(20, 20000, 900.0, queue=3),
            _line(10, 12000, 500.0),
        ]
    )
    lines = step_lines(text)
    assert [x.batch for x in lines] == [40, 35.0, 30.0, 25.0, 15.0]
    assert lines[1].step_ms == pytest.approx(1000.0 * 35.0 / 1200.0, rel=1e-12)
    assert lines[4].step_ms == pytest.approx(1000.0 * 15.0 / 500.0, rel=1e-12)
    assert [x.used for x in lines] == [False, True, False, False, True]
    assert [x.reason for x in lines] == [
        "not graphed",
        "",
        "a prefill in the interval",
        "requests queued",
        "",
    ]
    assert lines[0].kv_tokens == 30000


def test_the_fit_is_ordinary_least_squares_with_bs_standard_error():
    """By hand: x = 1, 2, 3, y = 1, 3, 4: b = 1.5, a = -1/3, residuals 1/6, -1/3, 1/6,
    RSS = 1/6, SE(b) = sqrt(RSS / 1 / Sxx) = sqrt(1/12)."""
    fit = fit_line([1.0, 2.0, 3.0], [1.0, 3.0, 4.0])
    assert fit.b == pytest.approx(1.5, rel=1e-12)
    assert fit.a == pytest.approx(-1.0 / 3.0, rel=1e-12)
    assert fit.b_se == pytest.approx(np.sqrt(1.0 / 12.0), rel=1e-12)
    assert fit.n == 3
    with pytest.raises(ValueError, match="two distinct"):
        fit_line([2.0, 2.0], [1.0, 3.0])


def _comparison(b: float, se: float, b_gpu: float) -> SeriesComparison:
    return SeriesComparison(
        name="synthetic",
        source="https://example.org",
        lines=(),
        measured=LineFit(a=20.0, b=b, b_se=se, n=6),
        model=LineFit(a=18.0, b=b_gpu, b_se=0.0, n=6),
        model_steps_ms=(),
    )


@pytest.mark.parametrize(
    ("b", "se", "verdict"),
    [
        (1.0, 0.05, "host-bound"),  # e = 0.9, e - 2 SE = 0.8 > 0.354
        (0.3, 0.05, "GPU-bound"),  # e = 0.2, e + 2 SE = 0.3 < 0.354
        (0.5, 0.05, "not identified"),  # e = 0.4, the band [0.3, 0.5] holds 0.354
        (1.0, 0.4, "not identified"),  # e = 0.9, e - 2 SE = 0.1
    ],
)
def test_the_verdict_reads_the_excess_and_two_standard_errors(b, se, verdict):
    c = _comparison(b, se, b_gpu=0.1)
    assert c.excess_ms == pytest.approx(b - 0.1)
    assert HOST_BOUND_MS == 0.354
    assert c.verdict == verdict


def _assert_the_batched_passs_work(ours: SeriesComparison, physics: PassPhysics) -> None:
    """The two lines of ``_line(28, 22920, .)`` then ``_line(11, 13642, .)``: the second
    line's interval mean is (28 + 11) / 2 = 19.5, not a whole pass, so the first (B_int = 28)
    is compared exactly and the second through the work's linearity in the tokens."""
    bp = BatchedPass(physics, ComputeCurve(np.array([0.0]), np.array([0.0])))
    first = float(bp.work_ms(28, 22920.0, 22920.0, sequences=28))
    assert ours.model_steps_ms[0] == pytest.approx(first, rel=1e-9)
    at19 = float(bp.work_ms(19, 13642.0, 13642.0, sequences=19))
    at20 = float(bp.work_ms(20, 13642.0, 13642.0, sequences=20))
    assert ours.model_steps_ms[1] == pytest.approx(0.5 * (at19 + at20), rel=1e-9)


def test_the_model_step_is_the_batched_passs_work_on_the_shipped_llama_scenario():
    """The data file's Llama-3.1-8B and the shipped scenario on an L40S give the same work:
    BatchedPass.work_ms over B decode tokens of B sequences, #token KV tokens and pairs."""
    table = dict(read_table("sglang_decode_steps")["series"][0])
    table["lines"] = "\n".join([_line(28, 22920, 1086.59), _line(11, 13642, 475.19)])
    ours = compare_series(table)
    scenario = load_scenario(LLAMA, sets=["hardware.gpu=L40S"])
    physics = decode_physics(
        scenario,
        kv_bytes_per_token=float(scenario.model.kv_bytes_per_token or 0.0),
        attention_flops_per_pair=float(scenario.model.attention_flops_per_pair or 0.0),
    )
    _assert_the_batched_passs_work(ours, physics)


def test_a_moe_series_reads_its_routed_experts_as_the_batched_pass_does():
    """A MoE series (the shipped Kimi-K2.5 scenario's weights on its 8x H200, routed experts
    read as the expected distinct experts of B tokens): BatchedPass.work_ms over B decode
    tokens without a fused-MoE kernel model, exactly at a whole batch and linearly between the
    two around an interval mean (a step reading the experts of one token would fall short
    of it)."""
    scenario = load_scenario(KIMI)
    w = decode_physics(scenario).weights
    table = {
        "name": "synthetic Kimi-K2.5 lines",
        "source": "scenarios/kimi-k25-8xh200-nvlink-eagle3.toml",
        "gpu": "H200",
        "gpus": 8,
        "layers": w.layers,
        "layer_params": w.layer_params,
        "lm_head_params": w.lm_head_params,
        "weight_bytes_per_param": w.weight_bytes_per_param,
        "dense_layers": w.dense_layers,
        "dense_layer_params": w.dense_layer_params,
        "experts": w.experts,
        "experts_per_token": w.experts_per_token,
        "expert_params": w.expert_params,
        "expert_bytes_per_param": w.expert_bytes_per_param,
        "kv_bytes_per_token": 70272.0,
        "attention_flops_per_pair": 1.2e6,
        "lines": "\n".join([_line(28, 22920, 300.0), _line(11, 13642, 150.0)]),
    }
    assert series_weights(table) == w
    ours = compare_series(table)
    physics = decode_physics(scenario, kv_bytes_per_token=70272.0, attention_flops_per_pair=1.2e6)
    assert physics.moe_kernel is None
    _assert_the_batched_passs_work(ours, physics)


def test_the_stored_rates_are_the_sources_and_its_printed_lines_agree_with_them():
    """Each run's harmonic mean of its interval rates is the throughput the source publishes
    (to its 6 decimals); the first retained line it prints is run 1's first rate, and its
    #token / B + 16 tokens an interval to the middle of the kept ones is ``context_tokens``."""
    for table in read_table("sglang_decode_steps")["series"]:
        if "trials" not in table:
            continue
        printed = {x.running_req: x for x in step_lines(table["lines"])}
        for trial in table["trials"]:
            rates = trial["rates"]
            assert len(rates) / sum(1.0 / r for r in rates) == pytest.approx(
                trial["throughput"], abs=5e-7
            )
            line = printed[trial["batch"]]
            if trial["run"] == 1:
                # the gen throughput the printed line carries (its own B_int aside)
                assert 1000.0 * line.batch / line.step_ms == pytest.approx(rates[0])
            context = line.kv_tokens / trial["batch"] + 16.0 * (len(rates) - 1) / 2.0
            assert context == pytest.approx(table["context_tokens"])


def test_trial_rates_are_steady_intervals_at_their_batch():
    lines = trial_lines([{"batch": 16, "run": 1, "rates": [2000.0, 1600.0]}], 392.0)
    assert [x.step_ms for x in lines] == [8.0, 10.0]
    assert all(x.used and x.batch == 16.0 and x.kv_tokens == 6272 for x in lines)


def test_the_published_series_are_reported_as_the_document_says():
    """docs/studies/sglang-step-time.md quotes each series' fit, the model's slope, the excess and
    the verdict from this module; a change to the data or the reading shows here."""
    doc = DOC.read_text()
    series = published_series()
    assert [s.measured.n for s in series] == [6, 252, 261]
    assert [s.verdict for s in series] == ["GPU-bound"] * 3
    for s in series:
        row = (
            f"b = {s.measured.b:.3f} +- {s.measured.b_se:.3f}, b_gpu = {s.model.b:.3f}, "
            f"e = {s.excess_ms:.3f} ms"
        )
        assert row in doc, row


def test_a_server_report_row_is_its_itl_over_the_middle_of_its_decode():
    """By hand: batch 4 at 400 tok/s is 1000 x 4 / 400 = 10 ms a step, at 4 x (100 + 10 / 2)
    = 420 KV tokens."""
    table = {"input_len": 100, "output_len": 10, "batch": [4], "output_throughput": [400.0]}
    (line,) = report_lines(table)
    assert line.step_ms == pytest.approx(10.0, rel=1e-12)
    assert (line.batch, line.kv_tokens, line.cuda_graph, line.used) == (4.0, 420, None, True)


def test_the_found_report_reads_as_its_own_itl_column_and_the_document_quotes_its_raw_fit():
    """The stored bench_one_batch_server report (found, not compared): 1000 B / output
    throughput gives the ITL column it prints, to the column's two decimals (its last row's
    ITL is cut off in the source); its raw least-squares slope and the last row's step are the
    ones docs/studies/sglang-step-time.md quotes."""
    (table,) = read_table("sglang_decode_steps")["found"]
    lines = report_lines(table)
    for line, printed in zip(lines, table["itl_ms"], strict=False):
        assert line.step_ms == pytest.approx(printed, abs=0.005)
    assert [x.kv_tokens for x in lines] == [8704 * b for b in table["batch"]]
    fit = fit_line([x.batch for x in lines], [x.step_ms for x in lines])
    doc = DOC.read_text()
    assert f"grow {fit.b:.3f} +- {fit.b_se:.3f} ms a request" in doc
    assert f"{lines[-1].step_ms:.2f} ms by the tool's own ITL formula" in doc
