"""The independent random streams of one serving replication (``ServingStreams``):
arrival times (gaps, think times), lengths, per-request class and rates, per-request
acceptance keys, and each user's streams derived from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.simulation.engines.common import request_stream, request_streams
from sim.simulation.serving.workload import SourceStreams

__all__ = ["ServingStreams"]


@dataclass(frozen=True, slots=True)
class ServingStreams:
    """The independent streams of one replication: arrival times (gaps, think times),
    lengths, per-request class and rates, per-request acceptance keys."""

    arrivals: np.random.Generator
    lengths: np.random.Generator
    rates: np.random.Generator
    keys: np.random.Generator

    def source(self, index: int | None) -> SourceStreams:
        """The request streams of user ``index``, or of the open stream."""
        if index is None:
            return SourceStreams(self.lengths, self.rates, self.keys)
        return SourceStreams(
            request_stream(self.lengths, index),
            request_stream(self.rates, index),
            request_stream(self.keys, index),
        )

    def sources(self, users: int) -> list[SourceStreams]:
        """``source(u)`` of users 0 .. ``users`` - 1, each replication stream read once."""
        lengths, rates, keys = (
            request_streams(s, range(users)) for s in (self.lengths, self.rates, self.keys)
        )
        return [SourceStreams(*s) for s in zip(lengths, rates, keys, strict=True)]

    def arrival(self, index: int | None) -> np.random.Generator:
        """The arrival stream (think times) of user ``index``, or of the open stream (gaps):
        derived only where it is used (a stream costs a PCG64 jump)."""
        return self.arrivals if index is None else request_stream(self.arrivals, index)
