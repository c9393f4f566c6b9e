"""The first screen of ``specsim crossover``: the headline metric's table with every k's
crossings first (the answer), the other metrics' after, then the headline metric's gains by load
and what the answer rests on, in 25 lines of at most 100 characters."""

from __future__ import annotations

from typing import Any

from sim.report.crossover import render_crossover, render_crossover_screen
from sim.report.screen import fits
from tests.report.study_settings import SETTINGS

USERS = (1, 2, 3, 4, 5, 6, 8, 16, 32, 64)
KS = (1, 2, 3, 4)
METRICS = {
    "per_user_tok_s": {"label": "per-user decode speed", "unit": "tok/s"},
    "aggregate_tok_s": {"label": "server output throughput", "unit": "tok/s"},
    "tpot_p50_ms": {"label": "median time per output token", "unit": "ms"},
    "tpot_p99_ms": {"label": "99th-percentile time per output token", "unit": "ms"},
}

#: The heading of the other metrics' lines.
OTHERS = "other metrics at the loads simulated (latencies' gain: k=0 / k; --verbose: tables):"


def _crossing(start: int) -> dict[str, Any]:
    return {
        "direction": "starts paying",
        "at": start - 0.5,
        "ci95": [start - 0.6, start - 0.4],
        "bracket": [start - 1.0, float(start)],
        "ci95_brackets": [[start - 1.0, float(start)], [start - 1.0, float(start)]],
        "interval90": [start - 1, start + 1],
    }


def _curve(metric: str, k: int) -> dict[str, Any]:
    start = 6 if k == 1 else 4
    points = [
        {
            "load": float(u),
            "gain": {
                "mean": 0.6 + 0.1 * u**0.5,
                "ci95": [0.59 + 0.1 * u**0.5, 0.61 + 0.1 * u**0.5],
            },
            "baseline": {"mean": 80.0 / u**0.5},
        }
        for u in USERS
    ]
    return {
        "metric": metric,
        "num_steps": k,
        "points": points,
        "crossings": [_crossing(start)],
        "summary": f"starts paying at {start - 0.5}",
    }


def _doc() -> dict[str, Any]:
    return {
        "scenario": "s",
        "load_kind": "concurrency",
        "grid": [float(u) for u in USERS],
        "num_steps": list(KS),
        "metrics": METRICS,
        **SETTINGS,
        "slo": {"ttft_ms": 2000, "tpot_ms": 40},
        "runs": 81,
        "assumptions": [f"topic {i}: why" for i in range(6)],
        "curves": [_curve(m, k) for m in METRICS for k in KS],
    }


def test_every_k_crossing_sits_under_the_headline_table_before_the_other_metrics():
    """The screen once put the other metrics' block after k=2's crossing, so k=3's and
    k=4's crossings of the headline metric read as if they belonged to the others."""
    lines = render_crossover_screen(_doc()).splitlines()
    others = lines.index(OTHERS)
    crossings = [i for i, ln in enumerate(lines) if ln.startswith("  k=") and ": " in ln]
    assert len(crossings) == len(KS) and max(crossings) < others
    assert [lines[i].split(":")[0].strip() for i in crossings] == [f"k={k}" for k in KS]
    assert lines[crossings[0]] == (
        "  k=1: starts paying from 6 users (95%: 6 .. 6; 90% from inputs and model: 5 .. 7)"
    )


def test_the_headline_gains_stand_a_column_per_load_under_the_answer():
    """The crossings are the answer and come first; the gains they rest on follow, a
    column per load (plain decoding's level the first row, a row per k), and the screen
    fits 25 lines of 100 characters (the 95% intervals of the gains: --verbose)."""
    text = render_crossover_screen(_doc())
    lines = text.splitlines()
    head = lines.index(
        "per-user decode speed by load: k=0's level and each k's gain (--verbose: 95% intervals)"
    )
    assert (
        lines[1]
        == "per-user decode speed: where each k's paired gain over plain decoding (k=0) crosses 1"
    )
    assert head > lines.index(OTHERS)
    assert lines[head + 1].split() == ["users", *(str(u) for u in USERS)]
    assert lines[head + 2].split()[:4] == ["k=0", "tok/s", "80.00", "56.57"]
    gains = [lines[head + 3 + i].split() for i in range(len(KS))]
    assert [g[0] for g in gains] == [f"k={k}" for k in KS]
    assert all(len(g) == 1 + len(USERS) for g in gains)
    assert gains[0][1] == f"{0.6 + 0.1:.3f}"
    assert fits(text, lines=25), (len(lines), text)


def test_the_other_metrics_group_the_k_with_the_same_crossing():
    lines = render_crossover_screen(_doc()).splitlines()
    assert (
        "  median time per output token: k=1 starts paying from 6 users; k=2,3,4 starts paying "
        "from 4 users"
    ) in lines


def test_verbose_keeps_every_table_with_its_crossings_in_full():
    text = render_crossover(_doc())
    assert text.count("each k's gain over it and its 95% interval") == len(METRICS)
    assert text.count("(gain >= 1 there, < 1 at 3); 95% from 4 .. 4 users") == 3 * len(METRICS)


def test_the_other_metrics_write_a_bracket_of_users_short():
    from sim.report.crossover import _crossing_brief

    crossings = [
        {"direction": "starts paying", "bracket": [4, 8]},
        {"direction": "stops paying", "bracket": [16, 32]},
    ]
    text = ", ".join(_crossing_brief(c, "concurrency") for c in crossings)
    assert text == "starts paying at 4-8 users, stops paying at 16-32 users"
    assert _crossing_brief({"direction": "starts paying", "bracket": [5, 6]}, "concurrency") == (
        "starts paying from 6 users"
    )


#: What a load-calibrated scenario's screen adds: the conditioning of its intervals, the
#: loads beyond the highest measured batch, and a load whose backlog grew.
CALIBRATED = {
    "conditioned_on": {
        "figures": 6,
        "loads": [1, 32],
        "metric": "tpot_ms",
        "refitted": ["serving.kernel_slope"],
    },
    "beyond_measured": {
        "load_kind": "concurrency",
        "loads": [64],
        "note": "beyond the highest measured batch",
        "highest_measured_batch": 32,
    },
    "not_steady": [{"load": 64.0, "num_steps": 0, "replications": 2, "of": 2}],
}


def test_a_calibrated_scenarios_screen_keeps_its_answer_and_assumptions_in_25_lines():
    """A load-calibrated newcomer scenario's screen took 31-34 lines: its answer, the
    conditioning line and the loads beyond the measured ones stay; the gains by load go to
    --verbose behind a pointer line when the screen would overflow."""
    text = render_crossover_screen({**_doc(), **CALIBRATED})
    lines = text.splitlines()
    assert fits(text, lines=25), (len(lines), text)
    assert lines[0].startswith("crossover: s, closed loop") and len(lines[2:6]) == len(KS)
    assert all(lines[2 + i].startswith(f"  k={k}: ") for i, k in enumerate(KS))
    assert OTHERS in lines  # the other metrics' crossings kept
    assert any(ln.startswith("intervals conditioned on 6 calibration figures") for ln in lines)
    assert "* 64 users: beyond the highest measured batch (32; --verbose: what that means)" in lines
    assert any(ln.startswith("NOT STEADY: 64 users") for ln in lines)
    assert "per-user decode speed by load, each k's gain: --verbose" in lines
    assert text.count("rests on 6 assumptions") == 1
    uncalibrated = render_crossover_screen(_doc())
    assert "each k's gain: --verbose" not in uncalibrated  # it fits: the gains stay
