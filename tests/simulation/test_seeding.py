"""The streams a run reads are NumPy's spawned SeedSequences; request streams are jumps."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.engines.common import request_stream, request_streams
from sim.simulation.simulate import block_rngs, replication_rngs


def test_block_streams_are_the_spawned_ones():
    """Stream j of replication i is exactly SeedSequence(seed).spawn(R)[i].spawn(3)[j],
    whichever replication and stream is read first (the bit generator's state and draws)."""
    seed, block = 20261130, range(2, 6)
    children = np.random.SeedSequence(seed).spawn(6)
    grandchildren = [c.spawn(3) for c in children]  # spawn counts its calls: spawn once
    for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        rngs = block_rngs(seed, block)
        for j in order:
            for i in reversed(block):
                ref = np.random.Generator(np.random.PCG64(grandchildren[i][j]))
                ours = getattr(rngs[i - block.start], ("requests", "accept", "timing")[j])
                assert ours.bit_generator.state == ref.bit_generator.state
                assert np.array_equal(ours.random(5), ref.random(5))
    for i, direct in zip(block, (replication_rngs(children[i]) for i in block), strict=True):
        ref = np.random.Generator(np.random.PCG64(grandchildren[i][1]))
        assert np.array_equal(direct.accept.random(5), ref.random(5))


def test_a_stream_is_made_once_and_only_when_read():
    """A replication's stream is one generator however often it is read (draws continue)."""
    rngs = block_rngs(7, range(3))
    first = rngs[1].accept.random(2)
    again = rngs[1].accept.random(2)
    ref = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7).spawn(3)[1].spawn(3)[1]))
    assert np.array_equal(np.concatenate([first, again]), ref.random(4))


@pytest.mark.parametrize("request_index", [0, 1, 1023, 10**6])
def test_a_request_stream_is_numpys_jumped_generator(request_index):
    """``request_stream`` advances a copy of the state as ``jumped(r + 1)`` does: the same
    state, and the same draws of every kind afterwards (the buffered 32-bit half too)."""
    rng = np.random.default_rng(11)
    rng.random(3)  # a stream already drawn from
    rng.integers(0, 7, dtype=np.uint32)  # leaves a buffered half of a 64-bit draw
    ours = request_stream(rng, request_index)
    numpys = np.random.Generator(rng.bit_generator.jumped(request_index + 1))
    assert ours.bit_generator.state == numpys.bit_generator.state
    assert _draws(ours) == _draws(numpys)


def test_request_streams_are_each_requests_stream():
    """``request_streams`` (the state read once): ``request_stream`` of each request."""
    rng = np.random.default_rng(12)
    rng.random(5)
    together = request_streams(rng, [0, 3, 1, 1024])
    for r, ours in zip([0, 3, 1, 1024], together, strict=True):
        assert ours.bit_generator.state == request_stream(rng, r).bit_generator.state
    assert _draws(together[1]) == _draws(request_stream(rng, 3))


def _draws(g: np.random.Generator) -> tuple[list[float], list[int], list[float], list[int]]:
    return (
        g.random(4).tolist(),
        g.integers(0, 2**64, size=3, dtype=np.uint64).tolist(),
        g.lognormal(1.0, 0.5, 3).tolist(),
        g.integers(0, 5, size=3, dtype=np.uint32).tolist(),
    )
