"""A checkpoint's bytes a weight from its ``config.json``: its ``torch_dtype``/``dtype``, or
its ``quantization_config`` read module by module (sim/calibration/quant_layout.py,
sim/calibration/weight_bytes.py), the routed experts' apart when stored at another width,
and a DeepSeek-style MTP module's own mean."""

from __future__ import annotations

from typing import Any

from sim.calibration.hf_fields import DTYPE_BYTES, NO_DTYPE_HINT, Derived, config_dtype, first_set
from sim.calibration.quant_layout import Width, read_layout
from sim.calibration.weight_bytes import LayerWeights, layout_bytes, mtp_module_bytes


def dtype_bytes_per_param(cfg: dict[str, Any], source: str, where: str = "config.json") -> Derived:
    """Bytes a weight of unquantized ``cfg`` (named ``where`` in the origin): its
    ``torch_dtype``/``dtype``."""
    name, dtype = config_dtype(cfg, ("torch_dtype", "dtype"), source, NO_DTYPE_HINT)
    return Derived(DTYPE_BYTES[dtype], f"{where}: {name} = {dtype}")


#: The unquantized weights' dtype of an mxfp4 checkpoint that states none (gpt-oss's
#: config.json states no torch_dtype): bfloat16, the dtype its non-expert tensors are
#: published in (openai/gpt-oss-120b model card: "MXFP4 for the MoE weights, BF16 the rest").
MXFP4_UNSTATED_DTYPE = "bfloat16"


def checkpoint_weight_bytes(
    raw: dict[str, Any],
    cfg: dict[str, Any],
    where: str,
    source: str,
    weights: LayerWeights,
    unstated_bytes: Derived | None,
    mtp: tuple[float, float] | None = None,
) -> tuple[dict[str, Derived], tuple[float, str] | None]:
    """``weight_bytes_per_param`` (and, for a MoE stored at mixed widths, its
    ``expert_bytes_per_param``): the ``quantization_config`` at the top level, else the
    language model's; its unquantized weights at the language model's dtype, else the top
    level's (a nested config may state it either side). With ``mtp`` (an MTP module's active
    routed-expert and eh_proj parameters) and a quantization read by layout, also
    ``mtp_module_bytes``'s (else None)."""
    quant_cfg, quant_where = (raw, "config.json") if "quantization_config" in raw else (cfg, where)
    quant = quant_cfg.get("quantization_config")
    if not isinstance(quant, dict):
        stated = "quantization_config" in raw or first_set(raw, "torch_dtype", "dtype") is not None
        unstated = first_set(cfg, "torch_dtype", "dtype") is None
        if unstated_bytes is not None and not stated and unstated:
            return {"weight_bytes_per_param": unstated_bytes}, None
        if "quantization_config" in raw or unstated:
            return {"weight_bytes_per_param": dtype_bytes_per_param(raw, source)}, None
        return {"weight_bytes_per_param": dtype_bytes_per_param(cfg, source, where)}, None
    own = first_set(cfg, "torch_dtype", "dtype") is not None
    dtype_cfg, dtype_where = (cfg, where) if own else (raw, "config.json")
    stated = first_set(dtype_cfg, "torch_dtype", "dtype") is not None
    if not stated and unstated_bytes is not None:
        dense = Width(unstated_bytes.value, unstated_bytes.origin)
    elif not stated and str(quant.get("quant_method", "")).lower() == "mxfp4":
        dense = Width(
            DTYPE_BYTES[MXFP4_UNSTATED_DTYPE],
            f"{MXFP4_UNSTATED_DTYPE}: no torch_dtype; gpt-oss's unquantized weights as published",
        )
    else:  # stated, or none to stand in: _dtype then names the missing field
        name, dtype = config_dtype(dtype_cfg, ("torch_dtype", "dtype"), source, NO_DTYPE_HINT)
        dense = Width(DTYPE_BYTES[dtype], f"{dtype_where}: {name} = {dtype}")
    layout = read_layout(quant, dense, source)
    weight, expert = layout_bytes(weights, layout, quant_where, source)
    out = {"weight_bytes_per_param": Derived(*weight)}
    if expert is not None:
        out["expert_bytes_per_param"] = Derived(*expert)
    module = mtp_module_bytes(weights, layout, dense, *mtp, source) if mtp else None
    return out, module
