"""``record``: ``@dataclass(frozen=True)`` with its comparison and text methods shared.

Python 3.11's ``dataclass`` compiles six methods for every frozen class it decorates
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``),
each from its own source text with ``exec``: about 1 ms a class, 50 ms of ``specsim run``'s
start-up for the 46 classes it imports. ``record`` asks ``dataclass`` for the four it must
build per class (the constructor and the frozen attribute guards) and gives the class
``__eq__``, ``__hash__`` and ``__repr__`` as closures over its field names: functions
whose code is compiled once, with the module, and which return what the generated ones
return (CPython 3.11 Lib/dataclasses.py ``_cmp_fn``, ``_hash_fn``, ``_repr_fn``):

* ``__eq__``: the tuples of the fields with ``compare`` when ``other`` is of the same
  class, else ``NotImplemented``;
* ``__hash__``: the hash of the tuple of the fields with ``hash`` (``compare`` when
  ``hash`` is None);
* ``__repr__``: ``Class(name=value!r, ...)`` over the fields with ``repr``, ``...`` for
  a recursive reference in the same thread (dataclasses' ``_recursive_repr``).

A class that defines one of them keeps its own, and an explicit ``__hash__`` is kept
by ``dataclass``'s rule (a class defining ``__eq__`` without ``__hash__`` still gets the
fields' hash). tests/test_records.py checks each against ``@dataclass(frozen=True)``.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def record(cls: T) -> T:
    """``@dataclass(frozen=True)`` of ``cls``: the same fields, constructor, immutability,
    equality, hash and repr (see the module docstring)."""
    own = dict(cls.__dict__)
    out = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(out)
    if "__repr__" not in own:
        _attach(out, "__repr__", _repr([f.name for f in fields if f.repr]))
    if "__eq__" not in own:
        _attach(out, "__eq__", _eq(_getter([f.name for f in fields if f.compare])))
    explicit_hash = own.get("__hash__", dataclasses.MISSING)
    if explicit_hash is dataclasses.MISSING or (explicit_hash is None and "__eq__" in own):
        hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
        _attach(out, "__hash__", _hash(_getter(hashed)))
    return out


def _attach(cls: type, name: str, fn: Callable[..., Any]) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, fn)


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's ``names`` attributes, in order (``attrgetter``: in C)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _repr(names: list[str]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()  # (instance, thread) being written: "..."

    def __repr__(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            body = ", ".join([f"{n}={getattr(self, n)!r}" for n in names])
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({body})"

    return __repr__


__all__ = ["record"]
