"""``specsim init --engine trtllm`` writes TensorRT-LLM's own defaults, each named as the
engine's (sim/calibration/engine_defaults.py), never specsim's generic one where the engine
has its own: the running-request cap is TensorRT-LLM's ``max_batch_size`` default. A
``trtllm-bench`` report's ``engine.version`` and ``world_info.ep_size`` are recorded as the
server's (the flags win), the defaults keeping the version they were read at."""

from __future__ import annotations

from pathlib import Path

from sim.scenario.load import load_scenario
from tests.cli.trtllm_init import REPORT, run_init


def test_trtllm_caps_running_requests_at_its_max_batch_size_default(tmp_path: Path) -> None:
    result, out = run_init(tmp_path, "--accept-length", "2.5")
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).serving.max_running_requests == 2048
    text = out.read_text()
    assert "# trtllm 1.1 default: max_batch_size (tensorrt_llm/llmapi/llm_args.py" in text


def _init_from_report(tmp_path: Path, *extra: str) -> Path:
    """init on the sample report (Llama-3.1-8B, trtllm 1.2.0rc1, ep_size 1); the file."""
    result, out = run_init(tmp_path, "--trtllm-bench", str(REPORT), *extra)
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
