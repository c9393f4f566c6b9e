"""The resumable on-disk store of a sweep and its tidy tables.

The store keeps one small JSON file per finished point, written atomically (temporary file
+ ``os.replace``), keyed by the canonical JSON of the point's overrides; a sweep that is
interrupted keeps its finished points and a re-run computes only the missing ones. The tidy
tables ``sweep.csv`` and ``sweep.json`` (one row per point: the varied fields, then the
statistics) are rebuilt from the store, also atomically.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.documents import document
from sim.errors import SpecsimError
from sim.files import atomic_write_text, check_output_file, make_dirs, os_reason
from sim.studies.grid import canonical, point_key

#: Version of the point files and tables; a store of another version is not reused.
#: 2: the grid is part of the fingerprint.
STORE_VERSION = 2


class SweepStore:
    """Finished points of one sweep in ``out_dir``: ``manifest.json`` and ``points/*.json``.

    ``fingerprint`` is everything a result depends on besides the point (the base scenario,
    engine, targets) and the grid itself; a directory whose manifest has another
    fingerprint belongs to another sweep and is refused rather than mixed (the tables would
    describe whichever finished last); a grid that keeps every value of the stored one and
    adds some extends the sweep (its points are reused). While open, the store holds an
    exclusive lock on ``out_dir/.lock`` (``flock``: released by the kernel when the
    process dies, even by kill -9), so a second sweep into the same directory is refused
    instead of computing everything twice. ``open`` also removes temporary files a killed
    sweep left behind. ``shared``: a shard of a sweep run as several jobs (``--shard``):
    shards share the lock (a whole sweep still excludes them, and they it) and leave
    temporaries alone.
    """

    def __init__(self, out_dir: str | Path, fingerprint: Mapping[str, Any], shared: bool = False):
        self.out_dir = Path(out_dir)
        self.shared = shared
        self.fingerprint = {"store_version": STORE_VERSION, **fingerprint}
        self.points_dir = self.out_dir / "points"
        self.manifest_path = self.out_dir / "manifest.json"
        self._lock_fd: int | None = None
        self._extended = False
        self._made_dirs: list[Path] = []  # directories open() created, outermost first
        self._created: list[Path] = []  # manifest and points directory, if open() made them

    def open(self) -> None:
        """Create the directory and manifest, or check that an existing one matches; lock."""
        where = str(self.out_dir)
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise SpecsimError("exists and is not a directory", source=where)
        if self.points_dir.exists() and not self.points_dir.is_dir():
            raise SpecsimError("points: exists and is not a directory", source=where)
        for table in ("sweep.csv", "sweep.json"):  # written at the end: checked now
            check_output_file(self.out_dir / table, source=f"{where}/{table}")
        if self.manifest_path.exists():
            self._check_manifest()
        self._made_dirs = make_dirs(self.out_dir, where)
        self._lock()
        try:
            if not self.manifest_path.exists() or self._extended:
                text = json.dumps(self.fingerprint, indent=2) + "\n"
                atomic_write_text(self.manifest_path, text, source=where)
                self._created.append(self.manifest_path)
            if not self.points_dir.exists():
                make_dirs(self.points_dir, where)
                self._created.append(self.points_dir)
            if not self.shared:  # other shards may be writing their temporaries now
                self._remove_stale_temporaries()
        except BaseException:
            self.discard()
            raise

    def _check_manifest(self) -> None:
        try:
            old = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError):
            raise SpecsimError("unreadable manifest.json", source=str(self.out_dir)) from None
        if isinstance(old, dict) and extends(old, self.fingerprint):
            self._extended = True  # the same sweep with more grid values: keep its points
            return
        if not isinstance(old, dict) or canonical(old) != canonical(self.fingerprint):
            a, b = _flatten(old), _flatten(self.fingerprint)
            differs = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            shown = ", ".join(differs[:3]) + (", ..." if len(differs) > 3 else "")
            raise SpecsimError(
                f"holds a sweep with other settings ({shown} differ); "
                "use another --out directory or remove this one",
                source=str(self.out_dir),
            )

    def _lock(self) -> None:
        path = self.out_dir / ".lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SpecsimError(f"cannot lock: {os_reason(exc)}", source=str(self.out_dir)) from None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise SpecsimError(
                "another sweep is running into this directory (it holds .lock); wait for "
                "it or use another --out",
                source=str(self.out_dir),
            ) from None
        self._lock_fd = fd

    def _remove_stale_temporaries(self) -> None:
        """Temporary files of an interrupted atomic write (only a killed sweep leaves them;
        the lock says no other sweep is writing here now)."""
        for directory in (self.out_dir, self.points_dir):
            for tmp in directory.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock (the lock file stays: removing it would race another opener)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def discard(self) -> None:
        """Undo ``open`` for a sweep that finished no point: remove what it created."""
        if self._made_dirs:
            shutil.rmtree(self._made_dirs[0], ignore_errors=True)
        else:
            for path in reversed(self._created):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
            if self.manifest_path in self._created:
                (self.out_dir / ".lock").unlink(missing_ok=True)
        self.close()
        self._made_dirs, self._created = [], []

    def _path(self, key: str) -> Path:
        return self.points_dir / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".json")

    def load(self, points: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Finished rows of ``points`` already in the store, by point key."""
        found: dict[str, dict[str, Any]] = {}
        for point in points:
            key = point_key(point)
            path = self._path(key)
            if not path.exists():
                continue
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                continue  # cannot happen with atomic writes; recompute if it does
            if isinstance(record, dict) and record.get("key") == key and "row" in record:
                found[key] = record["row"]
        return found

    def save(self, point: Mapping[str, Any], row: Mapping[str, Any]) -> None:
        key = point_key(point)
        text = json.dumps({"key": key, "row": dict(row)}) + "\n"
        atomic_write_text(self._path(key), text, source=str(self.out_dir))

    def write_tables(self, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
        """``sweep.csv`` (tidy, one row per point) and ``sweep.json`` (meta + the same rows)."""
        columns = table_columns(rows, meta.get("varied", ()))
        where = str(self.out_dir)
        atomic_write_text(self.out_dir / "sweep.csv", rows_to_csv(rows, columns), source=where)
        doc = document("sweep", {**meta, "columns": columns, "rows": [dict(r) for r in rows]})
        atomic_write_text(
            self.out_dir / "sweep.json", json.dumps(doc, indent=2) + "\n", source=where
        )


def extends(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when ``new`` is the sweep of ``old`` with a larger grid: the same settings and
    axes, every old value kept (the new tables then hold every old point)."""
    if "grid" not in old or "grid" not in new:
        return False
    rest_old = {k: v for k, v in old.items() if k != "grid"}
    rest_new = {k: v for k, v in new.items() if k != "grid"}
    if canonical(rest_old) != canonical(rest_new):
        return False
    axes_old, axes_new = old["grid"], new["grid"]
    if [a[0] for a in axes_old] != [a[0] for a in axes_new]:
        return False
    for (_, values_old), (_, values_new) in zip(axes_old, axes_new, strict=True):
        if not {canonical(v) for v in values_old} <= {canonical(v) for v in values_new}:
            return False
    return canonical(old) != canonical(new)


def _flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """Dotted key -> canonical JSON of each leaf (for naming what differs)."""
    if isinstance(node, dict):
        out: dict[str, str] = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: canonical(node)}


def table_columns(rows: Sequence[Mapping[str, Any]], varied: Sequence[str]) -> list[str]:
    """The varied fields first (grid order), then every other column in first-seen order."""
    columns = list(varied)
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    return columns


def rows_to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text; list values (``per_position``) are written as their JSON text."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def csv_cell(value: Any) -> str:
    """One CSV cell: floats as the shortest text that reads back to the same double
    (Python's ``repr``), booleans ``true``/``false`` (as in JSON and TOML), lists and tables
    as their JSON text, None empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --------------------------------------------------------------------------- executors
