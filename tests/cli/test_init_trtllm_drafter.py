"""``specsim init`` takes the drafter kind and k from a ``trtllm-bench`` report when
``--drafter`` and ``--num-steps`` are not given: ``decoding_stats.mode`` names the drafter
(TensorRT-LLM's ``decoding_type`` spellings, sim/calibration/importers/trtllm_bench.py
``DRAFTER_MODES``), (accept length - 1) / draft acceptance rate the draft length. A mode
specsim names no drafter for, and a ``--drafter`` the report contradicts, are refused in
one line, nothing written. The drafter's size still comes from the user's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sim.cli import main
from sim.scenario.load import load_scenario
from tests.cli.trtllm_init import REPORT, init_args, server_args

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


def _report(
    tmp_path: Path, mode: str | None = "Eagle3", world: dict[str, int] | None = None, **engine: Any
) -> str:
    """The sample report (EAGLE-3 at draft length 3) with ``decoding_stats.mode``,
    ``world_info`` and ``engine`` fields set; ``mode`` None: no ``decoding_stats``."""
    doc = json.loads(REPORT.read_text())
    doc["engine"].update(engine)
    doc["world_info"].update(world or {})
    if mode is None:
        del doc["decoding_stats"]
    else:
        doc["decoding_stats"]["mode"] = mode
    path = tmp_path / f"report-{mode}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _init(args: list[str], out: Path) -> Result:
    return CliRunner().invoke(main, [*args, "--out", str(out), "-q"])


def _refused(result: Result, out: Path) -> str:
    """The one error line of a refused run that wrote nothing."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    assert not out.exists()
    return lines[0]


def test_an_eagle3_report_names_the_drafter_and_its_draft_length(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    result = _init(server_args(tmp_path, "--trtllm-bench", str(REPORT)), out)
    assert result.exit_code == 0, result.stderr
    scenario = load_scenario(str(out))
    assert scenario.acceptance.method == "eagle3" and scenario.num_steps == 3
    text = out.read_text()
    assert (
        "# from the trtllm-bench report's decoding_stats.mode: Eagle3 "
        f'(trtllm-bench {REPORT} decoding_stats.mode)\nmethod = "eagle3"'
    ) in text
    assert "# from the trtllm-bench report's decoding_stats: (accept length - 1) / draft" in text
    # the same scenario the flags write, only the comments saying where it came from
    flagged = tmp_path / "flags.toml"
    assert _init(init_args(tmp_path, "--trtllm-bench", str(REPORT)), flagged).exit_code == 0
    assert load_scenario(str(flagged)) == scenario
    assert "# --drafter\nmethod" in flagged.read_text()


def test_a_drafter_given_alone_takes_k_from_the_report(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = server_args(tmp_path, "--drafter", "eagle3", "--trtllm-bench", str(REPORT))
    result = _init(args, out)
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).num_steps == 3
    assert "# --drafter\nmethod" in out.read_text()


@pytest.mark.parametrize(
    ("mode", "backend", "drafter"),
    [("Eagle3", "Pytorch", "eagle3"), ("Eagle", "Pytorch", "eagle3"), ("Eagle", "TRT", None)],
)
def test_eagle_is_eagle3_on_the_pytorch_backend_only(
    tmp_path: Path, mode: str, backend: str, drafter: str | None
) -> None:
    out = tmp_path / "s.toml"
    report = _report(tmp_path, mode, backend=backend)
    result = _init(server_args(tmp_path, "--trtllm-bench", report), out)
    if drafter is None:  # EagleDecodingConfig on the TensorRT backend: EAGLE-1/2 engines
        line = _refused(result, out)
        assert line.startswith(f"specsim: error: trtllm-bench {report} decoding_stats.mode: ")
        assert "'Eagle' is not a drafter specsim names" in line and "give --drafter" in line
        return
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).acceptance.method == drafter
    if mode == "Eagle":
        assert "EagleDecodingConfig on the PyTorch backend runs an EAGLE-3" in out.read_text()


def test_an_mtp_report_names_the_models_mtp_module(tmp_path: Path) -> None:
    """DeepSeek-R1 (one MTP module, FP8 weights) on 8 H200 under TensorRT-LLM's MTP."""
    world = {"tp_size": 8, "ep_size": 8, "world_size": 8}
    report = _report(tmp_path, "MTP", world, model="deepseek-ai/DeepSeek-R1", quantization="FP8")
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(CONFIGS / "deepseek-r1.json"), "--gpu", "H200",
            "--gpus", "8", "--engine", "trtllm", "--trtllm-bench", report]  # fmt: skip
    result = _init(args, out)
    assert result.exit_code == 0, result.stderr
    scenario = load_scenario(str(out))
    assert scenario.acceptance.method == "mtp" and scenario.num_steps == 3
    # sized from the target's config.json: its one MTP module, as --drafter mtp sizes it
    assert "num_nextn_predict_layers = 1" in out.read_text()
    assert "decoding_stats.mode: MTP" in out.read_text()


def test_a_draft_target_run_still_needs_the_draft_models_config(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    report = _report(tmp_path, "Draft_Target")
    line = _refused(_init(server_args(tmp_path, "--trtllm-bench", report), out), out)
    assert line.startswith(  # the drafter as the report named it, not a flag never given
        "specsim: error: drafter draft_model from the trtllm-bench report's decoding_stats.mode: "
        f"Draft_Target (trtllm-bench {report} decoding_stats.mode): a draft model needs its "
        "config.json (--draft-config) or --draft-params"
    )
    result = _init(server_args(tmp_path, "--trtllm-bench", report, "--draft-params", "1e9"), out)
    assert result.exit_code == 0, result.stderr
    assert load_scenario(str(out)).acceptance.method == "draft_model"


@pytest.mark.parametrize("mode", ["NGram", "PARD", "Medusa"])
def test_a_mode_specsim_names_no_drafter_for_asks_for_the_flag(tmp_path: Path, mode: str) -> None:
    out = tmp_path / "s.toml"
    report = _report(tmp_path, mode)
    line = _refused(_init(server_args(tmp_path, "--trtllm-bench", report), out), out)
    assert line.startswith(f"specsim: error: trtllm-bench {report} decoding_stats.mode: ")
    assert f"{mode!r} is not a drafter" in line and line.endswith("give --drafter and --num-steps")


def test_flags_the_report_contradicts_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = server_args(tmp_path, "--drafter", "eagle", "--num-steps", "3")
    line = _refused(_init([*args, "--trtllm-bench", str(REPORT)], out), out)
    assert line == (
        f"specsim: error: --drafter: --drafter eagle, but trtllm-bench {REPORT} "
        "decoding_stats.mode is Eagle3, the eagle3 drafter: give --drafter eagle3 (or leave "
        "it out) if the figures are this server's"
    )
    args = server_args(tmp_path, "-k", "4", "--trtllm-bench", str(REPORT))
    line = _refused(_init(args, out), out)
    assert line.startswith("specsim: error: --num-steps: --num-steps 4, but the figures of")
    assert "speculative decoding at num_steps 3" in line


def test_a_plain_report_still_needs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    result = _init(server_args(tmp_path, "--trtllm-bench", _report(tmp_path, None)), out)
    assert result.exit_code == 0, result.stderr
    scenario = load_scenario(str(out))
    assert scenario.num_steps == 0 and "no drafter: plain decoding" in out.read_text()
