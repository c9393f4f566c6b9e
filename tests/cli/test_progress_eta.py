"""The progress bar's count and time left: pure text from (done, total, seconds so far)."""

from __future__ import annotations

from sim.cli import progress as progress_mod
from sim.cli.progress import duration_text, status_text
from tests.cli.test_run import FakeTty


def test_durations_read_in_the_largest_units():
    assert duration_text(0.2) == "1 s"  # rounded up: never "0 s" while work is left
    assert duration_text(42) == "42 s"
    assert duration_text(185) == "3 min 5 s"
    assert duration_text(7790) == "2 h 10 min"


def test_time_left_is_the_pace_so_far_times_the_steps_left():
    assert status_text(0, 40, 3.0) == "0/40"  # no pace yet
    assert status_text(10, 40, 20.0) == "10/40, about 1 min 0 s left"  # 2 s a step x 30
    assert status_text(39, 40, 390.0) == "39/40, about 10 s left"
    assert status_text(40, 40, 400.0) == "40/40, done"


def test_the_bar_shows_the_count_and_the_time_left(monkeypatch):
    monkeypatch.setattr(progress_mod, "SHOW_AFTER_S", 0.0)
    tty = FakeTty()
    with progress_mod.ProgressBar(stream=tty) as bar:
        for done in range(1, 4):
            bar(done, 8)
    out = tty.getvalue()
    assert "3/8, about" in out and "left" in out
