"""`specsim init` then `specsim serve`: the scenario init writes runs under load on every
init path (plain decoding, EAGLE-3, EAGLE, MTP of DeepSeek's and of the Qwen3.5 family's
nested config, a draft model, DSpark and DFlash), each passes derived by the hardware model
from the weights alone, so at zero context (sim/binding/reference_context.py ``reference_context``).

A sane answer, from the scenario's own batch-1 figures (``specsim run``): 4 users on a
memory-bound server each decode at most as fast as one alone (the load and their KV reads
only add time) and, at 64 tokens of context, at least half as fast on a dense target (the
weights are read once for the 4) and a quarter as fast on a MoE one (4 requests read at
most 4 times the routed experts one reads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.calibration.test_init import DEEPSEEK_V3
from tests.calibration.test_init_hybrid import QWEN35_27B, SMALL_NEXT
from tests.calibration.test_init_parallel import DSPARK, TARGET

QUICKSTART = Path(__file__).parents[1] / "data" / "quickstart"

#: The configs of the paths, as in tests/calibration (a dense target, a small one as its
#: draft model, DeepSeek-V3 with its MTP module, Qwen3.5-27B nested with its MTP layer).
SMALL_DENSE = {k: v for k, v in SMALL_NEXT.items() if not k.startswith(("linear_", "full_"))}

#: (path class, config, draft config, init flags)
PATHS = [
    ("plain", TARGET, None, "--gpu H100"),
    ("eagle3", TARGET, None, "--gpu H100 --drafter eagle3 -k 3"),
    ("eagle", TARGET, None, "--gpu H100 --drafter eagle -k 3"),
    ("mtp-deepseek", DEEPSEEK_V3, None, "--gpu H200 --gpus 8 --drafter mtp -k 1"),
    ("mtp-qwen35", QWEN35_27B, None, "--gpu B200 --drafter mtp -k 2"),
    ("draft_model", TARGET, SMALL_DENSE, "--gpu H100 --drafter draft_model -k 3"),
    ("dspark", TARGET, DSPARK, "--gpu B200 --drafter dspark -k 4"),
    ("dflash", TARGET, DSPARK, "--gpu B200 --drafter dflash -k 4"),
]

#: A short load: 4 users, 2 replications of 8 requests of 64 tokens, no draws.
SERVE = ["--concurrency", "4", "--replications", "2", "--requests", "8", "--draws", "0"]
SHORT = ["--set", "workload.output_tokens=64", "--workers", "1", "--json"]


def _init(tmp_path: Path, config: dict, draft: dict | None, flags: str) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    args = ["init", "--config", str(tmp_path / "config.json"), "--engine", "vllm", *flags.split()]
    if draft is not None:
        (tmp_path / "draft.json").write_text(json.dumps(draft))
        args += ["--draft-config", str(tmp_path / "draft.json")]
    if "--drafter" in flags:
        args += ["--accept-length", "2.0"]
    out = tmp_path / "s.toml"
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.mark.parametrize(("path", "config", "draft", "flags"), PATHS, ids=[p[0] for p in PATHS])
def test_an_init_scenario_serves(tmp_path: Path, path, config, draft, flags) -> None:
    scenario = _init(tmp_path, config, draft, flags)
    assert "context_tokens" not in scenario.read_text()  # nothing measured, nothing to say
    served = CliRunner().invoke(main, ["serve", str(scenario), *SERVE, *SHORT])
    assert served.exit_code == 0, served.stderr
    doc = json.loads(served.stdout)
    ran = CliRunner().invoke(main, ["run", str(scenario), "--json", "--replications", "1"])
    assert ran.exit_code == 0, ran.stderr
    alone = json.loads(ran.stdout)
    assert any("reference context: 0 tokens, derived" in a for a in doc["assumptions"])
    low = 0.25 if config is DEEPSEEK_V3 else 0.5
    plain = doc["baseline"]["per_user_tok_s"]["mean"]
    assert low * alone["baseline_tok_s"] <= plain <= alone["baseline_tok_s"]
    if path == "plain":
        assert "speculative" not in doc
        return
    spec = doc["speculative"]["per_user_tok_s"]["mean"]
    # accept length 2.0 at k: the renewal-reward tok/s of one user, as `run` has it
    one = alone["analytic"]["throughput_tok_s"]
    assert low * one <= spec <= 1.05 * one  # 1.05: the per-request mean over 8 requests


def test_a_measured_pass_still_needs_its_context(tmp_path: Path) -> None:
    """Derived passes hold at zero context; a measured one (a batch-1 time, or a point
    without its own context) at the context it was measured at, which only its file can
    say: one line naming the field and what needs it."""
    scenario = _init(tmp_path, TARGET, None, "--gpu H100 --drafter eagle3 -k 3")
    for sets, named in (
        ("timing.decode_ms=20.0", "timing.decode_ms"),
        ("timing.points=[{kind='decode', batch=8, ms=30.0, source='ours'}]", "timing.points[0]"),
    ):
        served = CliRunner().invoke(main, ["serve", str(scenario), *SERVE, "--set", sets])
        assert served.exit_code == 2
        assert "timing.context_tokens: needed with model.kv_bytes_per_token" in served.stderr
        assert f"({named}; specsim init --context-tokens" in served.stderr
        assert "Traceback" not in served.stderr
    given = "timing.points=[{kind='decode', batch=8, ms=30.0, source='ours', context_tokens=0}]"
    served = CliRunner().invoke(main, ["serve", str(scenario), *SERVE, *SHORT, "--set", given])
    assert served.exit_code == 0, served.stderr


def test_the_quickstart_scenario_serves_at_its_benchs_context(tmp_path: Path) -> None:
    """docs/quickstart.md's init with two `vllm bench serve` files: the measured decode
    holds at the runs' context, (32,768 prompt + 8,192 / 2 answer tokens) / 32 requests =
    1,152 in both files, written with its origin; serve then prices each request's KV
    from there, and 4 users each decode at most as fast as the measured one (1000 / 8.45
    ms TPOT speculative, 1000 / 19.1 plain) and at least half as fast."""
    for name in ("config.json", "bench_baseline.json", "bench_eagle3.json"):
        (tmp_path / name).write_bytes((QUICKSTART / name).read_bytes())
    out = tmp_path / "my-server.toml"
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100", "--gpus", "4"]
    args += ["--engine", "vllm", "--drafter", "eagle3", "--num-steps", "3", "--out", str(out)]
    for bench in ("bench_baseline.json", "bench_eagle3.json"):
        args += ["--vllm-bench", str(tmp_path / bench)]
    assert CliRunner().invoke(main, args).exit_code == 0
    text = out.read_text()
    assert "context_tokens = 1152.0" in text
    assert "# measured: the mean prompt + half the mean answer of the runs" in text
    served = CliRunner().invoke(main, ["serve", str(out), *SERVE, *SHORT])
    assert served.exit_code == 0, served.stderr
    doc = json.loads(served.stdout)
    assert not any("reference context" in a for a in doc["assumptions"])
    plain = doc["baseline"]["per_user_tok_s"]["mean"]
    spec = doc["speculative"]["per_user_tok_s"]["mean"]
    assert 0.5 * 1000 / 19.1 <= plain <= 1.02 * 1000 / 19.1  # 1.02: the fit's 2%
    assert 0.5 * 1000 / 8.45 <= spec <= 1.05 * 1000 / 8.45


def test_figures_without_their_context_take_it_from_the_flag(tmp_path: Path) -> None:
    """Tok/s flags do not say the context they were measured at: the calibrated scenario
    is refused by serve until ``--context-tokens`` says it, written with its flag; without
    figures the flag is refused (every pass is then derived, at zero context) and no file
    is left."""
    (tmp_path / "config.json").write_text(json.dumps(TARGET))
    args = ["init", "--config", str(tmp_path / "config.json"), "--gpu", "H100"]
    args += ["--engine", "vllm", "--drafter", "eagle3", "-k", "3"]
    figures = ["--baseline-tok-s", "40", "--point", "3:2.5:85"]
    bare, flagged = tmp_path / "bare.toml", tmp_path / "flagged.toml"
    assert CliRunner().invoke(main, [*args, *figures, "--out", str(bare)]).exit_code == 0
    served = CliRunner().invoke(main, ["serve", str(bare), *SERVE, *SHORT])
    assert served.exit_code == 2 and "--context-tokens" in served.stderr
    given = [*args, *figures, "--context-tokens", "1500", "--out", str(flagged)]
    assert CliRunner().invoke(main, given).exit_code == 0
    assert "# --context-tokens: the mean context" in flagged.read_text()
    served = CliRunner().invoke(main, ["serve", str(flagged), *SERVE, *SHORT])
    assert served.exit_code == 0, served.stderr
    plain = json.loads(served.stdout)["baseline"]["per_user_tok_s"]["mean"]
    # 4 users at under 1,500 tokens of context against one measured at 1,500: within 10%
    assert 0.9 * 40 <= plain <= 1.1 * 40
    alone = tmp_path / "alone.toml"
    refused = CliRunner().invoke(
        main, [*args, "--accept-length", "2.5", "--context-tokens", "1500", "--out", str(alone)]
    )
    assert refused.exit_code == 2 and refused.stderr.startswith("specsim: error: --context-tokens")
    assert not alone.exists()


def test_a_prefill_it_cannot_price_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    """Prompts with no kernel count for the eager prefill: one line naming the scenario's
    file and ``model.kernels_per_layer`` before any run, exit 2 (it used to surface from
    inside the simulation without either)."""
    scenario = _init(tmp_path, TARGET, None, "--gpu H100 --drafter eagle3 -k 3")
    served = CliRunner().invoke(
        main, ["serve", str(scenario), *SERVE, *SHORT, "--set", "workload.input_tokens=128"]
    )
    assert served.exit_code == 2
    (line,) = served.stderr.strip().splitlines()
    assert line.startswith(f"specsim: error: {scenario}")
    assert "model.kernels_per_layer: needed for the launch cost of the ungraphed prefill" in line
    assert served.stdout == ""


def test_quiet_init_prints_nothing_but_its_errors(tmp_path: Path) -> None:
    """-q on init: the file is the answer, so nothing is printed (neither the summary nor
    the 'wrote' line); a bad input still prints its one error line."""
    out = tmp_path / "s.toml"
    config = str(QUICKSTART / "config.json")
    args = ["init", "--config", config, "--gpu", "H100", "--engine", "sglang", "--out", str(out)]
    loud = CliRunner().invoke(main, args)
    assert loud.exit_code == 0, loud.output
    assert loud.output.splitlines()[-1] == f"wrote {out}"
    out.unlink()
    quiet = CliRunner().invoke(main, [*args, "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.output == ""
    assert out.is_file()
    bad = CliRunner().invoke(main, [*args[:-2], "--out", str(tmp_path / "t.toml"), "-q",
                                    "--num-steps", "0"])  # fmt: skip
    assert bad.exit_code == 2, bad.output
    (line,) = bad.stderr.strip().splitlines()
    assert line.startswith("specsim: error: ")
    assert not (tmp_path / "t.toml").exists()
