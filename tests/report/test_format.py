"""Hand-worked checks of format: values computed from the formulas and their sources."""

from __future__ import annotations

from sim.report.capacity import render_capacity
from sim.report.format import fmt_alpha
from sim.report.hardware import _ar_text


def test_alpha_is_printed_to_three_decimals():
    """format.py: conditional rates to 3 decimals (search bisects alpha to 5e-4); None -> the
    placeholder."""
    assert fmt_alpha(0.12345) == "0.123"
    assert fmt_alpha(None) == "unreachable" and fmt_alpha(None, missing="-") == "-"


def _capacity_doc():
    pol = lambda k, r, ci, g: {"num_steps": k, "rate_per_s": r, "ci95": ci, "capacity_gain": g}  # noqa: E731
    return {
        "scenario": "s",
        "share": 0.9,
        "rtol": 0.02,
        "runs": 4,
        "policies": [pol(0, 1.2345, [1.1, 1.3], 1.0), pol(3, 2.4691, [2.2, 2.6], 2.0001)],
    }


def test_capacity_rates_to_three_significant_digits_and_plain_decoding_first():
    """report/capacity.py: req/s as :.3g (1.2345 -> 1.23), the k = 0 row named plain decoding, gain
    as 2.00x."""
    text = render_capacity(_capacity_doc())
    rows = [line for line in text.splitlines() if line.startswith("  ") and "req/s" not in line]
    assert rows[0].split()[:3] == ["plain", "decoding", "1.23"]
    assert rows[1].split()[:4] == ["k", "=", "3", "2.47"]
    assert rows[1].rstrip().endswith("2.00x")


def test_custom_allreduce_is_never_labelled_eager():
    """report/hardware.py: an ungraphed pass's custom all-reduce is not an eager NCCL call."""
    p = {
        "allreduces": 64,
        "graphed": False,
        "allreduce": {"us": 7.25, "algorithm": "custom", "protocol": "one-shot"},
    }
    assert _ar_text(p) == "64 x 7.2 us custom/one-shot"
    p["allreduce"]["algorithm"] = "ring"
    assert _ar_text(p).endswith(" eager")


def test_a_count_of_one_is_singular():
    """format.py count: '1 replication', '0 replications', '20 replications'."""
    from sim.report.format import count

    assert count(1, "replication") == "1 replication"
    assert count(0, "request") == "0 requests" and count(20, "user") == "20 users"


def test_capacity_of_one_replication_says_it_has_no_interval():
    doc = {**_capacity_doc(), "replications": 1}
    doc["policies"] = [{**p, "ci95": [None, None]} for p in doc["policies"]]
    text = render_capacity(doc)
    assert "[?, ?]" in text and "(one replication: no 95% interval;" in text
    assert "one replication" not in render_capacity({**_capacity_doc(), "replications": 2})
