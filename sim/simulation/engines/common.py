"""What both engines share: the plan they run, their random streams, their output, and
the bookkeeping arithmetic (pure functions).

The model (batch 1): a server runs ``requests`` requests one after another. A request runs
cycles until it has emitted ``output_tokens`` tokens. Each cycle takes the phase durations
of a ``CycleTimeModel`` and emits L tokens (1 <= L <= k + 1) from the request's acceptance
rates. The last cycle may overshoot (emit more tokens than the request still needs): the
request's time ends with that cycle, its tok/s counts only the ``output_tokens`` it needs
(``output_tokens * 1000 / request_ms``), and the emitted total is kept separately.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast, overload

import numpy as np
from numpy.typing import DTypeLike

from sim.model.cycle import PHASES
from sim.model.cycletime import CycleTimeModel

if TYPE_CHECKING:
    from sim.model.tree.acceptance import Acceptance


@dataclass(frozen=True, slots=True)
class EnginePlan:
    """Everything an engine needs besides random numbers (picklable, for worker processes).

    The draft extend runs over the cycle's L accepted tokens: a cycle's extend is its drawn
    extend (mean m: the cycle-time model's) scaled to mean m + ``extend_per_token_ms`` (L -
    ``extend_tokens``) (``extend_scale``), so with L's pmf the expected extend is the closed
    form's m + s (E[L] - t), exactly.
    """

    acceptance: Acceptance
    cycle_times: CycleTimeModel
    output_tokens: int
    requests: int
    extend_per_token_ms: float = 0.0
    extend_tokens: float = 0.0

    @property
    def num_steps(self) -> int:
        return self.acceptance.num_steps

    @property
    def extend_varies(self) -> bool:
        return self.extend_per_token_ms != 0.0 and self.num_steps > 0

    def extend_means_ms(self) -> np.ndarray:
        """Mean extend (ms) of a cycle with L = 1..k + 1 tokens, shape (k + 1,)."""
        mean = self.cycle_times.mean_ms()["extend"]
        lengths = np.arange(1, self.num_steps + 2, dtype=float)
        return mean + self.extend_per_token_ms * (lengths - self.extend_tokens)

    def extend_scale(self) -> np.ndarray:
        """Factor on a cycle's drawn extend for L = 1..k + 1, shape (k + 1,): mean(L) / m."""
        mean = self.cycle_times.mean_ms()["extend"]
        if mean <= 0:
            raise ValueError("an extend that grows with L needs a positive mean extend")
        return self.extend_means_ms() / mean


class ReplicationRngs:
    """The independent random streams of one replication, each made on first use.

    ``requests``: each request's class and rates; ``accept``: the acceptance uniforms;
    ``timing``: the phase durations. Keeping them apart means that changing the rates does
    not move the timing draws, and jitter on/off does not move the acceptance draws.
    ``make(i)`` makes stream i (0 requests, 1 accept, 2 timing) from the replication's seed
    (sim/simulation/simulate.py, the one place seeds become generators); a stream an
    engine never reads (no rates to draw, no jitter) is never made, which saves most of a
    small replication's set-up.
    """

    STREAMS = ("requests", "accept", "timing")

    def __init__(self, make: Callable[[int], np.random.Generator]):
        self._make = make
        self._made: dict[int, np.random.Generator] = {}

    def _stream(self, i: int) -> np.random.Generator:
        if i not in self._made:
            self._made[i] = self._make(i)
        return self._made[i]

    @property
    def requests(self) -> np.random.Generator:
        return self._stream(0)

    @property
    def accept(self) -> np.random.Generator:
        return self._stream(1)

    @property
    def timing(self) -> np.random.Generator:
        return self._stream(2)


@dataclass(frozen=True, slots=True)
class EngineOutput:
    """Results of B replications of Q requests each (k = num_steps).

    tok_s, request_ms: float (B, Q); cycles, emitted_tokens, request_class: int (B, Q);
    accept_counts: int (B, k + 1), cycles with L = j + 1 tokens; phase_ms: float (B, 4),
    total ms per phase in ``PHASES`` order.
    """

    tok_s: np.ndarray
    request_ms: np.ndarray
    cycles: np.ndarray
    emitted_tokens: np.ndarray
    request_class: np.ndarray
    accept_counts: np.ndarray
    phase_ms: np.ndarray

    @staticmethod
    def concatenate(parts: list[EngineOutput]) -> EngineOutput:
        """Stack outputs along the replication axis, in the given order."""
        if len(parts) == 1:
            return parts[0]
        return EngineOutput(
            **{
                name: np.concatenate([getattr(p, name) for p in parts], axis=0)
                for name in EngineOutput.__dataclass_fields__
            }
        )


#: PCG64's jump: ``jumped(n)`` moves the state as if n x this many numbers had been drawn
#: (NumPy's documented jump size, 0x9e3779b97f4a7c15f39cc0605cedc835, about 0.618 x 2^128).
PCG64_JUMP = 210306068529402873165736369884012333109


class _StateSetNext(np.random.bit_generator.ISeedSequence):
    """The seed of a bit generator whose state is set right after it is made: no entropy
    drawn and nothing hashed (a fresh ``PCG64()`` reads the OS's entropy pool)."""

    def generate_state(self, /, n_words: int, dtype: DTypeLike = np.uint32) -> np.ndarray:
        return np.zeros(n_words, dtype=dtype)


_STATE_SET_NEXT = _StateSetNext()


def request_stream(rng: np.random.Generator, request: int) -> np.random.Generator:
    """Request ``request``'s own sub-stream of a replication stream (no new seed).

    ``rng.bit_generator.jumped(request + 1)``: PCG64 jumped ahead by (request + 1) x
    ~2^127 draws, a window no request can exhaust, so the draws of request r never depend
    on how many draws the requests before it used (common random numbers in the SimPy
    engine). Made as ``jumped`` makes it (a copy of the state advanced by (request + 1) x
    ``PCG64_JUMP``) without seeding the copy first, a third of the cost. Seeds become
    generators in sim/simulation/simulate.py only; this only derives.
    """
    return request_streams(rng, range(request, request + 1))[0]


def request_streams(rng: np.random.Generator, requests: Iterable[int]) -> list[np.random.Generator]:
    """``request_stream(rng, r)`` of each of ``requests``, reading ``rng``'s state once."""
    bits = rng.bit_generator
    if not isinstance(bits, np.random.PCG64):  # the replication streams are PCG64 (simulate.py)
        raise TypeError(f"request streams jump a PCG64, not a {type(bits).__name__}")
    state = bits.state
    out = []
    for request in requests:
        # NumPy takes any ISeedSequence as a seed (its documented interface; the stubs name
        # only SeedSequence)
        jumped = np.random.PCG64(cast(np.random.SeedSequence, _STATE_SET_NEXT))
        jumped.state = state
        jumped.advance(PCG64_JUMP * (request + 1))
        out.append(np.random.Generator(jumped))
    return out


@overload
def request_tok_s(output_tokens: int, request_ms: np.ndarray) -> np.ndarray: ...
@overload
def request_tok_s(output_tokens: int, request_ms: float) -> float: ...
def request_tok_s(output_tokens: int, request_ms: np.ndarray | float) -> np.ndarray | float:
    """Per-request throughput counting only the tokens the request needs: 1000 N / ms."""
    return 1000.0 * output_tokens / request_ms


def phase_means(cycle_times: CycleTimeModel) -> np.ndarray:
    """Mean phase durations (ms), shape (4,), in ``PHASES`` order."""
    means = cycle_times.mean_ms()
    return np.array([means[p] for p in PHASES], dtype=float)
