"""The published tables the validation scores against, read from sim/validation/data/.

Each file is TOML: one table per source, with ``source`` (where: a URL or a repository
path) and ``figure`` (which figure, and the setting it was measured in) beside the numbers.
Curves are lists of ``[x, y]`` pairs. The files ship inside the package (package data),
so an installed wheel carries them (the reader: sim/tables.py).
"""

from __future__ import annotations

from typing import Any

from sim.tables import curve, curves, read_package_table

__all__ = ["curve", "curves", "read_table"]


def read_table(name: str) -> dict[str, Any]:
    """The parsed file ``sim/validation/data/<name>.toml``."""
    return read_package_table("sim.validation", name)
