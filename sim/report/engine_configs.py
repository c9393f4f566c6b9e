"""Text of the engine configs the decision studies write (sim/studies/engine_configs.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["engine_config_lines"]


def engine_config_lines(configs: Mapping[str, Any]) -> list[str]:
    """What to paste into each engine, with the schema it was checked against."""
    vllm, sglang, trt = configs["vllm"], configs["sglang"], configs["trtllm"]
    lines = ["engine configs (add your draft model path):"]
    lines.append(f"  vLLM        [{vllm['schema']}]")
    lines.append(
        "    --speculative-config '" + json.dumps(vllm["speculative_config"]) + "'"
        if "speculative_config" in vllm
        else f"    {vllm['note']}"
    )
    lines.append(f"  SGLang      [{sglang['schema']}]")
    lines.append(
        "    " + " ".join(sglang["flags"]) if "flags" in sglang else f"    {sglang['note']}"
    )
    lines.append(f"  TensorRT-LLM  [{trt['schema']}]")
    lines.append(
        "    speculative_config: " + json.dumps(trt["speculative_config"])
        if "speculative_config" in trt
        else f"    {trt['note']}"
    )
    return lines
