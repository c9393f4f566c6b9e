"""Hand-worked checks of importers sglang: values computed from the formulas and their sources."""

from __future__ import annotations

import pytest

from sim.calibration.importers.sglang_log import parse_sglang_log


def _line(running: int, al: float, gen: float) -> str:
    return (
        f"[2025-06-01 10:01:11 TP0] Decode batch, #running-req: {running}, #token: 845, "
        f"token usage: 0.00, accept len: {al:.2f}, accept rate: 0.50, cuda graph: True, "
        f"gen throughput (token/s): {gen:.2f}, #queue-req: 0,"
    )


def test_mean_is_weighted_by_running_requests():
    """sglang_log.py accept_length_mean: (1 x 2.0 + 3 x 3.0) / 4 = 2.75, not the plain 2.5."""
    log = parse_sglang_log("\n".join([_line(1, 2.0, 60.0), _line(3, 3.0, 150.0)]))
    assert log.accept_length_mean == pytest.approx(2.75)


def test_spread_is_the_sample_standard_deviation():
    """sglang_log.py accept_length_std: statistics.stdev of (2, 3) = sqrt(0.5) = 0.7071."""
    log = parse_sglang_log("\n".join([_line(1, 2.0, 60.0), _line(1, 3.0, 60.0)]))
    assert log.accept_length_std == pytest.approx(0.5**0.5)


def test_quantiles_interpolate_linearly_by_hand():
    """sglang_log.py: positions q (n - 1) over (1..5): 0.4, 2, 3.6 -> 1.4, 3.0, 4.6."""
    log = parse_sglang_log("\n".join(_line(1, float(a), 60.0) for a in range(1, 6)))
    assert log.accept_length_quantiles() == pytest.approx((1.4, 3.0, 4.6))


def test_idle_single_request_intervals_do_not_count():
    """sglang_log.py single_request_tok_s: the median over gen > 0 only: median(50, 60) = 55."""
    log = parse_sglang_log(
        "\n".join([_line(1, 2.0, 0.0), _line(1, 2.0, 50.0), _line(1, 2.0, 60.0)])
    )
    assert log.single_request_tok_s == pytest.approx(55.0)


def test_accept_len_exactly_one_is_a_valid_line():
    """sglang_log.py: accept len 1.00 (no draft accepted) is >= 1, so it is read, not skipped."""
    log = parse_sglang_log(_line(1, 1.0, 60.0))
    assert log.accept_lengths == (1.0,)
    assert log.skipped == 0
