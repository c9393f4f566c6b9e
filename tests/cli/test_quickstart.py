"""docs/quickstart.md, run as written: a server no scenario in scenarios/ describes
(Llama-3.1-70B-Instruct on 4x H100, vLLM, EAGLE-3 k = 3), from its config.json, the GPU and
two `vllm bench serve` results to an answer in three commands; the scenario reproduces the
measured figures within 2% and nothing in it comes from another server."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

ROOT = Path(__file__).parents[2]
QUICKSTART = ROOT / "docs" / "quickstart.md"
DATA = ROOT / "tests" / "data" / "quickstart"


def _commands() -> list[list[str]]:
    """The specsim commands of the quick start's shell block, in order."""
    block = re.search(r"```sh\n(.*?)```", QUICKSTART.read_text(), re.S)
    assert block is not None
    text = block.group(1).replace("\\\n", " ")
    return [shlex.split(line)[1:] for line in text.splitlines() if line.startswith("specsim ")]


def test_three_commands_reproduce_the_measured_figures(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("config.json", "bench_baseline.json", "bench_eagle3.json"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    commands = _commands()
    assert len(commands) == 3 and commands[0][0] == "init"
    for args in commands:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.stderr)
    ran = CliRunner().invoke(main, ["run", "my-server.toml", "--json", "--replications", "2"])
    doc = json.loads(ran.stdout)
    # measured: 1000 / TPOT of each bench file at max_concurrency 1
    assert doc["baseline_tok_s"] == pytest.approx(1000 / 19.1, rel=0.02)
    assert doc["analytic"]["throughput_tok_s"] == pytest.approx(1000 / 8.45, rel=0.02)
    assert doc["analytic"]["accept_length"] == pytest.approx(2.83, rel=0.02)
    text = (tmp_path / "my-server.toml").read_text()
    # nothing from another server: the model is the config's, the hardware the flags'
    assert "Kimi" not in text and "Llama-3.1-8B" not in text
    assert 'model_id = "meta-llama/Llama-3.1-70B-Instruct"' in text
    assert "gpus = 4" in text and 'gpu = "H100"' in text
    # every value outside [uncertainty] sits under a comment naming where it came from
    lines = text.split("\n[uncertainty")[0].splitlines()
    section = ""
    for i, line in enumerate(lines):
        if line.startswith("["):
            section = line
        elif section and " = " in line and not line.startswith(("#", " ")):
            assert lines[i - 1].startswith("# "), (section, line)
    assert "# equals specsim's default" in text and "Written by `specsim init`" in text


def test_the_calibrated_title_fits_two_lines_and_the_header_names_the_figures(
    tmp_path: Path,
) -> None:
    """The description is the title every report prints: the figures' files (five runs of
    an SGLang sweep took four lines of it) stay in the file's header comment and in each
    value's origin comment."""
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(DATA / "config.json"), "--gpu", "H100", "--gpus", "4",
            "--engine", "vllm", "--drafter", "eagle3", "--num-steps", "3", "--out", str(out),
            "--vllm-bench", str(DATA / "bench_baseline.json"),
            "--vllm-bench", str(DATA / "bench_eagle3.json"), "-q"]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    text = out.read_text()
    description = re.search(r'^description = "(.*)"$', text, re.M)
    assert description is not None and "bench_" not in description.group(1)
    assert description.group(1).endswith("calibrated to 2 sources")
    header = text.split("\n\n")[0]
    assert str(DATA / "bench_baseline.json") in header and str(DATA / "bench_eagle3.json") in header
    ran = CliRunner().invoke(main, ["run", str(out), "--replications", "2", "--requests", "10"])
    assert ran.exit_code == 0, ran.stderr
    title = ran.stdout.split("\n  hardware:")[0]
    assert len(title.splitlines()) <= 2, title
