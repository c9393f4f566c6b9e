"""Write a file atomically: a temporary file in the same directory, then ``os.replace``.

Readers see the old file or the new one, never half of one; on any error the temporary file
is removed and the old file is untouched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sim.errors import SpecsimError


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; SpecsimError naming the file."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise SpecsimError(f"cannot write: {exc.__class__.__name__}", source=str(path)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise SpecsimError(
                f"cannot write: {exc.__class__.__name__}", source=str(path)
            ) from None
        raise
