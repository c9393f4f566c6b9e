"""A serving answer over a scenario that gives no prompt length says so on its first screen.

Without ``workload.input_tokens`` every request has a 0-token prompt (no prefill, no prompt
KV), which flatters the answer; the reader sees that as a whole line, not only as "mean 0
prompt" in the footer, and the line names the fields that give the length.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.report.screen import STUDY_SCREEN_LINES
from tests.conftest import ROOT

SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
SHORT = ["--replications", "2", "--requests", "8", "--set", "workload.output_tokens=64"]
STUDIES = {
    "serve": ["--concurrency", "4"],
    "crossover": ["--concurrency", "1,4", "--num-steps", "2"],
    "best-k": ["--concurrency", "1,4", "--num-steps", "1:2"],
}


def _screen(command: str, *extra: str) -> list[str]:
    result = CliRunner().invoke(
        main, [command, SEED, *STUDIES[command], *SHORT, "--workers", "1", *extra]
    )
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.mark.parametrize("command", sorted(STUDIES))
def test_a_missing_prompt_length_is_a_line_on_the_first_screen(command: str) -> None:
    lines = _screen(command)
    said = [ln for ln in lines if ln.startswith("prompts: none given, so 0 tokens")]
    assert len(said) == 1, "\n".join(lines)
    assert said[0].endswith("--set workload.input_tokens=N")
    assert not [ln for ln in lines if "mean 0 prompt" in ln], "\n".join(lines)
    assert len(lines) <= STUDY_SCREEN_LINES, "\n".join(lines)


@pytest.mark.parametrize("command", sorted(STUDIES))
def test_a_stated_prompt_length_has_no_such_line(command: str) -> None:
    lines = _screen(command, "--set", "workload.input_tokens=0")
    assert not [ln for ln in lines if ln.startswith("prompts:")], "\n".join(lines)
