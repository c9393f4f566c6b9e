"""Per-request acceptance: the SGLang and vLLM files read (samples written as those servers
write them, tests/data/formats), the Beta spread fitted to them by its exact law, and the
spread written by ``specsim calibrate --per-request``."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.binding.acceptance_model import acceptance_model
from sim.binding.bound import bind
from sim.calibration.importers.per_request import read_per_request
from sim.calibration.importers.per_request_counts import RequestCounts
from sim.calibration.spread_fit import KAPPA_BOUNDS, fit_spread, latent_log_weights
from sim.cli import main
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario

DATA = Path(__file__).parents[1] / "data" / "formats"
LLAMA = str(Path(__file__).parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
SGLANG_EXPORT = DATA / "sglang_request_metrics.log"
SGLANG_BATCH = DATA / "sglang_generate_batch.json"
VLLM = DATA / "vllm_completions_spec_metrics.jsonl"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- readers


def test_sglang_exported_records_give_counts_and_rejections() -> None:
    file = read_per_request(SGLANG_EXPORT)
    records = [r for r in _lines(SGLANG_EXPORT) if r["finish_reason"]["type"] != "abort"]
    assert file.num_steps == 3  # spec_num_proposed_drafts / spec_verify_ct
    assert file.skipped == 1  # the aborted request
    assert [r.verify_steps for r in file.requests] == [r["spec_verify_ct"] for r in records]
    assert [r.accepted for r in file.requests] == [r["spec_num_correct_drafts"] for r in records]
    # a step that accepted all 3 drafts rejected none
    hists = [r["spec_correct_drafts_histogram"] for r in records]
    assert [r.rejected for r in file.requests] == [sum(h[:3]) for h in hists]


def test_sglang_generate_batch_without_histogram_counts_accepted_from_tokens() -> None:
    file = read_per_request(SGLANG_BATCH, num_steps=3)
    metas = [r["meta_info"] for r in json.loads(SGLANG_BATCH.read_text())]
    # the prefill emits the first token, every verify step its accepted drafts and one more
    assert [r.accepted for r in file.requests] == [
        m["completion_tokens"] - 1 - m["spec_verify_ct"] for m in metas
    ]
    assert all(r.rejected is None for r in file.requests)
    with pytest.raises(SpecsimError, match="num_steps unknown"):
        read_per_request(SGLANG_BATCH)


def test_vllm_responses_give_rejections_from_histogram_or_per_step_lists() -> None:
    file = read_per_request(VLLM)
    stats = [r["metrics"]["speculative_decoding"] for r in _lines(VLLM)]
    assert file.num_steps == 3 and file.skipped == 0
    for req, sd in zip(file.requests, stats, strict=True):
        assert req.accepted == sd["num_accepted_draft_tokens"]
        if "per_step_drafted" in sd:  # detailed: a step rejected when it accepted fewer
            pairs = zip(sd["per_step_accepted"], sd["per_step_drafted"], strict=True)
            assert req.rejected == sum(a < d for a, d in pairs)
        else:
            assert req.rejected == sum(sd["acceptance_histogram"][:3])
    assert file.pooled_accept_length == pytest.approx(
        1
        + sum(s["num_accepted_draft_tokens"] for s in stats)
        / sum(s["num_spec_steps"] for s in stats),
        rel=1e-12,
    )


def test_sglang_log_requests_finish_lines_in_both_formats() -> None:
    import ast

    text_log = read_per_request(DATA / "sglang_log_requests.log")
    # the meta_info of each text line, parsed as the Python literal it is in this sample
    metas = [
        ast.literal_eval(line[line.rindex("'meta_info': ") + 13 : -1])
        for line in (DATA / "sglang_log_requests.log").read_text().splitlines()
        if "Finish: obj=" in line
    ]
    assert len(text_log.requests) == len(metas) == 25 and text_log.num_steps == 3
    assert [(r.verify_steps, r.accepted) for r in text_log.requests] == [
        (m["spec_verify_ct"], m["spec_num_correct_drafts"]) for m in metas
    ]
    json_log = read_per_request(DATA / "sglang_log_requests_json.log")
    lines = (DATA / "sglang_log_requests_json.log").read_text().splitlines()
    metas = [json.loads(x[x.index("{") :])["out"]["meta_info"] for x in lines]
    assert [r.rejected for r in json_log.requests] == [
        sum(m["spec_correct_drafts_histogram"][:3]) for m in metas
    ]


# --------------------------------------------------------------------------- the law


def _enumerated_pmf(n: int, k: int, a: float) -> dict[int, float]:
    """P(S | n, a) by enumerating every sequence of n steps' accepted counts."""
    step = [a**j * (1 - a) for j in range(k)] + [a**k]
    out: dict[int, float] = {}
    for seq in itertools.product(range(k + 1), repeat=n):
        out[sum(seq)] = out.get(sum(seq), 0.0) + math.prod(step[j] for j in seq)
    return out


