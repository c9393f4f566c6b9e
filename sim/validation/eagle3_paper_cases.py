"""The EAGLE-3 paper's serving cases: Table 3 (SGLang, H100, chain 3) and Table 5 (vLLM,
RTX 3090, chain 2), each an EAGLE-3 and an EAGLE row of speedup against batch size,
calibrated on batch 2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row
from sim.validation.engine_versions import (
    SGLANG_OVERLAP,
    SGLANG_PAPER,
    VLLM_2025_OVERLAP,
    VLLM_PAPER,
    graph_capture,
)
from sim.validation.llama8b_mt_bench import (
    EAGLE1_DRAFT_PARAMS,
    LLAMA8B_MODEL,
    MT_BENCH_CONTEXT,
    MT_BENCH_WORKLOAD,
)
from sim.validation.serving_case_text import host_line
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED, simulate_point
from sim.validation.speedup_fit import fit_speedup

__all__ = [
    "SGLANG_OVERHEAD_HIGH_MS",
    "VLLM_OVERHEAD_HIGH_MS",
    "_conditional",
    "case_eagle3_sglang",
    "case_eagle3_vllm",
    "sglang_scenarios",
    "vllm_scenarios",
]


#: The upper ends of the per-cycle overhead's root search on the SGLang and vLLM tables (ms).
SGLANG_OVERHEAD_HIGH_MS, VLLM_OVERHEAD_HIGH_MS = 50.0, 80.0


def _conditional(cumulative: Sequence[float]) -> list[float]:
    c = [1.0, *cumulative]
    return [c[i + 1] / c[i] for i in range(len(cumulative))]


def _ratio_rows(
    scenario: Scenario, curve: Mapping[int, float], label: str, skip: Sequence[int]
) -> tuple[Row, ...]:
    rows = []
    for batch, measured in curve.items():
        if batch in skip:
            continue
        p = simulate_point(scenario, batch)
        rows.append(
            Row(
                "speedup (aggregate tok/s)",
                f"{label} bs={batch}",
                f"closed loop of {batch} users",
                measured,
                p.speedup,
                p.speedup_sd,
                load=batch,
                calibrated_loads=tuple(skip),
                side="gain",
            )
        )
    return tuple(rows)


def _llama_scenario(
    name: str,
    gpu: str,
    k: int,
    acceptance: dict[str, Any],
    timing: dict[str, Any],
    batching: str,
    overlap: str,
    engine: str,
) -> Scenario:
    return scenario_from_dict(
        {
            "name": name,
            "model": LLAMA8B_MODEL,
            # the engine's memory rule sizes the KV cache (sim/binding/kv_capacity.py)
            "server": {"engine": engine.split()[0]},
            "hardware": {"gpus": 1, "interconnect": "nvlink4", "gpu": gpu},
            "timing": {"verify_cuda_graph": True, "context_tokens": MT_BENCH_CONTEXT, **timing},
            "speculation": {"num_steps": k},
            "acceptance": acceptance,
            "workload": MT_BENCH_WORKLOAD,
            "serving": {"batching": batching, "host_overlap": overlap, **graph_capture(engine)},
        },
        source=f"sim.validation.serving_cases ({name})",
    )


def sglang_scenarios() -> tuple[Scenario, Scenario]:
    """The calibrated scenarios of the Table 3 cases: (EAGLE-3, EAGLE). Also used by the
    serving decision validation (sim/validation/decision_cases.py)."""
    table = pub.EAGLE3_SGLANG_TABLE3
    decode_ms = 1000.0 / pub.EAGLE3_SGLANG_BASELINE_BS1_TOK_S
    eagle3_rates = _conditional(pub.VLLM_EAGLE3_CUMULATIVE)
    base = _llama_scenario(
        "eagle3-paper-sglang-h100",
        "H100",
        3,
        {"per_position": eagle3_rates},
        {"decode_ms": decode_ms},
        "prefill_first",
        SGLANG_OVERLAP,
        SGLANG_PAPER,
    )
    fitted = fit_speedup(
        base, "timing.cycle_overhead_ms", 0.0, SGLANG_OVERHEAD_HIGH_MS, table["EAGLE-3"][2], 2
    )
    # EAGLE (the first drafter): its chain-3 acceptance is not published; fit one rate on bs=2
    one_rate = _with_eagle1_drafter(fitted)
    eagle = fit_speedup(
        one_rate,
        "acceptance.alpha",
        0.05,
        0.99,
        table["EAGLE"][2],
        2,
    )
    return fitted, eagle


def case_eagle3_sglang() -> tuple[Case, Case]:
    """EAGLE-3 paper Table 3: SGLang, H100, chain 3, EAGLE-3 and EAGLE rows."""
    table = pub.EAGLE3_SGLANG_TABLE3
    decode_ms = 1000.0 / pub.EAGLE3_SGLANG_BASELINE_BS1_TOK_S
    fitted, eagle = sglang_scenarios()
    overhead = fitted.timing.cycle_overhead_ms
    setup = (
        f"Llama-3.1-8B on one H100 (preset: H100 SXM), SGLang prefill-first; batch-1 decode "
        f"{decode_ms:.3f} ms (Table 4: 158.34 tok/s); verify, draft step and draft extend "
        "derived by the hardware model (roofline of the weights); KV 131,072 bytes per token",
        f"EAGLE-3 acceptance: vLLM test_acceptance_length's cumulative rates "
        f"{list(pub.VLLM_EAGLE3_CUMULATIVE)} (K = 3, MT-Bench), not fitted",
        f"fitted: cycle_overhead_ms = {overhead:.3f} on the EAGLE-3 speedup at batch 2 (1.81)",
        "workload ASSUMED: MT-Bench-like lognormal prompts ~128 and answers ~512 tokens, closed "
        f"loop of B users; {SERVING_REPLICATIONS} replications, max(60, 3B) requests, seed "
        f"{SERVING_SEED}",
        host_line(fitted),
    )
    eagle3 = Case(
        "EAGLE-3 paper Table 3: EAGLE-3 on SGLang, H100, chain 3, speedup against batch size",
        (pub.EAGLE3_PAPER_URL,),
        ("Table 4 SGLang bs=1 tok/s", "EAGLE-3 paper T3 EAGLE-3 bs=2"),
        _ratio_rows(fitted, table["EAGLE-3"], "EAGLE-3 paper T3 EAGLE-3", skip=(2,)),
        setup=setup,
    )
    alpha = eagle.acceptance.alpha if eagle.acceptance else None
    eagle_case = Case(
        "EAGLE-3 paper Table 3: EAGLE (EAGLE-1 drafter) on SGLang, H100, chain 3, speedup "
        "against batch size",
        (pub.EAGLE3_PAPER_URL,),
        (
            "Table 4 SGLang bs=1 tok/s",
            "EAGLE-3 paper T3 EAGLE-3 bs=2",
            "EAGLE-3 paper T3 EAGLE bs=2",
        ),
        _ratio_rows(eagle, table["EAGLE"], "EAGLE-3 paper T3 EAGLE", skip=(2,)),
        setup=(
            "the EAGLE-3 case's server and fitted overhead; the EAGLE-1 drafter reads the "
            "target's LM head (one decoder layer, its fc and the 128k-token head: 777M "
            "parameters a pass, against the EAGLE-3 drafter's 424M)",
            f"fitted: one conditional rate alpha = {alpha:.4f} on the EAGLE speedup at batch 2 "
            "(1.40); its chain-3 acceptance is not published",
        ),
    )
    return eagle3, eagle_case


def _with_eagle1_drafter(scenario: Scenario) -> Scenario:
    """The EAGLE-3 case's server with the EAGLE-1 drafter (``EAGLE1_DRAFT_PARAMS``) and one
    conditional rate, to be fitted."""
    raw = scenario.model_dump(exclude_none=True)
    raw["model"] = {**raw["model"], "draft_params": EAGLE1_DRAFT_PARAMS}
    return scenario_from_dict({**raw, "acceptance": {"alpha": 0.5}}, source="validation")


def _with_one_rate(scenario: Scenario, table: Mapping[int, float], batch: int) -> Scenario:
    """The scenario with the EAGLE-1 drafter and one conditional rate fitted to the
    speedup at ``batch``."""
    one_rate = _with_eagle1_drafter(scenario)
    return fit_speedup(one_rate, "acceptance.alpha", 0.05, 0.99, table[batch], batch)


def vllm_scenarios() -> tuple[Scenario, Scenario]:
    """The calibrated scenarios of the Table 5 cases: (EAGLE-3, EAGLE)."""
    table = pub.EAGLE3_VLLM_TABLE5
    base = _llama_scenario(
        "eagle3-paper-vllm-rtx3090",
        "RTX-3090",
        2,
        {"per_position": _conditional(pub.VLLM_EAGLE3_CUMULATIVE[:2])},
        {},
        "chunked",
        VLLM_2025_OVERLAP,
        VLLM_PAPER,
    )
    fitted = fit_speedup(
        base, "timing.cycle_overhead_ms", 0.0, VLLM_OVERHEAD_HIGH_MS, table["EAGLE-3"][2], 2
    )
    return fitted, _with_one_rate(fitted, table["EAGLE"], 2)


def case_eagle3_vllm() -> tuple[Case, Case]:
    """EAGLE-3 paper Table 5: vLLM, RTX 3090, chain 2 (no batch-1 figure: every pass is
    derived from the weights and the GPU, the overhead fitted on batch 2)."""
    table = pub.EAGLE3_VLLM_TABLE5
    fitted, eagle = vllm_scenarios()
    overhead = fitted.timing.cycle_overhead_ms
    alpha = eagle.acceptance.alpha if eagle.acceptance else float("nan")
    setup = (
        "Llama-3.1-8B on one RTX 3090 (preset), vLLM chunked prefill mixed with decode; "
        "every batch-1 pass derived by the hardware model (the paper has no batch-1 figure)",
        "EAGLE-3 acceptance: vLLM test_acceptance_length's first two cumulative rates "
        f"{list(pub.VLLM_EAGLE3_CUMULATIVE[:2])}, not fitted",
        f"fitted: cycle_overhead_ms = {overhead:.3f} on the EAGLE-3 speedup at batch 2 (1.75); "
        f"EAGLE: one conditional rate alpha = {alpha:.4f} on its speedup at batch 2 (1.30), "
        "its drafter reading the target's LM head (777M parameters a pass)",
        "workload ASSUMED as in the SGLang case (MT-Bench-like lognormal ~128 / ~512 tokens)",
        host_line(fitted),
    )
    cal = ("EAGLE-3 paper T5 EAGLE-3 bs=2",)
    return (
        Case(
            "EAGLE-3 paper Table 5: EAGLE-3 on vLLM, RTX 3090, chain 2, speedup against batch size",
            (pub.EAGLE3_PAPER_URL,),
            cal,
            _ratio_rows(fitted, table["EAGLE-3"], "EAGLE-3 paper T5 EAGLE-3", skip=(2,)),
            setup=setup,
        ),
        Case(
            "EAGLE-3 paper Table 5: EAGLE on vLLM, RTX 3090, chain 2, speedup against batch size",
            (pub.EAGLE3_PAPER_URL,),
            (*cal, "EAGLE-3 paper T5 EAGLE bs=2"),
            _ratio_rows(eagle, table["EAGLE"], "EAGLE-3 paper T5 EAGLE", skip=(2,)),
            setup=setup,
        ),
    )
