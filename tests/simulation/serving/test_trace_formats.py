"""Trace readers: specsim CSV, Azure LLM inference CSV, BurstGPT CSV, Mooncake JSONL.

Each reader is run on a small file in the published format (tests/data/formats/, sources
in its README) and on broken rows, which are one error naming the file, column and row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.errors import SpecsimError
from sim.simulation.serving.traces import detect_format, parse_trace, read_trace

FORMATS = Path(__file__).resolve().parents[2] / "data" / "formats"


def test_the_azure_trace_is_read_in_seconds_after_its_first_row():
    read = read_trace(FORMATS / "azure_llm_trace_2023_conv.csv")
    assert read.fmt == "azure"
    # 18:15:46.6805900 -> 18:15:50.9951690 is 4.314579 s (100 ns ticks kept)
    assert read.trace.arrival_ms[:2] == pytest.approx([0.0, 4314.579], abs=1e-6)
    assert read.trace.input_tokens.tolist() == [374, 396, 879, 91, 1304, 2048]
    assert read.trace.output_tokens.tolist() == [44, 109, 31, 250, 12, 198]
    assert (read.trace.request_class == -1).all()


def test_burstgpt_keeps_its_clock_and_skips_failed_requests():
    read = read_trace(FORMATS / "burstgpt_1.csv")
    assert read.fmt == "burstgpt"
    assert read.trace.arrival_ms.tolist() == [5000.0, 45000.0, 118000.0, 131000.0, 160000.0]
    assert read.trace.output_tokens.tolist() == [18, 230, 276, 87, 402]
    assert read.notes == ("trace: 1 failed request (Response tokens 0) skipped",)


def test_mooncake_timestamps_are_milliseconds():
    read = read_trace(FORMATS / "mooncake_trace.jsonl")
    assert read.fmt == "mooncake"
    assert read.trace.arrival_ms.tolist() == [0.0, 0.0, 3052.0, 3052.0, 10535.0, 27482.0]
    assert read.trace.input_tokens[0] == 6755 and read.trace.output_tokens[-1] == 52


def test_the_format_can_be_named_and_a_wrong_name_is_refused():
    path = FORMATS / "burstgpt_1.csv"
    assert read_trace(path, fmt="burstgpt").trace.size == 5
    with pytest.raises(SpecsimError, match="missing columns TIMESTAMP, ContextTokens"):
        read_trace(path, fmt="azure")


def test_a_window_keeps_its_arrivals_and_starts_at_its_start():
    read = read_trace(FORMATS / "burstgpt_1.csv", window_s=(40.0, 131.0))
    assert read.trace.arrival_ms.tolist() == [5000.0, 78000.0]  # 45 s and 118 s


def test_the_rate_scale_divides_arrival_times_and_keeps_lengths():
    plain = read_trace(FORMATS / "mooncake_trace.jsonl").trace
    fast = read_trace(FORMATS / "mooncake_trace.jsonl", rate_scale=4.0).trace
    assert np.array_equal(fast.arrival_ms * 4.0, plain.arrival_ms)
    assert np.array_equal(fast.output_tokens, plain.output_tokens)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", "TIMESTAMP (row 1)"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n"
            "2023-11-16 18:15:40,1,1\n",
            "backwards",
        ),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,0\n", "Generated"),
        ("Timestamp,Model,Request tokens,Response tokens\n5,x,-1,3\n", "Request tokens (row 1)"),
        ("Timestamp,Model,Request tokens,Response tokens\nnan,x,1,3\n", "Timestamp (row 1)"),
        ("Timestamp,Model,Request tokens,Response tokens\n1e300,x,1,3\n", "latest arrival"),
        ('{"timestamp": 0, "input_length": 5}\n', "missing key output_length"),
        ('{"timestamp": NaN, "input_length": 5, "output_length": 1}\n', "not JSON"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1.5}\n', "not an integer"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": "x"}\n', "hash"),
        ("{" + '"a": [' * 100 + "]" * 100 + "}\n", "nested deeper"),
        ('[1, 2]\n{"timestamp": 0}\n', "unknown trace format"),
        ("when,who\n1,2\n", "unknown trace format"),
        ("", "empty"),
    ],
)
def test_broken_rows_are_one_error_naming_the_row(text: str, needle: str):
    with pytest.raises(SpecsimError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        parse_trace(text, "t")


def test_detection_reads_past_comments():
    assert detect_format("# made by hand\narrival_s,input_tokens,output_tokens\n", "t") == (
        "specsim"
    )
