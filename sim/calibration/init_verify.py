"""What the owner measured about the verify pass, as ``specsim init`` writes it: whether it
is graphed, its time and the tokens it was measured over, and for an ungraphed one the
kernels a layer issues eagerly and its GPU work taken from the graphed decode's."""

from __future__ import annotations

from typing import Any

from sim.calibration.hf_config import HfModel
from sim.calibration.init_fields import set_field
from sim.calibration.init_kernels import COUNTED_MOE_LAYERS, counted_moe_kernels
from sim.calibration.init_request import InitRequest
from sim.errors import SpecsimError


def verify_flags(
    req: InitRequest, model: HfModel, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """What the owner measured about the verify: ``timing.verify_cuda_graph``,
    ``timing.verify_ms`` and, for an ungraphed one, the kernels a layer issues eagerly
    (its launch cost is priced per kernel) and, with a measured decode, the verify's GPU
    work taken from the graphed decode's (``verify_compute = "decode"``: the ungraphed
    verify_ms then fixes the per-kernel CPU cost, sim/hardware/pass_model.py)."""
    if req.drafter is None:
        for flag, given in (
            ("--verify-ms", req.verify_ms),
            ("--verify-cuda-graph", req.verify_cuda_graph),
        ):
            if given is not None:
                raise SpecsimError(
                    "plain decoding has no verify pass: give --drafter and --num-steps",
                    source=flag,
                )
    if req.verify_cuda_graph is not None:
        graphed = req.verify_cuda_graph
        flag = "--verify-cuda-graph" if graphed else "--no-verify-cuda-graph"
        why = "graphed" if graphed else "run without CUDA graphs (eagerly)"
        set_field(raw, comments, "timing.verify_cuda_graph", graphed, f"{flag}: the verify {why}")
    if req.kernels_per_layer is not None:
        set_field(
            raw, comments, "model.kernels_per_layer", req.kernels_per_layer, "--kernels-per-layer"
        )
        raw.get("uncertainty", {}).get("model", {}).pop("kernels_per_layer", None)
    if req.verify_ms is None:
        return
    set_field(
        raw,
        comments,
        "timing.verify_ms",
        req.verify_ms,
        f"--verify-ms: measured on this server (batch 1, num_steps {req.num_steps})",
    )
    if req.num_steps is not None:  # the tokens it was measured over stay when k is varied
        set_field(
            raw,
            comments,
            "timing.verify_tokens",
            req.num_steps + 1,
            f"--verify-ms measured over num_steps {req.num_steps} + 1 tokens (a chain)",
        )
    if raw.get("timing", {}).get("verify_cuda_graph", False):
        return
    # a count given wins; else the engine's for its MoE layer; else a prefill's default
    counted = model.is_moe and req.engine in COUNTED_MOE_LAYERS
    if req.kernels_per_layer is None and not counted and "kernels_per_layer" not in raw["model"]:
        raise SpecsimError(
            "an ungraphed verify's launch cost is priced per kernel: give the kernels one "
            "layer of your engine issues eagerly (e.g. counted with nsys)",
            source="--kernels-per-layer",
        )
    if req.kernels_per_layer is None and counted:
        counted_moe_kernels(req.engine, "low", "derived", raw, comments)
    if req.decode_ms is None:
        raise SpecsimError(
            "an ungraphed verify's GPU work is taken from the graphed decode's, its launches "
            "from the rest: give the plain decoding figure measured with it (--baseline-tok-s, "
            "--vllm-bench, --sglang-bench, ...)",
            source="--verify-ms",
        )
    decode_ms, source = req.decode_ms
    set_field(raw, comments, "timing.decode_ms", round(decode_ms, 6), f"1000 / {source}")
    set_field(
        raw,
        comments,
        "timing.verify_compute",
        "decode",
        "the ungraphed verify's GPU work is the graphed decode's plus its growth over the "
        "extra tokens; the rest of --verify-ms is eager execution, whose per-kernel CPU "
        "cost it fixes (sim/hardware/pass_model.py)",
    )
