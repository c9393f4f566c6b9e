"""Serving validation: GLM-4.7-Flash (MoE, MLA) with its MTP layer on one H100 PCIe (SGLang),
output tok/s of a 64-request job against max concurrency, with and without speculation
(case 45); the source's model, job and calibration, which its EAGLE-3 arm (case 46,
sim/validation/glm_flash_eagle3_cases.py) shares through ``GlmArm``.

The curve (IneshReddy249/speculative-decoding-moe-benchmark, the raw ``sglang.bench_serving``
outputs at f598e234; sim/validation/data/serving_curves.toml ``glm47flash_mtp_h100pcie``):
64 ShareGPT prompts (28,006 input tokens), every request 256 output tokens, at max
concurrency C = 1, 4, 8, 16, 32; throughput is the job's output tokens over its duration.
The plain arm ran on SGLang 0.5.10.post1, the MTP arm (1 step, topk 1, SpecV2 overlap) on a
fork of the same period (nicetiger/sglang 0675f95): two builds, stated. By the rule
pre-registered in docs/studies/case45-glm-flash-mtp.md before any scored run:

* calibrated on C = 1 only: the plain decode step is the plain arm's mean TPOT there; the
  MTP arm's one conditional rate is its accept length there (1 + alpha, a chain of 1), the
  per-cycle overhead the one that makes the derived batch-1 cycle its mean TPOT there times
  that accept length;
* the model from GLM-4.7-Flash's configuration (``GLM47_FLASH_MODEL``), the drafter its
  NextN layer, SGLang (prefills first, host work hidden in both arms, each arm's captured
  batch sizes and the speculating server's cap of 48 from its ``server_info``) on a new
  H100-PCIe preset;
* the job: ``ClosedLoop(C, 0, 64, 1)``, prompts of 28,006 / 64 tokens (ASSUMED equal),
  answers of 256;
* scored: both arms' output tok/s at C = 4, 8, 16, 32.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.h100nvl_qwen38_cases import (
    JOB_REPLICATIONS,
    JobPoint,
    job_point,
    precision_line,
)
from sim.validation.h100nvl_qwen38_cases import job_row as shared_job_row
from sim.validation.hybrid_mtp_serving_cases import fit_at_one

__all__ = [
    "GLM47_FLASH_MODEL",
    "MTP",
    "MTP_ARM",
    "PLAIN",
    "SCORED",
    "SCORED_REPLICATIONS",
    "GlmArm",
    "calibrated",
    "crossing_note",
    "glm_flash_mtp_cases",
    "job_metric_note",
    "job_row",
    "job_setup_line",
    "prompt_tokens",
    "scored_accept_lengths",
    "simulate_job",
    "tpot_note",
]

PLAIN, MTP = "no speculation", "MTP"
#: GLM-4.7-Flash (glm4_moe_lite config: 47 layers, the first dense of intermediate 10,240,
#: hidden 2,048, 64 routed experts of intermediate 1,536 and one shared, 4 a token, MLA with
#: q_lora_rank 768, kv_lora_rank 512, 20 heads of 192 + 64 rope dims, value 256, vocab
#: 154,880; BF16). MLA a layer: q_a 2,048 x 768, q_b 768 x 20 x 256, kv_a 2,048 x 576, kv_b
#: 512 x 20 x (192 + 256), o 20 x 256 x 2,048 = 21.76M; a MoE layer adds the shared expert
#: (3 x 2,048 x 1,536) and the router (2,048 x 64); a routed expert 3 x 2,048 x 1,536; the
#: dense layer MLA + 3 x 2,048 x 10,240; the LM head 154,880 x 2,048 (46 x (31.33M + 64 x
#: 9.44M) + 84.67M + 2 x 317.2M = 29.9B, the published "30B total"). KV: MLA's latent 512 +
#: 64 rope dims in BF16 a layer, 576 x 2 x 47 bytes a token; attention FLOPs a (query, key)
#: pair: 20 heads x (576 + 512) x 2 x 47. The NextN drafter (one MoE decoder layer, eh_proj
#: 2 x 2,048 -> 2,048, the target's LM head) reads at one token its MLA, shared expert and
#: router, 4 routed experts, eh_proj and the LM head.
_MLA = 2048 * 768 + 768 * 20 * 256 + 2048 * 576 + 512 * 20 * (192 + 256) + 20 * 256 * 2048
_EXPERT = 3 * 2048 * 1536
_MOE_LAYER = _MLA + _EXPERT + 2048 * 64
_LM_HEAD = 154_880 * 2048
GLM47_FLASH_MODEL: dict[str, Any] = {
    "name": "GLM-4.7-Flash",
    "layers": 47,
    "hidden_size": 2048,
    "experts": 64,
    "experts_per_token": 4,
    # ASSUMED as DeepSeek-V3's (the same MLA + MoE layer); decode and verify are graphed
    "kernels_per_layer": 28,
    "dense_layers": 1,
    "layer_params": float(_MOE_LAYER),
    "dense_layer_params": float(_MLA + 3 * 2048 * 10240),
    "expert_params": float(_EXPERT),
    "lm_head_params": float(_LM_HEAD),
    "weight_bytes_per_param": 2.0,
    "draft_params": float(_MOE_LAYER + 4 * _EXPERT + 2 * 2048 * 2048 + _LM_HEAD),
    "kv_bytes_per_token": float(576 * 2 * 47),
    "attention_flops_per_pair": float(20 * (576 + 512) * 2 * 47),
    "draft_kv_bytes_per_token": float(576 * 2),
}
#: Each arm's captured batch sizes (``cuda_graph_bs`` in its ``server_info``).
PLAIN_GRAPH_BATCHES = [1, 2, 4, 8, 12, 16, 24, *range(32, 257, 8)]
MTP_GRAPH_BATCHES = [*range(1, 9), *range(10, 33, 2), *range(40, 64, 4), *range(64, 257, 8)]
#: The loads scored (C = 1 calibrates).
SCORED = (4, 8, 16, 32)
#: Replications of a scored job, by C (equal answers: each level's own Monte Carlo standard
#: error is 0.1-0.3% of it at 20 replications, seed ``SERVING_SEED``; 40 keep it within
#: 0.5% with room for a spread of acceptance between requests).
SCORED_REPLICATIONS = dict.fromkeys(SCORED, 40)


@dataclass(frozen=True, slots=True)
class GlmArm:
    """A speculative arm of the source: its name in the data, the scenario's name, the chain's
    ``num_steps`` and its drafter (the weights a pass reads, its KV a token)."""

    name: str
    scenario_name: str
    num_steps: int
    draft_params: float
    draft_kv_bytes_per_token: float


#: The MTP arm (case 45): the checkpoint's NextN layer, a chain of 1.
MTP_ARM = GlmArm(
    MTP,
    "glm-4.7-flash-1xh100pcie-sglang-mtp",
    1,
    GLM47_FLASH_MODEL["draft_params"],
    GLM47_FLASH_MODEL["draft_kv_bytes_per_token"],
)


def prompt_tokens() -> float:
    """The mean prompt: 28,006 input tokens over the 64 requests (the chat template in)."""
    return pub.GLM47FLASH_INPUT_TOKENS_TOTAL / pub.GLM47FLASH_REQUESTS


def _context() -> float:
    """The mean context while decoding: the mean prompt and half the answer."""
    return prompt_tokens() + pub.GLM47FLASH_OUTPUT_TOKENS / 2


def _scenario(arm: GlmArm) -> Scenario:
    """``arm``'s derived scenario (no per-cycle overhead, alpha to be fitted): the plain
    batch-1 decode step at C = 1 measured, the other passes from the hardware model."""
    return scenario_from_dict(
        {
            "name": arm.scenario_name,
            "model": {
                **GLM47_FLASH_MODEL,
                "draft_params": arm.draft_params,
                "draft_kv_bytes_per_token": arm.draft_kv_bytes_per_token,
            },
            "server": {"engine": "sglang", "tensor_parallel": 1},
            # one PCIe card (TP 1: no all-reduce, the link does not enter)
            "hardware": {"gpus": 1, "interconnect": "pcie-gen5", "gpu": "H100-PCIe"},
            "timing": {
                "decode_ms": pub.GLM47FLASH_TPOT_MS[PLAIN][1],
                "verify_cuda_graph": True,
                "context_tokens": _context(),
            },
            "speculation": {"num_steps": arm.num_steps},
            "acceptance": {"alpha": 0.5},  # replaced by the fit
            "workload": {
                "lengths": "lognormal",
                "input_tokens": round(prompt_tokens()),
                "input_sigma": 0.0,
                "output_tokens": pub.GLM47FLASH_OUTPUT_TOKENS,
                "output_sigma": 0.0,
            },
            "serving": {
                "batching": "prefill_first",
                # the overlap scheduler in the plain arm, SpecV2's in the speculative arms
                "host_overlap": "both",
                "max_running_requests_speculative": pub.GLM47FLASH_SPEC_MAX_RUNNING,
                "graph_batches": PLAIN_GRAPH_BATCHES,
                "graph_batches_speculative": MTP_GRAPH_BATCHES,
                # "all benchmarks used default Triton configs" (the source's README): each
                # expert's rows padded to 64 in passes of more than 64 tokens (pre-registered,
                # docs/studies/moe-tile-padding.md)
                "moe_tiles": "sglang-default",
            },
        },
        source="sim.validation.glm_flash_mtp_cases",
    )


def calibrated(arm: GlmArm = MTP_ARM) -> tuple[Scenario, float, float, float, float]:
    """(``arm``'s calibrated scenario, its accept length at C = 1, alpha (flat), the derived
    batch-1 cycle without overhead, the measured one), in ms."""
    return _calibrated(arm)


@functools.cache
def _calibrated(arm: GlmArm) -> tuple[Scenario, float, float, float, float]:
    derived = _scenario(arm)
    al = pub.GLM47FLASH_AL[arm.name][1]
    token_ms = pub.GLM47FLASH_TPOT_MS[arm.name][1]
    fitted, alpha, passes_ms, measured_ms = fit_at_one(derived, al, derived.num_steps, token_ms)
    return fitted, al, alpha, passes_ms, measured_ms


def simulate_job(users: int, arm: GlmArm = MTP_ARM) -> JobPoint:
    """The job as run on ``arm``'s server and the plain one: ``users`` workers over the 64
    requests (the mean TPOT and TTFT reported, as the source's table)."""
    return _simulate_job(users, arm)


@functools.cache
def _simulate_job(users: int, arm: GlmArm) -> JobPoint:
    return job_point(
        calibrated(arm)[0],
        users,
        pub.GLM47FLASH_REQUESTS,
        SCORED_REPLICATIONS.get(users, JOB_REPLICATIONS),
        tpot="mean",
    )


def job_row(arm: str, users: int, predicted: float, sd: float, side: str) -> Row:
    """``arm``'s (or plain decoding's) output tok/s of the job at ``users``, scored against
    the source's; ``sd`` its Monte Carlo standard error."""
    # equal lengths make the plain job deterministic: its replications differ by rounding
    # only (a standard error of 1e-14 tok/s), which is no uncertainty
    sd = sd if sd > 1e-9 * predicted else 0.0
    return shared_job_row(
        "64-request job",
        f"GLM-4.7-Flash H100 PCIe SGLang {arm} C={users}",
        f"max concurrency {users} over 64 ShareGPT requests",
        users,
        pub.GLM47FLASH_TOK_S[arm][users],
        predicted,
        sd,
        side,
    )


def job_setup_line(arm: GlmArm) -> str:
    """The replications, the seed and the Monte Carlo errors of ``arm``'s jobs."""
    jobs = {users: simulate_job(users, arm) for users in SCORED}
    return precision_line(SCORED_REPLICATIONS, arm.name, jobs)


def tpot_note(arm: GlmArm = MTP_ARM) -> str:
    """The mean TPOT simulated against measured at every C, plain and ``arm`` (not scored)."""
    return job_metric_note(arm, "TPOT", 2)


def job_metric_note(arm: GlmArm, metric: str, digits: int) -> str:
    """The mean ``metric`` (``TPOT`` or ``TTFT``, ms) simulated against measured at every C,
    plain and ``arm``, to ``digits`` decimals (not scored)."""
    table = {"TPOT": pub.GLM47FLASH_TPOT_MS, "TTFT": pub.GLM47FLASH_TTFT_MS}[metric]
    parts = []
    for users in (1, *SCORED):
        p = simulate_job(users, arm)
        plain, spec = {
            "TPOT": (p.baseline_tpot_ms, p.speculative_tpot_ms),
            "TTFT": (p.baseline_ttft_ms, p.speculative_ttft_ms),
        }[metric]
        parts.append(
            f"{users}: plain {plain:.{digits}f} against {table[PLAIN][users]:.{digits}f}, "
            f"{arm.name} {spec:.{digits}f} against {table[arm.name][users]:.{digits}f}"
        )
    return (
        f"Mean {metric} (ms) simulated against measured (not scored) by C: "
        + "; ".join(parts)
        + "."
    )


def scored_accept_lengths(arm: str) -> str:
    """``arm``'s accept length measured at the scored loads (not used by the model)."""
    return ", ".join(f"{pub.GLM47FLASH_AL[arm][u]:.4f}" for u in SCORED)


def crossing_note(arm: str, loads: list[int]) -> str:
    """The first load (of ``loads``, the scored loads where the simulated gain is below 1)
    where ``arm`` stops paying, as a miss: none was measured."""
    return (
        f"specsim predicts {arm} stops paying at C = {loads[0]} (a miss: none measured)."
        if loads
        else "none predicted up to C = 32 either."
    )


def case_glm47flash_mtp_h100pcie() -> Case:
    """GLM-4.7-Flash + MTP (1 step) on one H100 PCIe, SGLang: both arms' job tok/s at
    C = 4, 8, 16, 32."""
    scenario, al, alpha, passes_ms, cycle_ms = calibrated()
    tok_s = pub.GLM47FLASH_TOK_S
    rows: list[Row] = []
    gains: list[str] = []
    crossing = []
    for users in SCORED:
        p = simulate_job(users)
        rows += [
            job_row(MTP, users, p.speculative_tok_s, p.gain_sd * p.baseline_tok_s, "speculative"),
            job_row(PLAIN, users, p.baseline_tok_s, p.baseline_sd, "plain"),
        ]
        gains.append(
            f"{users}: measured {tok_s[MTP][users] / tok_s[PLAIN][users]:.2f}, specsim {p.gain:.2f}"
        )
        if p.gain < 1.0:
            crossing.append(users)
    one = simulate_job(1)
    accept = scored_accept_lengths(MTP)
    predicted_crossing = crossing_note(MTP, crossing)
    return Case(
        "GLM-4.7-Flash (MoE, 3B active) + its MTP layer (1 step) on one H100 PCIe, SGLang "
        "(plain 0.5.10.post1, MTP on a fork): output tok/s of a 64-request job against max "
        "concurrency, with and without speculation",
        (pub.GLM47FLASH_URL,),
        ("GLM-4.7-Flash plain C=1 (mean TPOT)", "GLM-4.7-Flash MTP C=1 (mean TPOT, accept length)"),
        tuple(rows),
        setup=(
            "GLM-4.7-Flash BF16 (47 layers, the first dense; 64 routed experts of 9.44M and one "
            "shared, 4 a token; MLA, 54,144 bytes of KV a token) on one H100 PCIe (new preset "
            "from NVIDIA's datasheet: 2.0 TB/s, 80 GB, 756 BF16 TFLOPS dense), TP 1; SGLang: "
            "prefills first, host work hidden in both arms, each arm's captured batch sizes, the "
            "speculating server's cap 48; two builds (plain 0.5.10.post1, MTP on nicetiger/"
            "sglang 0675f95); the fused-MoE kernel on SGLang's default config (the source: "
            "default Triton configs), each expert's rows padded to 64 in passes of more than "
            "64 tokens (serving.moe_tiles)",
            f"calibrated on C = 1 only: batch-1 decode {pub.GLM47FLASH_TPOT_MS[PLAIN][1]:.3f} ms "
            f"(the plain arm's mean TPOT); a chain of 1 with the NextN drafter "
            f"({GLM47_FLASH_MODEL['draft_params'] / 1e9:.3f}B a pass), alpha = {alpha:.4f} for "
            f"the accept length {al:.4f}; the per-cycle overhead "
            f"{scenario.timing.cycle_overhead_ms:.3f} ms that makes the derived "
            f"{passes_ms:.2f} ms batch-1 cycle the measured {cycle_ms:.2f} ms (the arm's mean "
            f"TPOT {pub.GLM47FLASH_TPOT_MS[MTP][1]:.3f} ms x that accept length); the accept "
            f"length measured at C = 4-32 ({accept}) not used",
            f"the job: 64 requests in a closed loop of C (ClosedLoop(C, 0, 64, 1)), prompts of "
            f"{prompt_tokens():.0f} tokens (ASSUMED all equal: the per-prompt lengths are not "
            f"published), answers of {pub.GLM47FLASH_OUTPUT_TOKENS}; output tok/s over the "
            f"whole job, {job_setup_line(MTP_ARM)}",
        ),
        notes=(
            "Gain (MTP / plain output tok/s) by C: "
            + "; ".join(gains)
            + f". {error_summary(rows)}. At C = 1 (calibrated on TPOT and accept length, not "
            f"on tok/s) the simulated job gives {one.baseline_tok_s:.1f} (plain) and "
            f"{one.speculative_tok_s:.1f} (MTP) tok/s against {tok_s[PLAIN][1]:.1f} and "
            f"{tok_s[MTP][1]:.1f} measured. No measured crossing: the gain is at least 1.15 at "
            f"every C; {predicted_crossing}",
            tpot_note(),
        ),
    )


def glm_flash_mtp_cases() -> tuple[Case, ...]:
    return (case_glm47flash_mtp_h100pcie(),)
