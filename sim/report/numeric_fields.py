"""Which fields of each serving document kind hold numbers, and the check ``plot`` makes.

A result document read back by ``plot`` may have been edited or produced by another
version: a string or a null where a number belongs would be drawn by matplotlib as a
category or a gap (exit 0, a wrong figure). ``check_numbers`` refuses it first, naming the
dotted field (list entries as ``[i]``). The fields are the ones every document of that kind
written by ``serve``, ``crossover``, ``best-k``, ``capacity``, ``controllers`` and
``tree-load`` holds as a number (never null, never text) in the samples
``numeric_fields.json`` was made from (``python -m sim.report.numeric_fields DOC.json...``
prints it: a field is kept only if every sample that has it holds a number there); list
indices are collapsed to ``[]``. Fields not listed are not checked here (the figure
builders check what they read).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sim.errors import SpecsimError

__all__ = ["check_numbers", "numeric_fields", "numeric_paths"]

_FILE = Path(__file__).with_name("numeric_fields.json")

#: Numeric fields that hold null when the scenario does not set them (an SLO left out):
#: a null there is checked as absent, any other non-number still refused.
NULLABLE = frozenset({"slo.ttft_ms", "slo.tpot_ms"})


def _leaves(node: Any, path: str = "", shape: str = "") -> Iterator[tuple[str, str, Any]]:
    """(dotted path with indices, the same with indices collapsed to [], value) of leaves."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(
                value, f"{path}.{key}" if path else str(key), f"{shape}.{key}" if shape else key
            )
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, f"{path}[{i}]", f"{shape}[]")
    else:
        yield path, shape, node


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def numeric_paths(doc: Any) -> tuple[set[str], set[str]]:
    """(collapsed paths holding a number, collapsed paths holding anything else)."""
    numbers: set[str] = set()
    others: set[str] = set()
    for _, shape, value in _leaves(doc):
        (numbers if _is_number(value) else others).add(shape)
    return numbers, others


def numeric_fields() -> dict[str, frozenset[str]]:
    """Document kind -> collapsed paths that hold numbers (numeric_fields.json), read now
    (``plot`` checks one document a process)."""
    data = json.loads(_FILE.read_text(encoding="utf-8"))
    return {kind: frozenset(paths) for kind, paths in data.items()}


def check_numbers(doc: Any, kind: str, source: str) -> None:
    """SpecsimError naming the first field of ``kind``'s numeric fields that holds
    something else than a finite number (a null in a ``NULLABLE`` field is an SLO not set)."""
    fields = numeric_fields().get(kind)
    if not fields:
        return
    for path, shape, value in _leaves(doc):
        if value is None and shape in NULLABLE:
            continue
        if shape in fields and not (_is_number(value) and math.isfinite(value)):
            got = "null" if value is None else repr(value)[:60]
            raise SpecsimError(
                f"not a valid {kind} document: expected a number, got {got}",
                source=source,
                field=path,
            )


def _main(paths: list[str]) -> None:
    """Print numeric_fields.json made from sample documents (their ``kind`` read)."""
    numbers: dict[str, set[str]] = {}
    others: dict[str, set[str]] = {}
    for p in paths:
        doc = json.loads(Path(p).read_text(encoding="utf-8"))
        n, o = numeric_paths(doc)
        numbers.setdefault(doc["kind"], set()).update(n)
        others.setdefault(doc["kind"], set()).update(o)
    out = {k: sorted(numbers[k] - others[k]) for k in sorted(numbers)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    _main(sys.argv[1:])
