"""A load sweep made by specsim itself, calibrated on from the command line, and the serving
answers' intervals conditioned on the figures the calibration recorded.

The truth is the Llama-3.1-8B H100 scenario with host work 30 us a request and kernel slope
1.3 (the defaults are 20 and 1), decode-only (``serving.prefill = "skip"``: the load fit's
model has no prefill interruptions). specsim served it at 1, 8 and 32 users; each run's
mean and spread of TPOT and its accept length are the ``vllm bench serve`` results of
scenarios/sweeps/llama31-8b-synthetic-vllm.jsonl (docs/load-calibration.md shows how, and
its example checks the file still holds what the simulation gives). ``calibrate`` fits the
base scenario to them as docs/load-calibration.md's example does, once for every test here
(the shipped calibrated scenario is what it writes), and ``serve`` answers from the
calibrated one.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

import sim.calibration.run as calibration_run
from sim.calibration.load_terms import HOST_FIELD, SLOPE_FIELD
from sim.cli import main
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.toml_writer import dumps_scenario
from sim.studies.serving.serve import serve
from tests.helpers import replay_once

ROOT = Path(__file__).parents[2]
SCENARIO = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
TRUTH = {HOST_FIELD: 30.0, SLOPE_FIELD: 1.3}
ANSWER = 256  # output tokens a request

#: The sweep specsim made of the truth (docs/load-calibration.md).
SWEEP = "scenarios/sweeps/llama31-8b-synthetic-vllm.jsonl"
#: docs/load-calibration.md's calibration, which wrote the shipped calibrated scenario (run
#: it from the repository's root with --out SHIPPED when the fit changes what it writes).
SHIPPED = "scenarios/sweeps/llama31-8b-1xh100-eagle3-calibrated.toml"
EXAMPLE = ("calibrate", "--scenario", "scenarios/llama31-8b-1xh100-eagle3.toml",
           "--set", 'serving.prefill="skip"', "--set", "workload.output_tokens=256",
           "--baseline-tok-s", "223.53", "--point", "5:4.7146:366.76",
           "--load-sweep", SWEEP)  # fmt: skip
REGENERATE = f"stale: regenerate with `specsim {shlex.join(EXAMPLE)} --out {SHIPPED}`"


def _base():
    sc = load_scenario(SCENARIO)
    return with_overrides(sc, {"serving.prefill": "skip", "workload.output_tokens": ANSWER})


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> dict:
    """docs/load-calibration.md's calibration (``EXAMPLE``, from the repository's root) fitted
    once for its text with --out and its JSON; the base scenario written out, the sweep."""
    tmp = tmp_path_factory.mktemp("sweep")
    base_path = tmp / "base.toml"
    base_path.write_text(dumps_scenario(_base()))
    rows = [json.loads(line) for line in (ROOT / SWEEP).read_text().splitlines()]
    out = tmp / "calibrated.toml"
    with pytest.MonkeyPatch.context() as mp:  # --json renders the same fit: not fitted twice
        mp.chdir(ROOT)
        mp.setattr(calibration_run, "run_calibration", replay_once(calibration_run.run_calibration))
        code, text = _run(*EXAMPLE, "--out", str(out))
        assert code == 0, text
        code, js = _run(*EXAMPLE, "--json")
        assert code == 0, js
    return {"base": base_path, "out": out, "text": text, "json": json.loads(js), "rows": rows}


def test_calibrate_says_what_it_identified_and_records_the_figures(calibrated) -> None:
    text = calibrated["text"]
    assert "the scenario records the 6 figures fitted ([[serving.calibrated_on]])" in text
    assert "re-fit serving.kernel_slope to them in every draw" in text
    sc = load_scenario(calibrated["out"])
    figures = sc.serving.calibrated_on
    assert [f.load for f in figures] == [1.0, 1.0, 8.0, 8.0, 32.0, 32.0]
    assert [f.measured for f in figures] == [r["mean_tpot_ms"] for r in calibrated["rows"]]
    assert {f.source for f in figures} == {SWEEP}
    assert "kernel_slope" in sc.serving.calibrated_terms


def test_the_fitted_terms_recover_the_truth_within_the_fit_s_error(calibrated) -> None:
    fit = calibrated["json"]["load_fit"]
    assert SLOPE_FIELD in fit["identified"]
    for name in fit["identified"]:  # within 4 standard errors of the truth
        assert abs(fit["values"][name] - TRUTH[name]) < 4 * fit["stderr"][name], name
    for name, (lo, hi) in fit["ranges"].items():  # every range the scenario carries holds it
        if name in TRUTH:
            assert lo <= TRUTH[name] <= hi, name
    # and the sweep's TPOTs are reproduced within the 3% error floor
    assert all(abs(r["relative"]) < 0.03 for r in fit["rows"])


def test_serve_conditions_its_intervals_and_says_so(calibrated, monkeypatch) -> None:
    from sim.studies.serving import serve as study

    # the text and the JSON: one run (each command binds the file and makes its own bar)
    monkeypatch.setattr(study, "serve_bound", replay_once(study.serve_bound, (0, "progress")))
    out = str(calibrated["out"])
    common = ["--concurrency", "16", "--replications", "2", "--requests", "24", "--draws", "2"]
    code, text = _run("serve", out, *common)
    assert code == 0, text
    assert "intervals conditioned on 6 calibration figures" in text
    assert "beyond the highest measured batch" not in text  # 16 users: inside 1-32
    code, js = _run("serve", out, *common, "--json")
    assert code == 0, js
    cond = json.loads(js)["interval90"]["conditioned_on"]
    assert cond["figures"] == 6 and cond["loads"] == [1.0, 32.0]
    assert cond["refitted"] == [f"serving.{t}" for t in load_scenario(out).serving.calibrated_terms]


def test_beyond_the_highest_calibrated_load_serve_says_so(calibrated) -> None:
    code, text = _run("serve", str(calibrated["out"]), "--concurrency", "64",
                      "--replications", "2", "--requests", "24", "--draws", "2")  # fmt: skip
    assert code == 0, text
    assert "beyond the highest measured batch (32)" in " ".join(text.split())


def test_crossover_says_its_intervals_are_conditioned_and_which_loads_lie_beyond(
    calibrated, monkeypatch
) -> None:
    import sim.studies.serving.crossover as study

    # the text and the JSON: one study (each command's evaluator and draws)
    monkeypatch.setattr(study, "crossover", replay_once(study.crossover, (0, "draws")))
    args = ["crossover", str(calibrated["out"]), "--concurrency", "1,64", "--num-steps", "3",
            "--metric", "per_user_tok_s", "--replications", "2", "--requests", "16",
            "--draws", "2", "-q"]  # fmt: skip
    code, text = _run(*args)
    assert code == 0, text
    assert "intervals conditioned on 6 calibration figures" in text
    assert "* 64 users: beyond the highest measured batch (32; --verbose" in text
    code, js = _run(*args, "--json")
    doc = json.loads(js)
    assert doc["conditioned_on"]["figures"] == 6
    assert doc["beyond_measured"]["loads"] == [64]


@pytest.mark.parametrize(
    "command",
    [
        ["best-k", "--concurrency", "1,8", "--num-steps", "2:3"],
        pytest.param(
            ["capacity", "--num-steps", "3", "--ttft-slo-ms", "200"], marks=pytest.mark.slow
        ),
    ],
    ids=["best-k", "capacity"],
)
def test_best_k_and_capacity_say_their_intervals_are_conditioned(calibrated, command) -> None:
    code, text = _run(command[0], str(calibrated["out"]), *command[1:], "--replications", "2",
                      "--requests", "16", "--draws", "2", "-q")  # fmt: skip
    assert code == 0, text
    assert "intervals conditioned on 6 calibration figures" in text


@pytest.mark.slow
def test_tree_load_says_its_intervals_are_conditioned(calibrated) -> None:
    code, text = _run("tree-load", str(calibrated["out"]), "--tree", "3/2/6", "--chain", "3",
                      "--concurrency", "1,8", "--replications", "2", "--requests", "16",
                      "--draws", "2", "-q")  # fmt: skip
    assert code == 0, text
    assert "intervals conditioned on 6 calibration figures" in text


@pytest.mark.parametrize("command", ["serve", "crossover"])
def test_a_what_if_server_is_not_conditioned_on_figures_of_another(calibrated, command) -> None:
    # the figures describe the server as calibrated: a --set of its passes makes another
    # one, whose draws are not re-fitted to them; a --set of the scheduler does not
    extra = ["--concurrency", "1,8", "--num-steps", "3", "--metric", "per_user_tok_s"]
    common = [
        *(["--concurrency", "8"] if command == "serve" else extra),
        "--replications", "2", "--requests", "16", "--draws", "2",
    ]  # fmt: skip
    out = str(calibrated["out"])
    code, text = _run(command, out, *common, "--set", "timing.decode_ms=5.0")
    assert code == 0, text
    assert "intervals not conditioned on the 6 calibration figures" in text
    assert "timing.decode_ms (--set)" in text
    code, text = _run(command, out, *common, "--set", "serving.max_running_requests=64")
    assert code == 0, text
    assert "intervals conditioned on 6 calibration figures" in text


def test_without_draws_or_without_the_section_nothing_is_conditioned(calibrated) -> None:
    common = ["--concurrency", "4", "--replications", "2", "--requests", "16"]
    code, text = _run("serve", str(calibrated["out"]), *common, "--draws", "0")
    assert code == 0, text
    assert "conditioned" not in text
    code, js = _run("serve", str(calibrated["base"]), *common, "--draws", "2", "--json")
    assert code == 0, js
    assert "conditioned_on" not in json.loads(js)["interval90"]


def test_the_conditioned_interval_covers_the_truth(calibrated) -> None:
    truth = with_overrides(_base(), TRUTH)
    # the truth's own answer at 16 users, at a seed of its own and 8 replications
    summary = serve(truth, concurrency=16, replications=8, requests=64, seed=11).summary
    assert summary is not None
    served = serve(load_scenario(calibrated["out"]), concurrency=16, replications=4,
                   requests=64, seed=3, interval_draws=8)  # fmt: skip
    iv = served.interval90
    assert iv is not None and iv["draws_run"] == 8 and iv["conditioned_on"]["figures"] == 6
    for name in ("speculative", "baseline"):
        lo, hi = iv["levels"][name]["per_user_tok_s"]
        assert lo <= summary.policies[name].metrics["per_user_tok_s"].mean <= hi, name
    lo, hi = iv["speedup"]["speculative"]["per_user_tok_s"]
    assert lo <= summary.speedup["speculative"]["per_user_tok_s"].mean <= hi


def _numbers(tree, prefix=""):
    """Every number of a nested mapping by its dotted path."""
    if isinstance(tree, dict):
        return {
            k: v for key, sub in tree.items() for k, v in _numbers(sub, f"{prefix}{key}.").items()
        }
    if isinstance(tree, list):
        return {
            k: v for i, sub in enumerate(tree) for k, v in _numbers(sub, f"{prefix}{i}.").items()
        }
    return {prefix.rstrip("."): tree}


def test_the_shipped_calibrated_scenario_is_what_calibrate_writes(calibrated) -> None:
    shipped = load_scenario(ROOT / SHIPPED)
    mine = load_scenario(calibrated["out"])
    assert mine.serving.calibrated_on == shipped.serving.calibrated_on
    assert mine.serving.calibrated_terms == shipped.serving.calibrated_terms
    a, b = _numbers(mine.model_dump()), _numbers(shipped.model_dump())
    assert a.keys() == b.keys()
    for key, value in a.items():  # fitted values: the optimisers' tolerance, not last bits
        if isinstance(value, float):
            assert value == pytest.approx(b[key], rel=1e-6, abs=1e-12), (key, REGENERATE)
        else:
            assert value == b[key], (key, REGENERATE)
