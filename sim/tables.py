"""Published tables shipped inside the package as TOML data files, and their curves.

A floor keeps its measured figures in ``sim/<floor>/data/<name>.toml`` (package data, so
an installed wheel carries them): one table per source, with ``source`` (where: a URL or a
repository path, or the key of one of the file's ``[sources]``) and ``figure`` (which
figure, and the setting it was measured in) beside the numbers. Curves are lists of
``[x, y]`` pairs. What is derived from the figures stays code that reads them.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

__all__ = ["curve", "curves", "read_package_table"]


def read_package_table(package: str, name: str) -> dict[str, Any]:
    """The parsed file ``<package>/data/<name>.toml`` (``package`` dotted, ``sim.binding``)."""
    text = (files(package) / "data" / f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def curve(pairs: Iterable[list[Any]]) -> dict[int, float]:
    """``[[x, y], ...]`` as ``{x: y}``, in the file's order."""
    return {int(x): float(y) for x, y in pairs}


def curves(named: dict[str, list[list[Any]]]) -> dict[str, dict[int, float]]:
    """Named curves, ``{name: [[x, y], ...]}``, as ``{name: {x: y}}``."""
    return {name: curve(pairs) for name, pairs in named.items()}
