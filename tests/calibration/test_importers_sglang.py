"""SGLang Decode batch lines, as the scheduler prints them across versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.calibration.importers.sglang_log import parse_sglang_log, read_sglang_log
from sim.errors import SpecsimError

DATA = Path(__file__).parents[1] / "data"


def test_server_log_lines_skipped_and_counted() -> None:
    log = read_sglang_log(DATA / "sglang_server.log")
    assert len(log.lines) == 6
    # server args, load, capture, 2 HTTP lines, prefill, garbage, a truncated decode line
    assert log.skipped == 8
    assert log.non_speculative == 0
    assert log.cuda_graph is True
    assert log.implied_num_draft_tokens == 3
    # weighted by running requests: (2.05 + 1.95 + 2.10 + 1.90 + 2 x 2.00 + 2.00) / 7
    assert log.accept_length_mean == pytest.approx(2.0)
    assert log.single_request_tok_s == pytest.approx(60.10)  # median of 5 single-request lines
    first = log.lines[0]
    assert (first.line, first.running_req, first.time, first.ranks) == (
        6,
        1,
        "2025-06-01 10:01:11",
        "TP0",
    )
    assert first.accept_rate == pytest.approx(0.68)
    lo, mid, hi = log.accept_length_quantiles()
    assert lo <= mid <= hi and mid == pytest.approx(2.0)


def test_older_formats() -> None:
    text = (
        "[2025-03-10 12:00:00 TP0] Decode batch. #running-req: 1, #token: 300, token usage: 0.01, "
        "accept len: 4.68, cuda graph: True, gen throughput (token/s): 361.70, #queue-req: 0, \n"
        "[2025-03-10 12:00:01 TP0] Decode batch. #running-req: 1, #token: 400, token usage: 0.01, "
        "accept len: 4.70, gen throughput (token/s): 362.00, #queue-req: 0, \n"
        "[2025-03-10 12:00:02 DP1 TP0] Decode batch [1234], #running-req: 1, #token: 10, "
        "token usage: 0.00, accept len: 4.60, accept rate: 0.77, cpu graph: False, "
        "gen throughput (token/s): 350.00, #queue-req: 0, \n"
    )
    log = parse_sglang_log(text)
    assert [d.accept_length for d in log.lines] == [4.68, 4.70, 4.60]
    assert [d.cuda_graph for d in log.lines] == [True, None, False]
    assert log.cuda_graph is None  # mixed
    assert log.lines[2].ranks == "DP1 TP0"
    assert log.implied_num_draft_tokens == 6


def test_no_speculative_line_is_an_error_saying_what_was_expected() -> None:
    text = (
        "[2025-03-10 12:00:00 TP0] Decode batch. #running-req: 1, #token: 300, token usage: 0.01, "
        "gen throughput (token/s): 80.00, #queue-req: 0, \nhello\n"
    )
    with pytest.raises(SpecsimError) as err:
        parse_sglang_log(text, source="server.log")
    msg = str(err.value)
    assert msg.startswith("server.log: no speculative decode line among 2 lines: expected")
    assert "accept len" in msg and "speculation off" in msg
    with pytest.raises(SpecsimError, match="no speculative decode line among 1 line: expected"):
        parse_sglang_log("hello\n", source="server.log")


def test_lines_with_non_finite_figures_are_skipped_and_counted() -> None:
    """'accept len: nan' passed both range checks, and statistics.stdev then raised an
    AttributeError; 'gen throughput: inf' reached the JSON as a non-finite sigma. Such a
    line is malformed: skipped and counted like any other."""
    line = (
        "[2025-03-10 12:00:00 TP0] Decode batch. #running-req: 1, #token: 300, token usage: "
        "0.01, accept len: {al}, accept rate: {rate}, cuda graph: True, gen throughput "
        "(token/s): {gen}, #queue-req: 0, \n"
    )
    text = "".join(
        line.format(al=al, rate=rate, gen=gen)
        for al, rate, gen in [
            ("2.00", "0.50", "60.0"),
            ("nan", "0.50", "60.0"),
            ("2.00", "0.50", "inf"),
            ("2.00", "nan", "60.0"),
            ("2.20", "0.60", "62.0"),
        ]
    )
    log = parse_sglang_log(text)
    assert [d.line for d in log.lines] == [1, 5] and log.skipped == 3
    assert log.accept_length_mean == pytest.approx(2.1)
    assert log.single_request_tok_s == pytest.approx(61.0)
