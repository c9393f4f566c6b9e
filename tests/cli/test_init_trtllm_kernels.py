"""``specsim init --engine trtllm`` on a routed-MoE model writes TensorRT-LLM's own count of
the kernels an eager layer issues (``TRTLLM_MOE_LAYER_KERNELS``, 19-28, counted op by op in
sim/validation/data/layer_kernels.toml), labelled with its source, never SGLang's 28-42;
SGLang and vLLM scenarios keep the SGLang count."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner

from sim.cli import main
from sim.hardware.passes import MOE_LAYER_KERNELS, TRTLLM_MOE_LAYER_KERNELS
from sim.validation.hardware_data import TRTLLM_DEEPSEEK_V3_LAYER_OPS, layer_kernels
from tests.cli.trtllm_init import REPORT

ROOT = Path(__file__).parents[2]
KIMI = ROOT / "tests" / "data" / "configs" / "kimi-k2-thinking.json"
KIMI_ID = "moonshotai/Kimi-K2-Thinking"
LABEL = "TensorRT-LLM's routed-MoE layer (DeepSeek-V3/R1, PyTorch backend, TRTLLM-Gen MoE)"


def _init(tmp_path: Path, engine: str, *extra: str) -> tuple[dict, str]:
    """init on Kimi-K2 (a DeepSeek-V3 MoE), 8 B200s, EAGLE-3 at k = 3; (raw, text)."""
    out = tmp_path / f"{engine}.toml"
    args = [
        "init", "--config", str(KIMI), "--gpu", "B200", "--gpus", "8", "--engine", engine,
        "--drafter", "eagle3", "--num-steps", "3", "--draft-params", "2.004e9",
        *extra, "--out", str(out), "-q",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    return tomllib.loads(text), text


def test_the_constant_is_the_sum_of_the_counted_ops() -> None:
    assert layer_kernels(TRTLLM_DEEPSEEK_V3_LAYER_OPS) == TRTLLM_MOE_LAYER_KERNELS == (19, 28)


def test_a_workload_with_prompts_gets_trtllms_count_and_range(tmp_path: Path) -> None:
    lengths = ["--accept-length", "2.5", "--input-tokens", "1000", "--output-tokens", "500"]
    raw, text = _init(tmp_path, "trtllm", *lengths)
    assert raw["model"]["kernels_per_layer"] == 23  # the middle of 19-28
    entry = raw["uncertainty"]["model"]["kernels_per_layer"]
    assert entry["range"] == [19, 28]
    assert LABEL in entry["reason"] and "tech blog 1" in entry["reason"]
    assert f"# default: {LABEL} issues 19-28 kernels run eagerly" in text
    for engine in ("sglang", "vllm"):  # the other engines keep SGLang's count
        raw, text = _init(tmp_path, engine, *lengths)
        assert raw["model"]["kernels_per_layer"] == sum(MOE_LAYER_KERNELS) // 2
        assert raw["uncertainty"]["model"]["kernels_per_layer"]["range"] == [28, 42]
        assert "TensorRT-LLM" not in text.split("[server]")[0]


def test_an_ungraphed_verify_gets_the_low_end_derived(tmp_path: Path) -> None:
    eager = ["--accept-length", "2.0", "--no-verify-cuda-graph", "--verify-ms", "30"]
    figures = ["--baseline-tok-s", "82.5", "--point", "3:2.0:60"]
    raw, text = _init(tmp_path, "trtllm", *eager, *figures)
    assert raw["model"]["kernels_per_layer"] == 19
    entry = raw["uncertainty"]["model"]["kernels_per_layer"]
    assert entry["range"] == [19, 28] and entry["origin"] == "derived"
    assert LABEL in text


def test_a_trtllm_bench_report_gets_the_count(tmp_path: Path) -> None:
    """The sample report edited to name Kimi-K2, its 4-bit weights and 8 GPUs (its
    workload has prompts)."""
    doc = json.loads(REPORT.read_text())
    doc["engine"].update(model=KIMI_ID, quantization="W4A16")
    doc["world_info"].update(tp_size=8, world_size=8)
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    raw, text = _init(tmp_path, "trtllm", "--trtllm-bench", str(report))
    assert raw["model"]["kernels_per_layer"] == 23
    assert raw["uncertainty"]["model"]["kernels_per_layer"]["range"] == [19, 28]
    assert f"# default: {LABEL}" in text
