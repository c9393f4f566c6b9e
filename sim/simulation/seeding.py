"""NumPy's SeedSequence for many spawn keys at once (the set-up cost of small replications).

``np.random.SeedSequence(seed, spawn_key=key).generate_state(4, np.uint64)`` is what
``PCG64(SeedSequence(...))`` seeds itself with; building one SeedSequence in Python can
cost more than a default-size replication's whole simulation. ``seed_words`` computes the same
words for a batch of keys with uint32 array arithmetic: the entropy pool mixing and the
state generation of NumPy's SeedSequence (numpy/random/bit_generator.pyx, after Melissa
O'Neill's seed_seq_fe; NEP 19), whose hash constants evolve independently of the data, so
every key of a batch goes through the same sequence of constants. ``words_match_numpy``
checks it against NumPy itself (``WORDS_MATCH_NUMPY``, once at import; the simulate module
falls back to NumPy's own SeedSequence if it ever differs); tests compare many keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.random.bit_generator import ISeedSequence
from numpy.typing import DTypeLike

POOL_SIZE = 4
INIT_A, MULT_A = 0x43B0D7E5, 0x931E8875
INIT_B, MULT_B = 0x8B51F9DD, 0x58F38DED
MIX_MULT_L, MIX_MULT_R = 0xCA01F9DD, 0x4973F715
XSHIFT = 16
MASK32 = 0xFFFFFFFF


def _uint32_words(n: int) -> list[int]:
    """An int as little-endian 32-bit words ([0] for 0), as SeedSequence splits it."""
    if n < 0:
        raise ValueError("seed words must be non-negative")
    if n == 0:
        return [0]
    out = []
    while n > 0:
        out.append(n & MASK32)
        n >>= 32
    return out


def _int_hashmix(value: int, const: int) -> tuple[int, int]:
    """SeedSequence's hashmix on a Python int: (mixed value, next hash constant)."""
    value ^= const
    const = (const * MULT_A) & MASK32
    value = (value * const) & MASK32
    return value ^ (value >> XSHIFT), const


def _int_mix(x: int, y: int) -> int:
    result = (MIX_MULT_L * x - MIX_MULT_R * y) & MASK32
    return result ^ (result >> XSHIFT)


_SHIFT = np.uint32(XSHIFT)
_MIX_L, _MIX_R = np.uint32(MIX_MULT_L), np.uint32(MIX_MULT_R)


def _hash_consts(start: int, mult: int, count: int) -> tuple[np.ndarray, int]:
    """The next ``count`` hash constants after ``start`` (uint32 (count, 1)), and the last."""
    out = []
    for _ in range(count):
        start = (start * mult) & MASK32
        out.append(start)
    return np.array(out, dtype=np.uint32)[:, None], start


def _prefix(
    entropy: int, width: int
) -> tuple[
    np.ndarray, list[int], list[tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]
]:
    """What every key of one entropy shares: the pool after mixing the run entropy (uint32
    (4, 1)), the run words still to mix in, and the hash constants (before, after) of each
    word still to mix (the run's and the ``width`` key words) and of the state generation."""
    run = _uint32_words(int(entropy))
    run += [0] * max(0, POOL_SIZE - len(run))
    const = INIT_A
    pool = []
    for word in run[:POOL_SIZE]:
        value, const = _int_hashmix(word, const)
        pool.append(value)
    for i_src in range(POOL_SIZE):
        for i_dst in range(POOL_SIZE):
            if i_src != i_dst:
                value, const = _int_hashmix(pool[i_src], const)
                pool[i_dst] = _int_mix(pool[i_dst], value)
    mixing = []
    for _ in range(len(run) - POOL_SIZE + width):
        after, last = _hash_consts(const, MULT_A, POOL_SIZE)
        before = np.concatenate([np.array([[const]], dtype=np.uint32), after[:-1]])
        mixing.append((before, after))
        const = last
    after, _ = _hash_consts(INIT_B, MULT_B, 8)
    before = np.concatenate([np.array([[INIT_B]], dtype=np.uint32), after[:-1]])
    start = np.array(pool, dtype=np.uint32)[:, None]
    return start, run[POOL_SIZE:], mixing, (before, after)


