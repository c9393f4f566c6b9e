"""``[[serving.calibrated_on]]``: the figures a load-sweep calibration fitted, and the terms
it can fit."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from sim.scenario.sections.bounds import (
    MAX_JOB_REQUESTS,
    MAX_OUTPUT_TOKENS,
    MAX_RATE_PER_S,
    MIN_RATE_PER_S,
    NonNegativeMs,
    PositiveMs,
)
from sim.scenario.sections.section import Section


class CalibrationFigure(Section):
    """One figure a calibration fitted (``[[serving.calibrated_on]]``), as ``specsim
    calibrate --load-sweep`` writes it: the serving answers' intervals re-fit the terms
    it identified (``serving.calibrated_terms``) to these figures in every draw, so that
    each drawn scenario still reproduces them (sim/calibration/load_record.py).

    ``metric``: what was measured (``tpot_ms``: a request's mean decode time per output
    token); ``measured``: its value; ``stderr``: its own standard error where the run gave
    a spread (std / sqrt(completed)); ``load``: requests decoding together (``load_kind``:
    ``concurrency`` of a closed loop, a static ``batch``, or the mean ``in flight`` of an
    open loop at ``rate_per_s``); ``speculative``: whether the run speculated (None: the
    file does not say, the scenario decides); ``accept_length`` (bonus included),
    ``context_tokens`` (mean prompt + half the answer), ``num_steps`` / ``topk`` /
    ``num_draft_tokens`` (the run's own draft) where the file gives them; ``source``: the
    file, ``where`` in it, ``format`` the tool that wrote it. ``workers``, ``input_lens``
    and ``output_lens`` (together): the run's own job where its file listed each
    completed request (sim/calibration/run_job.py), which the fit and every draw's refit
    price instead of the mean context.
    """

    metric: Literal["tpot_ms"]
    measured: PositiveMs
    stderr: NonNegativeMs | None = None
    load: Annotated[float, Field(ge=1e-6, le=1e6)]
    load_kind: Literal["concurrency", "batch", "in flight"]
    rate_per_s: Annotated[float, Field(ge=MIN_RATE_PER_S, le=MAX_RATE_PER_S)] | None = None
    speculative: bool | None = None
    accept_length: Annotated[float, Field(ge=1.0, le=4097.0)] | None = None
    context_tokens: Annotated[float, Field(ge=0.0, le=1e9)] | None = None
    num_steps: Annotated[int, Field(ge=0, le=4096)] | None = None
    topk: Annotated[int, Field(ge=0, le=4096)] | None = None
    num_draft_tokens: Annotated[int, Field(ge=0, le=4096)] | None = None
    source: Annotated[str, Field(min_length=1, max_length=1000)]
    where: Annotated[str, Field(max_length=200)] = ""
    format: Annotated[str, Field(max_length=200)] = ""
    workers: Annotated[int, Field(ge=1, le=MAX_JOB_REQUESTS)] | None = None
    input_lens: (
        Annotated[
            list[Annotated[int, Field(ge=0, le=10 * MAX_OUTPUT_TOKENS)]],
            Field(min_length=1, max_length=MAX_JOB_REQUESTS),
        ]
        | None
    ) = None
    output_lens: (
        Annotated[
            list[Annotated[int, Field(ge=0, le=MAX_OUTPUT_TOKENS)]],
            Field(min_length=1, max_length=MAX_JOB_REQUESTS),
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _whole_draft(self) -> Self:
        given = [self.num_steps is None, self.topk is None, self.num_draft_tokens is None]
        if len(set(given)) > 1:
            raise ValueError("give num_steps, topk and num_draft_tokens together, or none")
        return self

    @model_validator(mode="after")
    def _whole_job(self) -> Self:
        given = [self.workers is None, self.input_lens is None, self.output_lens is None]
        if len(set(given)) > 1:
            raise ValueError("give workers, input_lens and output_lens together, or none")
        if self.input_lens is not None and self.output_lens is not None:
            if len(self.input_lens) != len(self.output_lens):
                raise ValueError(
                    f"{len(self.output_lens)} output_lens against {len(self.input_lens)} "
                    "input_lens (one a request each)"
                )
            if max(self.output_lens) < 2:
                raise ValueError("no request of two or more output tokens: nothing decoded")
        return self


#: The batched terms a load sweep can fit (``serving.calibrated_terms``).
CalibratedTerm = Literal["host_us_per_request", "kernel_slope", "expert_skew", "host_spec_factor"]
