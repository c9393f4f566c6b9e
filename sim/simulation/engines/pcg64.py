"""NumPy's PCG64 inside compiled code: the same 64-bit outputs, drawn without a call each.

The compiled kernel (compiled.py) needs each replication's accept stream: the outputs of
a NumPy ``PCG64``, 32-bit halves low first, as ``random_raw().view(np.uint32)`` gives
them. The generator written out here, in 128-bit integer arithmetic that LLVM lowers to
three multiplies an output, run as four interleaved lanes so that the multiplies of one
output need not wait for the one before, costs about 0.75 ns a 32-bit draw (1.5 ns an
output, measured in a loop of refills); calling NumPy's C step through ``ctypes`` once an
output, as the kernel did before, made its draws-only pass 1.3-1.9 ns a draw. A replication
starts from its seed words (``seeded_states``), so the kernel's streams need no NumPy
generator at all.

The generator (O'Neill 2014, https://www.pcg-random.org/pdf/hmc-cs-2014-0905.pdf; NumPy's
``pcg64.h``, https://github.com/numpy/numpy/blob/main/numpy/random/src/pcg64/pcg64.h):
a 128-bit LCG ``s <- s M + inc`` with NumPy's multiplier ``M`` and a per-stream odd
``inc``; each output is the XSL-RR of the new state, ``rotr64(hi ^ lo, hi >> 58)``. Lane
i of four holds state ``s_{n + i}`` and steps by four: ``s <- s M^4 + inc (M^3 + M^2 + M
+ 1)`` (the jump constants of ``jump``, Brown 1994, "Random number generation with
arbitrary strides").

A state is four uint64 words ``(state_hi, state_lo, inc_hi, inc_lo)``. ``read_states`` and
``write_states`` move them between NumPy generators and such arrays: through NumPy's own
memory when its layout is the one checked on first use (``layout_checked``: the 128-bit
words of ``pcg64_random_t`` stored low half first, as GCC and Clang store ``__uint128_t``
on little-endian machines), otherwise through the public ``bit_generator.state``.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: NumPy's PCG64 multiplier (``PCG_DEFAULT_MULTIPLIER_HIGH``/``_LOW`` of pcg64.h).
MULT_HI = np.uint64(2549297995355413924)
MULT_LO = np.uint64(4865540595714422341)
#: Outputs per refill of a lane buffer (a multiple of the four lanes).
BUFFER_OUTPUTS = 64

_ROT = np.uint64(58)
_MASK6 = np.uint64(63)
_SIXTY_FOUR = np.uint64(64)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)

_I64 = ir.IntType(64)
_I128 = ir.IntType(128)
_SHIFT = ir.Constant(_I128, 64)


def _join(builder: ir.IRBuilder, hi: ir.Value, lo: ir.Value) -> ir.Value:
    return builder.or_(builder.shl(builder.zext(hi, _I128), _SHIFT), builder.zext(lo, _I128))


def _split(context: object, builder: ir.IRBuilder, ty: types.Type, x: ir.Value) -> ir.Value:
    hi = builder.trunc(builder.lshr(x, _SHIFT), _I64)
    return context.make_tuple(builder, ty, (hi, builder.trunc(x, _I64)))


_PAIR = types.UniTuple(types.uint64, 2)


@intrinsic
def muladd128(typingctx, a_hi, a_lo, b_hi, b_lo, c_hi, c_lo):
    """(a b + c) mod 2^128 of 128-bit numbers given as (hi, lo) uint64 halves."""
    u = types.uint64
    sig = _PAIR(u, u, u, u, u, u)

    def codegen(context, builder, signature, args):
        a, b, c = (_join(builder, args[i], args[i + 1]) for i in (0, 2, 4))
        return _split(context, builder, signature.return_type, builder.add(builder.mul(a, b), c))

    return sig, codegen


@njit(cache=True, inline="never")
def jump(inc_hi, inc_lo, n):
    """(A, C) with ``step^n(s) = A s + C`` for the LCG of increment ``inc``: (A_hi, A_lo,
    C_hi, C_lo), by squaring (n >= 0)."""
    a_hi, a_lo, c_hi, c_lo = _ZERO, _ONE, _ZERO, _ZERO  # the identity map
    m_hi, m_lo, p_hi, p_lo = MULT_HI, MULT_LO, inc_hi, inc_lo  # one step
    while n > 0:
        if n & 1:
            a_hi, a_lo = muladd128(a_hi, a_lo, m_hi, m_lo, _ZERO, _ZERO)
            c_hi, c_lo = muladd128(c_hi, c_lo, m_hi, m_lo, p_hi, p_lo)
        # the map applied twice: s -> m (m s + p) + p
        q_hi, q_lo = muladd128(m_hi, m_lo, _ZERO, _ONE, _ZERO, _ONE)  # m + 1
        p_hi, p_lo = muladd128(q_hi, q_lo, p_hi, p_lo, _ZERO, _ZERO)
        m_hi, m_lo = muladd128(m_hi, m_lo, m_hi, m_lo, _ZERO, _ZERO)
        n >>= 1
    return a_hi, a_lo, c_hi, c_lo


@njit(cache=True)
def output(s_hi, s_lo):
    """PCG's XSL-RR output of a state: rotr64(hi ^ lo, hi >> 58)."""
    x = s_hi ^ s_lo
    r = s_hi >> _ROT
    return (x >> r) | (x << ((_SIXTY_FOUR - r) & _MASK6))