def seed_words(entropy: int, spawn_keys: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=key).generate_state(4, np.uint64)`` for each key.

    ``spawn_keys``: m non-empty keys of the same length, every element below 2^32 (a
    sequence of keys or an int array (m, width)). Returns uint64 (m, 4). With a key, the run
    entropy is padded to at least the pool size, so the pool's first mixing involves the
    run entropy only: it is done once per call on Python ints (``_prefix``); the key
    words are then mixed in on uint32 arrays, one column per key (``_mixed_words``).
    """
    keys = np.asarray(spawn_keys, dtype=np.uint64).reshape(len(spawn_keys), -1)
    if keys.shape[1] == 0:
        raise ValueError("seed_words needs spawn keys")
    if int(keys.max()) > MASK32:
        raise ValueError("spawn key elements must be below 2^32")
    return _mixed_words(int(entropy), list(keys.T.astype(np.uint32)))


def block_seed_words(entropy: int, block: range, last: int) -> np.ndarray:
    """``seed_words(entropy, [(i, last) for i in block])`` (the words of one stream of a
    block of replications), without building the keys: uint64 (len(block), 4)."""
    if block.step != 1 or block.start < 0 or block.stop > MASK32 + 1 or not 0 <= last <= MASK32:
        raise ValueError("block seed words take a range of replications below 2^32")
    first = np.arange(block.start, block.stop, dtype=np.uint32)
    return _mixed_words(int(entropy), [first, np.uint32(last)])


def _mixed_words(entropy: int, key_words: Sequence[np.ndarray | np.uint32]) -> np.ndarray:
    """The state words of keys whose j-th elements are ``key_words[j]``: uint32 (m,) each,
    or a uint32 scalar shared by all keys (not the first). Returns uint64 (m, 4). Integer
    arrays wrap silently on overflow (NumPy flags overflow only for scalars), as the hash
    needs."""
    start, run_rest, mixing, (gen_before, gen_after) = _prefix(entropy, len(key_words))
    # the run's words (the same for every key), then the key words
    rest = [*(np.uint32(w) for w in run_rest), *key_words]
    rows = start  # (4, 1) while the words mixed are the run's, (4, m) from the first key word
    for word, (before, after) in zip(rest, mixing, strict=True):
        value = word ^ before  # mixed into every pool word, each its constant
        value *= after
        value ^= value >> _SHIFT
        value *= _MIX_R
        rows = rows * _MIX_L - value  # a new array: ``start`` is left as it is
        rows ^= rows >> _SHIFT
    data = np.concatenate([rows, rows])  # (8, m): state word i draws on pool word i % 4
    data ^= gen_before
    data *= gen_after
    data ^= data >> _SHIFT
    state = np.ascontiguousarray(data.T)
    return state.astype("<u4", copy=False).view("<u8").astype(np.uint64, copy=False)


class SeedWords(ISeedSequence):
    """Precomputed ``generate_state`` words for ``PCG64`` (its only use of a seed):
    uint64 (4,). Read-only words are handed out as they are (nobody can change them);
    others are copied."""

    __slots__ = ("_words",)

    def __init__(self, words: np.ndarray):
        self._words = np.ascontiguousarray(words, dtype=np.uint64)

    def generate_state(self, n_words: int, dtype: DTypeLike = np.uint32) -> np.ndarray:
        if n_words != self._words.size or (dtype is not np.uint64 and np.dtype(dtype) != np.uint64):
            raise ValueError("SeedWords holds exactly the words PCG64 asks for")
        return self._words if not self._words.flags.writeable else self._words.copy()


def words_match_numpy() -> bool:
    """Whether ``seed_words`` reproduces NumPy's SeedSequence here (checked now, 0.4 ms;
    ``WORDS_MATCH_NUMPY`` holds the answer checked at import)."""
    probes = [(20261130, (7, 1)), (0, (0, 0)), (2**40 + 3, (123456, 2))]
    for entropy, key in probes:
        ours = seed_words(entropy, [key])[0]
        theirs = np.random.SeedSequence(entropy, spawn_key=key).generate_state(4, np.uint64)
        if not np.array_equal(ours, theirs):
            return False
    return True


#: ``words_match_numpy()`` with the NumPy this process imported: a constant of the process.
WORDS_MATCH_NUMPY: bool = words_match_numpy()
