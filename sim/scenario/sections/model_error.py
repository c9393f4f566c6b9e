"""``[serving.model_error]``: the serving model's own error under load, as the scenario
states it."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from sim.scenario.sections.section import Section


class ModelErrorSpec(Section):
    """The serving model's own error under load (sim/model/model_error.py): the standard
    deviation of ln(measured / predicted) as a function of the log distance d of the
    decode batch to the nearest measured batch. A policy's tok/s or TPOT: s sqrt(d),
    ``level_per_sqrt_log_load`` = s; a paired ratio of two policies (speculative over plain
    decoding, one k over another): a (1 - exp(-d / d0)), ``gain_ceiling`` = a,
    ``gain_log_load_scale`` = d0 (> 0, in ln load). None: the default estimated on the
    public concurrency curves; s = 0 or a = 0: no model-error term of that kind.

    ``level`` and ``gain`` (s per unit ln load of the linear form s d, which the
    pre-registered rule replaced) are refused rather than read with the new meaning."""

    level_per_sqrt_log_load: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    gain_ceiling: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    gain_log_load_scale: Annotated[float, Field(gt=0.0, le=200.0)] | None = None
    level: SkipJsonSchema[None] = None
    gain: SkipJsonSchema[None] = None

    @field_validator("level", "gain", mode="before")
    @classmethod
    def _removed(cls, value: object, info: ValidationInfo) -> None:
        if value is not None:
            new = (
                "level_per_sqrt_log_load (s of s sqrt(d))"
                if info.field_name == "level"
                else "gain_ceiling and gain_log_load_scale (a and d0 of a (1 - exp(-d / d0)))"
            )
            raise ValueError(
                f"removed: it was s per unit ln(load) of the form s d, which the model error "
                f"no longer uses; give {new} (docs/serving-intervals.md)"
            )
        return None
