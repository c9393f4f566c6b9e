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
    k3 = {**pol(3, 2.4691, [2.2, 2.6], 2.0001), "capacity_gain_ci95": [1.9049, 2.1051]}
    return {
        "scenario": "s",
        "share": 0.9,
        "rtol": 0.02,
        "runs": 4,
        "policies": [pol(0, 1.2345, [1.1, 1.3], 1.0), k3],
    }


def test_capacity_rates_to_three_significant_digits_and_plain_decoding_first():
    """report/capacity.py: req/s as :.3g (1.2345 -> 1.23), the k = 0 row named plain decoding, gain
    as 2.00x with its paired interval to 2 decimals (none on plain decoding's own row)."""
    text = render_capacity(_capacity_doc())
    rows = [line for line in text.splitlines() if line.startswith("  ") and "req/s" not in line]
    assert rows[0].split()[:3] == ["plain", "decoding", "1.23"]
    assert rows[1].split()[:4] == ["k", "=", "3", "2.47"]
    assert rows[0].rstrip().endswith("1.00x")
    assert rows[1].rstrip().endswith("2.00x  [1.90, 2.11]")


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


def test_significant_digits_keep_their_trailing_zeros():
    """format.py sig: three significant digits as printed, trailing zeros kept (0.6 is
    '0.600', not '0.6', which reads as one digit), no bare trailing point, exponents as
    :.3g gives them."""
    from sim.report.format import sig

    assert sig(0.62) == "0.620" and sig(0.6) == "0.600" and sig(0.6831) == "0.683"
    assert sig(178.0, 4) == "178.0" and sig(100.0) == "100" and sig(20480.0) == "2.05e+04"
    assert sig(1.0) == "1.00" and sig(0.0) == "0.00"


def test_capacity_rates_and_their_interval_keep_three_digits():
    """A capacity of 0.62 req/s with 95% interval [0.6, 0.683] printed '0.62  [0.6, 0.683]':
    the same precision must read the same."""
    doc = _capacity_doc()
    doc["policies"][0] = {**doc["policies"][0], "rate_per_s": 0.62, "ci95": [0.6, 0.683]}
    text = render_capacity(doc)
    row = next(r for r in text.splitlines() if r.startswith("  plain decoding"))
    assert row.split()[2:5] == ["0.620", "[0.600,", "0.683]"]


def test_crossover_gain_intervals_have_the_gains_decimals():
    """The crossover table printed a gain of 1.198 as '1.198 [1.2, 1.2]' (an interval that
    reads as zero width) and 1.006 as '1.006 [1, 1.01]' (is the lower end above 1?): the
    interval takes the gain's three decimals."""
    from sim.report.crossover import render_crossover

    point = lambda x, m, lo, hi, base: {  # noqa: E731
        "load": x,
        "gain": {"mean": m, "ci95": [lo, hi]},
        "baseline": {"mean": base},
    }
    doc = {
        "load_kind": "concurrency",
        "num_steps": [2],
        "grid": [1, 8],
        "scenario": "s",
        "runs": 4,
        "metrics": {"per_user_tok_s": {"label": "per-user", "unit": "tok/s"}},
        "curves": [
            {
                "metric": "per_user_tok_s",
                "num_steps": 2,
                "points": [
                    point(1, 1.006, 1.0012, 1.0109, 178.0),
                    point(8, 1.198, 1.1962, 1.2, 37.38),
                ],
                "crossings": [],
                "summary": "pays everywhere",
            }
        ],
    }
    rows = [r.split() for r in render_crossover(doc).splitlines() if r[2:7].strip().isdigit()]
    assert rows[0] == ["1", "178.0", "1.006", "[1.001,", "1.011]"]
    assert rows[1] == ["8", "37.38", "1.198", "[1.196,", "1.200]"]
