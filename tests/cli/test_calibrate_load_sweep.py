"""``specsim calibrate --load-sweep``: the batched terms fitted after the batch-1 fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import sim.calibration.run as calibration_run
from sim.cli import main
from sim.scenario.load import load_scenario
from tests.helpers import replay_once

ROOT = Path(__file__).parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
#: voipmonitor/rtx6kpro, no MTP: aggregate tok/s at 1, 8 and 32 users (serving_data.py)
SWEEP = ((1, 88.5), (8, 340.7), (32, 823.6))


def _sweep(path: Path) -> Path:
    rows = [
        {"backend": "vllm", "max_concurrency": b, "completed": 64,
         "mean_tpot_ms": 1000.0 * b / tok_s, "mean_e2e_latency_ms": 1.0, "accept_length": None}
        for b, tok_s in SWEEP
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["calibrate", "--scenario", SEED, *args])
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict:
    """calibrate on the plain sweep (``_sweep``), fitted once: its text, --verbose and
    --json, and the text of a run with --out and the scenario it wrote."""
    tmp = tmp_path_factory.mktemp("plain")
    args = ["--baseline-tok-s", "88.5", "--load-sweep", str(_sweep(tmp / "s.jsonl"))]
    got: dict = {"out": tmp / "out.toml"}
    with pytest.MonkeyPatch.context() as mp:  # the renderings of one fit: not fitted four times
        mp.setattr(calibration_run, "run_calibration", replay_once(calibration_run.run_calibration))
        for name, extra in (("text", []), ("verbose", ["--verbose"]), ("json", ["--json"]),
                            ("written", ["--out", str(got["out"])])):  # fmt: skip
            code, got[name] = _run(*args, *extra)
            assert code == 0, got[name]
    return got


def test_plain_sweep_reports_the_batched_terms_and_writes_them(plain) -> None:
    text = plain["written"]
    assert "batched terms from the load sweep" in text
    # plain decoding on an engine that overlaps it: no figure depends on the host work
    assert "serving.host_us_per_request" in text and "plausible range [7, 38]" in text
    scenario = load_scenario(plain["out"])
    assert scenario.serving is not None and scenario.serving.kernel_slope is not None


def test_json_carries_the_ranges(plain) -> None:
    text = plain["json"]
    body = json.loads(text)["calibrate"] if "calibrate" in json.loads(text) else json.loads(text)
    fit = body["load_fit"]
    # three loads of a MoE curve the model does not follow closely: the fitted ranges would
    # be wider than what is known already, so every term keeps its plausible range
    assert fit["identified"] == []
    assert fit["ranges"]["serving.kernel_slope"] == [0.1, 1.35]
    assert fit["ranges"]["serving.expert_skew"] == [0.0, 1.3]
    assert "plausible range" in fit["kept"]["serving.kernel_slope"]
    assert len(fit["rows"]) == 3
    # plain runs only: the speculative host factor is not fitted, and the JSON says what
    # the sweep allows of it (any value: no run drafts)
    assert fit["values"]["serving.host_spec_factor"] == 1.0
    assert fit["spec_factor_profile"] == [0.0, 100.0]
    assert fit["spec_factor_runs"] == ""


def test_the_speculative_host_factor_is_one_line_saying_why_it_is_not_fitted(plain) -> None:
    (line,) = [t for t in plain["text"].splitlines() if "serving.host_spec_factor" in t]
    assert line.endswith("kept, plausible range [1, 2.857]")  # why: --verbose
    joined = " ".join(plain["verbose"].split())
    assert "kept (the sweep has no speculative runs at two or more loads" in joined
    assert "the sweep allows 0-100" in joined


def test_the_first_screen_fits_25_lines_of_100_columns(plain) -> None:
    """The batch-1 fit's kept values and notes a line each, the terms without their
    reasons, the runs in one line; --verbose gives each run and why each term is kept."""
    text = plain["text"]
    lines = text.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100, text
    assert "3 runs (at their mean context and load) at loads 1-32: model TPOT" in " ".join(
        text.split()
    )
    verbose = plain["verbose"]
    assert "condition of the scaled Jacobian" in verbose and "s.jsonl:line 3" in verbose


def test_a_fitted_term_outside_its_plausible_range_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host-bound curve (TPOT growing 0.5 ms a request) fits the host work at hundreds of
    us, far beyond its plausible 7-38 us: kept as fitted (not clamped) and said on the
    screen and in the JSON (the two renderings of one fit)."""
    monkeypatch.setattr(
        calibration_run, "run_calibration", replay_once(calibration_run.run_calibration)
    )
    rows = [
        {"backend": "sglang", "max_concurrency": c, "completed": 64,
         "mean_tpot_ms": 4.5 + 0.5 * (c - 1), "std_tpot_ms": 0.3, "mean_e2e_latency_ms": 1.0,
         "accept_length": None}
        for c in (1, 4, 16, 32)
    ]  # fmt: skip
    sweep = tmp_path / "host.jsonl"
    sweep.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, text = _llama("--load-sweep", str(sweep))
    assert code == 0, text
    joined = " ".join(text.split())
    said = "outside its plausible 7-38 us: the figures hold something the model does not price"
    assert said in joined, text
    code, text = _llama("--load-sweep", str(sweep), "--json")
    fit = json.loads(text)["load_fit"]
    host = fit["values"]["serving.host_us_per_request"]
    assert "serving.host_us_per_request" in fit["identified"] and host > 38
    assert fit["outside_plausible"] == {"serving.host_us_per_request": [7.0, 38.0]}
    assert f"serving.host_us_per_request {host:.4g} us, outside" in joined


