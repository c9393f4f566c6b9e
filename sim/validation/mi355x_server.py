"""The 4x MI355X vLLM server of the ROCm blog's two tables (cases 48 and 49): one scenario
builder for both, the model dict, the decode step, the rate and the job being the case's."""

from __future__ import annotations

from typing import Any

from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.validation.engine_versions import VLLM_2026, graph_capture

__all__ = ["mi355x_vllm_scenario"]


def mi355x_vllm_scenario(
    name: str,
    model: dict[str, Any],
    *,
    gpus: int,
    decode_ms: float,
    context_tokens: float,
    num_steps: int,
    alpha: float,
    input_tokens: int,
    output_tokens: int,
    token_budget: int,
    source: str,
) -> Scenario:
    """``model`` on ``gpus`` MI355X (TP ``gpus``, expert parallel ``gpus``) under vLLM with
    an EAGLE-3 chain of ``num_steps`` at flat conditional rate ``alpha``: batch-1 decode step
    ``decode_ms`` at ``context_tokens`` of context, graphed verify, a job of fixed
    ``input_tokens`` / ``output_tokens`` requests, chunked prefill at ``token_budget``."""
    raw = {
        "name": name,
        "model": model,
        # expert parallel over the ranks (the recipes' --enable-expert-parallel)
        "server": {"engine": "vllm", "expert_parallel": gpus},
        # ASSUMED: the MI300X xGMI preset (MI355X's links are faster)
        "hardware": {"gpus": gpus, "interconnect": "xgmi-mi300x", "gpu": "MI355X"},
        "timing": {
            "decode_ms": decode_ms,
            "verify_cuda_graph": True,
            "context_tokens": context_tokens,
        },
        "speculation": {"num_steps": num_steps},
        "acceptance": {"alpha": alpha},
        "workload": {
            "lengths": "fixed",
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        },
        # vLLM 0.19 and later schedule asynchronously with EAGLE-3 (default since 0.14): host
        # work hidden in both arms; prefix caching off (--no-enable-prefix-caching)
        "serving": {
            "batching": "chunked",
            "token_budget": token_budget,
            "host_overlap": "both",
            "prefix_caching": False,
            **graph_capture(VLLM_2026),
        },
    }
    return scenario_from_dict(raw, source=source)
