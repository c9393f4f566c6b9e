"""A load-sweep run priced as the job it ran: its requests' own lengths, in order, sent by
its workers (closed loop), for ``specsim calibrate --load-sweep`` (sim/calibration/
load_fit.py).

A ``vllm bench serve --save-detailed`` or ``sglang.bench_serving --output-details`` run
lists each request's ``input_lens`` and ``output_lens`` (its completed requests:
sim/calibration/importers/request_lengths.py). ``RunJob`` replays them as the client sent
them (the same job ``specsim init --replay`` writes, sim/calibration/init_job.py): each of
``workers`` workers sends the next request of the list when its last is answered. ASSUMED,
as there: the file lists the requests in the order they were sent.

Decode-only and deterministic, as the closed form it replaces (``TPOT(B) = T_iter(B, B c)
/ AL``): prefill is not priced (a request's first token comes with its prefill, so it
decodes n - 1 tokens from a context of its prompt + 1), and every running request emits
the run's accept length AL tokens an iteration (1 without speculation), so that a request
of n tokens takes part in (n - 1) / AL iterations, the last one in part. The requests
then all progress alike, and the schedule (which requests run together, from which
context sums) depends only on the lengths, measured in tokens each running request has
emitted (``_Segments``). Between two events (a request done, the next sent) the batch b
is fixed and its context sum grows b AL tokens an iteration; the segment's Delta tokens
are Delta / AL iterations, each priced by the cost model at the context sum before it
(as the serving engine prices its iterations), the last at its fraction.

A request's TPOT is its decode time over its n - 1 tokens, and the run's figure the
mean over its requests of n >= 2 (both writers' ``mean_tpot_ms``: (latency - TTFT) /
(output tokens - 1), averaged over the requests with more than one token).

Exact law (tests/calibration/test_run_job.py): with one worker every request runs alone,
so the run's time is the sum of each request's time alone.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["IterationMs", "RunJob", "closed_loop_workers"]

#: Iteration ms of a batch of b requests at context sums (n,) -> (n,).
IterationMs = Callable[[int, np.ndarray], np.ndarray]


def closed_loop_workers(
    max_concurrency: int | None, request_rate: float | None, completed: int
) -> int | None:
    """The workers of a benchmark run replayed as a closed loop (here and by ``specsim init
    --replay``, sim/calibration/init_job.py): its ``max_concurrency``; without one, at
    ``request_rate`` inf (every request sent at once, both clients' default) one a
    ``completed`` request; None for an open loop at a finite or unknown rate, whose
    arrival times the file does not record."""
    if max_concurrency is not None:
        return max_concurrency
    return completed if request_rate == math.inf else None


@dataclass(frozen=True, slots=True)
class _Segments:
    """The schedule of a job in tokens emitted per running request: K segments of a fixed
    batch, ``batch`` (K,) int, ``context0`` (K,) the context sum at the segment's start,
    ``tokens`` (K,) its length; per request, ``first`` and ``last`` (N,): the segments it
    decodes in are ``first <= k < last``; ``decoded`` (N,) its decode tokens (n - 1,
    0 for n <= 1)."""

    batch: np.ndarray
    context0: np.ndarray
    tokens: np.ndarray
    first: np.ndarray
    last: np.ndarray
    decoded: np.ndarray


@dataclass(frozen=True)
class RunJob:
    """A run's completed requests in the order sent (``input_lens``, ``output_lens``,
    tokens) and its ``workers`` (the closed loop's concurrency)."""

    input_lens: tuple[int, ...]
    output_lens: tuple[int, ...]
    workers: int

    def __post_init__(self) -> None:
        if len(self.input_lens) != len(self.output_lens) or not self.input_lens:
            raise ValueError("a job needs as many prompts as answers, at least one")
        if self.workers < 1:
            raise ValueError(f"a job needs a worker, got {self.workers}")

    @property
    def requests(self) -> int:
        return len(self.output_lens)

    @functools.cached_property
    def _segments(self) -> _Segments:
        """The closed loop's events in tokens emitted per running request (module
        docstring): an event-driven pass over the requests, O(N log workers)."""
        n = self.requests
        decoded = np.maximum(np.asarray(self.output_lens, dtype=np.int64) - 1, 0)
        first = np.zeros(n, dtype=np.int64)
        last = np.zeros(n, dtype=np.int64)
        batch: list[int] = []
        context0: list[float] = []
        tokens: list[float] = []
        running: list[tuple[int, int]] = []  # (token clock at which it is done, request)
        held = 0  # sum over the running requests of prompt + 1 - their start clock
        clock = 0
        sent = 0

        def send(now: int) -> None:
            nonlocal sent, held
            i = sent
            sent += 1
            first[i] = len(batch)
            heapq.heappush(running, (now + int(decoded[i]), i))
            held += self.input_lens[i] + 1 - now

        while sent < min(self.workers, n):
            send(0)
        while running:
            done_at = running[0][0]
            if done_at > clock:  # a segment of len(running) requests
                batch.append(len(running))
                context0.append(float(held + len(running) * clock))
                tokens.append(float(done_at - clock))
                clock = done_at
            while running and running[0][0] <= clock:
                _, i = heapq.heappop(running)
                last[i] = len(batch)
                held -= self.input_lens[i] + 1 - (clock - int(decoded[i]))
                if sent < n:
                    send(clock)
        return _Segments(
            np.array(batch, dtype=np.int64),
            np.array(context0, dtype=float),
            np.array(tokens, dtype=float),
            first,
            last,
            decoded,
        )

    def decode_ms(self, iteration_ms: IterationMs, accept_length: float) -> np.ndarray:
        """Each request's decode time (ms, shape (N,)): the time of the segments it runs
        in, each segment Delta / AL iterations priced by ``iteration_ms`` at the context
        sum before each (the last at its fraction)."""
        seg = self._segments
        if not seg.batch.size:
            return np.zeros(self.requests)
        iterations = seg.tokens / accept_length
        whole = np.floor(iterations).astype(np.int64)
        part = iterations - whole
        counts = whole + 1  # the whole iterations, then the part (weight 0 when none)
        owner = np.repeat(np.arange(seg.batch.size), counts)
        starts = np.cumsum(counts) - counts
        j = np.arange(owner.size) - np.repeat(starts, counts)
        b = seg.batch[owner]
        context = seg.context0[owner] + (b * accept_length) * j
        weight = np.where(j < whole[owner], 1.0, part[owner])
        ms = np.empty(owner.size)
        for size in np.unique(seg.batch).tolist():
            rows = b == size
            ms[rows] = iteration_ms(int(size), context[rows])
        per_segment = np.bincount(owner, weights=weight * ms, minlength=seg.batch.size)
        elapsed = np.concatenate([[0.0], np.cumsum(per_segment)])
        return elapsed[seg.last] - elapsed[seg.first]

    def tpot_ms(self, iteration_ms: IterationMs, accept_length: float) -> float:
        """The run's mean TPOT (ms): over its requests of two or more tokens, each one's
        decode time over its n - 1 tokens; NaN when none has two."""
        decoded = self._segments.decoded
        timed = decoded > 0
        if not timed.any():
            return float("nan")
        per = self.decode_ms(iteration_ms, accept_length)[timed] / decoded[timed]
        return float(per.mean())
