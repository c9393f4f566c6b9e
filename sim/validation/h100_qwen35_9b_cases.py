"""Serving validation: Qwen3.5-9B (a hybrid: 24 Gated DeltaNet and 8 full-attention layers) on
one H100 SXM, vLLM v0.17.1, plain and with its MTP layer (1 token): mean latency a request
against the request rate of an open loop.

The curve (gpustack/gpustack docs/performance-lab/qwen3.5-9b/h100-latency.md;
sim/validation/data/serving_curves.toml ``gpustack_qwen35_9b_h100``): guidellm at a constant
1, 4, 8 and 16 requests a second over 1,000 ShareGPT requests (342.06 prompt and 281.41
answer tokens a request on average), the mean end-to-end latency of each arm. By the rule
pre-registered in docs/studies/case52-qwen35-9b.md (case 52) before any scored run:

* calibrated on r = 1 only, on the simulated open loop: the batch-1 decode step so that the
  plain arm's mean latency is the measured one, then with that step (no per-cycle overhead
  beyond the derived passes) one conditional rate for the chain of 1 so that the MTP arm's
  is;
* the model is Qwen3.5-9B's text config (``QWEN35_9B_MODEL``: its Gated DeltaNet state and
  conv state priced as cases 39-50 price Qwen3.8's) on the H100 preset, vLLM's chunked
  prefill at its 8,192-token default, host work hidden in both arms;
* scored: both arms' mean latency at r = 4, 8 and 16.
"""

from __future__ import annotations

import functools
from typing import Any

from sim.binding.bound import bind
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.hybrid_mtp_serving_cases import Arm, qwen38_vllm_scenario
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.two_arm_rows import level_root

__all__ = [
    "CALIBRATION_RATE",
    "MTP",
    "PLAIN",
    "QWEN35_9B_MODEL",
    "SCORED_RATES",
    "calibrated",
    "h100_qwen35_9b_cases",
    "measured",
    "scenario",
    "simulate",
]

PLAIN, MTP = "no speculation", "MTP k=1"
K = pub.GPUSTACK_QWEN35_K
#: The rate that calibrates (requests a second) and the rates scored.
CALIBRATION_RATE = 1
SCORED_RATES = (4, 8, 16)
#: Replications a rate (each the run's 1,000 requests) and the root seed: case 33's.
RATE_REPLICATIONS = 2
RATE_SEED = 20261204
#: vLLM's chunked-prefill budget with no --max-num-batched-tokens on a GPU of 70 GiB or more.
TOKEN_BUDGET = 8192
#: The lengths' log-sd (prompts and answers): ASSUMED, as cases 39-42.
LOG_SD = 0.5

#: Qwen/Qwen3.5-9B's text config (qwen3_5_text; a public test fixture's copy, the checkpoint's
#: revision c2022362): 32 layers, three linear_attention then one full_attention, 8 times;
#: hidden 4096, MLP 12288; full attention 16 query and 4 KV heads of 256 with an output gate
#: (q_proj twice as wide); Gated DeltaNet 16 key heads and 32 value heads of 128, a conv of 4;
#: vocabulary 248,320, untied; mamba_ssm_dtype float32; one MTP layer sharing the embedding.
#: A full-attention layer: q 4096 x 8192, k and v 4096 x 1024, o 4096 x 4096, MLP 3 x 4096 x
#: 12288: 209.72M; a Gated DeltaNet layer: in_proj_qkvz 4096 x 12288, in_proj_ba 4096 x 64,
#: out_proj 4096 x 4096, the MLP: 218.37M; their mean over 8 and 24 layers.
_FULL_LAYER = 4096 * 8192 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 12288
_GDN_LAYER = 4096 * 12288 + 4096 * 64 + 4096 * 4096 + 3 * 4096 * 12288
_LM_HEAD = 248320 * 4096
#: The recurrent state a request: 24 layers x 32 value heads x 128 x 128 in float32.
GDN_STATE_BYTES = 24 * 32 * 128 * 128 * 4
QWEN35_9B_MODEL: dict[str, Any] = {
    "name": "Qwen3.5-9B",
    "layers": 32,
    "hidden_size": 4096,
    # every pass here is graphed (vLLM's FULL graphs up to 512 tokens), so the count does not
    # enter the case
    "kernels_per_layer": 11,
    "layer_params": (8 * _FULL_LAYER + 24 * _GDN_LAYER) / 32,
    "lm_head_params": float(_LM_HEAD),
    # the MTP layer (full attention), its fc 2 x 4096 -> 4096 and the target's LM head
    "draft_params": float(_FULL_LAYER + 2 * 4096 * 4096 + _LM_HEAD),
    # the 8 full-attention layers: 4 KV heads x 256 x 2 (K and V) x 2 bytes
    "kv_bytes_per_token": 4.0 * 256 * 2 * 2 * 8,
    # 16 heads x 256 x 2 (scores and values) x 2 FLOPs x 8 layers
    "attention_flops_per_pair": 16.0 * 256 * 2 * 2 * 8,
    "draft_kv_bytes_per_token": 4.0 * 256 * 2 * 2,
    "state_bytes_per_request": float(GDN_STATE_BYTES),
    # 24 layers x (2 x 16 key heads x 128 + 32 value heads x 128) channels in BF16
    "conv_state_bytes_per_position": float(24 * (2 * 16 * 128 + 32 * 128) * 2),
    "conv_state_positions": 4 - 1,
    "linear_layers": 24,
}
MTP_ARM = Arm(MTP, "qwen35-9b-1xh100-vllm-mtp1", {"num_steps": K}, QWEN35_9B_MODEL)
#: The brackets of the two searches: the batch-1 decode step (ms) and the conditional rate.
_DECODE_BRACKET_MS = (2.0, 14.0)
_ALPHA_BRACKET = (0.01, 0.999)
_DECODE_TOL_MS, _ALPHA_TOL = 1e-4, 1e-5


