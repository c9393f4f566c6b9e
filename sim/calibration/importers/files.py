"""Reading an imported file: the one place importers touch the file system."""

from __future__ import annotations

from pathlib import Path

from sim.errors import SpecsimError


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8, undecodable bytes replaced); SpecsimError naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise SpecsimError("no such file", source=str(path)) from None
    except (IsADirectoryError, PermissionError) as exc:
        raise SpecsimError(f"cannot read: {exc.__class__.__name__}", source=str(path)) from None
