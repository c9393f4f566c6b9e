"""``specsim init --trtllm-bench``: the KV cache dtype the report states
(``engine.kv_cache_dtype``, TensorRT-LLM's ``kv_cache_quant_algo`` as the run resolved it)
prices the KV cache under ``--kv-cache-dtype auto`` and is checked against a flag given;
what specsim cannot price, two reports that disagree, or a flag the report contradicts is
one line, exit 2, nothing written. The report is tests/data/formats/trtllm_bench_report.json
with its ``engine.kv_cache_dtype`` edited (constructed, as that folder's README says)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.scenario.load import load_scenario
from tests.cli.trtllm_init import edited_report, run_init

#: Llama-3.1-8B's KV a token at 1 byte an element: K and V x 8 KV heads x 128 x 32 layers.
FP8_KV = 2 * 8 * 128 * 32


def _report(tmp_path: Path, kv_cache_dtype: str | None, name: str = "report.json") -> str:
    return edited_report(tmp_path, name, kv_cache_dtype=kv_cache_dtype)


def test_auto_takes_the_reports_fp8_cache_and_names_it(tmp_path: Path) -> None:
    report = _report(tmp_path, "FP8")
    result, out = run_init(tmp_path, "--trtllm-bench", report)
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).model.kv_bytes_per_token == FP8_KV
    assert f"1 byte an element (trtllm-bench {report} engine.kv_cache_dtype)" in out.read_text()


def test_a_flag_that_agrees_stays_the_flag(tmp_path: Path) -> None:
    report = _report(tmp_path, "FP8")
    result, out = run_init(tmp_path, "--trtllm-bench", report, "--kv-cache-dtype", "fp8_e4m3")
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).model.kv_bytes_per_token == FP8_KV
    assert "1 byte an element (--kv-cache-dtype fp8_e4m3)" in out.read_text()


def test_an_unstated_cache_is_the_models_dtype(tmp_path: Path) -> None:
    result, out = run_init(tmp_path, "--trtllm-bench", _report(tmp_path, None))
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).model.kv_bytes_per_token == 2 * FP8_KV


@pytest.mark.parametrize(
    ("dtypes", "flag", "source", "needle"),
    [
        (("FP8",), ("--kv-cache-dtype", "bf16"), "--kv-cache-dtype",
         "bf16, but trtllm-bench"),
        (("NVFP4",), (), "engine.kv_cache_dtype", "NVFP4: a KV cache dtype specsim does not"),
        (("FP8", "NVFP4"), (), "b.json engine.kv_cache_dtype",
         "NVFP4, but trtllm-bench"),
    ],
)  # fmt: skip
def test_a_cache_the_reports_contradict_or_specsim_cannot_price_is_refused(
    tmp_path: Path, dtypes: tuple[str, ...], flag: tuple[str, ...], source: str, needle: str
) -> None:
    reports = [_report(tmp_path, d, f"{'ab'[i]}.json") for i, d in enumerate(dtypes)]
    args = [a for r in reports for a in ("--trtllm-bench", r)]
    result, out = run_init(tmp_path, *args, *flag)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith("specsim: error: ") and source in lines[0], lines[0]
    assert needle in lines[0], lines[0]
    assert not out.exists()