def test_bad_sweep_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"max_concurrency": 4, "mean_tpot_ms": -3}\n')
    code, text = _run("--baseline-tok-s", "88.5", "--load-sweep", str(bad))
    assert code == 2
    assert text.strip().splitlines()[-1].startswith("specsim: error: ")
    assert "mean_tpot_ms" in text


LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
#: a bench_serving run's requests (prompt, answer tokens), the 3rd failed
INPUTS = [120, 40, 50, 900, 300, 75]
OUTPUTS = [60, 90, 0, 250, 33, 180]


def _sglang_run(conc: int, tpot_ms: float, error: str = "Traceback ...", **changes) -> dict:
    """An SGLang ``bench_serving --output-details`` line (keys read at the commit
    sim/calibration/importers/serving_runs.py cites): the failed request's output_lens 0
    and its error, which is ``response.reason or ""`` for a status other than 200."""
    done = [i for i, o in enumerate(OUTPUTS) if o]
    return {
        "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
        "max_concurrency": conc, "completed": len(done),
        "total_input_tokens": sum(INPUTS[i] for i in done),
        "total_output_tokens": sum(OUTPUTS), "mean_tpot_ms": tpot_ms, "std_tpot_ms": 0.3,
        "mean_e2e_latency_ms": 900.0, "concurrency": conc * 0.9, "accept_length": None,
        "input_lens": INPUTS, "output_lens": OUTPUTS,
        "errors": [error if not o else "" for o in OUTPUTS], **changes,
    }  # fmt: skip


def _sglang_sweep(path: Path, error: str = "Traceback ...", **changes) -> Path:
    runs = [_sglang_run(c, t, error, **changes) for c, t in ((1, 4.5), (2, 4.6), (4, 4.9))]
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def _llama(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["calibrate", "--scenario", LLAMA, "--baseline-tok-s", "222", *args]
    )
    return result.exit_code, result.stdout + result.stderr


def test_runs_listing_their_requests_are_fitted_as_their_own_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Automatic when the file lists each request: the report names the runs priced as
    their own jobs, the JSON gives each row's job, and the written scenario records the
    job with the figure (what the serving intervals' refit prices)."""
    sweep = _sglang_sweep(tmp_path / "s.jsonl")
    out = tmp_path / "out.toml"
    with monkeypatch.context() as mp:  # the --verbose and --json renderings of one fit
        mp.setattr(calibration_run, "run_calibration", replay_once(calibration_run.run_calibration))
        code, text = _llama("--load-sweep", str(sweep), "--out", str(out), "--verbose")
        assert code == 0, text
        joined = " ".join(text.split())
        assert "3 run(s) priced as their own jobs" in joined, text
        assert "s.jsonl:line 3 (5 requests, 4 workers)" in joined, text
        code, text = _llama("--load-sweep", str(sweep), "--json")
        assert code == 0, text
    rows = json.loads(text)["load_fit"]["rows"]
    assert [r["job"] for r in rows] == [{"requests": 5, "workers": c} for c in (1, 2, 4)]
    figures = load_scenario(out).serving.calibrated_on
    assert [f.workers for f in figures] == [1, 2, 4]
    assert figures[0].output_lens == [o for o in OUTPUTS if o]
    # the same runs without their lists: the closed form at load C, and the report says so
    bare = tmp_path / "bare.jsonl"
    keep = ("input_lens", "output_lens", "errors")
    bare.write_text(
        "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k not in keep}) + "\n"
            for line in sweep.read_text().splitlines()
        )
    )
    code, text = _llama("--load-sweep", str(bare), "--verbose")
    assert code == 0, text
    assert "3 run(s) at their mean context and load (closed form; no request's lengths" in (
        " ".join(text.split())
    )


def test_a_failure_with_an_empty_error_is_left_out(tmp_path: Path) -> None:
    """bench_serving writes ``response.reason or ""``: a failed request (0 output tokens)
    whose status line had no reason phrase has an empty error; ``completed`` leaves it
    out, and so do the load sweep and ``init --replay``."""
    sweep = _sglang_sweep(tmp_path / "s.jsonl", error="")
    code, text = _llama("--load-sweep", str(sweep), "--json")
    assert code == 0, text
    assert [r["job"]["requests"] for r in json.loads(text)["load_fit"]["rows"]] == [5, 5, 5]
    one = tmp_path / "one.jsonl"
    one.write_text(sweep.read_text().splitlines()[1] + "\n")
    config = str(ROOT / "tests" / "data" / "quickstart" / "config.json")
    args = ["init", "--config", config, "--gpu", "H100", "--gpus", "4", "--engine", "sglang"]
    args += ["--replay", str(one), "--out", str(tmp_path / "j.toml")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "job: 5 requests of" in result.output and "by 2 workers" in result.output
    rows = (tmp_path / "j.job.csv").read_text().splitlines()
    assert rows[-5:] == [f"0,{i},{o}" for i, o in zip(INPUTS, OUTPUTS, strict=True) if o]


def test_lists_that_contradict_the_run_are_one_line_exit_2(tmp_path: Path) -> None:
    # every error empty, and completed counts one request fewer than have answer tokens
    sweep = _sglang_sweep(tmp_path / "s.jsonl", error="", completed=4)
    code, text = _llama("--load-sweep", str(sweep))
    assert code == 2, text
    assert text.strip() == (
        f"specsim: error: {sweep}: line 1: errors: 6 requests without an error (5 of them "
        "with answer tokens), but completed is 4"
    )
    assert "Traceback" not in text
