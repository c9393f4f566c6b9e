"""Who sends requests, when, and what each request is.

Arrival patterns:

* ``ClosedLoop``: C users, each sending its next request when its last one finished,
  after an optional exponential think time (the shape of ``vllm bench serve
  --max-concurrency C`` and of SGLang's bench_serving with a concurrency cap); with
  ``conversations`` a finite job instead: C users share that many conversations of
  ``turns`` requests each, a user sending a conversation's turns one after another and
  taking the next conversation when its last turn is answered, until none is left (the
  shape of SGLang's frontend ``run_batch(num_threads=C)`` over multi-turn programs); with
  ``tasks`` as well, that job's requests are given tasks sent in their order (``Tasks``:
  a benchmark run over a fixed dataset, replayed with its own lengths);
* ``Poisson``: open arrivals at ``rate_per_s``;
* ``Trace``: replayed arrival times and lengths (sim/simulation/serving/traces/ reads them).

A request is drawn by a ``RequestSource``: its input and output lengths (from the
workload's length distributions, or the trace's row), its acceptance class and per-request
rates (the scenario's acceptance model at the largest draft length any policy uses,
``AcceptanceModel.sample_requests``: a shorter draft length uses the first k rates; for a
tree, the top-1 rates by depth, from which each tree the policy drafts gives the request's
own depth survival, ``TreeAcceptance.chain_rates``), and a 64-bit key for its acceptance
draws (sim/simulation/serving/counter_rng.py). Sources are
per user in a closed loop and one for open arrivals, each with its own streams, so the
j-th request of a user (or the j-th arrival) is the same request whatever the policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.model.acceptance import AcceptanceModel
from sim.model.rates import cumulative_rates
from sim.model.samplers import bit_thresholds
from sim.model.tree.acceptance import TreeAcceptance
from sim.simulation.serving.counter_rng import draw_keys
from sim.simulation.serving.lengths import Fixed, LengthDistribution

if TYPE_CHECKING:
    import simpy

__all__ = [
    "ClosedLoop",
    "Poisson",
    "Request",
    "RequestSource",
    "SourceStreams",
    "Tasks",
    "Trace",
    "Workload",
    "acceptance_thresholds",
    "refill_together",
]

#: Requests whose class and rates are drawn at once (a speed knob only: the draws are
#: sequential in the stream, so block size does not change them).
RATE_BLOCK = 16
#: Acceptance keys drawn at once (a speed knob only: each is one raw 64-bit draw, so a
#: block is the same keys in the same order).
KEY_BLOCK = 16
#: Output lengths drawn at once when the input length is fixed (a speed knob only: a
#: length distribution's ``sample(rng, n)`` is n of its ``sample_one`` in order).
LENGTH_BLOCK = 16
#: The most requests' classes, rates, keys and lengths a source draws at once.
MAX_BLOCK = 64


def source_block(workload: Workload, users: int) -> int:
    """Requests a closed-loop user's source draws at once (rates, keys, output lengths):
    about as many as it sends in the run (the measured and warm-up requests and those still
    in flight at the end, shared by the users), between ``RATE_BLOCK`` and ``MAX_BLOCK``.
    A speed knob only (every block is the same draws in the same order)."""
    sends = -(-(workload.requests + workload.warmup + users) // users)
    return min(MAX_BLOCK, max(RATE_BLOCK, sends + 1))


@dataclass(frozen=True, slots=True, eq=False)
class Tasks:
    """A finite job's tasks in the order they are sent, arrays of shape (n,):
    ``input_tokens`` >= 0, ``output_tokens`` >= 1, ``request_class`` an index into the
    acceptance model's classes or -1 (drawn by the class weights). The j-th request the
    job sends (whichever user sends it) is task j."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    request_class: np.ndarray
    source: str = "tasks"

    def __post_init__(self) -> None:
        n = self.output_tokens.shape[0]
        for name in ("input_tokens", "request_class"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},)")
        if n == 0:
            raise ValueError("a job needs at least one task")
        if self.output_tokens.min() < 1 or self.input_tokens.min() < 0:
            raise ValueError("every task needs >= 0 input and >= 1 output tokens")

    @classmethod
    def of_trace(cls, trace: Trace) -> Tasks:
        """A trace's rows as tasks, in its row order (its arrival times unused)."""
        return cls(trace.input_tokens, trace.output_tokens, trace.request_class, trace.source)

    @property
    def size(self) -> int:
        return int(self.output_tokens.shape[0])

    def head(self, n: int) -> Tasks:
        """The first ``n`` tasks (1 <= n <= size)."""
        if not 1 <= n <= self.size:
            raise ValueError(f"n must be in [1, {self.size}], got {n}")
        return Tasks(
            self.input_tokens[:n], self.output_tokens[:n], self.request_class[:n], self.source
        )

    def row(self, j: int) -> tuple[int, int, int]:
        """Task ``j``: (input tokens, output tokens, class or -1)."""
        return (
            int(self.input_tokens[j]),
            int(self.output_tokens[j]),
            int(self.request_class[j]),
        )

    @property
    def max_request_tokens(self) -> int:
        """The most tokens (input + output) one task holds in KV."""
        return int((self.input_tokens + self.output_tokens).max())


