"""SGLang's pool of a hybrid target's states (sim/hardware/state_pool.py), by hand."""

from __future__ import annotations

import pytest

from sim.hardware.memory import GIB
from sim.hardware.state_pool import sglang_state_pool

#: 128 MiB of states a request; 19 GiB after the weights give a state budget of
#: 19 x 0.9 / 1.9 = 9 GiB = 72 requests' states.
P = 2**27
REST_GIB = 19.0


def test_plain_decoding_by_hand():
    """K = (72 p - p) // p = 71 slots, 71 // 5 = 14 running requests; the pool holds K + 1
    slots (a padding slot): 72 p = 9 GiB."""
    pool = sglang_state_pool(REST_GIB, P, draft_tokens=0, max_running_requests=1024)
    assert (pool.slots, pool.requests) == (71, 14)
    assert pool.state_gib == pytest.approx(9.0, rel=1e-12)


@pytest.mark.parametrize(("cap", "state_gib"), [(1024, 70 / 8), (4, 58 / 8)])
def test_speculating_by_hand(cap, state_gib):
    """D = 3 draft tokens: K = (72 p - 4 p) // (p (1 + 3 / 5)) = 68 // 1.6 = 42 slots, 8
    running requests; the verify's intermediate states p x (min(cap, 8) + 1) x 3: 27 p at
    the default cap, 15 p at a cap of 4; with the K + 1 slots 70 p or 58 p (p = 1/8 GiB)."""
    pool = sglang_state_pool(REST_GIB, P, draft_tokens=3, max_running_requests=cap)
    assert (pool.slots, pool.requests, pool.draft_tokens) == (42, 8, 3)
    assert pool.state_gib == pytest.approx(state_gib, rel=1e-12)


def test_the_radix_cache_off_keeps_one_slot_a_request():
    pool = sglang_state_pool(
        REST_GIB, P, draft_tokens=0, max_running_requests=1024, slots_per_request=1
    )
    assert (pool.slots, pool.requests) == (71, 71)


def test_no_room_for_a_request_is_refused():
    with pytest.raises(ValueError, match="no request's states fit"):
        sglang_state_pool(P * 4 / GIB, P, draft_tokens=3, max_running_requests=8)
    with pytest.raises(ValueError, match="positive size"):
        sglang_state_pool(REST_GIB, 0.0, draft_tokens=0, max_running_requests=8)
