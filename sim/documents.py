"""The envelope of every JSON document specsim writes: ``kind`` and ``specsim_version``.

``kind`` says what a document is (``run``, ``serve``, ``search``, ``solve``, ``sweep``, ``compare``,
``calibrate``, ``hardware``, ``presets``, ``allreduce``, ``convert``, ``validate``, and the
serving decisions ``crossover``, ``best_k``, ``capacity``, ``controllers``), so
``specsim plot`` and other readers dispatch on it instead of guessing from keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim import __version__
from sim.errors import SpecsimError

KINDS: tuple[str, ...] = (
    "run",
    "serve",
    "search",
    "solve",
    "sweep",
    "compare",
    "calibrate",
    "hardware",
    "presets",
    "allreduce",
    "convert",
    "validate",
    "crossover",
    "best_k",
    "capacity",
    "controllers",
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
