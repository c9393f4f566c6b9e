"""The envelope of every JSON document specsim writes: ``kind`` and ``specsim_version``.

``kind`` says what a document is (``run``, ``serve``, ``search``, ``tree-search``,
``solve``, ``sweep``, ``compare``, ``calibrate``, ``import``, ``hardware``, ``presets``,
``allreduce``, ``convert``, ``validate``, ``plot``, ``schema``, ``tree-load``, and the serving
decisions ``crossover``, ``best_k``, ``capacity``, ``controllers``), so
``specsim plot`` and other readers dispatch on it instead of guessing from keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sim import __version__
from sim.errors import SpecsimError

KINDS: tuple[str, ...] = (
    "run",
    "serve",
    "search",
    "tree-search",
    "solve",
    "sweep",
    "compare",
    "calibrate",
    "import",
    "hardware",
    "presets",
    "allreduce",
    "convert",
    "validate",
    "plot",
    "schema",
    "tree-load",
    "crossover",
    "best_k",
    "capacity",
    "controllers",
)

#: The kinds ``specsim plot`` and ``--plot`` draw figures of (sim/report/figures.py
#: ``BUILDERS``; kept here so a command can check ``--plot`` before it runs, without
#: importing matplotlib).
PLOTTED: tuple[str, ...] = (
    "run",
    "serve",
    "search",
    "solve",
    "sweep",
    "compare",
    "tree-load",
    "crossover",
    "best_k",
    "capacity",
    "controllers",
)


def plotted(kind: str, option: str = "--plot") -> None:
    """SpecsimError naming ``option`` when a ``kind`` document has no figures to draw."""
    if kind not in PLOTTED:
        raise SpecsimError(
            f"a {kind} document has no figures (figures are drawn for {', '.join(PLOTTED)})",
            source=option,
        )


def document(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with ``kind`` and ``specsim_version`` first (``body``'s keys win on no clash)."""
    if kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r}")
    return {"kind": kind, "specsim_version": __version__, **dict(body)}


def document_kind(doc: Mapping[str, Any], source: str) -> str:
    """The ``kind`` of a document read from ``source``; SpecsimError when it has none."""
    kind = doc.get("kind")
    if kind not in KINDS:
        raise SpecsimError(
            f"not a specsim document (kind {kind!r}; expected one of {', '.join(KINDS)})",
            source=source,
            field="kind",
        )
    return str(kind)


def non_finite_field(node: Any, prefix: str = "") -> str | None:
    """The dotted path of the first NaN or infinity in a JSON-like document, else None."""
    if isinstance(node, float) and not math.isfinite(node):
        return prefix or "(document)"
    if isinstance(node, Mapping):
        for k, v in node.items():
            found = non_finite_field(v, f"{prefix}.{k}" if prefix else str(k))
            if found:
                return found
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            found = non_finite_field(v, f"{prefix}[{i}]")
            if found:
                return found
    return None


def check_finite(doc: Any, source: str) -> None:
    """SpecsimError naming the field when ``doc`` holds a NaN or an infinity (not JSON)."""
    where = non_finite_field(doc)
    if where is not None:
        raise SpecsimError(
            "the answer is not finite (NaN or infinity): the scenario is outside the range "
            "where the model's statistics exist",
            source=source,
            field=where,
        )


class MissingField(KeyError):
    """A key a reader looked up in a document that does not have it; ``path`` is its
    dotted path in the document (``speculative.distributions.ttft_ms``, ``rows[3].alpha``)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class PathDict(dict[str, Any]):
    """A JSON object that knows where it sits in its document: looking up a key it lacks
    raises ``MissingField`` with the key's full dotted path (a plain ``KeyError`` would name
    the last key only). Otherwise a plain dict."""

    def __init__(self, items: Mapping[str, Any], path: str) -> None:
        super().__init__(items)
        self.path = path

    def __missing__(self, key: str) -> Any:
        raise MissingField(f"{self.path}.{key}" if self.path else str(key))


def with_paths(node: Any, path: str = "") -> Any:
    """A copy of a JSON-like document whose objects are ``PathDict``s (lists stay lists),
    so a reader's missing key is reported by its path; other values are shared."""
    if isinstance(node, Mapping):
        return PathDict(
            {k: with_paths(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}, path
        )
    if isinstance(node, list):
        return [with_paths(v, f"{path}[{i}]") for i, v in enumerate(node)]
    return node
