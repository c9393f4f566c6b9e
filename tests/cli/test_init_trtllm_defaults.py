"""``specsim init --engine trtllm`` writes TensorRT-LLM's own defaults, each named as the
engine's (sim/calibration/engine_defaults.py), never specsim's generic one where the engine
has its own: the running-request cap is TensorRT-LLM's ``max_batch_size`` default. A
``trtllm-bench`` report's ``engine.version`` and ``world_info.ep_size`` are recorded as the
server's (the flags win), the defaults keeping the version they were read at."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario
from tests.cli.test_init_workload import LLAMA_8B


def test_trtllm_caps_running_requests_at_its_max_batch_size_default(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_8B))
    out = tmp_path / "s.toml"
    args = [
        "init", "--config", str(config), "--gpu", "H100", "--engine", "trtllm",
        "--drafter", "eagle3", "--num-steps", "3", "--accept-length", "2.5",
        "--out", str(out), "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).serving.max_running_requests == 2048
    text = out.read_text()
    assert "# trtllm 1.1 default: max_batch_size (tensorrt_llm/llmapi/llm_args.py" in text


REPORT = Path(__file__).parents[1] / "data" / "formats" / "trtllm_bench_report.json"


def _init_from_report(tmp_path: Path, *extra: str) -> Path:
    """init on the sample report (Llama-3.1-8B, trtllm 1.2.0rc1, ep_size 1); the file."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_8B))
    out = tmp_path / "s.toml"
    args = [
        "init", "--config", str(config), "--gpu", "H100", "--engine", "trtllm",
        "--drafter", "eagle3", "--num-steps", "3", "--trtllm-bench", str(REPORT),
        *extra, "--out", str(out), "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    return out


def test_the_reports_engine_version_is_recorded_and_the_defaults_keep_theirs(
    tmp_path: Path,
) -> None:
    out = _init_from_report(tmp_path)
    assert load_scenario(str(out)).server.engine_version == "1.2.0rc1"  # engine.version
    text = out.read_text()
    assert f"# named by trtllm-bench {REPORT} engine.version; the engine defaults" in text
    assert "# trtllm 1.1 default: max_batch_size" in text
    out = _init_from_report(tmp_path, "--engine-version", "1.1.0")
    assert load_scenario(str(out)).server.engine_version == "1.1.0"


def test_the_reports_ep_size_is_recorded_unless_ep_is_given(tmp_path: Path) -> None:
    out = _init_from_report(tmp_path)
    assert load_scenario(str(out)).server.expert_parallel == 1  # world_info.ep_size
    assert f"# named by trtllm-bench {REPORT} world_info.ep_size" in out.read_text()
    assert "# --ep" in _init_from_report(tmp_path, "--ep", "1").read_text()
