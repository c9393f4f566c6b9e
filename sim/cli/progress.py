"""A progress bar on stderr for Monte Carlo runs that take more than about a second."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import click

#: Seconds a run must have taken before the bar appears.
SHOW_AFTER_S = 1.0


class ProgressBar:
    """``progress(done, total)`` callback for ``sim.montecarlo.simulate`` and the serving
    studies.

    Draws nothing when ``enabled`` is false (``--quiet``) or stderr is not a terminal, and
    nothing until ``SHOW_AFTER_S`` seconds have passed. A study that runs its simulations
    in batches (best-k's selection, then its check) reports each batch from 1 to its own
    total: a count that restarts, or a new total, closes the bar and opens the next
    ("simulating, stage 2"), so that a finished bar is never left standing while the
    command works on. Use as a context manager.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._stream.isatty()
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = 0
        self._done = 0
        self._total: int | None = None
        self._stage = 0

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled:
            return
        if done <= self._done or total != self._total:  # a new batch of runs
            self._close()
            self._stage += 1
            self._total = total
        self._done = done
        if self._bar is None:
            if time.monotonic() - self._start < SHOW_AFTER_S:
                return
            label = "simulating" if self._stage == 1 else f"simulating, stage {self._stage}"
            self._bar = click.progressbar(length=total, label=label, file=self._stream)
            self._bar.__enter__()
            self._shown = 0
        self._bar.update(done - self._shown)
        self._shown = done

    def _close(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*(exc or (None, None, None)))
            self._bar = None

    def __enter__(self) -> ProgressBar:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(*exc)
