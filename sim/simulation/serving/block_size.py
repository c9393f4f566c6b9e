"""How many decode iterations the scheduler plans as one event (``block_iterations``),
and how many of a planned block's first iterations no arrival can cut
(``uncut_iterations``, before the ``admissible_arrival``): pure arithmetic on the
server's state, no events.

Both are speed knobs only: a block cut short is committed up to its cut and the rest
planned again, and draws are per request and cycle, so results do not depend on them.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BLOCK_ELEMENTS",
    "MAX_BLOCK",
    "MIN_BLOCK",
    "admissible_arrival",
    "block_iterations",
    "uncut_iterations",
]


#: Decode iterations planned at once: at most ``BLOCK_ELEMENTS`` (requests x iterations)
#: and between ``MIN_BLOCK`` and ``MAX_BLOCK`` iterations. A speed knob only: results do
#: not depend on it (draws are per request and cycle).
BLOCK_ELEMENTS = 32768


MIN_BLOCK = 4


MAX_BLOCK = 512


def block_iterations(
    shortest: int,
    most: int,
    rows: int,
    running: int,
    max_running: int,
    upcoming: list[float],
    now_ms: float,
    iteration_ms: float,
) -> int:
    """Iterations to plan for ``rows`` decoding requests, the fewest of which still needs
    ``shortest`` tokens, at most ``most`` tokens a request an iteration (the draft's
    ``max_tokens``); ``running`` requests hold slots of ``max_running``; ``upcoming`` the
    announced arrival times (a heap), ``iteration_ms`` the last block's mean iteration.

    One when a request may finish in the next (many users: a completion nearly every
    iteration, and a longer plan would be cut there); else about twice the expected
    iterations to the next completion, 2 shortest // most + 1, within
    [``MIN_BLOCK``, min(``MAX_BLOCK``, ``BLOCK_ELEMENTS`` // rows)]; and no further than
    the next announced arrival when a slot is free for it, (next - now) / iteration_ms + 1
    (at least one)."""
    if shortest <= most:  # a request may finish now: one iteration, no more
        return 1
    widest = max(MIN_BLOCK, min(MAX_BLOCK, BLOCK_ELEMENTS // rows))
    size = max(MIN_BLOCK, min(widest, 2 * shortest // most + 1))
    if upcoming and running < max_running:
        ahead = (upcoming[0] - now_ms) / iteration_ms
        size = max(1, min(size, int(ahead) + 1))
    return size


def admissible_arrival(
    queue_empty: bool, running: int, max_running: int, upcoming: list[float]
) -> float | None:
    """The next announced arrival (``upcoming``, a heap) that could be admitted as soon as
    it arrives, None when none can be: only when the waiting queue is empty (an arrival
    queues behind every waiting request) and a running slot is free (``running`` <
    ``max_running``).

    Between iterations only an arrival changes what can be admitted (the batch, the
    prefills and the KV cache change at the scheduler's own steps), and every arrival is
    announced before it happens, so no iteration ending before it can be cut."""
    if queue_empty and running < max_running and upcoming:
        return upcoming[0]
    return None


def uncut_iterations(durations_ms: np.ndarray, now_ms: float, limit_ms: float | None) -> int:
    """How many of a block's first iterations (``durations_ms`` (n,), from ``now_ms``)
    end before ``limit_ms``, the next announced arrival that could be admitted (None: no
    arrival can be, and the block runs to its end).

    The ends are the running sums now + d_0, (now + d_0) + d_1, ... (the timeouts'
    ends); the block runs uncut up to its last end before the limit, and to its end when
    only its last iteration reaches it (no check follows the last iteration)."""
    if limit_ms is None:
        return len(durations_ms)
    last = len(durations_ms) - 1
    end = now_ms
    for m, duration in enumerate(durations_ms[:last].tolist()):
        end += duration
        if end >= limit_ms:  # an arrival may be waiting at this end
            return m
    return last + 1
