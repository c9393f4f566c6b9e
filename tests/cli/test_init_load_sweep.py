"""``specsim init --load-sweep``: one command from a TensorRT-LLM user's reports at several
concurrencies to a scenario whose batched terms are fitted, the same scenario as ``init``
then ``calibrate --load-sweep`` on the same files (calibrate's own fit, called, not
copied). Bad input: one line, exit 2, nothing written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from sim.cli import main
from sim.scenario.load import load_scenario
from tests.cli.trtllm_init import REPORT, server_args

#: The sample report's run (one request at a time) and two more at 4 and 16 in flight,
#: their TPOT growing with the batch (constructed, as tests/data/formats/README.md says).
LOADS = ((4, 5.3), (16, 7.9))


def _sweep(tmp_path: Path) -> list[str]:
    """``--load-sweep`` options: the sample report and its copies at ``LOADS``."""
    paths = [str(REPORT)]
    for in_flight, tpot_ms in LOADS:
        doc = json.loads(REPORT.read_text())
        doc["request_info"]["avg_num_concurrent_requests"] = in_flight * 0.98
        doc["streaming_metrics"]["tpot_percentiles"]["average"] = tpot_ms
        path = tmp_path / f"r{in_flight}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return [a for p in paths for a in ("--load-sweep", p)]


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _values(path: Path) -> dict[str, Any]:
    """The file's TOML values."""
    return tomllib.loads(path.read_text())


def test_init_with_a_load_sweep_equals_init_then_calibrate(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path)
    one = tmp_path / "one.toml"
    result = _run(*server_args(tmp_path, "--trtllm-bench", str(REPORT), *sweep), "--out", str(one))
    assert result.exit_code == 0, result.stderr
    assert "batched terms from the load sweep" in result.stdout
    base, two = tmp_path / "base.toml", tmp_path / "two.toml"
    result = _run(*server_args(tmp_path, "--trtllm-bench", str(REPORT)), "--out", str(base), "-q")
    assert result.exit_code == 0, result.stderr
    args = ["calibrate", "--scenario", str(base), "--trtllm-bench", str(REPORT), *sweep]
    result = _run(*args, "--out", str(two), "-q")
    assert result.exit_code == 0, result.stderr
    ours, theirs = _values(one), _values(two)
    # calibrate writes [timing.measured_on], which reading a scenario fills from its own
    # hardware values: the one difference in values, and none once read
    measured_on = theirs["timing"].pop("measured_on")
    assert measured_on == {
        "gpu": "H100", "gpus": 1, "interconnect": "nvlink4", "verify_cuda_graph": True,
        "allreduce": "auto",
    }  # fmt: skip
    assert ours == theirs
    assert load_scenario(str(one)) == load_scenario(str(two))
    assert ours["serving"]["calibrated_on"] and "host_us_per_request" in ours["serving"]
    # the header names its writer and is otherwise the same; the comments keep init's origins
    head_one, head_two = one.read_text().splitlines()[:5], two.read_text().splitlines()[:5]
    assert head_one[0].startswith("# Written by `specsim init` from ")
    assert head_two[0].startswith("# Written by `specsim calibrate` from ")
    assert head_one[1:] == head_two[1:]
    assert "# Fitted by `specsim init --load-sweep` to the figures below" in one.read_text()
    assert "# config.json: num_hidden_layers\nlayers = 32" in one.read_text()


def test_a_sweep_without_batch1_figures_is_refused_writing_nothing(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = server_args(tmp_path, "--drafter", "eagle3", "-k", "3", "--accept-length", "2.2")
    result = _run(*args, *_sweep(tmp_path), "--out", str(out))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("specsim: error: --load-sweep: the batched terms are fitted over a")
    assert not out.exists()


def test_a_broken_sweep_file_is_one_line_writing_nothing(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    broken = tmp_path / "broken.json"
    broken.write_text('{"world_info": {"tp_size": 1}, "request_info": {')
    args = server_args(tmp_path, "--trtllm-bench", str(REPORT), "--load-sweep", str(broken))
    result = _run(*args, "--out", str(out))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"specsim: error: {broken}") and "Traceback" not in result.output
    assert not out.exists()
