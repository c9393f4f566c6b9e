"""What every executor is: ``Executor`` (runs a function over items, yielding each
result under its index as it finishes), and what a study does with one: send a batch
longest first (``longest_first``) and end what it keeps open (``close_executor``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["Executor", "R", "T", "close_executor", "longest_first"]


T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs ``fn`` over items in any order, yielding ``(index, result)`` as each finishes;
    ``width()``: how many items it runs at once (to cut work into enough tasks)."""

    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T]
    ) -> Iterator[tuple[int, R]]: ...

    def width(self) -> int: ...


def longest_first(
    executor: Executor, fn: Callable[[T], R], items: Sequence[T], cost: Callable[[T], float]
) -> Iterator[tuple[int, R]]:
    """``executor.map_unordered(fn, items)`` with the items sent in decreasing ``cost``
    (ties in their order), each result still under its index in ``items``.

    A batch ends when its last task does: sent longest first, the tasks left for a free
    worker at the end are short ones, so a worker waits less for the last long one (the
    longest-processing-time rule; a study's batches are sequential). Results never
    depend on the order tasks run (each carries its own seed)."""
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
    for j, result in executor.map_unordered(fn, [items[i] for i in order]):
        yield order[j], result


def close_executor(executor: Executor) -> None:
    """End what ``executor`` keeps open between calls (a Dask executor's connection to its
    scheduler); nothing for the local pool. Commands call it once their study is done."""
    close = getattr(executor, "close", None)
    if close is not None:
        close()
