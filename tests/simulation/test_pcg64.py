"""The compiled kernel's PCG64 is NumPy's PCG64: the same outputs from the same state.

``raw`` (one step at a time, here), four lanes refilling buffers (``lanes_of``/``refill``)
and jumps (``advance``) must all give what ``PCG64.random_raw`` gives, for any state; the
states move between NumPy generators and arrays both through NumPy's memory and through
its public ``state``, with the same result.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from sim.simulation.engines import pcg64

MASK64 = (1 << 64) - 1


@njit
def raw(state, n):
    """The next ``n`` outputs (uint64 (n,)) of ``state``, which moves past them, one
    ``muladd128`` step and ``output`` each: what ``random_raw(n)`` gives."""
    out = np.empty(n, dtype=np.uint64)
    s_hi, s_lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    for i in range(n):
        s_hi, s_lo = pcg64.muladd128(s_hi, s_lo, pcg64.MULT_HI, pcg64.MULT_LO, inc_hi, inc_lo)
        out[i] = pcg64.output(s_hi, s_lo)
    state[0], state[1] = s_hi, s_lo
    return out


def generator_at(state: int, inc: int) -> np.random.PCG64:
    """A NumPy PCG64 set to a 128-bit state and an (odd) increment."""
    gen = np.random.PCG64(0)
    full = gen.state
    full["state"] = {"state": state, "inc": inc}
    gen.state = full
    return gen


def test_one_step_at_a_time_is_numpys():
    gen = np.random.PCG64(20261202)
    gen.random_raw(5)  # a state that is not the seeded one
    state = pcg64.read_states([gen])[0]
    assert np.array_equal(raw(state, 1000), gen.random_raw(1000))
    assert np.array_equal(state, pcg64.read_states([gen])[0])  # moved on alike


@pytest.mark.parametrize("outputs", [4, 64, 132])
def test_four_lanes_give_the_stream_in_order(outputs):
    gen = np.random.PCG64(7)
    lanes, step4 = pcg64.lanes_of(pcg64.read_states([gen])[0])
    buffers = [np.empty(outputs, dtype=np.uint64) for _ in range(3)]
    for buffer in buffers:
        pcg64.refill(lanes, step4, buffer)
    assert np.array_equal(np.concatenate(buffers), gen.random_raw(3 * outputs))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 777, 2**40 + 5])
def test_a_jump_is_that_many_steps(n):
    gen = np.random.PCG64(3)
    state = pcg64.read_states([gen])[0]
    pcg64.advance(state, n)
    gen.advance(n)
    assert np.array_equal(state, pcg64.read_states([gen])[0])


@settings(max_examples=30, deadline=None)
@given(
    state=st.integers(0, 2**128 - 1),
    inc=st.integers(0, 2**127 - 1).map(lambda i: 2 * i + 1),
    n=st.integers(1, 50),
)
def test_any_state_and_increment(state, inc, n):
    gen = generator_at(state, inc)
    words = pcg64.read_states([gen], direct=False)[0]
    assert words.tolist() == [state >> 64, state & MASK64, inc >> 64, inc & MASK64]
    lanes, step4 = pcg64.lanes_of(words)
    buffer = np.empty(4 * n, dtype=np.uint64)
    pcg64.refill(lanes, step4, buffer)
    assert np.array_equal(buffer, gen.random_raw(4 * n))


@pytest.mark.parametrize("direct", [True, False])
def test_states_move_both_ways(direct):
    if direct and not pcg64.layout_checked():
        pytest.skip("NumPy's PCG64 words are not laid out as checked on this platform")
    gens = [np.random.PCG64(i) for i in range(3)]
    states = pcg64.read_states(gens, direct=direct)
    assert np.array_equal(states, pcg64.read_states(gens, direct=not direct or None))
    expected = [g.random_raw(9) for g in (np.random.PCG64(i) for i in range(3))]
    for row in states:
        pcg64.advance(row, 4)
    pcg64.write_states(gens, states, direct=direct)
    for gen, drawn in zip(gens, expected, strict=True):
        assert np.array_equal(gen.random_raw(5), drawn[4:])


def test_numpys_layout_is_the_one_checked_here():
    """On little-endian GCC/Clang builds (Linux, macOS) NumPy stores the 128-bit words low
    half first; elsewhere the states take the public path, which the test above covers."""
    import sys

    if sys.byteorder == "little" and sys.platform != "win32":
        assert pcg64.layout_checked()


def test_seeded_states_are_numpys():
    """From a seed's words (what ``SeedWords`` hands PCG64) to the state NumPy starts at."""
    from sim.simulation.seeding import SeedWords, seed_words

    words = seed_words(20261202, [(i, j) for i in range(4) for j in range(3)])
    words[0] = [2**64 - 1] * 4  # carries out of every word
    gens = [np.random.PCG64(SeedWords(w)) for w in words]
    assert np.array_equal(pcg64.seeded_states(words), pcg64.read_states(gens, direct=False))


def test_only_pcg64_is_read():
    with pytest.raises(TypeError, match="PCG64"):
        pcg64.read_states([np.random.MT19937(1)])
    with pytest.raises(TypeError, match="PCG64"):
        pcg64.read_states([np.random.MT19937(1)], direct=False)
