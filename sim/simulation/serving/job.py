"""A finite job's conversations, shared by a closed loop's users (``ClosedLoop`` with
``conversations``): what SGLang's frontend ``run_batch(programs, num_threads=C)`` does
with multi-turn programs: C threads, each running one program's turns one after
another (a turn is sent when the previous one is answered) and taking the next program
when its last turn is done, until none is left. With given tasks (``ClosedLoop.tasks``,
one turn each) the pool's ``sent`` count says which task a request is: the j-th taken
is task j, the shape of a benchmark client over a fixed dataset (``vllm bench serve
--max-concurrency C``: each of C workers sends the dataset's next request when its
previous one completes).
"""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["JobPool"]


class JobPool:
    """``conversations`` of ``turns`` requests each; ``take(user)`` says whether ``user``
    sends a request now (the next turn of its conversation, else the first turn of a new
    one) and counts it in ``sent``."""

    __slots__ = ("conversations_left", "sent", "turns", "turns_left")

    def __init__(self, conversations: int, turns: int):
        self.conversations_left = conversations
        self.turns = turns
        self.turns_left: dict[Hashable, int] = {}
        self.sent = 0

    def take(self, user: Hashable) -> bool:
        left = self.turns_left.get(user, 0)
        if left > 0:
            self.turns_left[user] = left - 1
            self.sent += 1
            return True
        if self.conversations_left > 0:
            self.conversations_left -= 1
            self.turns_left[user] = self.turns - 1
            self.sent += 1
            return True
        return False
