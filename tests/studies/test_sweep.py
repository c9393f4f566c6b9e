"""Sweeps: grid parsing, the resumable store, executors, the tidy tables and the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli import main
from sim.errors import SpecsimError
from sim.files import atomic_write_text
from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.grid import expand_grid, parse_grid, parse_range, point_key
from sim.studies.sweep import PointTask, evaluate_point, run_sweep
from sim.studies.sweep_store import SweepStore

SMALL = {"simulation.replications": 3, "workload.requests": 10, "workload.output_tokens": 64}


@pytest.fixture
def small(seed_path: Path):
    """The seed scenario with a small Monte Carlo (fast tests)."""
    return with_overrides(load_scenario(seed_path), SMALL)


# --------------------------------------------------------------------------- grid parsing


def test_float_range_is_inclusive_and_rounded() -> None:
    assert parse_range("0.5:0.95:0.05") == [
        0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95
    ]  # fmt: skip


def test_integer_range_defaults_to_step_one_and_stays_int() -> None:
    values = parse_range("1:8")
    assert values == list(range(1, 9))
    assert all(type(v) is int for v in values)


def test_grid_lists_words_arrays_and_mixed_ranges() -> None:
    assert parse_grid("hardware.interconnect=pcie-gen4,nvlink4") == (
        "hardware.interconnect",
        ("pcie-gen4", "nvlink4"),
    )
    assert parse_grid("acceptance.per_position=[0.9,0.8],[0.7]") == (
        "acceptance.per_position",
        ([0.9, 0.8], [0.7]),
    )
    assert parse_grid("speculation.num_steps=1:3,8") == ("speculation.num_steps", (1, 2, 3, 8))


@pytest.mark.parametrize(
    "text",
    [
        "acceptance.alpha",
        "=0.5",
        "a.b=",
        "a.b=1:0",
        "a.b=0:1:0",
        "a.b=0:1:-1",
        "a.b=1,1",
        "a.b=x:2",
    ],
)
def test_bad_grid_is_a_specsim_error(text: str) -> None:
    with pytest.raises(SpecsimError):
        parse_grid(text)


def test_expand_grid_is_the_cartesian_product_first_axis_slowest() -> None:
    points = expand_grid([("a", (1, 2)), ("b", ("x", "y", "z"))])
    assert len(points) == 6
    assert points[0] == {"a": 1, "b": "x"} and points[1] == {"a": 1, "b": "y"}
    assert points[-1] == {"a": 2, "b": "z"}
    with pytest.raises(SpecsimError, match="twice"):
        expand_grid([("a", (1,)), ("a", (2,))])


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(), min_size=1, max_size=4))
@settings(max_examples=50)
def test_point_key_ignores_insertion_order(point: dict[str, int]) -> None:
    reverse = dict(reversed(list(point.items())))
    assert point_key(point) == point_key(reverse)


# --------------------------------------------------------------------------- atomic files


def test_atomic_write_leaves_no_temporary_and_keeps_old_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    atomic_write_text(target, "old\n")

    class Boom(Exception):
        pass

    class Exploding(str):
        def encode(self, *args: Any, **kwargs: Any) -> bytes:
            raise Boom

    with pytest.raises(Boom):
        atomic_write_text(target, Exploding("new"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_gives_the_permissions_of_a_plain_write(tmp_path: Path) -> None:
    plain, atomic = tmp_path / "plain.txt", tmp_path / "atomic.txt"
    plain.write_text("x")
    atomic_write_text(atomic, "x")
    assert atomic.stat().st_mode == plain.stat().st_mode


# --------------------------------------------------------------------------- resume


class Counting:
    """An evaluator that records the points it computes and can fail after ``fail_after``."""

    def __init__(self, fail_after: int | None = None):
        self.seen: list[str] = []
        self.fail_after = fail_after

    def __call__(self, task: PointTask) -> dict[str, Any]:
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-way
        self.seen.append(point_key(task.overrides))
        return {**task.overrides, "tok_s_mean": float(len(self.seen))}


def test_interrupted_sweep_keeps_finished_points_and_resume_computes_no_point_twice(
    small, tmp_path: Path
) -> None:
    axes = [("acceptance.alpha", (0.6, 0.7, 0.8)), ("speculation.num_steps", (1, 2, 3))]
    first = Counting(fail_after=4)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(small, axes, tmp_path / "s", evaluate=first)
    assert len(first.seen) == 4
    partial = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert partial["complete"] is False and len(partial["rows"]) == 4

    second = Counting()
    outcome = run_sweep(small, axes, tmp_path / "s", evaluate=second)
    assert len(second.seen) == 5 and outcome.computed == 5 and outcome.reused == 4
    assert set(first.seen).isdisjoint(second.seen)
    assert outcome.complete and len(outcome.rows) == 9

    third = Counting()
    again = run_sweep(small, axes, tmp_path / "s", evaluate=third)
    assert third.seen == [] and again.reused == 9
    # rows come back in grid order with the values computed the first time
    assert [r["acceptance.alpha"] for r in again.rows[:3]] == [0.6, 0.6, 0.6]


def test_extending_the_grid_computes_only_new_points(small, tmp_path: Path) -> None:
    run_sweep(small, [("acceptance.alpha", (0.6, 0.7))], tmp_path / "s", evaluate=Counting())
    more = Counting()
    out = run_sweep(small, [("acceptance.alpha", (0.6, 0.7, 0.8))], tmp_path / "s", evaluate=more)
    assert more.seen == [point_key({"acceptance.alpha": 0.8})] and out.reused == 2


def test_store_refuses_a_directory_of_another_sweep(small, tmp_path: Path) -> None:
    run_sweep(small, [("acceptance.alpha", (0.6,))], tmp_path / "s", evaluate=Counting())
    other = with_overrides(small, {"timing.verify_ms": 15.0})
    with pytest.raises(SpecsimError, match=r"other settings \(scenario\.timing\.verify_ms\b"):
        run_sweep(other, [("acceptance.alpha", (0.6,))], tmp_path / "s", evaluate=Counting())


def test_unwritable_out_directory_is_a_specsim_error(small, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SpecsimError, match="cannot write"):
        run_sweep(small, [("acceptance.alpha", (0.6,))], tmp_path / "file" / "s",
                  evaluate=Counting())  # fmt: skip


def test_bad_grid_value_fails_before_anything_runs(small, tmp_path: Path) -> None:
    ev = Counting()
    with pytest.raises(SpecsimError, match=r"acceptance\.alpha"):
        run_sweep(small, [("acceptance.alpha", (0.5, 1.5))], tmp_path / "s", evaluate=ev)
    assert ev.seen == [] and not (tmp_path / "s").exists()


def test_store_ignores_a_point_file_of_another_key(small, tmp_path: Path) -> None:
    store = SweepStore(tmp_path / "s", {"x": 1})
    store.open()
    store.save({"a": 1}, {"a": 1, "v": 2})
    assert store.load([{"a": 1}]) == {point_key({"a": 1}): {"a": 1, "v": 2}}
    assert store.load([{"a": 2}]) == {}


# --------------------------------------------------------------------------- real points


def test_csv_schema_one_row_per_point_varied_fields_first(small, tmp_path: Path) -> None:
    axes = [("speculation.num_steps", (1, 3)), ("acceptance.alpha", (0.6, 0.9))]
    outcome = run_sweep(small, axes, tmp_path / "s")
    with (tmp_path / "s" / "sweep.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 == len(outcome.rows)
    header = list(rows[0])
    assert header[:2] == ["speculation.num_steps", "acceptance.alpha"]
    for col in (
        "num_steps",
        "baseline_tok_s",
        "analytic_tok_s",
        "tok_s_mean",
        "tok_s_std",
        "tok_s_ci95_lo",
        "tok_s_ci95_hi",
        "tok_s_p5",
        "tok_s_p50",
        "tok_s_p95",
        "accept_length_mean",
        "cycle_ms",
        "cycle_draft_ms",
        "cycle_verify_ms",
        "cycle_extend_ms",
        "cycle_overhead_ms",
        "p_at_least_150",
        "p_at_least_150_ci95_lo",
        "p_at_least_200",
    ):
        assert col in header, col
    for row in rows:
        assert (
            float(row["tok_s_ci95_lo"]) <= float(row["tok_s_mean"]) <= float(row["tok_s_ci95_hi"])
        )
        assert int(row["num_steps"]) == int(row["speculation.num_steps"])
    doc = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert doc["complete"] and doc["varied"] == ["speculation.num_steps", "acceptance.alpha"]
    assert doc["columns"] == header and len(doc["rows"]) == 4
    # higher acceptance at the same k is faster (common random numbers: same seed per point)
    by = {(r["speculation.num_steps"], r["acceptance.alpha"]): r["tok_s_mean"] for r in doc["rows"]}
    assert by[(3, 0.9)] > by[(3, 0.6)] and by[(1, 0.9)] > by[(1, 0.6)]


def test_results_do_not_depend_on_workers_or_order(small, tmp_path: Path) -> None:
    axes = [("acceptance.alpha", (0.6, 0.75, 0.9)), ("speculation.num_steps", (2, 4))]
    serial = run_sweep(small, axes, tmp_path / "one", executor=LocalExecutor(1))
    pooled = run_sweep(small, axes, tmp_path / "two", executor=LocalExecutor(2))
    assert serial.rows == pooled.rows
    alone = evaluate_point(
        PointTask(
            with_overrides(small, {"timing.verify_tokens": 3}).model_dump(exclude_none=True),
            {"acceptance.alpha": 0.9, "speculation.num_steps": 4},
            "fast",
            (150.0, 200.0),
        )
    )
    assert alone == serial.rows[-1]


def test_dask_executor_gives_the_local_results(small, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from sim.parallel import DaskExecutor

    axes = [("acceptance.alpha", (0.6, 0.9)), ("speculation.num_steps", (1, 3))]
    local = run_sweep(small, axes, tmp_path / "local")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        via_client = run_sweep(small, axes, tmp_path / "dask", executor=DaskExecutor(client))
        with DaskExecutor(cluster.scheduler_address) as executor:
            via_address = run_sweep(small, axes, tmp_path / "dask2", executor=executor)
    assert via_client.rows == local.rows == via_address.rows


# --------------------------------------------------------------------------- CLI


def test_cli_sweep_writes_tables_and_resumes(seed_path: Path, tmp_path: Path) -> None:
    args = [
        "sweep",
        str(seed_path),
        "--grid",
        "acceptance.alpha=0.6:0.8:0.1",
        "--grid",
        "hardware.interconnect=pcie-gen4,nvlink4",
        "--out",
        str(tmp_path / "out"),
        "--replications",
        "2",
        "--requests",
        "5",
        "--set",
        "workload.output_tokens=32",
    ]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "6 points (6 computed, 0 reused)" in first.output
    again = CliRunner().invoke(main, args)
    assert "6 points (0 computed, 6 reused)" in again.output
    header = (tmp_path / "out" / "sweep.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["acceptance.alpha", "hardware.interconnect"]


def test_cli_sweep_bad_grid_exits_2_without_traceback(seed_path: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["sweep", str(seed_path), "--grid", "acceptance.alpha=0.5,2", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2
    assert "acceptance.alpha" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_cli_dask_without_scheduler_is_an_error(seed_path: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["sweep", str(seed_path), "--grid", "acceptance.alpha=0.5", "--out", str(tmp_path / "o"),
         "--executor", "dask"],
    )  # fmt: skip
    assert result.exit_code == 2 and "--scheduler" in result.output


def test_cli_dask_scheduler_matches_local_csv(seed_path: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    common = [
        "sweep", str(seed_path), "--grid", "acceptance.alpha=0.6,0.9", "--grid",
        "speculation.num_steps=1:2", "--replications", "2", "--requests", "5",
        "--set", "workload.output_tokens=32",
    ]  # fmt: skip
    local = CliRunner().invoke(main, [*common, "--out", str(tmp_path / "l"), "--workers", "2"])
    assert local.exit_code == 0, local.output
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        remote = CliRunner().invoke(
            main,
            [*common, "--out", str(tmp_path / "d"), "--executor", "dask",
             "--scheduler", cluster.scheduler_address],
        )  # fmt: skip
    assert remote.exit_code == 0, remote.output
    csv_l = (tmp_path / "l" / "sweep.csv").read_text()
    assert csv_l == (tmp_path / "d" / "sweep.csv").read_text()


@pytest.mark.slow  # waits for the connection timeout (10 s)
def test_cli_dask_unreachable_scheduler_exits_2(seed_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    result = CliRunner().invoke(
        main,
        ["sweep", str(seed_path), "--grid", "acceptance.alpha=0.5", "--out", str(tmp_path / "o"),
         "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Dask scheduler" in result.output


def test_mix_sweep_has_per_class_columns(seed_path: Path, tmp_path: Path) -> None:
    mix = with_overrides(load_scenario(seed_path.parent / "kimi-k25-8xpcie-eagle3-mix.toml"), SMALL)
    out = run_sweep(mix, [("speculation.num_steps", (2, 3))], tmp_path / "s")
    for row in out.rows:
        assert {"class_chat_share", "class_chat_tok_s", "class_code_tok_s"} <= set(row)
        # code drafts better than chat in this file
        assert row["class_code_tok_s"] > row["class_chat_tok_s"]
