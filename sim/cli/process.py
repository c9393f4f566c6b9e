"""The ``specsim`` process: what the console script and ``python -m sim`` run.

A command is a short-lived process that imports a few hundred modules (NumPy, SciPy,
pydantic, specsim's own) and then computes, allocating many small objects. CPython's
cyclic garbage collector runs a young-generation pass every 700 net allocations and a
full pass over every object as they accumulate; during start-up nearly none of those
objects is garbage (module globals, classes, functions), so the passes find nothing and
cost a few percent of a command's CPU (``specsim run`` on the seed scenario allocates
about 85,000 objects net: some 120 young passes at the default threshold). The process
therefore starts a young pass only every ``GC_THRESHOLDS[0]``
allocations (none during that run); collection still runs, so a long serving simulation
that makes reference cycles (SimPy processes and their events) still has them collected.
Library users (and ``click.testing.CliRunner``, which calls the command group directly)
keep Python's defaults: only the process entry point changes them.

The process also tells pydantic it uses no plugins (``PYDANTIC_DISABLE_PLUGINS``, unless
the environment sets it): pydantic looks for them when it builds its first validator by
reading the entry points of every installed distribution (pydantic.dev/docs
"Plugins"), and specsim's
validation has none to call.
"""

from __future__ import annotations

import gc
import io
import os
import sys

from sim.cli import main

#: (young generation allocations, young passes per middle pass, middle passes per full
#: pass); CPython's defaults are (700, 10, 10).
GC_THRESHOLDS = (100_000, 10, 10)


class WholeWrites(io.RawIOBase):
    """File descriptor ``fd`` as a raw stream whose ``write`` writes every byte or raises.

    The operating system may write part of a buffer (a file size limit reached, a disk
    filling up) and report the error only on the next call; CPython's buffered stdout then
    counts the part as the whole and the rest is lost without an error (a ``keys --json``
    under ``ulimit -f 1`` exits 0 with 1 KiB written). Writing until every byte is out
    turns the short write into the OSError the command reports in one line.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done


def _whole_stdout() -> None:
    """Replace ``sys.stdout`` by the same stream over ``WholeWrites`` (same encoding,
    errors and line buffering); left alone when stdout is not a file descriptor."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    old = sys.stdout
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(WholeWrites(fd)),
        encoding=old.encoding,
        errors=old.errors,
        line_buffering=bool(old.line_buffering),
    )


def run_process() -> None:
    """Run the command line as the ``specsim`` process (exits with its status)."""
    gc.set_threshold(*GC_THRESHOLDS)
    _whole_stdout()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    main(prog_name="specsim")


__all__ = ["GC_THRESHOLDS", "WholeWrites", "run_process"]
