"""Serving validation: GLM-4.7-Flash (MoE, MLA) with a separate EAGLE-3 head on one H100 PCIe
(SGLang), output tok/s of a 64-request job against max concurrency (case 46).

The EAGLE-3 arm of case 45's source (IneshReddy249/speculative-decoding-moe-benchmark,
``results/eagle3v3_c*.json`` at f598e234; sim/validation/data/serving_curves.toml
``glm47flash_mtp_h100pcie``, ``figure_eagle3``): ``--speculative-algorithm EAGLE3``, 3 steps,
topk 1, 4 draft tokens, SpecV2, on the MTP arm's SGLang fork, the same 64-request job. By the
rule pre-registered in docs/studies/case46-glm-flash-eagle3.md before any scored run:

* the drafter: thoughtworks/GLM-4.7-Flash-Eagle3, one Llama layer over the target's hidden
  (``EAGLE3_DRAFT_PARAMS`` a pass, ``EAGLE3_DRAFT_KV_BYTES_PER_TOKEN`` of KV a token);
* calibrated on C = 1 only, as case 45's MTP arm (sim/validation/glm_flash_mtp_cases.py,
  shared): one flat conditional rate for the accept length there over the chain of 3, the
  per-cycle overhead that makes the derived batch-1 cycle its mean TPOT there times that
  accept length; the plain server, the model, the job and the simulation are case 45's;
* scored: the EAGLE-3 arm's output tok/s at C = 4, 8, 16, 32 (the plain rows are case 45's;
  the gains are reported beside).
"""

from __future__ import annotations

from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.glm_flash_mtp_cases import (
    MTP,
    MTP_ARM,
    PLAIN,
    SCORED,
    GlmArm,
    calibrated,
    crossing_note,
    job_metric_note,
    job_row,
    job_setup_line,
    prompt_tokens,
    scored_accept_lengths,
    simulate_job,
    tpot_note,
)

__all__ = [
    "EAGLE3",
    "EAGLE3_ARM",
    "EAGLE3_DRAFT_KV_BYTES_PER_TOKEN",
    "EAGLE3_DRAFT_PARAMS",
    "case_glm47flash_eagle3_h100pcie",
    "glm_flash_eagle3_cases",
]

EAGLE3 = "EAGLE-3"
#: thoughtworks/GLM-4.7-Flash-Eagle3 (LlamaForCausalLMEagle3, its config.json as a public
#: port reads it and checks every tensor against: one layer, hidden 2,048 (the target's),
#: 16 query and 4 KV heads of 128, MLP 8,192, draft vocab 32,000, an fc from 3 captured
#: target layers, the target's embedding borrowed). A pass reads fc 3 x 2,048 x 2,048, q
#: 4,096 x 2,048 and k, v 4,096 x 512 (the first layer's input is embedding and feature,
#: 2 x hidden), o 2,048 x 2,048, the MLP 3 x 2,048 x 8,192, its own head 2,048 x 32,000 and
#: four norms of 2,048: 145,235,968 parameters, BF16; with its d2t (32,000 int64) and t2d
#: (154,880 bool) maps 290,882,816 bytes, the model card's 277.4 MiB and the source's 291 MB.
EAGLE3_DRAFT_PARAMS = (
    3 * 2048 * 2048
    + 4096 * 2048
    + 2 * 4096 * 512
    + 2048 * 2048
    + 3 * 2048 * 8192
    + 2048 * 32_000
    + 4 * 2048
)
#: Its KV: one layer, 4 heads x 128 x (K and V) x 2 bytes a token (ASSUMED the config's GQA;
#: 16 KV heads would make it 8,192).
EAGLE3_DRAFT_KV_BYTES_PER_TOKEN = 4 * 128 * 2 * 2
EAGLE3_ARM = GlmArm(
    EAGLE3,
    "glm-4.7-flash-1xh100pcie-sglang-eagle3",
    3,
    float(EAGLE3_DRAFT_PARAMS),
    float(EAGLE3_DRAFT_KV_BYTES_PER_TOKEN),
)


def _gain(arm: str, users: int) -> float:
    """The measured gain of ``arm`` over plain decoding at ``users`` (case 45's plain rows)."""
    return pub.GLM47FLASH_TOK_S[arm][users] / pub.GLM47FLASH_TOK_S[PLAIN][users]


def _contrast_note() -> str:
    """Whether the model reproduces the source's contrast (EAGLE-3's gain falling from C = 4
    to 32 while MTP's rises), by the pre-registered test (not scored)."""
    e4, e32 = simulate_job(4, EAGLE3_ARM).gain, simulate_job(32, EAGLE3_ARM).gain
    m32 = simulate_job(32, MTP_ARM).gain
    held = e32 < e4 and e32 < m32
    return (
        f"The contrast with MTP (the same fork): measured, EAGLE-3's gain goes from "
        f"{_gain(EAGLE3, 4):.2f} at C = 4 to {_gain(EAGLE3, 32):.2f} at C = 32 while MTP's "
        f"rises to {_gain(MTP, 32):.2f}; specsim's EAGLE-3 gain goes from {e4:.2f} to {e32:.2f} "
        f"against its MTP gain {m32:.2f} at C = 32: "
        + ("reproduced (below both)." if held else "not reproduced.")
    )


