"""The delays of SimPy timeouts that end exactly where a block of iterations' ends lie
(``jumps``, ``jump``): pure arithmetic on floats, no events.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

import numpy as np

__all__ = ["ACCUMULATE_ENDS", "jump", "jumps"]


def jump(now_ms: float, duration_ms: float) -> float:
    """``jumps`` of one duration: the delay of the one timeout that ends where a timeout
    of ``duration_ms`` from ``now_ms`` ends."""
    end = now_ms + duration_ms
    delay = end - now_ms
    return delay if now_ms + delay == end else jumps(now_ms, [duration_ms])[0]


#: Iterations from which ``jumps`` sums a block's ends in one ``np.add.accumulate``
#: instead of a Python loop (the same running sums; measured crossing at 50-100
#: iterations; a speed knob only).
ACCUMULATE_ENDS = 64


def jumps(now_ms: float, durations_ms: Sequence[float] | np.ndarray) -> list[float]:
    """Delays of successive timeouts from ``now_ms`` that reach exactly the time where
    timeouts of ``durations_ms`` one after the other end (SimPy schedules at ``now +
    delay`` in floating point), in as few timeouts as it allows.

    One timeout when ``end - now`` lands on the end. Otherwise (the end more than twice
    ``now``, where that difference may be rounded and no delay reach the end) a timeout
    to the furthest intermediate end within twice the time (its difference is exact,
    Sterbenz's lemma), or else the next duration itself, and on from there.

    The ends are the running sums now + d_0, (now + d_0) + d_1, ..., one duration added
    at a time, left to right; over a long block (hundreds of iterations at one user) one
    ``np.add.accumulate`` (the ufunc's accumulate is that recurrence, r_i = r_(i - 1) +
    d_i, in float64: the same sums), whose last end is checked first.
    """
    if len(durations_ms) >= ACCUMULATE_ENDS:
        running = np.add.accumulate(np.concatenate(([now_ms], durations_ms)))
        end = float(running[-1])
        if now_ms + (end - now_ms) == end:
            return [end - now_ms]
        ends = running[1:].tolist()
    else:
        values = durations_ms.tolist() if isinstance(durations_ms, np.ndarray) else durations_ms
        ends = list(itertools.accumulate(values, initial=now_ms))[1:]
    last = len(ends) - 1
    delays: list[float] = []
    at, i = now_ms, 0
    while i <= last:
        delay = ends[last] - at
        if at + delay == ends[last]:
            delays.append(delay)
            break
        j = bisect.bisect_right(ends, 2.0 * at, i, last) - 1
        delays.append(ends[j] - at if j >= i else float(durations_ms[i]))
        i = max(j, i) + 1
        at = ends[i - 1]
    return delays