@dataclass(frozen=True, slots=True)
class ClosedLoop:
    """``users`` concurrent users; ``think_ms``: mean exponential pause between a
    request's end and the user's next request (0: none). ``conversations``: a finite job
    of that many conversations of ``turns`` requests each, shared by the users (None:
    users send without end). ``tasks``: that job's requests are these tasks, sent in
    their order (one turn each, ``conversations`` = the tasks' number)."""

    users: int
    think_ms: float = 0.0
    conversations: int | None = None
    turns: int = 1
    tasks: Tasks | None = None

    def __post_init__(self) -> None:
        if self.users < 1:
            raise ValueError(f"a closed loop needs at least 1 user, got {self.users}")
        if self.think_ms < 0:
            raise ValueError(f"think_ms must be >= 0, got {self.think_ms}")
        if self.conversations is not None and self.conversations < 1:
            raise ValueError(f"a finite job needs >= 1 conversation, got {self.conversations}")
        if self.turns < 1:
            raise ValueError(f"a conversation needs at least 1 turn, got {self.turns}")
        if self.tasks is not None and (self.turns != 1 or self.conversations != self.tasks.size):
            raise ValueError(
                f"a job of {self.tasks.size} given tasks has conversations = "
                f"{self.tasks.size} of 1 turn, got {self.conversations} of {self.turns}"
            )

    @property
    def job_requests(self) -> int | None:
        """A finite job's requests (conversations x turns), None without end."""
        return None if self.conversations is None else self.conversations * self.turns


@dataclass(frozen=True, slots=True)
class Poisson:
    """Open arrivals at ``rate_per_s`` requests per second (exponential gaps)."""

    rate_per_s: float

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise ValueError(f"rate_per_s must be > 0, got {self.rate_per_s}")


@dataclass(frozen=True, slots=True)
class Trace:
    """Replayed requests, arrays of shape (n,): ``arrival_ms`` non-decreasing,
    ``input_tokens`` >= 0, ``output_tokens`` >= 1, ``request_class`` an index into the
    acceptance model's classes or -1 (drawn by the class weights)."""

    arrival_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    request_class: np.ndarray
    source: str = "trace"

    def __post_init__(self) -> None:
        n = self.arrival_ms.shape[0]
        for name in ("input_tokens", "output_tokens", "request_class"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},)")
        if n == 0:
            raise ValueError("a trace needs at least one request")

    @property
    def size(self) -> int:
        return int(self.arrival_ms.shape[0])

    def head(self, n: int) -> Trace:
        """The first ``n`` requests (1 <= n <= size), as a trace of shape (n,)."""
        if not 1 <= n <= self.size:
            raise ValueError(f"n must be in [1, {self.size}], got {n}")
        return Trace(
            self.arrival_ms[:n],
            self.input_tokens[:n],
            self.output_tokens[:n],
            self.request_class[:n],
            self.source,
        )


