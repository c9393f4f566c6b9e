"""``specsim init --trtllm-bench``: a report whose ``engine.quantization`` says the server
ran quantized weights, given with a config.json that states no ``quantization_config`` (a
bf16 base model's config for its FP8 export), is another checkpoint's figures: one line
naming the file and field, exit 2, nothing written; ``--prefer base`` keeps the config's.
The report is tests/data/formats/trtllm_bench_report.json with that field edited
(constructed, as that folder's README says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.cli.test_init_workload import LLAMA_8B

REPORT = Path(__file__).parents[1] / "data" / "formats" / "trtllm_bench_report.json"


def _init(tmp_path: Path, quantization: str | None, *extra: str) -> tuple[object, Path]:
    doc = json.loads(REPORT.read_text())
    doc["engine"]["quantization"] = quantization
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_8B))
    out = tmp_path / "s.toml"
    args = [
        "init", "--config", str(config), "--gpu", "H100", "--engine", "trtllm",
        "--drafter", "eagle3", "--num-steps", "3", "--trtllm-bench", str(report),
        *extra, "--out", str(out), "-q",
    ]  # fmt: skip
    return CliRunner().invoke(main, args), out


def test_quantized_figures_on_an_unquantized_config_are_refused(tmp_path: Path) -> None:
    result, out = _init(tmp_path, "FP8")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "report.json engine.quantization: FP8 weights, but " in lines[0]
    assert "states no quantization_config" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(("quantization", "extra"), [(None, ()), ("FP8", ("--prefer", "base"))])
def test_agreeing_or_preferred_configs_pass(
    tmp_path: Path, quantization: str | None, extra: tuple[str, ...]
) -> None:
    result, out = _init(tmp_path, quantization, *extra)
    assert result.exit_code == 0, result.stderr
    assert out.exists()
