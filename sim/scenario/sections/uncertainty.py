"""``[uncertainty]``: standard errors, plausible ranges and correlations of numeric fields."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal, Self

import numpy as np
from pydantic import Field, model_validator

from sim.scenario.sections.bounds import MAX_LIST, MAX_NUM_STEPS
from sim.scenario.sections.section import Section


class FieldUncertainty(Section):
    """How well one numeric field is known: a standard error or a plausible range.

    ``stderr`` (a number, or for a list field one per entry) is a measurement error,
    sampled as a normal around the value; ``range = [low, high]`` a plausible range,
    sampled uniformly. ``origin`` says what the value is (``measured``, the default with a
    stderr; ``assumed``, the default with a range or with neither; ``calibrated``, written
    by ``specsim calibrate``; ``derived``, from published data, as calibrate writes the
    shape error); ``reason`` says why.
    """

    stderr: (
        Annotated[float, Field(ge=0.0)]
        | Annotated[list[Annotated[float, Field(ge=0.0)]], Field(max_length=MAX_NUM_STEPS)]
        | None
    ) = None
    range: Annotated[list[float], Field(min_length=2, max_length=2)] | None = None
    origin: Literal["measured", "assumed", "calibrated", "derived"] | None = None
    reason: Annotated[str, Field(max_length=10_000)] = ""

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if self.stderr is not None and self.range is not None:
            raise ValueError("give a stderr or a range, not both")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError(f"range low {self.range[0]:g} is above high {self.range[1]:g}")
        return self

    @property
    def resolved_origin(self) -> str:
        if self.origin is not None:
            return self.origin
        return "measured" if self.stderr is not None else "assumed"


class Correlation(Section):
    """Correlations between fields with a ``stderr`` (``specsim calibrate`` writes the
    correlations of the values it fits): a symmetric matrix with unit diagonal."""

    fields: Annotated[list[str], Field(min_length=2, max_length=MAX_LIST)]
    matrix: Annotated[list[list[float]], Field(max_length=MAX_LIST)]

    @model_validator(mode="after")
    def _valid_matrix(self) -> Self:
        n = len(self.fields)
        if len(set(self.fields)) != n:
            raise ValueError("correlation fields must be distinct")
        if len(self.matrix) != n or any(len(row) != n for row in self.matrix):
            raise ValueError(f"matrix must be {n} x {n}, one row and column per field")
        for i in range(n):
            if abs(self.matrix[i][i] - 1.0) > 1e-9:
                raise ValueError("matrix diagonal must be 1")
            for j in range(n):
                if abs(self.matrix[i][j] - self.matrix[j][i]) > 1e-9:
                    raise ValueError("matrix must be symmetric")
                if abs(self.matrix[i][j]) > 1.0 + 1e-9:
                    raise ValueError("correlations must lie in [-1, 1]")
        if np.linalg.eigvalsh(np.array(self.matrix, dtype=float)).min() < -1e-9:
            raise ValueError("matrix is not positive semi-definite")
        return self


class UncertaintySpec(Section):
    """``[uncertainty]``: errors and ranges of numeric fields, by section.

    ``timing.verify_ms = { stderr = 0.5, reason = "..." }`` under ``[uncertainty]`` (a
    TOML dotted key) or ``verify_ms = {...}`` under ``[uncertainty.timing]``; a list field
    takes a stderr per entry (``acceptance.per_position = { stderr = [0.01, 0.02] }``).
    ``[uncertainty.correlation]`` correlates fields that have a stderr (list entries as
    ``acceptance.per_position[0]``).
    """

    model: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    hardware: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    timing: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    acceptance: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    #: the batched terms (``serving.host_us_per_request``, ``kernel_slope``,
    #: ``expert_skew``): ``specsim calibrate --load-sweep`` writes their fitted errors or
    #: plausible ranges here, for the intervals of serving answers
    serving: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    correlation: Correlation | None = None

    def entries(self) -> dict[str, FieldUncertainty]:
        """Every entry by its dotted field (``timing.verify_ms``)."""
        out: dict[str, FieldUncertainty] = {}
        for section in ("model", "hardware", "timing", "acceptance", "serving"):
            for key, entry in getattr(self, section).items():
                out[f"{section}.{key}"] = entry
        return out
