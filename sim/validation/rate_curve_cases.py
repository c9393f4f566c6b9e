"""Serving validation on a request-rate ladder: calibrated at its lowest rate, the rest
predicted by the serving simulation.

The llm-d report (sim/validation/serving_data.py ``LLMD_QWEN3_*``) runs Qwen3-32B on 2x H200
with and without an EAGLE-3 drafter at 1, 2, 4, 8 and 16 requests a second. The case does
what a user with the 1-QPS stage alone would do: the lowest rate's two TPOTs calibrate the
scenario (the batch-1 decode on plain decoding, one conditional acceptance rate on the
speculative arm; the drafter's acceptance is not published), each placed at its mean
number of requests decoding (rate x (request latency - TTFT), Little's law, from the
stage's p50s: ``specsim calibrate --load-sweep`` places a rate run the same way). The
other four rates are simulated (open loop at the stage's rate, prefill and scheduling
included) and their TPOT p50 scored, never used to calibrate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scipy import optimize

from sim.binding.bound import bind
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.tpot_model import predicted_tpot_ms
from sim.hardware.pass_terms import PassTerms
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary

__all__ = ["rate_curve_cases"]

#: Qwen/Qwen3-32B config.json: 64 layers, hidden 5120, 64 query heads and 8 KV heads of 128,
#: intermediate 25600, vocabulary 151936, untied head. Per layer: q 5120 x 8192, k and v
#: 5120 x 1024 each, o 8192 x 5120 (94.4M), MLP 3 x 5120 x 25600 (393.2M): 487.6M. KV per
#: token and rank (the scenario's unit, sim/scenario/sections/model.py; TP 2 splits the heads):
#: 8 / 2 x 128 x 2 x 2 bytes x 64 layers; attention FLOPs per (query, key) pair and rank:
#: 64 / 2 x 128 x 2 x 2 x 64. Drafter (ASSUMED, its config is not in the report): one EAGLE-3
#: decoder layer over the 2 x 5120 fused input (q, k, v from 10240: 104.9M; o 41.9M; MLP
#: 393.2M), the 3 x 5120 -> 5120 fusion (78.6M) and a 32,000-token head (163.8M): 0.78B.
QWEN3_32B_MODEL: dict[str, Any] = {
    "name": "Qwen3-32B",
    "layers": 64,
    "hidden_size": 5120,
    "layer_params": 487.6e6,
    "lm_head_params": 777.9e6,
    "kernels_per_layer": 11,
    "draft_params": 0.78e9,
    "kv_bytes_per_token": 131072.0,
    "attention_flops_per_pair": 1048576.0,
}
#: The report's lengths: normal, mean 2048 (sd 1024, 10-4096) in and 256 (sd 128, 10-512)
#: out; the simulator draws lognormal lengths with the same coefficient of variation 0.5
#: (log-sd sqrt(ln 1.25) = 0.472): an ASSUMED shape.
LLMD_WORKLOAD: dict[str, Any] = {
    "lengths": "lognormal",
    "input_tokens": 2048,
    "input_sigma": 0.472,
    "output_tokens": 256,
    "output_sigma": 0.472,
}
LLMD_CONTEXT = 2048 + 256 / 2
CALIBRATION_QPS = 1
SCORED_QPS = (2, 4, 8, 16)
#: Monte Carlo of every scored rate: replications x the stage's requests (a stage is 120 s
#: at its rate: 120 x rate requests), one root seed.
RATE_REPLICATIONS = 2
RATE_SEED = 20261204
STAGE_S = 120
#: A measured speed-up within this of 1 is a tie: neither side is scored.
TIE = 0.02
ARMS = {"baseline": False, "EAGLE-3": True}


def _in_flight(arm: str, qps: int) -> float:
    """Mean requests decoding at a stage: rate x (request latency - TTFT), p50s."""
    latency = pub.LLMD_QWEN3_LATENCY_P50_S[arm][qps]
    return qps * (latency - pub.LLMD_QWEN3_TTFT_P50_S[arm][qps])


def _point(arm: str, qps: int) -> LoadPoint:
    return LoadPoint(
        source=pub.LLMD_QWEN3_URL,
        where=f"{arm} {qps} QPS",
        format="published table",
        load=_in_flight(arm, qps),
        load_kind="in flight",
        speculative=ARMS[arm],
        tpot_ms=pub.LLMD_QWEN3_TPOT_P50_MS[arm][qps],
        rate_per_s=float(qps),
        context_tokens=LLMD_CONTEXT,
    )


def _base() -> Scenario:
    return scenario_from_dict(
        {
            "name": "llmd-qwen3-32b-2xh200-eagle3",
            "model": QWEN3_32B_MODEL,
            "server": {"engine": "vllm"},
            "hardware": {"gpus": 2, "interconnect": "nvlink4", "gpu": "H200"},
            "timing": {
                "decode_ms": 10.0,  # replaced by the fit below
                "verify_cuda_graph": True,
                "context_tokens": LLMD_CONTEXT,
            },
            "speculation": {"num_steps": 3},
            "acceptance": {"alpha": 0.5},  # replaced by the fit below
            "workload": LLMD_WORKLOAD,
            "serving": {"batching": "chunked", "host_overlap": "both"},
        },
        source="sim.validation.rate_curve_cases (llm-d Qwen3-32B)",
    )


def _fit_field(scenario: Scenario, field: str, lo: float, hi: float, point: LoadPoint) -> Scenario:
    target = float(point.tpot_ms or 0.0)
    memo = PassTerms()  # the hardware answers every step of the root search meets again

    def gap(x: float) -> float:
        sc = with_overrides(scenario, {field: x}, source="validation")
        return float(predicted_tpot_ms(sc, [point], memo)[0]) - target

    value = optimize.brentq(gap, lo, hi, xtol=1e-6)
    return with_overrides(scenario, {field: value}, source="validation")


def llmd_scenario() -> Scenario:
    """The scenario calibrated on the 1-QPS stage: decode_ms on the baseline TPOT, then one
    conditional rate on the EAGLE-3 TPOT."""
    return llmd_calibrated(_base())


def llmd_calibrated(base: Scenario) -> Scenario:
    """``base`` calibrated on the 1-QPS stage, as ``llmd_scenario``."""
    decode = _fit_field(base, "timing.decode_ms", 1.0, 60.0, _point("baseline", CALIBRATION_QPS))
    return _fit_field(decode, "acceptance.alpha", 0.02, 0.99, _point("EAGLE-3", CALIBRATION_QPS))


def _simulate(scenario: Scenario, qps: int) -> Mapping[str, float]:
    sc = with_load(scenario, rate_per_s=float(qps), source="validation")
    requests = STAGE_S * qps
    sc = with_overrides(sc, {"workload.requests": requests}, source="validation")
    setup = serving_setup(bind(sc), source="validation")
    run = simulate_serving(
        setup.plan, setup.draftings, replications=RATE_REPLICATIONS, seed=RATE_SEED
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    return {
        "baseline": summary.policies[BASELINE].metrics["tpot_ms"].p50,
        "EAGLE-3": summary.policies[SPECULATIVE].metrics["tpot_ms"].p50,
    }


def case_llmd_qwen3() -> Case:
    """llm-d: Qwen3-32B on 2x H200, EAGLE-3 k=3 against plain decoding, 1-16 QPS."""
    sc = llmd_scenario()
    alpha = sc.acceptance.alpha if sc.acceptance else float("nan")
    rows: list[Row] = []
    sides = []
    for qps in SCORED_QPS:
        sim = _simulate(sc, qps)
        for arm in ARMS:
            rows.append(
                Row(
                    f"TPOT p50 ms ({arm})",
                    f"llm-d Qwen3-32B {arm} {qps} QPS TPOT p50",
                    f"open loop at {qps} requests/s",
                    pub.LLMD_QWEN3_TPOT_P50_MS[arm][qps],
                    sim[arm],
                    load=qps,
                    calibrated_loads=(1.0,),
                    side="plain" if arm == "baseline" else "speculative",
                )
            )
        measured = pub.LLMD_QWEN3_TPOT_P50_MS
        sides.append(
            (
                qps,
                measured["baseline"][qps] / measured["EAGLE-3"][qps],
                sim["baseline"] / sim["EAGLE-3"],
            )
        )
    speedups = "; ".join(f"{q} QPS: measured {m:.2f}, specsim {p:.2f}" for q, m, p in sides)
    decided = [(q, m, p) for q, m, p in sides if abs(m - 1.0) > TIE]
    right = sum((m > 1.0) == (p > 1.0) for _, m, p in decided)
    ties = ", ".join(f"{q}" for q, m, _ in sides if abs(m - 1.0) <= TIE)
    return Case(
        "llm-d: Qwen3-32B + EAGLE-3 (k = 3) on 2x H200, vLLM, TPOT against request rate, with "
        "and without speculation",
        (pub.LLMD_QWEN3_URL,),
        ("llm-d baseline 1 QPS TPOT p50", "llm-d EAGLE-3 1 QPS TPOT p50"),
        tuple(rows),
        setup=(
            "Qwen3-32B (config.json: 64 layers, hidden 5120, 8 KV heads; 31.2B in layers, "
            "0.78B head) on 2x H200 (preset), TP 2 over NVLink4, vLLM chunked prefill, "
            "host work hidden (asynchronous scheduling ASSUMED)",
            "drafter ASSUMED 0.78B a pass (one EAGLE-3 layer over the fused input, the fusion "
            "and a 32k-token head); the report does not give its config or acceptance",
            f"fitted on the 1-QPS stage: decode_ms = {sc.timing.decode_ms:.3f} so that plain "
            f"decoding at {_in_flight('baseline', 1):.2f} requests decoding (1 x (3.60 - "
            "0.167) s) takes the measured 13.2 ms a token; one conditional rate alpha = "
            f"{alpha:.4f} so that EAGLE-3 at {_in_flight('EAGLE-3', 1):.2f} decoding takes "
            "9.7 ms (the rate absorbs whatever per-cycle overhead the engine has)",
            "workload from the report (lengths' shape ASSUMED lognormal, same mean and "
            f"coefficient of variation); open loop, {RATE_REPLICATIONS} replications x "
            f"{STAGE_S} x rate requests (the stage's), seed {RATE_SEED}; TPOT p50 pooled "
            "over requests",
        ),
        notes=(
            f"Speed-up of TPOT (baseline / EAGLE-3): {speedups}; the side (pays or not) right "
            f"at {right} of {len(decided)} rates where the measurement decides (a tie, within "
            f"{100 * TIE:.0f}%, at {ties or 'none'} QPS). {error_summary(rows, 0)}.",
            "At 8 and 16 QPS both arms are saturated (TTFT 10-108 s): 8 QPS x 2048 prompt "
            "tokens is about as much prefill as 2 H200s compute, so the measured TPOT "
            "(~210 ms) is mostly decode steps waiting behind prefill chunks.",
        ),
    )


def rate_curve_cases() -> tuple[Case, ...]:
    return (case_llmd_qwen3(),)
