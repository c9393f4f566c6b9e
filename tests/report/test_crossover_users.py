"""A crossover in users is a whole number of users, and the mean lengths are labelled."""

from __future__ import annotations

from sim.report.crossover import crossing_text, settings_line
from sim.studies.serving.break_even import find_crossings
from tests.studies.serving.test_break_even import linear


def test_user_crossing_is_the_fewest_users_past_it_with_whole_ends():
    # g = 0.5 + x / 7.3 rises through 1 at x = 3.65; band +-0.05 -> 3.285 .. 4.015
    (c,) = find_crossings([1, 2, 4, 8, 16], linear(0.5, 1 / 7.3, 0.05), integer=True)
    text = crossing_text(c.to_dict(), "concurrency")
    assert text == "starts paying from 4 users (gain >= 1 there, < 1 at 3); 95% from 4 .. 5 users"
    assert "." not in text.split(";")[0].replace("..", "")  # no fractional user count


def test_stopping_in_users_and_an_open_end():
    # g = 2 - x / 10 falls through 1 at x = 10 (1 exactly: still paying); band +-0.8: the
    # lower bound below 1 from 3 users, the upper one only past the grid's 16
    (c,) = find_crossings([1, 2, 4, 8, 16], linear(2.0, -0.1, 0.8), integer=True)
    text = crossing_text(c.to_dict(), "concurrency")
    assert text == "stops paying from 11 users (gain < 1 there, >= 1 at 10); 95% from 3 .. ? users"


def test_rates_keep_their_interpolated_crossing():
    (c,) = find_crossings([0.25, 0.5, 1, 4, 8], linear(0.5, 0.25, 0.05), integer=False)
    assert crossing_text(c.to_dict(), "rate") == "starts paying at 2 req/s (95% 1.8 .. 2.2)"


def test_mean_lengths_are_whole_tokens_and_labelled_mean():
    doc = {"input_tokens_mean": 1023.87, "output_tokens_mean": 511.961, "batching": "x"}
    line = settings_line(doc)
    assert "mean 1024 prompt / 512 output tokens" in line
    assert "1023.87" not in line


def test_not_steady_names_the_load_in_its_own_unit():
    """A closed loop that did not settle is 'at 10 users', not '10 requests/s'; a rate
    stays a rate."""
    from sim.report.crossover import _not_steady_lines

    row = {"load": 10.0, "num_steps": 0, "replications": 2, "of": 2}
    users = _not_steady_lines({"load_kind": "concurrency", "not_steady": [row]})[1]
    assert users.startswith("NOT STEADY: 10 users (plain decoding in 2 of 2 replications): ")
    rate = _not_steady_lines({"load_kind": "rate", "not_steady": [{**row, "load": 2.5}]})[1]
    assert rate.startswith("NOT STEADY: 2.5 requests/s (plain decoding in 2 of 2 replications)")


def test_rates_in_the_table_keep_three_digits():
    """A bisected rate grid printed '0.42', '0.5', '1' beside '0.273': the same three
    significant digits read the same ('0.420', '0.500', '1.00'); users stay whole."""
    from sim.report.crossover import fmt_load

    assert [fmt_load(x, "rate") for x in (0.273, 0.42, 0.5, 1.0, 12.5)] == [
        "0.273",
        "0.420",
        "0.500",
        "1.00",
        "12.5",
    ]
    assert fmt_load(16.0, "concurrency") == "16"


def test_not_steady_loads_with_the_same_policies_share_one_entry():
    """Six loads where plain decoding grew its backlog in every replication read as one
    entry, not six (the screen's 25 lines)."""
    from sim.report.crossover import _not_steady_lines

    rows = [
        {"load": float(x), "num_steps": 0, "replications": 2, "of": 2} for x in (10, 48, 64)
    ] + [{"load": 56.0, "num_steps": 2, "replications": 1, "of": 2}]
    (line,) = _not_steady_lines({"load_kind": "concurrency", "not_steady": rows})[1:]
    assert line.startswith(
        "NOT STEADY: 10, 48, 64 users (plain decoding in 2 of 2 replications); "
        "56 users (k = 2 in 1 of 2 replications): "
    ), line
