"""The published tables the validation scores against, read from sim/validation/data/.

Each file is TOML: one table per source, with ``source`` (where: a URL or a repository
path) and ``figure`` (which figure, and the setting it was measured in) beside the numbers.
Curves are lists of ``[x, y]`` pairs. The files ship inside the package (package data),
so an installed wheel carries them.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

__all__ = ["curve", "curves", "read_table"]


def read_table(name: str) -> dict[str, Any]:
    """The parsed file ``sim/validation/data/<name>.toml``."""
    text = (files("sim.validation") / "data" / f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def curve(pairs: Iterable[list[Any]]) -> dict[int, float]:
    """``[[x, y], ...]`` as ``{x: y}``, in the file's order."""
    return {int(x): float(y) for x, y in pairs}


def curves(named: dict[str, list[list[Any]]]) -> dict[str, dict[int, float]]:
    """Named curves, ``{name: [[x, y], ...]}``, as ``{name: {x: y}}``."""
    return {name: curve(pairs) for name, pairs in named.items()}
