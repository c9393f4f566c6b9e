"""Serving validation: Qwen3.8-27B (NVFP4) on one GB10 (DGX Spark), vLLM 0.27.1, plain and with
its MTP layer (3 tokens, a chain): aggregate output tok/s of one batch of C requests.

The curve (Avarok-Cybersecurity/atlas bench/ladder38, August 2026;
sim/validation/data/serving_curves.toml ``atlas_qwen38_gb10``): C = 1-128 streams, a rep one
batch of C requests sent at once (~200 prompt tokens, 1,024 answer tokens), the mean of 3
reps; the plain server kept a BF16 KV cache, the MTP server an FP8 one. By the rule
pre-registered in docs/studies/case50-qwen38-gb10.md (case 50) before any scored run:

* calibrated on C = 1 only, on the simulated job (each prefill counted once): the batch-1
  decode step so that the plain job gives the measured tok/s, then one flat conditional rate
  (no per-cycle overhead beyond the derived passes) so that the MTP job gives its tok/s;
* the model is cases 39-44's Qwen3.8-27B (``QWEN38_MODEL``, its Gated DeltaNet state
  included) with NVFP4 decoder weights, on the GB10 preset, vLLM's chunked prefill at its
  8,192-token default, at most 128 running requests, the KV pool from 0.85 of the memory
  the box reports;
* scored: both arms' aggregate tok/s at C = 2-128 and the load where the gain falls
  through 1.
"""

from __future__ import annotations

import functools
from typing import Any

from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.memory import VLLM_GPU_MEMORY_UTILIZATION, reserve_range_gib
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.decision_cases import published_crossover
from sim.validation.engine_versions import VLLM_2026, graph_capture
from sim.validation.hybrid_mtp_serving_cases import GDN_STATE_BYTES, QWEN38_MODEL
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED, Point, simulate_point
from sim.validation.two_arm_rows import gain_text, level_root, row_maker, two_arm_rows

__all__ = [
    "CALIBRATED_USERS",
    "KV_RESERVE_GIB",
    "MTP",
    "NVFP4_BYTES_PER_PARAM",
    "PLAIN",
    "SCORED",
    "calibrated",
    "gb10_qwen38_cases",
    "measured",
    "scenario",
    "simulate",
]

PLAIN, MTP = "no speculation", "MTP k=3"
K = pub.ATLAS_GB10_K
GPU = "GB10"
#: The loads scored (C = 1 calibrates).
SCORED = (2, 4, 8, 16, 32, 64, 128)
CALIBRATED_USERS = (1.0,)
#: NVFP4: a 4-bit value a parameter and one FP8 scale a block of 16.
NVFP4_BYTES_PER_PARAM = 0.5 + 1 / 16
#: The decoder layers' weights in BF16-sized parameters (the model's base width): a roofline
#: at the BF16 peak over them is NVFP4's W4A4 peak (4x BF16's) over 0.5625 / 0.5 of them.
LAYER_PARAMS_BF16 = QWEN38_MODEL["layer_params"] * NVFP4_BYTES_PER_PARAM / 2
#: The KV pool: the model's vLLM rule takes 0.9 of the preset's memory, the servers took
#: 0.85 of what the box reports; the difference is added to the default reserve (GiB).
KV_RESERVE_GIB = round(
    reserve_range_gib("vllm", GPU_PRESETS[GPU].memory_gb)[0]
    + VLLM_GPU_MEMORY_UTILIZATION * GPU_PRESETS[GPU].memory_gb
    - pub.ATLAS_GB10_MEMORY_UTILIZATION * pub.ATLAS_GB10_REPORTED_MEMORY_GIB,
    2,
)
#: Mean context while decoding (tokens): the prompt and half the answer.
CONTEXT = pub.ATLAS_GB10_INPUT_TOKENS + pub.ATLAS_GB10_OUTPUT_TOKENS / 2
#: The brackets of the two searches: the batch-1 decode step (ms) and the conditional rate.
_DECODE_BRACKET_MS = (20.0, 200.0)
_ALPHA_BRACKET = (0.01, 0.999)
#: The searches stop when the bracket is this narrow (ms; rate).
_DECODE_TOL_MS, _ALPHA_TOL = 1e-4, 1e-5


def measured(route: str, users: int) -> float:
    """``route``'s aggregate output tok/s at ``users`` streams (the mean of 3 reps)."""
    return pub.ATLAS_GB10_TOK_S[route][users]


