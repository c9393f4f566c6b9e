"""The token deliveries of a decode iteration (``deliver``): every row of the decode batch
gets its tokens at the iteration's end; the gaps since each row's last delivery (the
inter-token latency) are recorded, and rows without a first token get it then.
"""

from __future__ import annotations

import numpy as np

from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.records import Recorder

__all__ = ["deliver"]


def deliver(batch: DecodeBatch, rec: Recorder, end_ms: float, held: bool) -> None:
    """The deliveries of an iteration of ``batch`` ending at ``end_ms``: the gaps
    end_ms - last_ms of the rows that had a token before (where ``rec`` keeps gaps), the
    first token of the others (``held``: the rows are the requests, ``HeldRows``; else
    their request objects in ``rec.live``). The rows' ``last_ms`` are the caller's to
    set."""
    if not batch.fresh:  # every row had a token before
        if rec.keeps_gaps:
            rec.gaps(end_ms - batch.last_ms, 1.0)
        return
    last = batch.last_ms
    had: slice | np.ndarray  # the rows that had a token before
    if held:  # the newest rows, without a first token yet
        had = slice(0, batch.size - batch.fresh)
        batch.mark_first(end_ms)
    elif batch.fresh_newest:  # the newest rows, without a first token
        since = batch.size - batch.fresh
        had = slice(0, since)
        for rid in batch.ids[since:].tolist():
            rec.live[rid].first_token_ms = end_ms
    else:  # requests without a first token yet get it now
        fresh = last < 0
        had = ~fresh
        for rid in batch.ids[fresh].tolist():
            rec.live[rid].first_token_ms = end_ms
    if rec.keeps_gaps:  # the gaps' arrays only where they are kept
        rec.gaps(end_ms - last[had], 1.0)
    batch.delivered()