def measured(route: str, rate: int) -> float:
    """``route``'s mean latency a request (ms) at ``rate`` requests a second."""
    return 1e3 * pub.GPUSTACK_QWEN35_LATENCY_S[route][rate]


def scenario(decode_ms: float, alpha: float) -> Scenario:
    """The scenario with batch-1 decode step ``decode_ms`` and flat conditional rate
    ``alpha`` (no per-cycle overhead beyond the derived passes)."""
    sc = qwen38_vllm_scenario(
        MTP_ARM,
        # one SXM GPU (TP 1: no collective, the link does not enter)
        hardware={"gpus": 1, "interconnect": "nvlink4", "gpu": "H100"},
        decode_ms=decode_ms,
        prompt=pub.GPUSTACK_QWEN35_INPUT_TOKENS,
        output=pub.GPUSTACK_QWEN35_OUTPUT_TOKENS,
        sigmas=(LOG_SD, LOG_SD),
        source="sim.validation.h100_qwen35_9b_cases",
    )
    return with_overrides(
        sc,
        {"serving.token_budget": TOKEN_BUDGET, "acceptance.alpha": alpha},
        source="validation",
    )


@functools.cache
def _run(decode_ms: float, alpha: float, rate: int) -> dict[str, tuple[float, float, float]]:
    """Both policies at ``rate`` requests a second (Poisson arrivals, the run's 1,000
    requests a replication): (mean end-to-end latency ms, its Monte Carlo standard error,
    mean TTFT ms) by policy; the standard error is the replication means' (their 95% t
    interval's half-width over the t quantile at R - 1 degrees of freedom)."""
    sc = with_load(scenario(decode_ms, alpha), rate_per_s=float(rate), source="validation")
    sc = with_overrides(
        sc, {"workload.requests": pub.GPUSTACK_QWEN35_REQUESTS}, source="validation"
    )
    setup = serving_setup(bind(sc), source="validation")
    run = simulate_serving(
        setup.plan, setup.draftings, replications=RATE_REPLICATIONS, seed=RATE_SEED
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    out = {}
    for name in (BASELINE, SPECULATIVE):
        e2e = summary.policies[name].metrics["e2e_ms"]
        sd = sd_from_ci95(e2e.ci95, summary.replications)
        out[name] = (e2e.mean, sd, summary.policies[name].metrics["ttft_ms"].mean)
    return out


@functools.cache
def calibrated() -> tuple[float, float]:
    """(the batch-1 decode step in ms, alpha): the step from the plain arm's simulated mean
    latency at r = 1, then the flat rate from the MTP arm's with that step (common random
    numbers: the same seed at every trial)."""
    alpha0 = _ALPHA_BRACKET[0]  # the plain arm does not read the rate
    decode_ms = level_root(
        lambda ms: _run(ms, alpha0, CALIBRATION_RATE)[BASELINE][0],
        measured(PLAIN, CALIBRATION_RATE),
        _DECODE_BRACKET_MS,
        _DECODE_TOL_MS,
    )
    alpha = level_root(
        lambda a: _run(decode_ms, a, CALIBRATION_RATE)[SPECULATIVE][0],
        measured(MTP, CALIBRATION_RATE),
        _ALPHA_BRACKET,
        _ALPHA_TOL,
    )
    return decode_ms, alpha


def simulate(rate: int) -> dict[str, tuple[float, float, float]]:
    """Both arms at ``rate`` on the calibrated scenario, keyed by route."""
    out = _run(*calibrated(), rate)
    return {PLAIN: out[BASELINE], MTP: out[SPECULATIVE]}


def _row(route: str, rate: int, predicted: float, sd: float) -> Row:
    return Row(
        f"mean end-to-end latency ms ({route})",
        f"gpustack Qwen3.5-9B H100 {route} {rate} req/s",
        f"open loop at {rate} requests/s, 1,000 requests",
        measured(route, rate),
        predicted,
        sd,
        load=float(rate),
        calibrated_loads=(float(CALIBRATION_RATE),),
        side="plain" if route == PLAIN else "speculative",
    )


def _setup_lines() -> tuple[str, ...]:
    decode_ms, alpha = calibrated()
    m = QWEN35_9B_MODEL
    return (
        "Qwen3.5-9B (text config from a public copy, ASSUMED the checkpoint's: 32 layers, 24 "
        "Gated DeltaNet with their FP32 recurrent state of "
        f"{GDN_STATE_BYTES / 1e6:.1f} MB a request and conv state, 8 full attention; "
        f"{m['layer_params'] / 1e6:.1f}M parameters a layer, LM head "
        f"{m['lm_head_params'] / 1e6:.1f}M, KV {m['kv_bytes_per_token']:,.0f} bytes a token) in "
        "BF16 on one H100 SXM (preset), vLLM v0.17.1; its MTP layer as the drafter "
        f"({m['draft_params'] / 1e9:.3f}B a pass with the shared LM head)",
        f"chunked prefill at vLLM's default {TOKEN_BUDGET:,}-token budget, prefix caching on "
        "(no hits), host work hidden in both arms, graph capture as vLLM 2026; ASSUMED: "
        "--language-model-only and --performance-mode=interactivity (the MTP arm's) change "
        "no cost the model prices",
        f"calibrated on r = {CALIBRATION_RATE} only, on the simulated open loop: batch-1 "
        f"decode {decode_ms:.3f} ms so that the plain arm's mean latency is the measured "
        f"{measured(PLAIN, CALIBRATION_RATE) / 1e3:.2f} s; no per-cycle overhead beyond the "
        f"derived passes, one flat conditional rate alpha = {alpha:.4f} (accept length "
        f"{1 + alpha:.3f}) so that the MTP arm's is the measured "
        f"{measured(MTP, CALIBRATION_RATE) / 1e3:.2f} s",
        "the job: Poisson arrivals at r requests/s (ASSUMED; guidellm's constant profile "
        f"spaces them evenly), {pub.GPUSTACK_QWEN35_REQUESTS:,} requests a replication, "
        f"lognormal prompts and answers of mean {pub.GPUSTACK_QWEN35_INPUT_TOKENS:.2f} and "
        f"{pub.GPUSTACK_QWEN35_OUTPUT_TOKENS:.2f} tokens (the run's), log-sd {LOG_SD} "
        f"(ASSUMED); mean end-to-end latency; {RATE_REPLICATIONS} replications, seed "
        f"{RATE_SEED}",
    )


def case_qwen35_9b_h100() -> Case:
    """Qwen3.5-9B + MTP (1 token) on one H100 SXM, vLLM v0.17.1: both arms' mean latency at
    4, 8 and 16 requests a second."""
    points = {rate: simulate(rate) for rate in SCORED_RATES}
    rows = tuple(
        _row(route, rate, p[route][0], p[route][1])
        for rate, p in points.items()
        for route in (MTP, PLAIN)
    )
    gains = "; ".join(
        f"{r}: measured {measured(PLAIN, r) / measured(MTP, r):.2f}, specsim "
        f"{p[PLAIN][0] / p[MTP][0]:.2f}"
        for r, p in points.items()
    )
    right = sum(
        (measured(PLAIN, r) > measured(MTP, r)) == (p[PLAIN][0] > p[MTP][0])
        for r, p in points.items()
    )
    one = simulate(CALIBRATION_RATE)
    ttft = pub.GPUSTACK_QWEN35_TTFT_MS
    return Case(
        "Qwen3.5-9B (hybrid: 24 Gated DeltaNet, 8 attention layers) + its MTP layer (1 token) "
        "on one H100 SXM, vLLM v0.17.1: mean latency a request against the request rate, "
        "with and without speculation",
        (pub.GPUSTACK_QWEN35_URL,),
        (
            f"gpustack Qwen3.5-9B H100 {PLAIN} {CALIBRATION_RATE} req/s mean latency",
            f"gpustack Qwen3.5-9B H100 {MTP} {CALIBRATION_RATE} req/s mean latency",
        ),
        rows,
        setup=_setup_lines(),
        notes=(
            f"Gain (plain / MTP mean latency) by rate: {gains}; the side (MTP pays) right at "
            f"{right} of {len(points)} rates (it pays at every measured rate: no crossing). "
            f"{error_summary(rows)}.",
            f"At r = {CALIBRATION_RATE} (calibrated on the mean latency) the simulated mean "
            f"TTFT is {one[PLAIN][2]:.1f} ms (plain) and {one[MTP][2]:.1f} ms (MTP) against "
            f"{ttft[PLAIN][CALIBRATION_RATE]:.1f} and {ttft[MTP][CALIBRATION_RATE]:.1f} "
            "measured (not fitted). At 8 requests/s the page also runs MTP alone: "
            f"{pub.GPUSTACK_QWEN35_MTP_ALONE_R8_S:.2f} s against the scored arm's "
            f"{measured(MTP, 8) / 1e3:.2f} s (its two other flags), not scored.",
        ),
    )


def h100_qwen35_9b_cases() -> tuple[Case, ...]:
    return (case_qwen35_9b_h100(),)
