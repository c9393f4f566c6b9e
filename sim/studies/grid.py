"""Sweep grids: ``--grid KEY=VALUES`` axes parsed and expanded into override mappings.

A sweep is the cartesian product of its axes over a base scenario; each point is a mapping
of dotted overrides (``{"acceptance.alpha": 0.7, "speculation.num_steps": 3}``) applied with
``sim.scenario.overrides.with_overrides``. Values are TOML scalars or arrays as in ``--set``;
ranges ``start:stop[:step]`` expand inclusively.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sim.errors import SpecsimError
from sim.scenario.overrides import parse_value, refuse_list_index

#: Most points a sweep may have (a guard against a typo such as ``0:1:0.00001``).
MAX_POINTS = 100_000


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes (``[0.9,0.8],0.7``)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def split_list(
    text: str,
    *,
    source: str | None = None,
    param: str | None = None,
    field: str | None = None,
) -> list[str]:
    """The stripped items of a comma-separated list (commas inside brackets or quotes do
    not split: ``[0.9,0.8],0.7`` is two items); blank text is no items.

    An empty item (``1,,4``, ``,0.8``, ``0.8,``) is a SpecsimError named by ``source``,
    ``param`` and ``field``, never dropped: every comma-list option parses through here,
    so each refuses one the same way.
    """
    if not text.strip():
        return []
    items = _split_top_level(text)
    if not all(items):
        raise SpecsimError(f"empty value in {text!r}", source=source, param=param, field=field)
    return items


def _number(text: str, key: str) -> int | float:
    value = parse_value(text, param="grids", field=key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecsimError(f"range bound {text!r} is not a number", param="grids", field=key)
    if not math.isfinite(value):
        raise SpecsimError(f"range bound {text!r} is not finite", param="grids", field=key)
    return value


def parse_range(text: str, key: str = "") -> list[int | float]:
    """``start:stop[:step]`` -> the values from start to stop inclusive.

    Integers stay integers when start, stop and step are all integers (step defaults to
    1); float values are rounded to 12 significant digits so ``0.5:0.95:0.05`` gives
    0.5, 0.55, ..., 0.95 and not 0.6000000000000001.
    """
    pieces = text.split(":")
    if len(pieces) not in (2, 3):
        raise SpecsimError(f"expected start:stop[:step], got {text!r}", param="grids", field=key)
    start, stop = (_number(p, key) for p in pieces[:2])
    step = _number(pieces[2], key) if len(pieces) == 3 else 1
    if step <= 0:
        raise SpecsimError(f"range step must be positive in {text!r}", param="grids", field=key)
    if stop < start:
        raise SpecsimError(f"range stop is below start in {text!r}", param="grids", field=key)
    spans = (stop - start) / step  # a subnormal step overflows to inf: too many values
    count = math.floor(spans + 1e-9) + 1 if math.isfinite(spans) else MAX_POINTS + 1
    if count > MAX_POINTS:
        raise SpecsimError(
            f"range {text!r} has more than {MAX_POINTS:,} values (a sweep has at most "
            f"{MAX_POINTS} points)",
            param="grids",
            field=key,
        )
    if all(isinstance(v, int) for v in (start, stop, step)):
        return [start + i * step for i in range(count)]
    return [float(f"{start + i * step:.12g}") for i in range(count)]


def _is_range(item: str) -> bool:
    return ":" in item and not item.startswith(("[", "{", '"', "'"))


def parse_grid(text: str) -> tuple[str, tuple[Any, ...]]:
    """``KEY=V1,V2,...`` or ``KEY=START:STOP[:STEP]`` (mixable: ``1:4,8``) -> (key, values).

    Values are TOML scalars or arrays as in ``--set``; bare words are strings
    (``pcie-gen4,nvlink4``). Duplicate values are rejected.
    """
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")) or not rest.strip():
        raise SpecsimError(
            f"expected KEY=V1,V2,... or KEY=START:STOP:STEP, got {text!r}", param="grids"
        )
    refuse_list_index(key, "--grid", "vary the whole list, e.g. {whole}=[...],[...]", "grids")
    values: list[Any] = []
    for item in split_list(rest, param="grids", field=key):
        values.extend(
            parse_range(item, key)
            if _is_range(item)
            else [parse_value(item, param="grids", field=key)]
        )
    canon = [canonical(v) for v in values]
    if len(set(canon)) != len(canon):
        raise SpecsimError(f"repeated value in {rest!r}", param="grids", field=key)
    return key, tuple(values)


def expand_grid(axes: Sequence[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
    """The cartesian product of the axes, first axis slowest, as override mappings."""
    keys = [k for k, _ in axes]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise SpecsimError("the same key is given twice", param="grids", field=dupes[0])
    total = math.prod(len(v) for _, v in axes)
    if total > MAX_POINTS:
        raise SpecsimError(f"{total} points exceed the limit of {MAX_POINTS}", param="grids")
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in axes))
    ]


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def point_key(point: Mapping[str, Any]) -> str:
    """Canonical text of a point's overrides: the identity of a point in the store."""
    return canonical(dict(point))
