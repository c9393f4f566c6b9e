"""What the TensorRT-LLM ``init`` tests share: the sample ``trtllm-bench --report_json``
report (tests/data/formats/trtllm_bench_report.json, constructed, as that folder's README
says), a copy of it with ``engine`` fields edited, and the ``specsim init`` command line of a
Llama-3.1-8B server under TensorRT-LLM (with EAGLE-3 at k = 3, or without a drafter flag)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from sim.cli import main
from tests.cli.test_init_workload import LLAMA_8B

REPORT = Path(__file__).parents[1] / "data" / "formats" / "trtllm_bench_report.json"


def edited_report(tmp_path: Path, name: str = "report.json", **engine: object) -> str:
    """The sample report with ``engine`` fields set (None writes null), as ``name``."""
    doc = json.loads(REPORT.read_text())
    doc["engine"].update(engine)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def server_args(tmp_path: Path, *extra: str) -> list[str]:
    """``specsim init`` on Llama-3.1-8B's config.json (written in ``tmp_path``), one H100,
    TensorRT-LLM, then ``extra`` (no drafter flag: plain decoding, or a report's)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_8B))
    return ["init", "--config", str(config), "--gpu", "H100", "--engine", "trtllm", *extra]


def init_args(tmp_path: Path, *extra: str) -> list[str]:
    """``server_args`` with EAGLE-3 at k = 3, then ``extra``."""
    return server_args(tmp_path, "--drafter", "eagle3", "--num-steps", "3", *extra)


def run_init(tmp_path: Path, *extra: str) -> tuple[Result, Path]:
    """``init_args`` run quietly into ``tmp_path``/s.toml: the result and the file."""
    out = tmp_path / "s.toml"
    return CliRunner().invoke(main, [*init_args(tmp_path, *extra), "--out", str(out), "-q"]), out