@pytest.mark.parametrize(("n", "k"), [(1, 1), (3, 2), (4, 3), (5, 4)])
def test_latent_weights_give_the_exact_law_of_accepted_drafts(n: int, k: int) -> None:
    a = 0.63
    exact = _enumerated_pmf(n, k, a)
    s_values = np.array(sorted(exact))
    log_w, t = latent_log_weights(np.full(s_values.size, n), s_values, k)
    for row, s in enumerate(s_values):
        p = np.sum(np.exp(log_w[row]) * a**s * (1 - a) ** (n - t))
        assert p == pytest.approx(exact[int(s)], rel=1e-12)


# --------------------------------------------------------------------------- the fit


def _simulate(seed: int, mean: float, kappa: float, k: int, requests: int) -> list[tuple]:
    """(steps, accepted, rejected) of requests whose rate is Beta(mean, kappa), each step a
    chain of k drafts checked in order."""
    rng = np.random.default_rng(seed)
    rates = rng.beta(mean * kappa, (1 - mean) * kappa, requests)
    out = []
    for a in rates:
        steps = int(rng.integers(20, 80))
        accepted = np.cumprod(rng.random((steps, k)) < a, axis=1).sum(axis=1)
        out.append((steps, int(accepted.sum()), int((accepted < k).sum())))
    return out


@pytest.mark.parametrize("with_rejections", [True, False])
def test_fit_recovers_a_known_beta_within_4_standard_errors(with_rejections: bool) -> None:
    mean, kappa, k = 0.68, 5.0, 4
    data = _simulate(20261205, mean, kappa, k, 200)
    requests = [
        RequestCounts(i, n, s, f if with_rejections else None) for i, (n, s, f) in enumerate(data)
    ]
    fit = fit_spread(requests, k)
    assert fit.identified
    assert fit.mean_stderr is not None and fit.kappa_stderr is not None
    assert abs(fit.mean - mean) < 4 * fit.mean_stderr
    assert abs(fit.kappa - kappa) < 4 * fit.kappa_stderr
    lo, hi = fit.kappa_interval
    assert hi is not None and lo < fit.kappa < hi
    assert fit.latent == (0 if with_rejections else len(requests))


def test_fit_leaves_kappa_open_above_when_every_request_has_one_rate() -> None:
    rng = np.random.default_rng(11)
    requests = []
    for i in range(60):
        accepted = np.cumprod(rng.random((60, 3)) < 0.7, axis=1).sum(axis=1)
        requests.append(RequestCounts(i, 60, int(accepted.sum()), int((accepted < 3).sum())))
    fit = fit_spread(requests, 3)
    assert fit.kappa_interval[1] is None and not fit.identified
    assert fit.kappa_interval[0] > 10.0  # a wide spread is ruled out
    assert abs(fit.mean - 0.7) < 4 * (fit.mean_stderr or 0.0)


# --------------------------------------------------------------------------- calibrate


