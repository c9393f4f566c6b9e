"""``[targets]``: throughput targets."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated

from pydantic import Field

from sim.scenario.sections.bounds import MAX_LIST, MAX_TOK_S
from sim.scenario.sections.section import Section


class TargetsSpec(Section):
    """Throughput targets in tokens per second (per request, batch 1)."""

    tok_s: Annotated[
        list[Annotated[float, Field(gt=0.0, le=MAX_TOK_S)]],
        Field(min_length=1, max_length=MAX_LIST),
    ]