@dataclass(frozen=True, slots=True)
class Workload:
    """Arrivals and lengths; ``requests`` measured per replication after ``warmup``
    discarded ones (by arrival order). For a trace, lengths come from its rows and
    ``requests`` + ``warmup`` must not exceed its length."""

    arrivals: ClosedLoop | Poisson | Trace
    output_tokens: LengthDistribution
    input_tokens: LengthDistribution = field(default_factory=lambda: Fixed(0))
    requests: int = 100
    warmup: int = 0

    def __post_init__(self) -> None:
        if self.requests < 1 or self.warmup < 0:
            raise ValueError("requests must be >= 1 and warmup >= 0")
        if isinstance(self.arrivals, Trace):
            if self.arrivals.output_tokens.min() < 1:
                raise ValueError("every request of a trace needs at least 1 output token")
        elif self.output_tokens.min_tokens < 1:
            raise ValueError("requests need at least 1 output token")
        job = self.arrivals.job_requests if isinstance(self.arrivals, ClosedLoop) else None
        if job is not None and self.requests + self.warmup != job:
            raise ValueError(
                f"a finite job is measured whole: requests + warmup must be {job} "
                f"(conversations x turns), got {self.requests + self.warmup}"
            )
        if isinstance(self.arrivals, Trace) and self.requests + self.warmup > self.arrivals.size:
            raise ValueError(
                f"requests + warmup = {self.requests + self.warmup} exceeds the trace's "
                f"{self.arrivals.size} row{'s' * (self.arrivals.size != 1)}"
            )

    @property
    def max_request_tokens(self) -> int:
        """The most tokens (input + output) one request can hold in KV."""
        if isinstance(self.arrivals, Trace):
            t = self.arrivals
            return int((t.input_tokens + t.output_tokens).max())
        if isinstance(self.arrivals, ClosedLoop) and self.arrivals.tasks is not None:
            return self.arrivals.tasks.max_request_tokens
        return self.input_tokens.max_tokens + self.output_tokens.max_tokens

    @property
    def lockstep(self) -> bool:
        """Whether plain decoding runs this workload in lockstep waves: a closed loop with
        no think time and no job, every request the same output length. A plain request
        emits one token an iteration, so requests admitted together end together and the
        users' next prompts arrive and prefill together, wave after wave (so at 2 users or
        more); speculation's random accept lengths break the waves."""
        loop = self.arrivals
        return (
            isinstance(loop, ClosedLoop)
            and loop.users > 1
            and loop.think_ms == 0
            and loop.tasks is None
            and self.output_tokens.min_tokens == self.output_tokens.max_tokens
        )


def acceptance_thresholds(cumulative: np.ndarray) -> np.ndarray:
    """Integer thresholds T_j in [0, 2^32] (int64, shape of ``cumulative``): draft j is
    accepted when a 32-bit uniform integer is < T_j, with probability ceil(c_j 2^32) / 2^32
    (``bit_thresholds``: exactly 0 at c_j = 0 and 1 at c_j = 1)."""
    t, positive = bit_thresholds(cumulative)
    return np.where(positive, t.astype(np.int64) + 1, 0)