def scenario(decode_ms: float, alpha: float, kv_bytes_per_element: float) -> Scenario:
    """The scenario with batch-1 decode step ``decode_ms``, flat conditional rate ``alpha``
    and a KV cache of ``kv_bytes_per_element`` bytes an element (2: BF16, the plain server's;
    1: FP8, the MTP server's)."""
    share = kv_bytes_per_element / 2
    model: dict[str, Any] = {
        **QWEN38_MODEL,
        "name": "Qwen3.8-27B-NVFP4",
        "layer_params": LAYER_PARAMS_BF16,
        "kv_bytes_per_token": QWEN38_MODEL["kv_bytes_per_token"] * share,
        "draft_kv_bytes_per_token": QWEN38_MODEL["draft_kv_bytes_per_token"] * share,
    }
    raw = {
        "name": "qwen38-27b-nvfp4-1xgb10-vllm-mtp3",
        "model": model,
        "server": {"engine": "vllm"},
        # one GPU: no collective is priced, the interconnect is a placeholder
        "hardware": {"gpus": 1, "interconnect": "pcie-gen5", "gpu": GPU},
        "timing": {"decode_ms": decode_ms, "verify_cuda_graph": True, "context_tokens": CONTEXT},
        "speculation": {"num_steps": K},
        "acceptance": {"alpha": alpha},
        "workload": {
            "lengths": "fixed",
            "input_tokens": pub.ATLAS_GB10_INPUT_TOKENS,
            "output_tokens": pub.ATLAS_GB10_OUTPUT_TOKENS,
        },
        # vLLM 0.27.1: asynchronous scheduling (default since 0.14), host work hidden in both
        # arms; --enable-prefix-caching (a nonce a request: no hits); no
        # --max-num-batched-tokens (8,192 on a GPU of 70 GiB or more); --max-num-seqs 128
        "serving": {
            "batching": "chunked",
            "token_budget": pub.ATLAS_GB10_TOKEN_BUDGET,
            "host_overlap": "both",
            "prefix_caching": True,
            "max_running_requests": pub.ATLAS_GB10_MAX_RUNNING,
            "kv_reserve_gib": KV_RESERVE_GIB,
            **graph_capture(VLLM_2026),
        },
    }
    return scenario_from_dict(raw, source="sim.validation.gb10_qwen38_cases")


def _job(sc: Scenario, users: int) -> Point:
    """Both policies of ``sc`` on one batch of ``users`` requests."""
    return simulate_point(sc, users, users)


@functools.cache
def calibrated() -> tuple[Scenario, Scenario, float, float]:
    """(the plain arm's scenario (BF16 KV), the MTP arm's (FP8 KV), the batch-1 decode step
    in ms, alpha): the step from the simulated plain job at C = 1, then the flat rate from
    the simulated MTP job at C = 1 with that step (the serving seed's common random
    numbers)."""
    alpha0 = _ALPHA_BRACKET[0]  # the plain arm does not read the rate
    decode_ms = level_root(
        lambda ms: _job(scenario(ms, alpha0, 2.0), 1).baseline_tok_s,
        measured(PLAIN, 1),
        _DECODE_BRACKET_MS,
        _DECODE_TOL_MS,
    )
    alpha = level_root(
        lambda a: _job(scenario(decode_ms, a, 1.0), 1).speculative_tok_s,
        measured(MTP, 1),
        _ALPHA_BRACKET,
        _ALPHA_TOL,
    )
    return scenario(decode_ms, alpha, 2.0), scenario(decode_ms, alpha, 1.0), decode_ms, alpha


@functools.cache
def simulate(users: int) -> Point:
    """Both arms at one batch of ``users`` requests, each on its own server: the plain level
    from the BF16-KV scenario, the MTP level from the FP8-KV one (its standard error the
    paired gain's there times that scenario's plain level)."""
    plain_sc, mtp_sc, _, _ = calibrated()
    plain, spec = _job(plain_sc, users), _job(mtp_sc, users)
    spec_sd = spec.speedup_sd * spec.baseline_tok_s
    return Point(
        spec.speculative_tok_s / plain.baseline_tok_s,
        spec_sd / plain.baseline_tok_s,
        spec.speculative_tok_s,
        plain.baseline_tok_s,
        plain.baseline_sd,
    )


def _crossing(points: dict[int, Point]) -> tuple[Row | None, str]:
    """The crossover row (both curves cross) and its sentence."""
    measured_gain = {u: measured(MTP, u) / measured(PLAIN, u) for u in points}
    predicted_gain = {u: p.speedup for u, p in points.items()}
    measured_x = published_crossover(measured_gain)
    predicted_x = published_crossover(predicted_gain)
    if measured_x is None:
        return None, "The measured gain does not cross 1 up to 128 streams."
    if predicted_x is None:
        top = max(predicted_gain)
        return None, (
            f"Crossing of the gain through 1: measured {measured_x:.1f} streams; predicted: "
            f"none up to {top} (gain {predicted_gain[top]:.2f} there) - a miss, not scored as "
            "a number."
        )
    row = Row(
        "crossover concurrency (users)",
        "atlas ladder Qwen3.8-27B GB10 MTP crossover",
        "k = 3, aggregate tok/s, one batch of 2..128 requests",
        measured_x,
        predicted_x,
    )
    return row, (
        f"Crossing of the gain through 1: measured {measured_x:.1f} streams, predicted "
        f"{predicted_x:.1f} (linear between the loads around it)."
    )


