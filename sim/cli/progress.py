"""A progress bar on stderr for Monte Carlo runs that take more than about a second."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import click

#: Seconds a run must have taken before the bar appears.
SHOW_AFTER_S = 1.0


class ProgressBar:
    """``progress(done, total)`` callback for ``sim.montecarlo.simulate``.

    Draws nothing when ``enabled`` is false (``--quiet``) or stderr is not a terminal, and
    nothing until ``SHOW_AFTER_S`` seconds have passed. Use as a context manager.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._stream.isatty()
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = 0

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._start < SHOW_AFTER_S:
                return
            self._bar = click.progressbar(length=total, label="simulating", file=self._stream)
            self._bar.__enter__()
        self._bar.update(done - self._shown)
        self._shown = done

    def __enter__(self) -> ProgressBar:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