class Request:
    """One request and what happens to it (times in ms of simulated time; -1: not yet)."""

    __slots__ = (
        "admitted_ms",
        "arrival_ms",
        "cycles",
        "decode_from",
        "decode_start_ms",
        "done",
        "finish_ms",
        "first_token_ms",
        "generated",
        "id",
        "input_tokens",
        "key",
        "last_delivery_ms",
        "measured",
        "output_tokens",
        "preemptions",
        "request_class",
        "source",
        "thresholds",
    )

    def __init__(
        self,
        input_tokens: int,
        output_tokens: int,
        request_class: int,
        thresholds: np.ndarray,
        key: np.uint64,
    ):
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.request_class = request_class
        self.thresholds = thresholds
        self.key = key
        self.id = -1
        self.measured = False
        self.arrival_ms = self.admitted_ms = self.first_token_ms = -1.0
        self.decode_start_ms = self.finish_ms = self.last_delivery_ms = -1.0
        self.generated = 0
        self.decode_from = 0
        self.cycles = 0
        self.preemptions = 0
        self.done: simpy.Event | None = None  # made when the request arrives
        self.source: RequestSource | None = None  # a user's, who sends its next at once

    @property
    def context_tokens(self) -> int:
        """Tokens whose KV the request needs: its prompt and what it generated so far."""
        return self.input_tokens + self.generated


@dataclass(frozen=True, slots=True)
class SourceStreams:
    """The streams of one request source: lengths, class and rates, acceptance keys."""

    lengths: np.random.Generator
    rates: np.random.Generator
    keys: np.random.Generator


class _Ahead:
    """Draws made ahead as a block: arrays of equal length (n, ...), ``arrays``, read one
    position at a time (a request's class, rate uniform and thresholds; its key; its output
    length), not held as a Python object a request."""

    __slots__ = ("arrays", "at")

    def __init__(self, *arrays: np.ndarray):
        self.arrays = arrays
        self.at = 0

    def take(self, draw: Callable[[], tuple[np.ndarray, ...]]) -> int:
        """The next unread position, the block first replaced by ``draw()`` when every
        position has been read."""
        if self.at == self.arrays[0].shape[0]:
            self.arrays, self.at = draw(), 0
        self.at += 1
        return self.at - 1