def _setup_lines() -> tuple[str, ...]:
    _, _, decode_ms, alpha = calibrated()
    return (
        "Qwen3.8-27B (cases 39-44's shapes: 64 layers, 48 Gated DeltaNet with their FP32 "
        f"recurrent state of {GDN_STATE_BYTES / 1e6:.0f} MB a request and conv state, 16 full "
        f"attention) with NVFP4 decoder weights ({NVFP4_BYTES_PER_PARAM} bytes a parameter: "
        f"{LAYER_PARAMS_BF16 / 1e6:.2f}M BF16-sized parameters a layer), ASSUMED: the LM head "
        "and the MTP layer in BF16, the state as vLLM 0.28/0.30 keep it; on one GB10 (a preset "
        "from secondary sources: 273 GB/s, 125 TFLOPS BF16 dense), vLLM 0.27.1: the plain "
        "server's KV in BF16 (65,536 bytes a token), the MTP server's in FP8 (32,768), each "
        "arm simulated on its own server",
        "chunked prefill at vLLM's default 8,192-token budget, at most "
        f"{pub.ATLAS_GB10_MAX_RUNNING} running requests, prefix caching on (no hits), host work "
        "hidden in both arms, graph capture as vLLM 2026; the KV pool derived by vLLM's rule "
        f"with {KV_RESERVE_GIB:.2f} GiB reserved (the default plus the difference between 0.9 "
        f"of the preset's 128 GiB and the servers' 0.85 of the "
        f"{pub.ATLAS_GB10_REPORTED_MEMORY_GIB} GiB the box reports)",
        f"calibrated on C = 1 only, on the simulated job: batch-1 decode {decode_ms:.3f} ms, "
        f"chosen so that the plain job of one request gives the measured "
        f"{measured(PLAIN, 1):.2f} tok/s; MTP ({K} tokens): no per-cycle overhead beyond the "
        "derived passes (ASSUMED: no accept length or cycle of the vLLM server published), one "
        f"flat conditional rate alpha = {alpha:.4f} so that the MTP job gives the measured "
        f"{measured(MTP, 1):.2f} tok/s",
        f"the job: one batch of C requests of {pub.ATLAS_GB10_INPUT_TOKENS} prompt and "
        f"{pub.ATLAS_GB10_OUTPUT_TOKENS} answer tokens (fixed; ASSUMED every answer reaches "
        "max_tokens), aggregate output tok/s over the batch's wall time; "
        f"{SERVING_REPLICATIONS} replications, seed {SERVING_SEED}; the ± of the MTP rows is "
        "the paired gain's Monte Carlo standard error on its own server times that server's "
        "plain level",
    )


def case_qwen38_gb10() -> Case:
    """Qwen3.8-27B (NVFP4) + MTP (3 tokens) on one GB10, vLLM 0.27.1: both arms' aggregate
    tok/s at C = 2-128 and the crossing."""
    points = {users: simulate(users) for users in SCORED}
    row = row_maker("atlas ladder Qwen3.8-27B GB10", 1, measured, CALIBRATED_USERS)
    rows = two_arm_rows(points, row, PLAIN, MTP)
    crossover, crossing = _crossing(points)
    if crossover is not None:
        rows = (*rows, crossover)
    one = simulate(1)
    return Case(
        "Qwen3.8-27B (NVFP4, hybrid) + its MTP layer (3 tokens) on one GB10 (DGX Spark), vLLM "
        "0.27.1: aggregate output tok/s of one batch of C requests, with and without "
        "speculation",
        (pub.ATLAS_GB10_URL,),
        (
            f"atlas ladder Qwen3.8-27B GB10 {PLAIN} C=1 (the job)",
            f"atlas ladder Qwen3.8-27B GB10 {MTP} C=1 (the job)",
        ),
        rows,
        setup=_setup_lines(),
        notes=(
            f"Gain (MTP / plain aggregate tok/s) by C: {gain_text(points, measured, PLAIN, MTP)}"
            f". {error_summary(rows)}. At C = 1 (calibrated on the job) the simulated job "
            f"gives {one.baseline_tok_s:.2f} (plain) and {one.speculative_tok_s:.2f} (MTP) "
            f"tok/s against {measured(PLAIN, 1):.2f} and {measured(MTP, 1):.2f} measured. "
            + crossing,
        ),
    )


def gb10_qwen38_cases() -> tuple[Case, ...]:
    return (case_qwen38_gb10(),)
