"""``record`` against ``@dataclass(frozen=True)``: the same equality, hash, repr and
immutability for the same class body."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import field

import numpy as np
import pytest

import sim
from sim.records import record


def _twins(body: dict, bases: tuple[type, ...] = ()) -> tuple[type, type]:
    """The class ``body`` decorated by ``record`` and by ``dataclass(frozen=True)``."""
    a = record(type("Rec", bases, dict(body)))
    b = dataclasses.dataclass(frozen=True)(type("Rec", bases, dict(body)))
    return a, b


PLAIN = {"__annotations__": {"x": "float", "y": "str", "z": "tuple"}, "z": ()}
OPTIONS = {
    "__annotations__": {"a": "int", "b": "int", "c": "int", "d": "int"},
    "b": field(default=0, compare=False),
    "c": field(default=0, repr=False),
    "d": field(default=0, hash=False),
}
ONE = {"__annotations__": {"only": "int"}}
NONE: dict = {"__annotations__": {}}


def _cases():
    return [
        (PLAIN, [(1.0, "a"), (1.0, "a", (1, 2)), (2.0, "b"), (float("nan"), "n")]),
        (OPTIONS, [(1, 2, 3, 4), (1, 9, 3, 4), (1, 2, 9, 4), (1, 2, 3, 9), (5,)]),
        (ONE, [(1,), (2,), (-1,)]),
        (NONE, [()]),
    ]


@pytest.mark.parametrize(("body", "args"), _cases())
def test_same_methods_as_a_frozen_dataclass(body, args):
    rec, ref = _twins(body)
    pairs = [(rec(*a), ref(*a)) for a in args]
    for r, d in pairs:
        assert repr(r) == repr(d)
        assert hash(r) == hash(d)
        assert dataclasses.astuple(r) == dataclasses.astuple(d)
        for r2, d2 in pairs:
            assert (r == r2) == (d == d2)
            assert (r != r2) == (d != d2)
        assert r.__eq__(object()) is NotImplemented
        assert (r == d) is False  # another class: not equal, as between two dataclasses
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.x = 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            del r.x
    assert [f.name for f in dataclasses.fields(rec)] == [f.name for f in dataclasses.fields(ref)]
    assert rec.__init__.__annotations__ == ref.__init__.__annotations__
    assert rec.__match_args__ == ref.__match_args__
    assert dataclasses.replace(pairs[0][0]) == pairs[0][0]


def test_arrays_compare_as_in_a_dataclass():
    """Fields holding arrays: equality raises as the generated __eq__ does (ambiguous
    truth value), and the same object compares equal."""
    rec, ref = _twins({"__annotations__": {"v": "object", "w": "object"}})
    arr = np.arange(3.0)
    for cls in (rec, ref):
        assert cls(arr, 1) == cls(arr, 1)
        with pytest.raises(ValueError):
            _ = cls(arr, 1) == cls(arr.copy(), 1)


def test_recursive_repr():
    rec, ref = _twins({"__annotations__": {"items": "list"}})
    r, d = rec([]), ref([])
    r.items.append(r)
    d.items.append(d)
    assert repr(r) == repr(d) == "Rec(items=[...])"


def test_class_methods_are_kept():
    """A method the class defines is kept; defining __eq__ alone still gets the fields'
    hash, an explicit __hash__ is kept (dataclass's rule)."""

    def eq(self, other):
        return True

    def custom_hash(self):
        return 7

    def text(self):
        return "mine"

    for body in (
        {**ONE, "__eq__": eq},
        {**ONE, "__hash__": custom_hash},
        {**ONE, "__repr__": text},
        {**ONE, "__eq__": eq, "__hash__": custom_hash},
    ):
        rec, ref = _twins(body)
        r, d = rec(3), ref(3)
        assert repr(r) == repr(d)
        assert hash(r) == hash(d)
        assert (r == rec(4)) == (d == ref(4))


def test_subclasses():
    """A record subclass adds its fields; a plain subclass uses its base's methods with its
    own name in the repr, as with generated methods."""
    base_rec, base_ref = _twins(PLAIN)
    sub_rec, sub_ref = _twins({"__annotations__": {"w": "int"}, "w": 0}, (base_rec,))
    sub_ref = dataclasses.dataclass(frozen=True)(
        type("Rec", (base_ref,), {"__annotations__": {"w": "int"}, "w": 0})
    )
    r, d = sub_rec(1.0, "a", (), 5), sub_ref(1.0, "a", (), 5)
    assert repr(r) == repr(d) and hash(r) == hash(d)
    assert r != sub_rec(1.0, "a", (), 6)
    assert r != base_rec(1.0, "a", ())  # another class
    plain_rec = type("Plain", (base_rec,), {})
    plain_ref = type("Plain", (base_ref,), {})
    assert repr(plain_rec(1.0, "a")) == repr(plain_ref(1.0, "a"))
    assert hash(plain_rec(1.0, "a")) == hash(plain_ref(1.0, "a"))


def _record_classes() -> list[type]:
    out = []
    for info in pkgutil.walk_packages(sim.__path__, "sim."):
        if info.name.endswith("__main__"):  # runs the command line
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and obj.__module__ == info.name
                and dataclasses.is_dataclass(obj)
                and obj.__dataclass_params__.frozen
            ):
                out.append(obj)
    return out


def test_every_frozen_class_of_specsim_is_a_record():
    """specsim's frozen dataclasses are records (the one ordered class aside): none pays
    for generated comparison and text methods at import."""
    classes = _record_classes()
    assert len(classes) > 150
    generated = [
        c.__qualname__
        for c in classes
        if c.__dataclass_params__.repr and not c.__dataclass_params__.order
    ]
    assert not generated, generated
