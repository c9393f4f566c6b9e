"""``specsim calibrate --load-sweep``: the batched terms fitted after the batch-1 fit."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sim.cli import main
from sim.scenario.load import load_scenario

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


def test_plain_sweep_reports_the_batched_terms_and_writes_them(tmp_path: Path) -> None:
    out = tmp_path / "out.toml"
    code, text = _run("--baseline-tok-s", "88.5", "--load-sweep", str(_sweep(tmp_path / "s.jsonl")),
                      "--out", str(out))  # fmt: skip
    assert code == 0, text
    assert "batched terms from the load sweep" in text
    # plain decoding on an engine that overlaps it: no figure depends on the host work
    assert "serving.host_us_per_request" in text and "plausible range [7, 38]" in text
    scenario = load_scenario(out)
    assert scenario.serving is not None and scenario.serving.kernel_slope is not None


def test_json_carries_the_ranges(tmp_path: Path) -> None:
    code, text = _run("--baseline-tok-s", "88.5", "--load-sweep",
                      str(_sweep(tmp_path / "s.jsonl")), "--json")  # fmt: skip
    assert code == 0, text
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


def test_the_speculative_host_factor_is_one_line_saying_why_it_is_not_fitted(
    tmp_path: Path,
) -> None:
    code, text = _run("--baseline-tok-s", "88.5", "--load-sweep", str(_sweep(tmp_path / "s.jsonl")))
    assert code == 0, text
    (line,) = [t for t in text.splitlines() if "serving.host_spec_factor" in t]
    assert "kept (the sweep has no speculative runs at two or more loads" in line
    assert "the sweep allows 0-100" in line


def test_bad_sweep_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"max_concurrency": 4, "mean_tpot_ms": -3}\n')
    code, text = _run("--baseline-tok-s", "88.5", "--load-sweep", str(bad))
    assert code == 2
    assert text.strip().splitlines()[-1].startswith("specsim: error: ")
    assert "mean_tpot_ms" in text
