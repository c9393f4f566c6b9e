"""The base of every scenario section: frozen, strict, unknown keys refused."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Base of every section: immutable, strict types, unknown keys rejected."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True
    )