@njit(cache=True)
def lanes_of(state):
    """Four lanes from a state (4,) uint64: lanes (8,) uint64, lane i's (hi, lo) at 2i,
    2i + 1 holding ``s_{i + 1}`` (the state after i + 1 steps; its output is the stream's
    (i + 1)-th), and the four-step map (4,) uint64 (A_hi, A_lo, C_hi, C_lo)."""
    s_hi, s_lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    lanes = np.empty(8, dtype=np.uint64)
    for i in range(4):
        s_hi, s_lo = muladd128(s_hi, s_lo, MULT_HI, MULT_LO, inc_hi, inc_lo)
        lanes[2 * i], lanes[2 * i + 1] = s_hi, s_lo
    step4 = np.empty(4, dtype=np.uint64)
    step4[0], step4[1], step4[2], step4[3] = jump(inc_hi, inc_lo, 4)
    return lanes, step4


@njit(cache=True)
def refill(lanes, step4, buffer):
    """The next len(buffer) outputs (a multiple of 4) into ``buffer`` (uint64), lanes
    advanced past them."""
    a_hi, a_lo, c_hi, c_lo = step4[0], step4[1], step4[2], step4[3]
    h0, l0, h1, l1 = lanes[0], lanes[1], lanes[2], lanes[3]
    h2, l2, h3, l3 = lanes[4], lanes[5], lanes[6], lanes[7]
    for i in range(0, buffer.shape[0], 4):
        buffer[i] = output(h0, l0)
        buffer[i + 1] = output(h1, l1)
        buffer[i + 2] = output(h2, l2)
        buffer[i + 3] = output(h3, l3)
        h0, l0 = muladd128(h0, l0, a_hi, a_lo, c_hi, c_lo)
        h1, l1 = muladd128(h1, l1, a_hi, a_lo, c_hi, c_lo)
        h2, l2 = muladd128(h2, l2, a_hi, a_lo, c_hi, c_lo)
        h3, l3 = muladd128(h3, l3, a_hi, a_lo, c_hi, c_lo)
    lanes[0], lanes[1], lanes[2], lanes[3] = h0, l0, h1, l1
    lanes[4], lanes[5], lanes[6], lanes[7] = h2, l2, h3, l3


@njit(cache=True)
def advance(state, n):
    """``state`` (4,) uint64 moved ``n`` outputs on, in place."""
    a_hi, a_lo, c_hi, c_lo = jump(state[2], state[3], n)
    state[0], state[1] = muladd128(a_hi, a_lo, state[0], state[1], c_hi, c_lo)


@njit(cache=True)
def seeded_states(words):
    """The states ``PCG64(seed)`` starts from, uint64 (B, 4), given the four words its
    seed's ``generate_state(4, np.uint64)`` gives (``words`` uint64 (B, 4): initial state
    hi, lo, sequence hi, lo): NumPy's ``pcg64_set_seed``, i.e. PCG's ``srandom_r``:
    ``inc = 2 seq + 1``, ``s = step(step(0) + initial)``."""
    out = np.empty((words.shape[0], 4), dtype=np.uint64)
    for b in range(words.shape[0]):
        s_hi, s_lo, q_hi, q_lo = words[b, 0], words[b, 1], words[b, 2], words[b, 3]
        inc_hi = (q_hi << _ONE) | (q_lo >> np.uint64(63))
        inc_lo = (q_lo << _ONE) | _ONE
        # step(0) = inc; + initial; then one more step
        x_hi, x_lo = muladd128(inc_hi, inc_lo, _ZERO, _ONE, s_hi, s_lo)
        x_hi, x_lo = muladd128(x_hi, x_lo, MULT_HI, MULT_LO, inc_hi, inc_lo)
        out[b, 0], out[b, 1], out[b, 2], out[b, 3] = x_hi, x_lo, inc_hi, inc_lo
    return out


# --- moving states between NumPy generators and arrays --------------------------------

_MASK64 = (1 << 64) - 1

