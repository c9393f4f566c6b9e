"""A decode batch's columns are views of one table: code writes into them, never rebinds.

``DecodeBatch`` keeps ids, Weyl terms, counts, contexts, cycles and times as views of one
preallocated table (sim/simulation/serving/decode_batch.py); ``batch.need[...] = x`` and
``batch.need -= x`` write into the table, while a plain ``batch.need = x`` would detach the
view and the next compaction would silently lose it. The engine's modules are read here so
that such a rebinding fails a test instead of a simulation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from sim.simulation.serving.decode_batch import DecodeBatch

SERVING = Path(__file__).resolve().parents[3] / "sim" / "simulation" / "serving"


def rebindings(source: str) -> list[str]:
    """Plain assignments to a batch column (``<...batch...>.<field> = ...``) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if (
                    isinstance(leaf, ast.Attribute)
                    and isinstance(leaf.ctx, ast.Store)
                    and leaf.attr in DecodeBatch._FIELDS
                    and "batch" in ast.unparse(leaf.value)
                ):
                    found.append(f"line {node.lineno}: {ast.unparse(leaf)}")
    return found


def test_the_check_finds_a_rebinding_and_passes_in_place_writes():
    assert rebindings("batch.need = need - 1\n") == ["line 1: batch.need"]
    assert rebindings("self.batch.context, x = c, 1\n") == ["line 1: self.batch.context"]
    assert rebindings("batch.need[...] = 0\nbatch.need -= 1\nreq.cycles = 2\n") == []


def test_no_serving_module_rebinds_a_batch_column():
    for path in sorted(SERVING.glob("*.py")):
        assert rebindings(path.read_text()) == [], path.name


def test_a_column_written_in_place_stays_a_view_of_the_table():
    batch = DecodeBatch(2, capacity=2)
    batch.append(7, np.uint64(3), np.array([1, 2]), 5, 10, 0, 0.0)
    batch.need -= 1
    batch.need[...] = batch.need - 1
    assert np.shares_memory(batch.need, batch._table) and batch.need.tolist() == [3]


def test_the_expected_path_is_the_rows_after_every_change():
    """``DecodeBatch.expected_path`` (kept while the rows stay) is ``expected_path`` of the
    rows there now: after appending, removing and keeping rows, for each draft's columns."""
    from sim.simulation.serving.accept_lengths import expected_path

    rng = np.random.default_rng(5)
    batch = DecodeBatch(3, capacity=2)

    def check():
        for columns in (slice(0, 1), slice(0, 3), slice(1, 3)):
            assert batch.expected_path(columns) == expected_path(batch.thresholds[:, columns])

    for rid in range(6):  # past the capacity: the table grows
        thresholds = rng.integers(0, 2**32, 3) // (rid + 1)
        batch.append(rid, np.uint64(rid), thresholds, 10, 100, 0, -1.0)
        check()
    batch.remove([0, 4])
    check()
    batch.keep(np.array([True, False, True, True]))
    check()
