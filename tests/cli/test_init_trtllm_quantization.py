"""``specsim init --trtllm-bench``: a report whose ``engine.quantization`` says the server
ran quantized weights, given with a config.json that states no ``quantization_config`` (a
bf16 base model's config for its FP8 export), is another checkpoint's figures: one line
naming the file and field, exit 2, nothing written; ``--prefer base`` keeps the config's.
The report is tests/data/formats/trtllm_bench_report.json with that field edited
(constructed, as that folder's README says)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from tests.cli.trtllm_init import edited_report, run_init


def _init(tmp_path: Path, quantization: str | None, *extra: str) -> tuple[Result, Path]:
    report = edited_report(tmp_path, quantization=quantization)
    return run_init(tmp_path, "--trtllm-bench", report, *extra)


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
