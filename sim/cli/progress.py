"""A progress bar on stderr for Monte Carlo runs that take more than about a second."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

import click

if TYPE_CHECKING:
    from sim.scenario.schema import Scenario

#: Seconds a run must have taken before the bar appears.
SHOW_AFTER_S = 1.0


def announce_slow_intervals(
    scenarios: Iterable[Scenario], enabled: bool = True, stream: TextIO | None = None
) -> None:
    """One line on stderr (a terminal only, not with ``--quiet``) before the 90% intervals
    of chains whose acceptance is a workload mix or a per-request spread: each distinct
    draw of their acceptance inputs re-builds every class's Beta quadrature (some 500-650
    draws on the shipped mix), which no bar follows."""
    # lazy: the scenario layer only when a command runs, not for --help (start-up)
    from sim.binding.uncertainty import (
        acceptance_propagated,
        is_acceptance_input,
        uncertain_inputs,
    )

    out = stream or sys.stderr
    if not (enabled and out.isatty()):
        return
    slow = [
        sc
        for sc in scenarios
        if not sc.speculation.is_tree
        and not acceptance_propagated(sc)
        and any(is_acceptance_input(inp.field) for inp in uncertain_inputs(sc))
    ]
    if slow:
        click.echo(
            "computing the 90% intervals: a mix or per-request spread re-builds its rates in"
            " each of some 500 draws (20-40 s)...",
            file=out,
        )


class ProgressBar:
    """``progress(done, total)`` callback for ``sim.simulation.simulate.simulate`` and the serving
    studies.

    Draws nothing when ``enabled`` is false (``--quiet``) or stderr is not a terminal, and
    nothing until ``SHOW_AFTER_S`` seconds have passed. A study that runs its simulations
    in batches (best-k's selection, then its check) reports each batch from 1 to its own
    total: a count that restarts, or a new total, closes the bar and opens the next
    ("simulating, stage 2"), so that a finished bar is never left standing while the
    command works on. A total of None is a count without an end (a study's bisection
    simulating one load at a time, each replication counted): the bar moves and counts
    but shows no percentage. Use as a context manager.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._stream.isatty()
        self._start = time.monotonic()
        self._bar: Any = None
        self._shown = 0
        self._done = 0
        self._total: int | None = -1  # none yet (None: a count without a total)
        self._stage = 0

    def __call__(self, done: int, total: int | None) -> None:
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
            if total is None:  # no length: click draws a moving mark and the count
                label += ", one load at a time (replications run)"
                self._bar = click.progressbar(
                    itertools.count(), label=label, file=self._stream, show_pos=True
                )
            else:
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