_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def _pcg64(gen: object) -> np.random.PCG64:
    """``gen``, which must be a NumPy PCG64 (the kernel's arithmetic is PCG64's)."""
    if not isinstance(gen, np.random.PCG64):
        raise TypeError(f"the compiled kernel draws from PCG64, not {type(gen).__name__}")
    return gen


def _words_addresses(generators: Sequence[np.random.PCG64]) -> np.ndarray:
    """uint64 (B,): the address of each generator's ``pcg64_random_t`` (state, inc), read
    from its capsule's ``bitgen_t`` (first field: the ``pcg64_state``, whose first field
    points to it)."""
    out = np.empty(len(generators), dtype=np.uint64)
    for i, gen in enumerate(generators):
        bitgen = _CAPSULE_POINTER(_pcg64(gen).capsule, b"BitGenerator")
        pcg64_state = ctypes.c_void_p.from_address(bitgen).value
        out[i] = ctypes.c_void_p.from_address(pcg64_state).value
    return out


@intrinsic
def _load(typingctx, address):
    """The uint64 at ``address``."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], _I64.as_pointer()))

    return types.uint64(types.uint64), codegen


@intrinsic
def _store(typingctx, address, value):
    """Write the uint64 ``value`` at ``address``."""

    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], _I64.as_pointer()))
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64), codegen


@njit(cache=True)
def _load_words(addresses, states):
    """``pcg64_random_t`` words (state lo, state hi, inc lo, inc hi in memory) at each
    address into ``states`` (B, 4) as (state_hi, state_lo, inc_hi, inc_lo)."""
    for b in range(addresses.shape[0]):
        a = addresses[b]
        states[b, 1] = _load(a)
        states[b, 0] = _load(a + np.uint64(8))
        states[b, 3] = _load(a + np.uint64(16))
        states[b, 2] = _load(a + np.uint64(24))


@njit(cache=True)
def _store_words(addresses, states):
    """The inverse of ``_load_words`` for the state words (the increment never changes)."""
    for b in range(addresses.shape[0]):
        a = addresses[b]
        _store(a, states[b, 1])
        _store(a + np.uint64(8), states[b, 0])


def _words_of(value: int) -> tuple[int, int]:
    return value >> 64, value & _MASK64


def _states_via_api(generators: Sequence[np.random.PCG64]) -> np.ndarray:
    states = np.empty((len(generators), 4), dtype=np.uint64)
    for i, gen in enumerate(generators):
        s = _pcg64(gen).state["state"]
        states[i] = (*_words_of(s["state"]), *_words_of(s["inc"]))
    return states


def _write_via_api(generators: Sequence[np.random.PCG64], states: np.ndarray) -> None:
    for gen, (s_hi, s_lo, i_hi, i_lo) in zip(generators, states.tolist(), strict=True):
        full = gen.state
        full["state"] = {"state": (s_hi << 64) | s_lo, "inc": (i_hi << 64) | i_lo}
        full["has_uint32"], full["uinteger"] = 0, 0
        gen.state = full


@functools.cache
def layout_checked() -> bool:
    """Whether NumPy's PCG64 words sit in memory as ``_load_words`` reads them: a state
    and increment with four distinct words, set through the public API, read back."""
    gen = np.random.PCG64(0)
    s_hi, s_lo, i_hi = 0x0123456789ABCDEF, 0x0FEDCBA987654321, 0x1122334455667788
    i_lo = 0x99AABBCCDDEEFF01  # odd, as every PCG increment
    _write_via_api([gen], np.array([[s_hi, s_lo, i_hi, i_lo]], dtype=np.uint64))
    try:
        words = np.empty((1, 4), dtype=np.uint64)
        _load_words(_words_addresses([gen]), words)
    except (OSError, ValueError):
        return False
    return words[0].tolist() == [s_hi, s_lo, i_hi, i_lo]


def read_states(generators: Sequence[np.random.PCG64], direct: bool | None = None) -> np.ndarray:
    """The generators' states, uint64 (B, 4): (state_hi, state_lo, inc_hi, inc_lo);
    ``direct``: through NumPy's memory (default: when ``layout_checked()``) or not.

    A buffered 32-bit half (``has_uint32``, from NumPy's own 32-bit draws) is not part of
    it: the kernel's streams are read by ``random_raw`` and this module only."""
    if not (layout_checked() if direct is None else direct):
        return _states_via_api(generators)
    states = np.empty((len(generators), 4), dtype=np.uint64)
    _load_words(_words_addresses(generators), states)
    return states


def write_states(
    generators: Sequence[np.random.PCG64], states: np.ndarray, direct: bool | None = None
) -> None:
    """Set each generator's state to its row of ``states`` (B, 4), as ``read_states``
    gives them (the increments must be the generators' own); ``direct`` as there."""
    if layout_checked() if direct is None else direct:
        _store_words(_words_addresses(generators), states)
    else:
        _write_via_api(generators, states)
