"""Other versions of ``sim`` for comparisons in the same run: ``git archive`` of a commit.

A commit's ``sim`` package is unpacked into a temporary directory and run in a subprocess
with ``PYTHONPATH`` pointing there (the same interpreter and dependencies as this tree).
When git or the commit is unavailable (a tarball without history), ``old_tree`` returns
None and the bench falls back to a recorded figure, saying so.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def old_tree(commit: str, into: Path) -> Path | None:
    """``sim`` and ``scenarios`` of ``commit`` unpacked under ``into``/commit (its own seed
    scenario: the file format moves with the code); None without git history."""
    dest = into / commit
    if (dest / "sim").is_dir():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", commit, "sim", "scenarios"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return dest


def run_snippet(code: str, tree: Path) -> dict:
    """Run ``code`` (which prints one JSON line last) with ``sim`` from ``tree``."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        cwd=tempfile.gettempdir(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
