"""``sweep --shard I/N``: N jobs writing into one store give the whole sweep's tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.errors import SpecsimError
from sim.studies.sweep_store import SweepStore

COMMON = [
    "--grid", "acceptance.alpha=0.6:0.9:0.1", "--grid", "speculation.num_steps=1:2",
    "--replications", "2", "--requests", "5", "--set", "workload.output_tokens=32", "-q",
]  # fmt: skip


def sweep(seed_path: Path, out: Path, *extra: str):
    res = CliRunner().invoke(main, ["sweep", str(seed_path), *COMMON, "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return res


def test_three_shards_make_the_whole_sweeps_tables(seed_path: Path, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    sweep(seed_path, whole)
    shards = tmp_path / "shards"
    first = sweep(seed_path, shards, "--shard", "1/3", "--json")
    doc = json.loads(first.output)
    assert doc["computed"] == 3 and doc["complete"] is False  # points 1, 4, 7 of 8
    sweep(seed_path, shards, "--shard", "3/3")
    last = sweep(seed_path, shards, "--shard", "2/3", "--json")
    assert json.loads(last.output)["complete"] is True
    assert (shards / "sweep.csv").read_text() == (whole / "sweep.csv").read_text()
    again = sweep(seed_path, shards, "--json")  # the whole sweep reuses every point
    assert json.loads(again.output)["computed"] == 0


@pytest.mark.parametrize("shard", ["0/3", "4/3", "x/3", "2", "1/0"])
def test_a_bad_shard_is_one_line(seed_path: Path, tmp_path: Path, shard: str) -> None:
    res = CliRunner().invoke(
        main, ["sweep", str(seed_path), *COMMON, "--out", str(tmp_path / "o"), "--shard", shard]
    )
    assert res.exit_code == 2 and "--shard" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_shards_share_the_store_and_a_whole_sweep_excludes_them(tmp_path: Path) -> None:
    a, b = SweepStore(tmp_path, {"x": 1}, shared=True), SweepStore(tmp_path, {"x": 1}, shared=True)
    a.open()
    b.open()
    with pytest.raises(SpecsimError, match="another sweep"):
        SweepStore(tmp_path, {"x": 1}).open()
    a.close()
    b.close()
    whole = SweepStore(tmp_path, {"x": 1})
    whole.open()
    with pytest.raises(SpecsimError, match="another sweep"):
        SweepStore(tmp_path, {"x": 1}, shared=True).open()
    whole.close()
