"""``[server]``: the engine, its version, the model id and the parallel sizes."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal

from pydantic import Field

from sim.scenario.sections.section import Section


class ServerSpec(Section):
    """``[server]``: what serves the model, as the scenario's owner states it (``specsim
    init`` writes it): the engine and its version, the model's Hugging Face id, tensor
    and expert parallel sizes. ``specsim calibrate`` refuses figures whose files name
    another engine, model, num_steps or GPU count (sim/calibration/server_match.py)."""

    engine: Literal["vllm", "sglang", "trtllm"] | None = None
    engine_version: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    model_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    tensor_parallel: Annotated[int, Field(gt=0, le=1024)] | None = None
    expert_parallel: Annotated[int, Field(gt=0, le=1024)] | None = None
