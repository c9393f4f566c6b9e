"""The line a serving answer's text gives the conditioning of its intervals."""

from sim.report.conditioning import conditioning_line, conditioning_lines

COND = {
    "figures": 4,
    "metric": "tpot_ms",
    "loads": [1.0, 32.0],
    "sources": ["sweep.json"],
    "refitted": ["serving.kernel_slope"],
}


def test_the_line_names_the_figures_their_loads_and_the_terms_refitted():
    assert conditioning_line(COND) == (
        "intervals conditioned on 4 calibration figures (serving.calibrated_on: tpot_ms at "
        "loads 1-32): serving.kernel_slope re-fitted to them in every draw"
    )
    one = {**COND, "figures": 1, "loads": [8.0, 8.0]}
    assert "on 1 calibration figure (serving.calibrated_on: tpot_ms at load 8)" in (
        conditioning_line(one)
    )


def test_no_line_without_conditioning():
    assert conditioning_lines({}) == []
    assert conditioning_lines({"conditioned_on": COND}) == [conditioning_line(COND)]


def test_loads_beyond_the_highest_calibrated_one_carry_the_note():
    beyond = {"load_kind": "concurrency", "loads": [64, 128], "note": "beyond the highest (32)"}
    assert conditioning_lines({"beyond_measured": beyond}) == [
        "* 64, 128 users: beyond the highest (32)"
    ]
    rate = {**beyond, "load_kind": "rate", "loads": [2.5]}
    assert conditioning_lines({"beyond_measured": rate}) == ["* 2.5 req/s: beyond the highest (32)"]


def test_a_first_screen_gives_each_in_one_line():
    """A command's first screen keeps the figures, the metric, the loads and the terms
    re-fitted, and leaves what the loads beyond mean to --verbose."""
    beyond = {
        "load_kind": "concurrency",
        "loads": [48, 64],
        "highest_measured_batch": 32.0,
        "note": "beyond the highest (32)",
    }
    lines = conditioning_lines({"conditioned_on": COND, "beyond_measured": beyond}, brief=True)
    assert lines == [
        "intervals conditioned on 4 calibration figures (tpot_ms, loads 1-32; re-fit: "
        "serving.kernel_slope)",
        "* 48, 64 users: beyond the highest measured batch (32; --verbose: what that means)",
    ]
    assert all(len(line) <= 100 for line in lines)
