"""Serving validation: Qwen3.8-27B with its MTP layer on one B200 (vLLM), aggregate output
tok/s against closed-loop concurrency, with and without speculation.

The curve (vllm-project/speculators, examples/evaluate/results/qwen3_8_27b_dspark, measured
2026-10-06; sim/validation/data/serving_curves.toml ``speculators_qwen38_27b``): GuideLLM
closed loops of N = 1, 2, 4, ..., 128 streams on the HumanEval subset of
RedHatAI/speculator_benchmarks, one vLLM 0.30.1rc1 build serving the model plain and with
``{"method": "mtp", "num_speculative_tokens": 2}``; the math_reasoning subset on the same
two servers is a second curve. Each is calibrated on its N = 1 only and scored at every
other N, both arms:

* plain decoding: the batch-1 decode step is the measured mean inter-token latency at N = 1;
* MTP: one conditional rate so that the chain of 2 has the accept length the server
  measured at N = 1 (1 + accepted / drafts), and the per-cycle overhead so that the
  batch-1 cycle (the derived passes) is the measured one, the mean inter-token latency
  at N = 1 times that accept length.

The target is a hybrid: 48 of its 64 layers are Gated DeltaNet (linear attention), whose
per-request recurrent state every target pass reads once and writes once per token
(``model.state_bytes_per_request``, sim/model/recurrent_state.py; its size, dtype and the
verify's writes read from vLLM 0.30.0, docs/studies/hybrid-recurrent-state.md); 16 are full
attention, whose KV the model prices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.binding.bound import bind
from sim.binding.serving_cost import serving_cost
from sim.model.closed_forms import alpha_for_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.engine_versions import VLLM_2026, graph_capture
from sim.validation.serving_point import Point, simulate_point

__all__ = [
    "Arm",
    "calibrated",
    "case_qwen38_mtp_b200",
    "fit_at_one",
    "hybrid_mtp_serving_cases",
    "qwen38_vllm_scenario",
    "speculative_row",
]

#: Qwen/Qwen3.8-27B's text model (config text_config, model_type qwen3_5_text: 64 layers,
#: hidden 5120, intermediate 17408, layer_types three linear_attention then one
#: full_attention, 16 times; full attention: 24 heads and 4 KV heads of 256, an output gate
#: (q_proj twice as wide); Gated DeltaNet: 16 key heads and 48 value heads of 128, a conv of
#: 4; vocab 248,320, untied; one MTP layer). A full-attention layer: q 5120 x 12288 (62.91M),
#: k and v 5120 x 1024 (5.24M each), o 6144 x 5120 (31.46M), MLP 3 x 5120 x 17408 (267.39M):
#: 372.25M; a Gated DeltaNet layer: in_proj_qkvz 5120 x 16384 (83.89M), in_proj_ba 5120 x 96
#: (0.49M), out_proj 6144 x 5120 (31.46M), the MLP: 383.27M; the mean of 16 and 48 of them:
#: 380.5M a layer. LM head 248,320 x 5120 = 1,271.4M (with the embedding, the MTP layer and
#: the vision tower: 27.8B, the published size). KV: the 16 full-attention layers only, 4
#: heads x 256 x 2 (K and V) x 2 bytes x 16 = 65,536 bytes a token; attention FLOPs a
#: (query, key) pair: 24 heads x 256 x 2 (scores and values) x 2 x 16. The MTP drafter reads
#: a pass its layer (372.25M, full attention), its fc 2 x 5120 -> 5120 (52.43M) and the
#: target's LM head (1,271.4M; mtp_use_dedicated_embeddings false): 1.696B; its KV 4,096
#: bytes a token (one layer). The recurrent state a request: ``GDN_STATE_BYTES``.
#: The Gated DeltaNet layers' recurrent state a request: 48 layers x 48 value heads x 128 x
#: 128 (vLLM's (value heads, value dim, key dim) a layer) in float32, the dtype vLLM 0.30
#: takes from the Qwen3.5 family's ``mamba_ssm_dtype``
#: (docs/studies/hybrid-recurrent-state.md): read once and written once per token by every
#: target pass.
GDN_STATE_ELEMENTS = 48 * 48 * 128 * 128
GDN_STATE_BYTES = GDN_STATE_ELEMENTS * 4
#: The conv state beside it (pre-registered in docs/studies/hybrid-recurrent-state.md): a
#: position of the 48 layers' windows, 2 x 16 key heads x 128 + 48 value heads x 128 =
#: 10,240 channels in BF16 (vLLM's ``mamba_cache_dtype`` "auto"), over kernel 4 - 1 = 3
#: positions (k more when speculating): the update kernel reads the 3 and writes the whole
#: window a pass.
GDN_CONV_BYTES_PER_POSITION = 48 * (2 * 16 * 128 + 48 * 128) * 2
GDN_CONV_POSITIONS = 4 - 1
QWEN38_MODEL: dict[str, Any] = {
    "name": "Qwen3.8-27B",
    "layers": 64,
    "hidden_size": 5120,
    # every decode, verify and draft pass here is graphed (vLLM's FULL graphs up to 512
    # tokens: 128 users verify 384), so the count does not enter the case
    "kernels_per_layer": 11,
    "layer_params": 380.5e6,
    "lm_head_params": 1.2714e9,
    "draft_params": 1.696e9,
    "kv_bytes_per_token": 65536.0,
    "attention_flops_per_pair": 393216.0,
    "draft_kv_bytes_per_token": 4096.0,
    "state_bytes_per_request": float(GDN_STATE_BYTES),
    "conv_state_bytes_per_position": float(GDN_CONV_BYTES_PER_POSITION),
    "conv_state_positions": GDN_CONV_POSITIONS,
    # the 48 Gated DeltaNet layers of 64 (layer_types): vLLM's block layout of the pool
    # (pre-registered in docs/studies/hybrid-recurrent-state.md)
    "linear_layers": 48,
}
#: The MTP arm: ``num_speculative_tokens`` 2, a chain.
NUM_STEPS = 2
PLAIN, MTP = "no speculation", "MTP k=2"
HUMANEVAL = "HumanEval"


@dataclass(frozen=True, slots=True)
class Arm:
    """A speculative arm of the curve: its name in the data, the scenario's name, its
    ``[speculation]`` section and what it changes in ``QWEN38_MODEL`` (its drafter)."""

    name: str
    scenario_name: str
    speculation: Mapping[str, Any]
    model: Mapping[str, Any] = field(default_factory=dict)


MTP_ARM = Arm(MTP, "qwen38-27b-1xb200-vllm-mtp", {"num_steps": NUM_STEPS})


def _calibration_lengths(subset: str, arm: str = MTP) -> tuple[float, float]:
    """The mean prompt and output tokens of ``subset``'s requests completed at N = 1, the
    plain arm and ``arm`` pooled by their counts (the only load the case calibrates on)."""
    n = pub.SPECULATORS_QWEN38_COMPLETED[subset]
    w = np.array([n[PLAIN][1], n[arm][1]])
    prompt = np.array(
        [pub.SPECULATORS_QWEN38_PROMPT_TOKENS[subset][a][1] for a in (PLAIN, arm)], dtype=float
    )
    output = np.array(
        [pub.SPECULATORS_QWEN38_OUTPUT_TOKENS[subset][a][1] for a in (PLAIN, arm)], dtype=float
    )
    return float(w @ prompt / w.sum()), float(w @ output / w.sum())


def qwen38_vllm_scenario(
    arm: Arm,
    *,
    hardware: Mapping[str, Any],
    decode_ms: float,
    prompt: float,
    output: float,
    sigmas: tuple[float, float],
    source: str,
    output_max_tokens: int | None = None,
    prefix_caching: bool = True,
) -> Scenario:
    """A derived Qwen3.8-27B scenario on a vLLM server (no per-cycle overhead, alpha to be
    fitted): ``arm``'s drafter and speculation, the measured batch-1 decode step
    ``decode_ms``, the other passes from the hardware model at the context of a mean
    request (``prompt`` + ``output`` / 2 tokens); lognormal prompts and answers of those
    means and log-sds ``sigmas`` (prompt, answer), answers capped at ``output_max_tokens``;
    vLLM's chunked prefill at a 16,384-token budget, host work hidden in both arms;
    ``prefix_caching``: False for a server started with ``--no-enable-prefix-caching``."""
    workload: dict[str, Any] = {
        "lengths": "lognormal",
        "input_tokens": round(prompt),
        "input_sigma": sigmas[0],
        "output_tokens": round(output),
        "output_sigma": sigmas[1],
    }
    if output_max_tokens is not None:
        workload["output_max_tokens"] = output_max_tokens
    return scenario_from_dict(
        {
            "name": arm.scenario_name,
            "model": {**QWEN38_MODEL, **arm.model},
            # the engine's memory rule sizes the KV cache (sim/binding/kv_capacity.py)
            "server": {"engine": "vllm"},
            "hardware": dict(hardware),
            "timing": {
                "decode_ms": decode_ms,
                "verify_cuda_graph": True,
                "context_tokens": prompt + output / 2,
            },
            "speculation": dict(arm.speculation),
            "acceptance": {"alpha": 0.5},  # replaced by the fit
            "workload": workload,
            # chunked prefill with the servers' 16,384-token budget, asynchronous scheduling
            # (host work hidden in both arms, on by default since vLLM 0.14)
            "serving": {
                "batching": "chunked",
                "token_budget": 16384,
                "host_overlap": "both",
                "prefix_caching": prefix_caching,
                **graph_capture(VLLM_2026),
            },
        },
        source=source,
    )


def _scenario(subset: str, arm: Arm = MTP_ARM) -> Scenario:
    """``subset``'s derived scenario (no per-cycle overhead, alpha to be fitted): the plain
    decode step at N = 1 measured, the other passes from the hardware model."""
    prompt, output = _calibration_lengths(subset, arm.name)
    return qwen38_vllm_scenario(
        arm,
        hardware={"gpus": 1, "interconnect": "nvlink5", "gpu": "B200"},
        decode_ms=pub.SPECULATORS_QWEN38_ITL_MS[subset][PLAIN][1],
        prompt=prompt,
        output=output,
        # the subset's prompts through the chat template and the model's own answers: the
        # means at N = 1; the spread ASSUMED (lognormal, log-sd 0.5)
        sigmas=(0.5, 0.5),
        source="sim.validation.hybrid_mtp_serving_cases",
    )


def _cycle_ms(scenario: Scenario) -> float:
    """The batch-1 speculative cycle (ms) of ``scenario`` at its reference context."""
    context = scenario.timing.context_tokens or 0.0
    kv, flops = scenario.model.kv_bytes_per_token, scenario.model.attention_flops_per_pair
    assert kv is not None and flops is not None  # the cases' model dicts state both
    cost = serving_cost(
        bind(scenario),
        kv_bytes_per_token=kv,
        attention_flops_per_pair=flops,
        reference_context_tokens=context,
    )
    return float(cost.decode_ms(1, scenario.num_steps, np.array([context]))[0])


def calibrated(subset: str, arm: Arm = MTP_ARM) -> tuple[Scenario, float, float, float]:
    """(``subset``'s calibrated scenario, alpha, the derived batch-1 cycle without overhead,
    the measured one), both in ms: the chain's one conditional rate from the accept length
    at N = 1 (1 + a + ... + a^k), the per-cycle overhead from the cycle at N = 1."""
    derived = _scenario(subset, arm)
    al = pub.SPECULATORS_QWEN38_AL[subset][arm.name][1]
    token_ms = pub.SPECULATORS_QWEN38_ITL_MS[subset][arm.name][1]
    return fit_at_one(derived, al, derived.num_steps, token_ms)


def fit_at_one(
    derived: Scenario, accept_length: float, k: int, token_ms: float
) -> tuple[Scenario, float, float, float]:
    """(``derived`` calibrated at one stream, alpha, the derived batch-1 cycle without
    overhead, the measured one), both in ms: the chain's one conditional rate alpha from
    the ``accept_length`` measured there at ``k`` (1 + a + ... + a^k), and the per-cycle
    overhead max(0, measured - derived), the measured cycle ``token_ms`` (ITL or TPOT) x
    the accept length."""
    alpha = alpha_for_accept_length(accept_length, k)
    assert alpha is not None  # a measured accept length is at most k + 1
    passes_ms = _cycle_ms(derived)
    measured_ms = token_ms * accept_length
    fitted = with_overrides(
        derived,
        {"acceptance.alpha": alpha, "timing.cycle_overhead_ms": max(0.0, measured_ms - passes_ms)},
        source="validation",
    )
    return fitted, alpha, passes_ms, measured_ms


def speculative_row(subset: str, arm: str, users: int, measured: float, p: Point) -> Row:
    """``arm``'s aggregate tok/s at ``users`` streams, scored against ``measured``; its ±
    the paired ratio's Monte Carlo standard error times the plain level."""
    return Row(
        "aggregate tok/s (speculation)",
        f"speculators Qwen3.8-27B {subset} {arm} N={users}",
        f"closed loop of {users} users",
        measured,
        p.speculative_tok_s,
        p.speedup_sd * p.baseline_tok_s,
        load=users,
        calibrated_loads=(1.0,),
        side="speculative",
    )


