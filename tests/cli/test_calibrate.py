"""``specsim calibrate`` through click's CliRunner: output, written scenario, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario

ROOT = Path(__file__).parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
DATA = Path(__file__).parents[1] / "data"


def _run(*args: str) -> tuple[int, str, str]:
    """``specsim calibrate --scenario SEED ARGS --verbose``: every residual, reason and note
    in full (the first screen gives the notes by their leads: tests/cli/test_screens.py)."""
    result = CliRunner().invoke(main, ["calibrate", "--scenario", SEED, *args, "--verbose"])
    return result.exit_code, result.stdout, result.stderr


def test_seed_figures_write_a_runnable_scenario(tmp_path: Path) -> None:
    out = tmp_path / "calibrated.toml"
    code, stdout, _ = _run("--baseline-tok-s", "82.5", "--point", "2:2.0:60", "--out", str(out))
    assert code == 0, stdout
    assert "timing.verify_ms" in stdout and "kept from the base scenario" in stdout
    assert f"wrote {out}" in stdout
    scenario = load_scenario(out)
    assert scenario.timing.decode_ms == pytest.approx(1000 / 82.5, rel=1e-5)
    # 2.0 tokens per 1000 * 2 / 60 = 33.33 ms cycle, minus drafter and overhead of the base
    assert scenario.timing.verify_ms == pytest.approx(33.3333 - 1.2 - 1.5 - 0.6, abs=1e-3)
    ran = CliRunner().invoke(main, ["run", str(out), "--json"])
    assert ran.exit_code == 0
    assert json.loads(ran.stdout)["analytic"]["throughput_tok_s"] == pytest.approx(60.0, rel=1e-4)


def test_a_calibrated_scenario_calibrated_again_says_so_once(tmp_path: Path) -> None:
    """Its name and description carry one calibration suffix (the latest's count), not one
    an earlier calibration appended and another."""
    first, second = tmp_path / "c1.toml", tmp_path / "c2.toml"
    figures = ["--baseline-tok-s", "82.5", "--point", "2:2.0:60"]
    assert _run(*figures, "--out", str(first))[0] == 0
    again = ["calibrate", "--scenario", str(first), *figures, "--out", str(second), "-q"]
    result = CliRunner().invoke(main, again)
    assert result.exit_code == 0, result.output
    scenario = load_scenario(second)
    assert scenario.name == "kimi-k25-8xpcie-eagle3-calibrated"
    assert scenario.description.count("calibrated to") == 1
    assert scenario.description.endswith(", calibrated to 2 sources")


def test_imports_json_output(tmp_path: Path) -> None:
    code, stdout, _ = _run(
        "--vllm-metrics",
        str(DATA / "vllm_metrics_after.txt"),
        "--vllm-metrics-before",
        str(DATA / "vllm_metrics_before.txt"),
        "--json",
        "--prefer",
        "base",  # the scrape's k is not the seed's
    )
    assert code == 0
    doc = json.loads(stdout)
    assert doc["acceptance_model"] == "per_position"
    fitted = {v["field"]: v["value"] for v in doc["values"] if v["fitted"]}
    assert fitted["acceptance.per_position[0]"] == pytest.approx(962 / 1300, abs=1e-6)


def test_sglang_log_gives_accept_length_and_a_point(tmp_path: Path) -> None:
    out = tmp_path / "from-log.toml"
    code, stdout, _ = _run("--sglang-log", str(DATA / "sglang_server.log"), "--out", str(out))
    assert code == 0, stdout
    assert "num_steps 2 implied by accept len / accept rate" in stdout
    assert "cuda graph: True" in stdout
    scenario = load_scenario(out)
    # the seed's verify is ungraphed; the log's speculative lines say the verify ran graphed
    assert scenario.timing.verify_cuda_graph is True
    assert "timing.verify_cuda_graph set to True" in stdout
    assert scenario.acceptance.alpha == pytest.approx(0.618, abs=1e-3)  # AL 2.0 at k = 2


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--vllm-metrics", "missing.txt"], "missing.txt: no such file"),
        (["--sglang-log", str(DATA / "vllm_metrics_after.txt")], "no speculative decode line"),
        (["--vllm-metrics", str(DATA / "sglang_server.log")], "sglang_server.log: line 1:"),
        (["--point", "2:2.0"], "--point: expected NUM_STEPS:ACCEPT_LENGTH:TOK_S"),
        (["--point", "2:3.5:60"], "outside [1, num_steps + 1 = 3]"),
        ([], "nothing to calibrate from"),
        (["--baseline-tok-s", "80", "--fit", "verify_ms,bogus"], "--fit: cannot fit bogus"),
        (["--vllm-metrics-before", "x"], "needs --vllm-metrics"),
        (["--baseline-tok-s", "80", "--fit", ""], "--fit: name at least one timing field"),
        (["--baseline-tok-s", "80", "--fit", ",,"], "--fit: empty value in ',,'"),
        # weights of 1e160 overflowed the fit: a scipy traceback
        (["--baseline-tok-s", "80", "--rel-error", "1e-160"], "--rel-error: must be in [1e-06"),
        (["--baseline-tok-s", "80", "--rel-error", "nan"], "--rel-error: must be in [1e-06"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], fragment: str, tmp_path: Path) -> None:
    out = tmp_path / "never.toml"
    code, _, stderr = _run(*args, "--out", str(out))
    assert code == 2
    assert fragment in stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert not out.exists()


def test_bad_base_scenario_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 1\n")
    result = CliRunner().invoke(
        main, ["calibrate", "--scenario", str(bad), "--baseline-tok-s", "80"]
    )
    assert result.exit_code == 2 and str(bad) in result.stderr


def test_unreachable_figure_is_an_error_not_a_zero_time(tmp_path: Path) -> None:
    """A cycle the physics check lets through (2 ms, inside its 1.5x margin on the 2.19 ms
    roofline) that the measured passes beside the verify already exceed."""
    out = tmp_path / "never.toml"
    code, _, stderr = _run("--point", "2:2.0:1000", "--out", str(out))
    assert code == 2
    assert "cannot be reproduced: timing.verify_ms would have to be <= 0" in stderr
    assert not out.exists()


def test_zero_cumulative_rate_still_gives_valid_json(tmp_path: Path) -> None:
    """A position no draft reached (c = 0) has no relative residual: null, not NaN."""
    scrape = tmp_path / "m.txt"
    scrape.write_text(
        'vllm:spec_decode_num_drafts_total{engine="0"} 100\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 200\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 50\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 50\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 0\n'
    )
    code, stdout, stderr = _run("--vllm-metrics", str(scrape), "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    c2 = next(r for r in doc["residuals"] if r["what"] == "cumulative rate c2")
    assert c2["measured"] == 0 and c2["relative"] is None


def test_num_steps_contradicting_the_log_is_noted() -> None:
    code, stdout, _ = _run(
        "--sglang-log", str(DATA / "sglang_server.log"), "--num-steps", "3", "--prefer", "base"
    )
    assert code == 0
    assert "implies num_draft_tokens 3" in stdout and "not num_steps + 1 = 4" in stdout


LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
MIX = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml")


def test_base_with_derived_verify_fits_the_overhead(tmp_path: Path) -> None:
    """The hardware model derives this base's verify pass: the intercept is the overhead."""
    out = tmp_path / "llama.toml"
    result = CliRunner().invoke(
        main, ["calibrate", "--scenario", LLAMA, "--point", "5:4.68:361.70", "--out", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    assert "timing.cycle_overhead_ms" in result.stdout.split("kept from")[0]
    assert "the base's verify pass comes from the hardware model" in result.stdout
    ran = CliRunner().invoke(main, ["run", str(out), "--json", "--replications", "2"])
    assert ran.exit_code == 0, ran.stderr
    analytic = json.loads(ran.stdout)["analytic"]
    assert analytic["throughput_tok_s"] == pytest.approx(361.70, rel=1e-4)


def test_what_if_base_is_refused() -> None:
    code, _, stderr = _run("--set", "hardware.interconnect=nvlink4", "--baseline-tok-s", "80")
    assert code == 2 and "asks about other hardware than its timings were measured on" in stderr


def test_what_if_refusal_names_each_field_and_the_set_that_says_measured_so(
    tmp_path: Path,
) -> None:
    """A graphed verify asked of the seed (measured ungraphed) is refused in one line naming
    the field, both values and the ``--set`` for figures measured so; that ``--set`` works."""
    figures = ["--baseline-tok-s", "82.5", "--point", "2:2.0:60"]
    code, _, stderr = _run("--set", "timing.verify_cuda_graph=true", *figures)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "(timing.verify_cuda_graph true, timing.measured_on.verify_cuda_graph false)" in stderr
    hint = "add --set timing.measured_on.verify_cuda_graph=true"
    assert stderr.rstrip().endswith(hint)
    out = tmp_path / "graphed.toml"
    code, _, stderr = _run(
        "--set", "timing.verify_cuda_graph=true", *hint.split()[1:], *figures, "--out", str(out)
    )
    assert code == 0, stderr
    assert out.exists()


def test_heterogeneous_base_gets_effective_rates(tmp_path: Path) -> None:
    out = tmp_path / "mix.toml"
    result = CliRunner().invoke(
        main,
        ["calibrate", "--scenario", MIX, "--point", "3:2.5:70", "--out", str(out), "--verbose"],
    )
    assert result.exit_code == 0, result.stderr
    assert "per-request spread (mix, concentration or std) is replaced" in result.stdout
    acc = load_scenario(out).acceptance
    assert acc.mix is None and acc.concentration is None and acc.std is None
    assert acc.alpha is not None


def test_unwritable_out_is_one_line_naming_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    out = blocker / "x.toml"
    code, stdout, stderr = _run("--baseline-tok-s", "80", "--out", str(out))
    assert code == 2 and stderr.startswith(f"specsim: error: {out}: cannot write")
    assert stdout == "" and not out.exists()


def test_a_value_given_by_set_is_labelled_so_in_the_written_scenario(tmp_path: Path) -> None:
    """A value the command line's --set gave, and no fit changed, is commented with that
    --set in the written file, not as the base scenario's."""
    out = tmp_path / "set.toml"
    code, _, stderr = _run(
        "--set", "workload.output_tokens=1024", "--baseline-tok-s", "82.5", "--out", str(out)
    )
    assert code == 0, stderr
    lines = out.read_text().splitlines()
    at = lines.index("output_tokens = 1024")
    assert lines[at - 1] == "# --set workload.output_tokens=1024"
