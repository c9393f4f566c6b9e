"""The idle-core bench's replay: its spans, idle core-seconds, best order and the union of
overlapping batches, on cases worked by hand (a replay that misplaced a task or counted an
overlap twice would misstate where a study's wall goes)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "study_idle.py"
_SPEC = importlib.util.spec_from_file_location("bench_study_idle", _PATH)
study_idle = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(study_idle)


def test_span_takes_tasks_in_order_to_the_first_free_core() -> None:
    # 3 then 1, 1, 1: core A runs 3, core B runs 1, 1, 1 -> 3
    assert study_idle._span([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    # 1, 1, 3: A 1, B 1, then 3 on A -> 4 (the long task last leaves a tail)
    assert study_idle._span([1.0, 1.0, 3.0], 2) == 4.0
    assert study_idle._span([2.0], 2) == 2.0  # a lone task on one core


def test_replay_counts_serial_work_tails_and_the_best_order() -> None:
    # (CPU at send, CPU at end, tasks' CPU, run in this process)
    batches = [(1.0, 1.5, [1.0, 1.0, 2.0], False), (2.0, 2.5, [1.0], True)]
    got = study_idle.replay(batches, end_cpu=3.0, cores=2)
    # serial: 1.0 before, 0.5 between (2.0 - 1.5), 0.5 after (3.0 - 2.5)
    assert got["serial"] == pytest.approx(2.0)
    # spans: [1, 1, 2] in order -> 3; [1] -> 1
    assert got["wall"] == pytest.approx(3.0 + 1.0 + 2.0)
    # best order [2, 1, 1] -> 2
    assert got["oracle"] == pytest.approx(2.0 + 1.0 + 2.0)
    assert got["idle"] == {3: pytest.approx(2 * 3.0 - 4.0), 1: pytest.approx(2 * 1.0 - 1.0)}
    # the lone task ran in this process: its CPU is not the command's own
    assert got["own"] == pytest.approx(3.0 - 1.0)
    assert got["tasks"] == pytest.approx(5.0)
    assert got["ideal"] == pytest.approx((5.0 + 2.0) / 2)


def test_union_counts_overlapping_batches_once() -> None:
    assert study_idle._union([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == (4.0, 1)
    assert study_idle._union([(0.0, 4.0), (1.0, 2.0)]) == (4.0, 1)  # one inside another
    assert study_idle._union([]) == (0.0, 0)
