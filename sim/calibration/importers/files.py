"""Reading an imported file: the one place importers touch the file system."""

from __future__ import annotations

from pathlib import Path

from sim.files import read_bounded_text


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8, undecodable bytes replaced, at most sim.files.MAX_INPUT_BYTES);
    SpecsimError naming the file."""
    return read_bounded_text(path, errors="replace")