def case_glm47flash_eagle3_h100pcie() -> Case:
    """GLM-4.7-Flash + the Thoughtworks EAGLE-3 head (3 steps, topk 1) on one H100 PCIe,
    SGLang: the EAGLE-3 arm's job tok/s at C = 4, 8, 16, 32 (the plain rows are case 45's)."""
    scenario, al, alpha, passes_ms, cycle_ms = calibrated(EAGLE3_ARM)
    tok_s = pub.GLM47FLASH_TOK_S
    rows: list[Row] = []
    gains: list[str] = []
    crossing = []
    for users in SCORED:
        p = simulate_job(users, EAGLE3_ARM)
        rows.append(
            job_row(EAGLE3, users, p.speculative_tok_s, p.gain_sd * p.baseline_tok_s, "speculative")
        )
        gains.append(
            f"{users}: measured {_gain(EAGLE3, users):.2f}, specsim {p.gain:.2f} (plain "
            f"{p.baseline_tok_s:.1f} against {tok_s[PLAIN][users]:.1f})"
        )
        if p.gain < 1.0:
            crossing.append(users)
    one = simulate_job(1, EAGLE3_ARM)
    accept = scored_accept_lengths(EAGLE3)
    predicted_crossing = crossing_note(EAGLE3, crossing)
    return Case(
        "GLM-4.7-Flash (MoE, 3B active) + a separate EAGLE-3 head (3 steps, topk 1) on one H100 "
        "PCIe, SGLang (the MTP arm's fork): output tok/s of a 64-request job against max "
        "concurrency",
        (pub.GLM47FLASH_URL,),
        (
            "GLM-4.7-Flash plain C=1 (mean TPOT; case 45)",
            "GLM-4.7-Flash EAGLE-3 C=1 (mean TPOT, accept length)",
        ),
        tuple(rows),
        setup=(
            f"the drafter thoughtworks/GLM-4.7-Flash-Eagle3: one Llama layer over the target's "
            f"hidden 2,048 (16 query and 4 KV heads of 128, MLP 8,192, its own head over 32,000 "
            f"draft tokens, an fc from 3 target layers), {EAGLE3_DRAFT_PARAMS:,} BF16 parameters "
            f"a pass (with its vocabulary maps the model card's 277.4 MiB); "
            f"{EAGLE3_DRAFT_KV_BYTES_PER_TOKEN:,} bytes of KV a token (ASSUMED the config's GQA; "
            "8,192 without it)",
            "case 45's server and model: GLM-4.7-Flash BF16 on one H100 PCIe, TP 1; SGLang: "
            "prefills first, host work hidden in both arms (SpecV2), the MTP arm's captured "
            "batch sizes and cap 48 (the same in this arm's server_info); the plain arm on "
            "0.5.10.post1, EAGLE-3 on the MTP arm's fork (nicetiger/sglang 0675f95); its "
            "default fused-MoE config's 64-row blocks beyond 64 tokens (serving.moe_tiles)",
            f"calibrated on C = 1 only: batch-1 decode {pub.GLM47FLASH_TPOT_MS[PLAIN][1]:.3f} ms "
            f"(case 45); a chain of {scenario.num_steps} (4 tokens verified), one flat rate "
            f"alpha = {alpha:.4f} for the accept length {al:.4f}; the per-cycle overhead "
            f"{scenario.timing.cycle_overhead_ms:.3f} ms that makes the derived "
            f"{passes_ms:.2f} ms batch-1 cycle the measured {cycle_ms:.2f} ms (the arm's mean "
            f"TPOT {pub.GLM47FLASH_TPOT_MS[EAGLE3][1]:.3f} ms x that accept length); the accept "
            f"length measured at C = 4-32 ({accept}) not used",
            f"the job: case 45's (ClosedLoop(C, 0, 64, 1), prompts of {prompt_tokens():.0f} "
            f"tokens, ASSUMED all equal, answers of {pub.GLM47FLASH_OUTPUT_TOKENS}), "
            f"{job_setup_line(EAGLE3_ARM)}",
        ),
        notes=(
            "Gain (EAGLE-3 / plain output tok/s, case 45's plain rows) by C: "
            + "; ".join(gains)
            + f". {error_summary(rows)}. At C = 1 (calibrated on TPOT and accept length, not "
            f"on tok/s) the simulated job gives {one.speculative_tok_s:.1f} tok/s against "
            f"{tok_s[EAGLE3][1]:.1f} measured. No measured crossing: the gain is at least 1.11 "
            f"at every C; {predicted_crossing}",
            _contrast_note(),
            tpot_note(EAGLE3_ARM),
            job_metric_note(EAGLE3_ARM, "TTFT", 0),
        ),
    )


def glm_flash_eagle3_cases() -> tuple[Case, ...]:
    return (case_glm47flash_eagle3_h100pcie(),)