class RequestSource:
    """Requests of one user (or of the open arrival stream), in order.

    ``next(trace_row)`` returns the next request; with ``trace_row`` its lengths and class
    come from the trace (-1 class: drawn by weight). Class and rates are drawn in blocks of
    ``block`` requests (default ``RATE_BLOCK``; two uniforms per request whatever the class;
    the block's thresholds computed at once for the drawn classes), keys in blocks of
    ``block`` (default ``KEY_BLOCK``; one raw draw each), and, when the input length is
    fixed, output lengths in blocks of ``block`` (default ``LENGTH_BLOCK``).
    A request's thresholds are the chain's (kmax columns) followed by each of ``trees``'s
    (its depth columns), so the same draws serve every draft. A block is held in arrays
    read from a position (about 72 bytes a request with 4 threshold columns), not in a
    Python object a request.
    """

    def __init__(
        self,
        workload: Workload,
        acceptance: AcceptanceModel,
        streams: SourceStreams,
        trees: tuple[TreeAcceptance, ...] = (),
        block: int | None = None,
    ):
        self._block = block
        self._workload = workload
        self._acceptance = acceptance
        self._streams = streams
        self._trees = trees
        # the blocks drawn ahead (a tuple, a float and a row view a request cost about
        # 270 bytes, 17 MiB for 1,024 users of 64 requests): classes (n,), rate uniforms
        # (n,) and thresholds (n, columns); keys (n,); output lengths (n,)
        self._drawn = _Ahead(np.empty(0, dtype=np.intp), np.empty(0), np.empty((0, 0)))
        self._keys = _Ahead(np.empty(0, dtype=np.uint64))
        # a fixed input draws nothing: the output lengths are the stream's only draws
        inputs = workload.input_tokens
        self._input = inputs.tokens if isinstance(inputs, Fixed) else None
        self._outputs = _Ahead(np.empty(0, dtype=np.int64))

    def _thresholds(self, cls: int, u: np.ndarray) -> np.ndarray:
        """Thresholds (n, columns) of requests of class ``cls`` with Beta uniforms ``u`` (n,):
        the chain's, then each tree's (one vectorized pass per block of requests)."""
        rates = self._acceptance.classes[cls].rates_from_uniform(u)
        cumulative = [cumulative_rates(rates)]
        cumulative += [cumulative_rates(tree.chain_rates(rates)) for tree in self._trees]
        return acceptance_thresholds(
            cumulative[0] if len(cumulative) == 1 else np.concatenate(cumulative, axis=1)
        )

    def _draw_block(self) -> np.ndarray:
        """The next block's uniforms (RATE_BLOCK, 2): class, then rates."""
        return self._streams.rates.random((self._block or RATE_BLOCK, 2))

    def _rows(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Classes (n,), rate uniforms (n,) and thresholds (n, columns) of the rows of
        uniforms ``u`` (n, 2); the thresholds computed in one pass per class (row by row
        arithmetic: any grouping of rows gives the same values)."""
        cut = np.cumsum(self._acceptance.weights)[:-1]
        cls = np.searchsorted(cut, u[:, 0], side="right")
        classes = np.unique(cls).tolist()
        if len(classes) == 1:
            return cls, u[:, 1], self._thresholds(classes[0], u[:, 1])
        rows = [np.flatnonzero(cls == c) for c in classes]
        parts = [self._thresholds(c, u[at, 1]) for c, at in zip(classes, rows, strict=True)]
        thresholds = np.empty((u.shape[0], parts[0].shape[1]), dtype=parts[0].dtype)
        for at, part in zip(rows, parts, strict=True):
            thresholds[at] = part
        return cls, u[:, 1], thresholds

    def _draw_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._rows(self._draw_block())

    def _draw_keys(self) -> tuple[np.ndarray]:
        return (draw_keys(self._streams.keys, self._block or KEY_BLOCK),)

    def _draw_outputs(self) -> tuple[np.ndarray]:
        block = self._block or LENGTH_BLOCK
        return (self._workload.output_tokens.sample(self._streams.lengths, block),)

    def _class_and_thresholds(self, given: int) -> tuple[int, np.ndarray]:
        i = self._drawn.take(self._draw_rows)
        classes, uniforms, thresholds = self._drawn.arrays
        drawn = classes.item(i)
        if given < 0 or given == drawn:
            return drawn, thresholds[i]
        return given, self._thresholds(given, uniforms[i : i + 1])[0]

    def next(self, trace_row: tuple[int, int, int] | None = None) -> Request:
        """The next request (``trace_row``: input tokens, output tokens, class or -1)."""
        return Request(*self.next_drawn(trace_row))

    def next_drawn(
        self, trace_row: tuple[int, int, int] | None = None
    ) -> tuple[int, int, int, np.ndarray, np.uint64]:
        """What ``next`` draws: (input tokens, output tokens, class, thresholds, key)."""
        if trace_row is None and self._input is not None:
            at = self._outputs.take(self._draw_outputs)
            n_in, n_out, given = self._input, self._outputs.arrays[0].item(at), -1
        elif trace_row is None:
            n_in = self._workload.input_tokens.sample_one(self._streams.lengths)
            n_out = self._workload.output_tokens.sample_one(self._streams.lengths)
            given = -1
        else:
            n_in, n_out, given = trace_row
        cls, thresholds = self._class_and_thresholds(given)
        at = self._keys.take(self._draw_keys)
        return n_in, n_out, cls, thresholds, self._keys.arrays[0][at]


def refill_together(sources: list[RequestSource]) -> None:
    """Draw the next block of classes and rates of every source in ``sources`` (sources of
    one workload, acceptance model and trees, e.g. a closed loop's users), their thresholds
    computed together: the same rows as each source's own refill, in one pass per class."""
    if not sources:
        return
    blocks = [source._draw_block() for source in sources]
    drawn = sources[0]._rows(np.concatenate(blocks))
    at = 0
    for source, block in zip(sources, blocks, strict=True):
        size = block.shape[0]
        source._drawn = _Ahead(*(a[at : at + size] for a in drawn))
        at += size
