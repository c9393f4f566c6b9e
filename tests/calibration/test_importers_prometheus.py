"""The Prometheus text-format parser (prometheus_client underneath) on the format's own
corner cases."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.calibration.importers.prometheus import counter_samples, parse_exposition
from sim.errors import SpecsimError


def test_help_type_comments_blank_lines_and_timestamps() -> None:
    text = """# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
# just a comment

http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{code="400",method="post"}    3   1395066363000
metric_without_timestamp_and_labels 12.47
"""
    exp = parse_exposition(text)
    assert exp.type_of("http_requests_total") == "counter"
    assert len(exp.samples) == 3
    first, second, third = exp.samples
    assert first.labels == (("code", "200"), ("method", "post"))  # sorted whatever the order
    assert first.timestamp_ms == 1395066363000 and first.line == 5
    assert second.value == 3.0 and second.label("code") == "400"
    assert third.labels == () and third.timestamp_ms is None


def test_label_escapes_and_trailing_comma() -> None:
    text = (
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",'
        'error="Cannot find file:\\n\\"FILE.TXT\\"",} 1.458255915e9\n'
    )
    (s,) = parse_exposition(text).samples
    assert s.label("path") == "C:\\DIR\\FILE.TXT"
    assert s.label("error") == 'Cannot find file:\n"FILE.TXT"'
    assert s.value == pytest.approx(1.458255915e9)


def test_special_values() -> None:
    exp = parse_exposition("a NaN\nb +Inf\nc -Inf\nd 1e-3\n")
    values = [s.value for s in exp.samples]
    assert math.isnan(values[0]) and values[1] == math.inf and values[2] == -math.inf
    assert values[3] == pytest.approx(0.001)


def test_counter_samples_prefers_total_and_ignores_created() -> None:
    text = "x_total 5\nx_created 1.7e9\ny 3\n"
    exp = parse_exposition(text)
    assert [s.value for s in counter_samples(exp, "x")] == [5.0]
    assert [s.value for s in counter_samples(exp, "y")] == [3.0]  # exporter without _total
    assert counter_samples(exp, "z") == ()


def test_openmetrics_exemplar_and_eof_are_tolerated() -> None:
    text = 'foo_total 17.0 1520879607.789 # {trace_id="oHg5SJYRHA0"} 9.8 1520879607.789\n# EOF\n'
    (s,) = parse_exposition(text).samples
    assert s.value == 17.0 and s.timestamp_ms == 1520879607789


@pytest.mark.parametrize(
    "line, fragment",
    [
        # the words after "line 3:" are prometheus_client's where its parser refuses
        ('foo{bar="baz" 1', "could not convert"),
        ("foo{bar=baz} 1", "Invalid labels"),
        ("foo one", "could not convert string to float: 'one'"),
        ('foo{bar="x\\q"} 1', "bad escape"),
        ("HTTP/1.1 200 OK", "is not a number"),
        ("<html>", "expected 'value [timestamp]'"),
        ("foo 1 2 3", "expected 'value [timestamp]'"),
    ],
)
def test_bad_lines_name_their_line_number(line: str, fragment: str) -> None:
    with pytest.raises(SpecsimError) as err:
        parse_exposition(f"# TYPE ok gauge\nok 1\n{line}\n", source="m.txt")
    assert str(err.value).startswith("m.txt: line 3: ")
    assert fragment in str(err.value)


def test_help_text_escapes() -> None:
    exp = parse_exposition("# HELP a Line one\\nC:\\\\path\n# TYPE a gauge\na 1\n")
    assert dict(exp.helps)["a"] == "Line one\nC:\\path"


def test_two_scrapes_concatenated_are_refused() -> None:
    """A duplicate series would be double counted; Prometheus rejects it, so do we."""
    one = 'x_total{engine="0"} 5\n'
    with pytest.raises(SpecsimError, match=r"line 2: duplicate sample x_total .* line 1"):
        parse_exposition(one + one)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


#: Label names of the exposition format; those beginning with "__" are reserved for
#: Prometheus' internal use (https://prometheus.io/docs/concepts/data_model/) and rejected
#: (``test_a_reserved_label_name_is_one_error_line``).
LABEL_NAMES = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: not name.startswith("__")
)


@given(st.dictionaries(LABEL_NAMES, st.text(), max_size=4), st.floats(allow_nan=False))
def test_any_escaped_labels_and_value_round_trip(labels: dict[str, str], value: float) -> None:
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    text = f"m{{{body}}} {value!r}\n"
    (s,) = parse_exposition(text).samples
    assert dict(s.labels) == labels and s.value == value


def test_a_reserved_label_name_is_one_error_line() -> None:
    with pytest.raises(SpecsimError, match=r"line 1: not a valid sample"):
        parse_exposition('m{__name="x"} 1.0\n')


@pytest.mark.slow
def test_a_large_scrape_parses() -> None:
    """20,000 labelled samples parse to 20,000 samples (the growth of the parse time with
    the scrape is a ratio in ``make bench``, benchmarks/bench_parsers.py). Slow (seconds,
    most of this file's time): the same parse of labelled samples runs fast in every other
    test here, the escaped labels' round trip on a hundred drawn samples among them."""
    n = 20_000
    text = "".join(f'x_total{{engine="{i}",model_name="m"}} {i}.0\n' for i in range(n))
    samples = parse_exposition(text).samples
    assert len(samples) == n and samples[-1].value == n - 1
