"""``[workload]``: requests, their prompt and output lengths."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from sim.scenario.sections.bounds import MAX_LOG_SIGMA, MAX_OUTPUT_TOKENS, MAX_REQUESTS
from sim.scenario.sections.section import Section

#: The assumption a serving answer states (printed whole on its first screen,
#: sim/report/screen.py ``SHOWN_WHOLE``) when the scenario gives no prompt length: every
#: request then has none, so no prefill and no prompt KV under load, which flatters it.
UNSTATED_PROMPTS = (
    "prompts: none given, so 0 tokens (no prefill, no prompt KV): --set workload.input_tokens=N"
)


class WorkloadSpec(Section):
    """Output tokens per request and requests per replication; for serving also prompts.

    Serving keys (absent keys keep the batch-1 meaning): ``input_tokens`` (prompt tokens,
    default 0); ``lengths``: ``fixed`` (every request has ``input_tokens`` and
    ``output_tokens``), ``lognormal`` (those are the means, ``input_sigma`` and
    ``output_sigma`` the log-space standard deviations, ``*_max_tokens`` the caps, default
    the 0.9999 quantile), ``empirical`` (input and output drawn from the rows of
    ``lengths_trace``, a trace CSV) or ``ordered`` (a closed-loop job replaying the rows of
    ``lengths_trace`` in file order: each of the ``serving.concurrency`` users sends the
    next row's request when its last one is answered, until none is left; measured whole,
    no warm-up); ``warmup_requests``: requests discarded at the start of each replication
    (default: the larger of the concurrency and a tenth of ``requests``).
    """

    output_tokens: Annotated[int, Field(gt=0, le=MAX_OUTPUT_TOKENS)] = 512
    requests: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] = 100
    input_tokens: Annotated[int, Field(ge=0, le=10 * MAX_OUTPUT_TOKENS)] | None = None
    lengths: Literal["fixed", "lognormal", "empirical", "ordered"] | None = None
    input_sigma: Annotated[float, Field(ge=0, le=MAX_LOG_SIGMA)] | None = None
    output_sigma: Annotated[float, Field(ge=0, le=MAX_LOG_SIGMA)] | None = None
    input_max_tokens: Annotated[int, Field(gt=0, le=10 * MAX_OUTPUT_TOKENS)] | None = None
    output_max_tokens: Annotated[int, Field(gt=0, le=MAX_OUTPUT_TOKENS)] | None = None
    lengths_trace: Annotated[str, Field(min_length=1)] | None = None
    warmup_requests: Annotated[int, Field(ge=0, le=MAX_REQUESTS)] | None = None

    @property
    def prompts_unstated(self) -> bool:
        """True when nothing gives the prompt lengths (no ``input_tokens``, no trace)."""
        return self.input_tokens is None and self.lengths not in ("empirical", "ordered")

    @model_validator(mode="after")
    def _length_model(self) -> Self:
        if self.lengths == "lognormal":
            if self.output_sigma is None:
                raise ValueError("lengths = 'lognormal' needs output_sigma")
            if (self.input_tokens or 0) > 0 and self.input_sigma is None:
                raise ValueError("lengths = 'lognormal' with input_tokens needs input_sigma")
        if self.lengths in ("empirical", "ordered") and self.lengths_trace is None:
            raise ValueError(f"lengths = {self.lengths!r} needs lengths_trace (a trace CSV)")
        if self.lengths_trace is not None and self.lengths not in ("empirical", "ordered"):
            raise ValueError("lengths_trace is only read with lengths = 'empirical' or 'ordered'")
        if self.lengths == "ordered" and self.warmup_requests:
            raise ValueError(
                "lengths = 'ordered' replays a job measured whole: warmup_requests must be "
                "absent or 0"
            )
        for side in ("input", "output"):
            cap = getattr(self, f"{side}_max_tokens")
            mean = getattr(self, f"{side}_tokens") or 0
            if cap is not None and cap < mean:
                raise ValueError(f"{side}_max_tokens ({cap}) is below {side}_tokens ({mean})")
        return self
