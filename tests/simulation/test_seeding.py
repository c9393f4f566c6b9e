"""The batched SeedSequence words are NumPy's own, so generators and results are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.simulation.engines.common import request_stream, request_streams
from sim.simulation.seeding import (
    WORDS_MATCH_NUMPY,
    SeedWords,
    block_seed_words,
    seed_words,
    words_match_numpy,
)
from sim.simulation.simulate import block_rngs, replication_rngs


@given(
    entropy=st.integers(0, 2**130),
    keys=st.lists(
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)), min_size=1, max_size=8
    ),
)
@settings(max_examples=60, deadline=None)
def test_words_equal_numpys_seed_sequence(entropy, keys):
    ours = seed_words(entropy, keys)
    for key, row in zip(keys, ours, strict=True):
        theirs = np.random.SeedSequence(entropy, spawn_key=key).generate_state(4, np.uint64)
        assert np.array_equal(row, theirs)


def test_one_element_keys_and_the_self_check():
    assert words_match_numpy() and WORDS_MATCH_NUMPY
    row = seed_words(5, [(7,)])[0]
    assert np.array_equal(
        row, np.random.SeedSequence(5, spawn_key=(7,)).generate_state(4, np.uint64)
    )
    with pytest.raises(ValueError):
        seed_words(5, [(2**32,)])


def test_block_streams_are_the_spawned_ones():
    """Stream j of replication i is SeedSequence(seed).spawn(R)[i].spawn(3)[j]."""
    seed = 20261130
    children = np.random.SeedSequence(seed).spawn(6)
    for i, rngs in zip(range(2, 6), block_rngs(seed, range(2, 6)), strict=True):
        spawned = [np.random.Generator(np.random.PCG64(c)) for c in children[i].spawn(3)]
        direct = replication_rngs(children[i])
        for name, ref in zip(("requests", "accept", "timing"), spawned, strict=True):
            draws = ref.random(5)
            assert np.array_equal(getattr(rngs, name).random(5), draws)
            assert np.array_equal(getattr(direct, name).random(5), draws)
    words = seed_words(seed, [(0, 1)])[0]
    assert np.random.PCG64(SeedWords(words)).state == np.random.PCG64(children[0].spawn(3)[1]).state


def test_words_of_one_stream_at_a_time_equal_the_words_of_all():
    """A block computes one stream's words when first read: the same words as all the
    block's keys at once, whichever stream is read first and whichever replication reads."""
    seed, block = 987654321, range(3, 9)
    every = seed_words(seed, [(i, j) for i in block for j in range(3)]).reshape(len(block), 3, 4)
    for j in range(3):
        assert np.array_equal(block_seed_words(seed, block, j), every[:, j])
    for order in ((2, 0, 1), (1, 2, 0)):
        rngs = block_rngs(seed, block)
        for j in order:
            for n in reversed(range(len(block))):
                stream = getattr(rngs[n], ("requests", "accept", "timing")[j])
                ref = np.random.PCG64(SeedWords(every[n, j])).random_raw(3)
                assert np.array_equal(stream.bit_generator.random_raw(3), ref)


def test_seed_words_take_an_array_of_keys():
    keys = np.array([[0, 2], [5, 1], [2**32 - 1, 0]], dtype=np.int64)
    assert np.array_equal(seed_words(42, keys), seed_words(42, keys.tolist()))
    with pytest.raises(ValueError):
        seed_words(42, np.array([[2**32, 0]], dtype=np.int64))


@given(
    entropy=st.integers(0, 2**130),
    start=st.integers(0, 2**32 - 9),
    count=st.integers(1, 8),
    last=st.integers(0, 2**32 - 1),
)
@settings(max_examples=40, deadline=None)
def test_block_words_are_the_words_of_the_block_keys(entropy, start, count, last):
    block = range(start, start + count)
    ours = block_seed_words(entropy, block, last)
    assert np.array_equal(ours, seed_words(entropy, [(i, last) for i in block]))
    assert ours.shape == (count, 4) and ours.dtype == np.uint64


def test_block_words_refuse_what_a_spawn_key_cannot_hold():
    for block, last in ((range(0, 2**32 + 1), 0), (range(0, 4), 2**32), (range(0, 4, 2), 1)):
        with pytest.raises(ValueError):
            block_seed_words(1, block, last)


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
