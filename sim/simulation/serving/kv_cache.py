"""The KV cache of a serving replication, as the count of its free tokens.

The scheduler (engine.py) takes a request's tokens only after checking that they fit
(admission, the growth it reserves after preempting) and gives back only tokens it took
(a completion, a preemption), so nothing ever waits on the cache: it is a count with
two checked operations, not a SimPy container (whose every take and give was an event
the simulation then processed, none of them changing what happens or when).
"""

from __future__ import annotations

__all__ = ["KvCache"]


class KvCache:
    """``capacity`` tokens, ``level`` of them free (all at first)."""

    def __init__(self, capacity: int):
        if capacity <= 0:
            raise ValueError(f"a KV cache holds at least one token, got {capacity}")
        self.capacity = capacity
        self.level = capacity

    def get(self, amount: int) -> None:
        """Take ``amount`` (> 0) free tokens; ValueError when they are not free."""
        if not 0 < amount <= self.level:
            raise ValueError(f"cannot take {amount} KV tokens with {self.level} free")
        self.level -= amount

    def put(self, amount: int) -> None:
        """Give back ``amount`` (> 0) tokens taken before; ValueError beyond the capacity."""
        if not 0 < amount <= self.capacity - self.level:
            raise ValueError(
                f"cannot give back {amount} KV tokens with {self.capacity - self.level} taken"
            )
        self.level += amount
