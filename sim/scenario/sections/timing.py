"""``[timing]``: the measured pass times, the hardware they were measured on, and measured
passes at other batch sizes."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from sim.hardware.interconnects import Library
from sim.scenario.sections.bounds import (
    MAX_GPUS,
    MAX_LIST,
    MAX_NUM_STEPS,
    NonNegativeMs,
    PositiveMs,
)
from sim.scenario.sections.section import Section


class MeasuredOn(Section):
    """The hardware the [timing] figures were measured on (filled from the file itself).

    ``load_scenario`` copies the file's own ``hardware.*`` and ``timing.verify_cuda_graph``
    here before ``--set`` overrides apply, so an override describes a what-if and the pass
    times are re-composed from this reference point (sim/hardware/pass_model.py).
    """

    interconnect: str
    gpus: Annotated[int, Field(gt=0, le=MAX_GPUS)]
    gpu: str | None = None
    verify_cuda_graph: bool
    allreduce: Library = "auto"


class TimingPoint(Section):
    """One measured pass at some batch size (``[[timing.points]]``), with its provenance.

    ``kind``: which pass; ``batch``: requests in it; ``tokens``: tokens each brings
    (default 1 for decode and draft step, k + 1 for verify and draft extend; required for
    prefills); ``context_tokens``: each request's context (default ``timing.context_tokens``,
    else 0); ``ms``: the measured time; ``source``: where the number comes from (a URL, a
    repo and path, "measured on our server on DATE").
    """

    kind: Literal["decode", "verify", "draft_step", "draft_extend", "prefill", "draft_prefill"]
    batch: Annotated[int, Field(gt=0)]
    ms: PositiveMs
    source: Annotated[str, Field(min_length=1)]
    tokens: Annotated[int, Field(gt=0)] | None = None
    context_tokens: Annotated[float, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _prefill_tokens(self) -> Self:
        if self.kind.endswith("prefill") and self.tokens is None:
            raise ValueError(f"a measured {self.kind} pass needs its tokens (prompt length)")
        return self


class TimingSpec(Section):
    """Pass times in milliseconds, as measured on the user's server (batch 1).

    The verify pass over ``m`` tokens costs
    ``verify_ms + (m - verify_tokens) * verify_ms_per_extra_token``; the line must stay
    positive down to ``m = 1``.

    A pass time left out is derived by the hardware model (sim/hardware/pass_model.py):
    verify from the calibrated decode compute scaled by the weights it reads, anything
    else from the model's weights and the GPU preset.
    """

    decode_ms: PositiveMs | None = None
    verify_ms: PositiveMs | None = None
    verify_tokens: Annotated[int, Field(gt=0, le=MAX_NUM_STEPS + 1)] | None = None
    #: Growth of the verify pass per extra verified token; left out, the hardware model
    #: derives it (sim/hardware/pass_model.py ``verify_slope``), or it is 0 when the model
    #: lacks the weights or GPU to, and the answer lists it among its assumptions.
    verify_ms_per_extra_token: NonNegativeMs | None = None
    #: How the measured verify pass grows with tokens: ``linear`` (verify_ms_per_extra_token)
    #: or ``experts``: the weight reads (and FLOPs) of the extra distinct routed experts
    #: E(1 - (1 - e/E)^m) are added to the calibrated compute (needs the model's weights
    #: and hardware.gpu).
    verify_growth: Literal["linear", "experts"] = "linear"
    #: Where the verify pass's GPU work comes from: ``measured`` (calibrated from verify_ms
    #: on the hardware it was measured on) or ``decode``: the graphed decode's calibrated
    #: compute plus the growth over the extra tokens (verify_growth), with an ungraphed
    #: verify_ms then fixing the per-kernel CPU cost of eager execution instead
    #: (sim/hardware/pass_model.py). ``decode`` needs decode_ms, and suits a graphed decode
    #: and an ungraphed verify measured on the same server.
    verify_compute: Literal["measured", "decode"] = "measured"
    draft_step_ms: PositiveMs | None = None
    #: Growth of a drafter decode pass per extra token it runs over (a tree's topk beams),
    #: used when the hardware model cannot tabulate the pass (no model geometry); 0: flat,
    #: which a memory-bound one-layer drafter at batch 1 nearly is.
    draft_ms_per_extra_token: NonNegativeMs = 0.0
    draft_extend_ms: PositiveMs | None = None
    #: The draft extend runs over the L tokens a cycle accepted: it grows by
    #: ``draft_extend_ms_per_token`` per token, ``draft_extend_ms`` being its time at
    #: ``draft_extend_tokens`` (default num_steps + 1). The closed forms take it at E[L]
    #: (exact, the growth is linear); the Monte Carlo at each cycle's L.
    draft_extend_ms_per_token: NonNegativeMs = 0.0
    draft_extend_tokens: Annotated[float, Field(gt=0.0)] | None = None
    #: Per-step drafter cost beyond a derived drafter pass (sampling, tree bookkeeping,
    #: host work): added to every drafter step the hardware model derives. A measured
    #: ``draft_step_ms`` already contains it, so giving both is an error.
    draft_step_overhead_ms: NonNegativeMs = 0.0
    cycle_overhead_ms: NonNegativeMs = 0.0
    verify_cuda_graph: bool = False
    measured_on: MeasuredOn | None = None
    #: Pass-time jitter for the Monte Carlo engines: each phase of each cycle lasts a
    #: gamma-distributed time with the phase's mean and this coefficient of variation
    #: (std / mean); 0 means every cycle takes exactly its mean (see sim/model/cycletime.py).
    #: Below 1: a gamma of shape a = 1/cv^2 has E[1/X] = 1/((a - 1) scale) only for a > 1,
    #: so the mean per-request tok/s of a one-cycle request is finite only for cv < 1
    #: (at cv = 10 a one-token request averaged 2.5e92 tok/s).
    jitter_cv: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    #: Serving: the context (tokens) at which the batch-1 times above were measured (needed
    #: when KV reads or attention are modelled), and measured passes at other batch sizes.
    context_tokens: Annotated[float, Field(ge=0, le=1e8)] | None = None
    points: Annotated[list[TimingPoint], Field(max_length=MAX_LIST)] | None = None

    @model_validator(mode="after")
    def _overhead_only_for_derived_steps(self) -> Self:
        if self.draft_step_overhead_ms > 0 and self.draft_step_ms is not None:
            raise ValueError(
                "draft_step_overhead_ms is added to a derived drafter step; a measured "
                "draft_step_ms already contains it (give one of the two)"
            )
        return self
