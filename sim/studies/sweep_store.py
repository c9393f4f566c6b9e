"""The resumable on-disk store of a sweep and its tidy tables.

The store keeps one small JSON file per finished point, written atomically (temporary file
+ ``os.replace``), keyed by the canonical JSON of the point's overrides; a sweep that is
interrupted keeps its finished points and a re-run computes only the missing ones. The tidy
tables ``sweep.csv`` and ``sweep.json`` (one row per point: the varied fields, then the
statistics) are rebuilt from the store, also atomically.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.documents import document
from sim.errors import SpecsimError
from sim.files import atomic_write_text
from sim.studies.grid import canonical, point_key

#: Version of the point files and tables; a store of another version is not reused.
STORE_VERSION = 1


class SweepStore:
    """Finished points of one sweep in ``out_dir``: ``manifest.json`` and ``points/*.json``.

    ``fingerprint`` is everything besides the point that a result depends on (the base
    scenario, engine, targets); a directory whose manifest has another fingerprint belongs
    to another sweep and is refused rather than mixed.
    """

    def __init__(self, out_dir: str | Path, fingerprint: Mapping[str, Any]):
        self.out_dir = Path(out_dir)
        self.fingerprint = {"store_version": STORE_VERSION, **fingerprint}
        self.points_dir = self.out_dir / "points"
        self.manifest_path = self.out_dir / "manifest.json"

    def open(self) -> None:
        """Create the directory and manifest, or check that an existing one matches."""
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise SpecsimError("exists and is not a directory", source=str(self.out_dir))
        if self.manifest_path.exists():
            try:
                old = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                raise SpecsimError("unreadable manifest.json", source=str(self.out_dir)) from None
            if canonical(old) != canonical(self.fingerprint):
                a, b = _flatten(old), _flatten(self.fingerprint)
                differs = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                shown = ", ".join(differs[:3]) + (", ..." if len(differs) > 3 else "")
                raise SpecsimError(
                    f"holds a sweep with other settings ({shown} differ); "
                    "use another --out directory or remove this one",
                    source=str(self.out_dir),
                )
        try:
            if not self.manifest_path.exists():
                text = json.dumps(self.fingerprint, indent=2) + "\n"
                atomic_write_text(self.manifest_path, text)
            self.points_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecsimError(f"cannot write: {exc.strerror}", source=str(self.out_dir)) from None

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
            except (OSError, json.JSONDecodeError):
                continue  # cannot happen with atomic writes; recompute if it does
            if record.get("key") == key:
                found[key] = record["row"]
        return found

    def save(self, point: Mapping[str, Any], row: Mapping[str, Any]) -> None:
        key = point_key(point)
        atomic_write_text(self._path(key), json.dumps({"key": key, "row": dict(row)}) + "\n")

    def write_tables(self, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
        """``sweep.csv`` (tidy, one row per point) and ``sweep.json`` (meta + the same rows)."""
        columns = table_columns(rows, meta.get("varied", ()))
        atomic_write_text(self.out_dir / "sweep.csv", rows_to_csv(rows, columns))
        doc = document("sweep", {**meta, "columns": columns, "rows": [dict(r) for r in rows]})
        atomic_write_text(self.out_dir / "sweep.json", json.dumps(doc, indent=2) + "\n")


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
        cells = []
        for c in columns:
            v = row.get(c)
            cells.append("" if v is None else json.dumps(v) if isinstance(v, list | dict) else v)
        writer.writerow(cells)
    return buf.getvalue()


# --------------------------------------------------------------------------- executors
