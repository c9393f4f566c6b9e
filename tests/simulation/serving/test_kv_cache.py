"""The KV cache's count (kv_cache.py): tokens taken and given back, never beyond what is
free or was taken."""

from __future__ import annotations

import pytest

from sim.simulation.serving.kv_cache import KvCache


def test_tokens_taken_and_given_back_move_the_free_count():
    kv = KvCache(100)
    kv.get(60)
    kv.get(40)
    assert kv.level == 0
    kv.put(25)
    assert (kv.level, kv.capacity) == (25, 100)


@pytest.mark.parametrize(("take", "give"), [(101, None), (0, None), (50, 51), (50, 0)])
def test_taking_more_than_is_free_or_giving_more_than_was_taken_is_refused(take, give):
    kv = KvCache(100)
    with pytest.raises(ValueError):
        kv.get(take)
        kv.put(give)