def case_qwen38_mtp_b200(subset: str = HUMANEVAL) -> Case:
    """Qwen3.8-27B + MTP (2 tokens) on one B200, vLLM: aggregate tok/s by streams on
    ``subset``."""
    curves = pub.SPECULATORS_QWEN38_TOK_S[subset]
    itl = pub.SPECULATORS_QWEN38_ITL_MS[subset]
    accept = pub.SPECULATORS_QWEN38_AL[subset][MTP]
    scenario, alpha, passes_ms, cycle_ms = calibrated(subset)
    rows: list[Row] = []
    sides: list[str] = []
    for users in sorted(curves[PLAIN]):
        if users == 1:
            continue
        p = simulate_point(scenario, users)
        rows += [
            speculative_row(subset, MTP, users, curves[MTP][users], p),
            Row(
                "aggregate tok/s (no speculation)",
                f"speculators Qwen3.8-27B {subset} {PLAIN} N={users}",
                f"closed loop of {users} users",
                curves[PLAIN][users],
                p.baseline_tok_s,
                p.baseline_sd,
                load=users,
                calibrated_loads=(1.0,),
                side="plain",
            ),
        ]
        sides.append(
            f"{users}: measured {curves[MTP][users] / curves[PLAIN][users]:.2f}, specsim "
            f"{p.speedup:.2f}"
        )
    one = simulate_point(scenario, 1)
    prompt, output = _calibration_lengths(subset)
    state_mb = GDN_STATE_BYTES / 1e6
    kv = QWEN38_MODEL["kv_bytes_per_token"]
    return Case(
        "Qwen3.8-27B (hybrid: 48 Gated DeltaNet, 16 attention layers) + its MTP layer (2 "
        f"tokens) on one B200, vLLM 0.30.1rc1, {subset}: aggregate output tok/s against "
        "closed-loop concurrency, with and without speculation",
        (pub.SPECULATORS_QWEN38_URL,),
        (
            f"speculators Qwen3.8-27B {subset} {PLAIN} N=1 (mean ITL)",
            f"speculators Qwen3.8-27B {subset} {MTP} N=1 (mean ITL, accept length)",
        ),
        tuple(rows),
        setup=(
            "Qwen3.8-27B (config text_config: 64 layers, 16 of them full attention; BF16, 380.5M "
            f"parameters a layer on average, KV {kv:,.0f} bytes a token from the 16 attention "
            "layers) on one B200 (preset), vLLM, every decode, verify and draft pass graphed; "
            "KV capacity derived by vLLM's rule (it does not bind)",
            f"calibrated on N = 1 only: batch-1 decode "
            f"{itl[PLAIN][1]:.3f} ms (the plain arm's mean ITL); one "
            f"conditional rate alpha = {alpha:.4f} so that the chain of 2 has the measured "
            f"accept length {accept[1]:.3f}; the per-cycle overhead "
            f"{scenario.timing.cycle_overhead_ms:.3f} ms that makes the derived {passes_ms:.2f} "
            f"ms batch-1 cycle the measured {cycle_ms:.2f} ms (the MTP arm's mean ITL x that "
            f"accept length); the measured accept length stays within "
            f"{min(accept.values()):.3f}-{max(accept.values()):.3f} at every N (not used)",
            f"workload: the N = 1 requests' mean prompt ({prompt:.0f} tokens) and answer "
            f"({output:.0f}) of both arms, lognormal spread ASSUMED (log-sd 0.5); closed loop "
            "of N users, max(60, 3N) requests, 3 replications; the ± of a speculative row is "
            "the paired ratio's Monte Carlo standard error times the plain level",
            "the 48 Gated DeltaNet layers' recurrent state, "
            f"{state_mb:.0f} MB a request (48 x 48 heads x 128 x 128 in float32, vLLM 0.30's "
            "dtype for this family), read once and written once per token by every target "
            "pass (1 + 1 in plain decoding, 1 + 3 in the MTP verify, which keeps a state at "
            "each position for the rollback), at the B200's 8 TB/s for every request beyond "
            f"one (as many bytes as {state_mb * 1e6 / kv:,.0f} tokens of this model's KV); "
            "its conv state beside it (10,240 channels x 3 positions, k more when "
            f"speculating, in BF16: {GDN_CONV_BYTES_PER_POSITION * GDN_CONV_POSITIONS / 1e6:.2f}"
            " MB in plain decoding), its 3 positions read and its window written by every "
            "target pass (pre-registered, docs/accuracy-under-load.md); both held in vLLM's KV "
            "pool, 1 + k slots a request; NOT MODELLED: a prefill chunk's state",
            "host work hidden in both arms (vLLM's asynchronous scheduling, the default since "
            "0.14); chunked prefill, 16,384-token budget (both servers' value)",
        ),
        notes=(
            "Speed-up (MTP / plain aggregate tok/s) by streams: "
            + "; ".join(sides)
            + f". {error_summary(rows)}. At N = 1 (calibrated on its ITL and accept length, "
            "not on tok/s) the "
            f"simulation gives {one.baseline_tok_s:.1f} (plain) and {one.speculative_tok_s:.1f} "
            f"(MTP) tok/s against {curves[PLAIN][1]:.1f} and {curves[MTP][1]:.1f} measured.",
            "Where the misses come from: the Gated DeltaNet state is priced (its size, dtype "
            "and the verify's k + 1 writes read from vLLM 0.30.0 before these rows were run "
            "with it) and moved at the server's measured batch-1 memory efficiency, not at "
            'peak (docs/accuracy-under-load.md, "Signed error under load by step '
            'composition": at peak both arms were over-predicted more the more streams ran, '
            "the MTP arm more). The state kernels' own share of peak is not identified. "
            "The speed-up's side is right at every load (MTP pays at every N, as measured); its "
            "size is over-predicted at 128 streams.",
        ),
    )


def hybrid_mtp_serving_cases() -> tuple[Case, ...]:
    return tuple(case_qwen38_mtp_b200(s) for s in pub.SPECULATORS_QWEN38_SUBSETS)
