"""`specsim init` then `specsim calibrate`: each value the calibration keeps carries the
origin the base file states for it (init's comments: a config.json field, a flag, a
named default; or a comment a person added after a value), "the base scenario's (FILE)"
only where the base states none, and a value the calibration changed never carries the
base's comment on the old one."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sim.cli import main

QUICKSTART = Path(__file__).parents[1] / "data" / "quickstart"


def _comment_above(lines: list[str], line: str) -> str:
    return lines[lines.index(line) - 1]


def test_a_calibrated_init_scenario_keeps_its_base_origins(tmp_path: Path) -> None:
    base = tmp_path / "base.toml"
    init = [
        "init",
        "--config",
        str(QUICKSTART / "config.json"),
        "--gpu",
        "H100",
        "--gpus",
        "4",
        "--engine",
        "vllm",
        "--drafter",
        "eagle3",
        "-k",
        "3",
        "--accept-length",
        "2.5",
        "--out",
        str(base),
    ]
    result = CliRunner().invoke(main, init)
    assert result.exit_code == 0, result.stderr
    written = base.read_text()
    assert "# config.json: num_hidden_layers\nlayers = 80\n" in written
    # a person's additions: a value with its origin after it, one without any, and a
    # guess of the decode the calibration replaces
    assert "\n[timing]\n" in written
    written = written.replace("\n[timing]\n", "\n[timing]\ndecode_ms = 20.0  # my old guess\n")
    base.write_text(
        written + "\n[workload]\nrequests = 48  # my bench: 48 prompts\noutput_tokens = 300\n"
    )
    out = tmp_path / "calibrated.toml"
    cal = ["calibrate", "--scenario", str(base), "--baseline-tok-s", "30", "--out", str(out)]
    result = CliRunner().invoke(main, cal)
    assert result.exit_code == 0, result.stderr
    lines = out.read_text().splitlines()
    assert _comment_above(lines, "layers = 80") == "# config.json: num_hidden_layers"
    assert _comment_above(lines, 'engine = "vllm"') == "# --engine"
    assert _comment_above(lines, 'interconnect = "nvlink4"').startswith("# default for H100")
    assert _comment_above(lines, "requests = 48") == "# my bench: 48 prompts"
    assert _comment_above(lines, "output_tokens = 300") == "# the base scenario's (base.toml)"
    # the fitted plain decode is the calibration's alone: the base's guess was another value
    decode = next(line for line in lines if line.startswith("decode_ms = "))
    assert decode != "decode_ms = 20.0"
    assert _comment_above(lines, decode).startswith("# calibrated: ")
    assert "my old guess" not in out.read_text()