def test_calibrate_writes_the_spread_and_keeps_the_pooled_accept_length(tmp_path: Path) -> None:
    out = tmp_path / "cal.toml"
    args = ["calibrate", "--scenario", LLAMA, "--set", "speculation.num_steps=3",
            "--per-request", str(VLLM), "--out", str(out), "--json"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    spread = body["per_request_spread"]
    scenario = load_scenario(out)
    spec = scenario.acceptance
    assert spec is not None and spec.concentration == pytest.approx(
        spread["concentration"], rel=1e-5
    )
    entry = scenario.uncertainty.entries()["acceptance.concentration"]
    assert entry.resolved_origin == "measured" and str(VLLM) in entry.reason
    assert entry.stderr == pytest.approx(spread["concentration_stderr"], rel=1e-3)
    # the scenario with the spread pools its cycles to the file's accept length at k = 3
    pooled = read_per_request(VLLM).pooled_accept_length
    model = acceptance_model(spec, 3)
    assert model.heterogeneous
    assert model.cycle_mean_accept_length() == pytest.approx(pooled, rel=1e-6)
    # and the written mean rate is the per-request fit's within its error
    assert abs(spec.alpha - spread["mean"]) < 4 * spread["mean_stderr"]


def test_calibrate_writes_a_range_when_the_data_cannot_bound_the_spread(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    lines = []
    for i in range(40):
        acc = np.cumprod(rng.random((50, 3)) < 0.7, axis=1).sum(axis=1)
        hist = np.bincount(acc, minlength=4).tolist()
        sd = {
            "num_spec_steps": 50,
            "num_accepted_draft_tokens": int(acc.sum()),
            "num_draft_tokens": 150,
            "num_spec_tokens": 3,
            "acceptance_histogram": hist,
        }
        lines.append(json.dumps({"id": f"c{i}", "metrics": {"speculative_decoding": sd}}))
    path = tmp_path / "one_rate.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cal.toml"
    args = ["calibrate", "--scenario", LLAMA, "--set", "speculation.num_steps=3",
            "--per-request", str(path), "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    entry = load_scenario(out).uncertainty.entries()["acceptance.concentration"]
    assert entry.stderr is None and entry.range is not None
    assert entry.range[1] == KAPPA_BOUNDS[1]
    assert "do not bound it above" in entry.reason


def test_a_file_at_another_num_steps_than_the_base_is_refused() -> None:
    args = ["calibrate", "--scenario", LLAMA, "--per-request", str(VLLM)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "num_steps" in result.output


def test_init_hands_a_per_request_file_to_calibrate(tmp_path: Path) -> None:
    quick = Path(__file__).parents[1] / "data" / "quickstart"
    out = tmp_path / "init.toml"
    args = ["init", "--config", str(quick / "config.json"), "--gpu", "H100", "--tp", "4",
            "--engine", "vllm", "--drafter", "eagle3", "-k", "3",
            "--vllm-bench", str(quick / "bench_eagle3.json"),
            "--per-request", str(VLLM), "--out", str(out), "--quiet"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    scenario = load_scenario(out)
    assert scenario.acceptance is not None and scenario.acceptance.concentration is not None
    assert "acceptance.concentration" in scenario.uncertainty.entries()


def test_the_written_spread_is_an_uncertain_input_of_later_answers(tmp_path: Path) -> None:

    out = tmp_path / "cal.toml"
    args = ["calibrate", "--scenario", LLAMA, "--set", "speculation.num_steps=3",
            "--per-request", str(SGLANG_EXPORT), "--out", str(out)]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    inputs = {u.field: u for u in bind(load_scenario(out)).inputs}
    spread = inputs["acceptance.concentration"]
    assert spread.origin == "measured" and spread.kind == "normal" and spread.stderr > 0


def test_a_prediction_carries_the_spread_error() -> None:
    from sim.binding.closed_form import closed_form_tok_s
    from sim.calibration.calibrate import calibrate
    from sim.calibration.measurements import Measurements
    from sim.calibration.spread import per_request_measurement, with_spread

    base = load_scenario(LLAMA, ("speculation.num_steps=3",))
    file = read_per_request(VLLM)
    cal = calibrate(base, Measurements() + per_request_measurement(file))
    fit = fit_spread(list(file.requests), file.num_steps)
    spread = with_spread(cal, fit, str(VLLM))
    assert spread.value("acceptance.concentration").stderr == fit.kappa_stderr
    # tok/s moves with the concentration, so its error enters the prediction's
    tok_s = closed_form_tok_s(spread.scenario)
    wider = closed_form_tok_s(spread.with_values({"acceptance.concentration": fit.kappa / 2}))
    assert abs(wider - tok_s) > 1e-4 * tok_s
    assert spread.prediction_stderr(closed_form_tok_s) > cal.prediction_stderr(closed_form_tok_s)
