"""The SimPy engine, the model of record: a server process runs request processes in turn.

Processes only yield events. A cycle of a request is

    drafter steps (k - 1 of them, one timeout)  ->  verify pass  ->  acceptance
    ->  draft extend over the L accepted tokens  ->  per-cycle overhead

where the durations come from the plan's ``CycleTimeModel`` (the extend scaled to the
cycle's L, ``EnginePlan.extend_scale``) and acceptance is decided position by position as
the protocol runs (the acceptance model's ``sequential_length``: for a chain, draft i is
accepted with its conditional rate only if draft i - 1 was; for a tree, one categorical draw
per depth picks which ranked child, if any, the target's token is; the target adds one
token). Phases of zero
duration yield no event. Random numbers are pre-drawn in small blocks per request by the
pure generator ``cycle_draws``, from the request's own sub-stream (``request_stream``), so
that with the same seed, higher rates never slow a request down here either. The
``Recorder`` keeps the per-request times and tokens, the accept-length counts and the time
spent in each phase.

Same statistical model as the fast engine (sim/simulation/engines/fast.py); it draws k uniforms per
cycle instead of one and lays its streams out request by request, so the two agree in
distribution, not draw for draw (tests compare them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.model.cycle import PHASES
from sim.model.cycletime import CycleTimeModel
from sim.simulation.engines.common import (
    EngineOutput,
    EnginePlan,
    ReplicationRngs,
    request_stream,
    request_tok_s,
)

if TYPE_CHECKING:
    import simpy

#: Cycles of random numbers drawn at a time for one request.
DRAW_BLOCK = 64

#: A trace callback: (time_ms, request, cycle, event), event in PHASES, "accept L=..",
#: "start" or "done".
Trace = Callable[[float, int, int, str], None]

CycleDraw = tuple[tuple[float, float, float, float], list[float]]


def cycle_draws(
    times: CycleTimeModel,
    num_steps: int,
    accept_rng: np.random.Generator,
    timing_rng: np.random.Generator,
) -> Iterator[CycleDraw]:
    """Endless per-cycle draws for one request: ((draft, verify, extend, overhead) ms,
    k acceptance uniforms), drawn ``DRAW_BLOCK`` cycles at a time as Python floats."""
    fixed = None
    if times.deterministic:
        means = times.mean_ms()
        fixed = tuple(float(means[p]) for p in PHASES)
    while True:
        u = accept_rng.random((DRAW_BLOCK, num_steps)).tolist()
        if fixed is not None:
            phase_rows = [fixed] * DRAW_BLOCK
        else:
            drawn = times.sample(timing_rng, DRAW_BLOCK)
            phase_rows = list(zip(*(drawn[p].tolist() for p in PHASES), strict=True))
        yield from zip(phase_rows, u, strict=True)


class Recorder:
    """Per-request and per-phase bookkeeping of one replication (Q requests, k steps)."""

    def __init__(self, requests: int, num_steps: int):
        self.request_ms = np.zeros(requests)
        self.cycles = np.zeros(requests, dtype=np.int64)
        self.emitted = np.zeros(requests, dtype=np.int64)
        self.accept_counts = np.zeros(num_steps + 1, dtype=np.int64)
        self.phase_ms = np.zeros(len(PHASES))

    def request_done(
        self,
        request: int,
        elapsed_ms: float,
        lengths: list[int],
        phases: list[tuple[float, float, float, float]],
    ) -> None:
        """Record a finished request from its per-cycle accept lengths and phase times."""
        self.request_ms[request] = elapsed_ms
        self.emitted[request] = sum(lengths)
        self.cycles[request] = len(lengths)
        self.accept_counts += np.bincount(
            np.asarray(lengths, dtype=np.int64) - 1, minlength=self.accept_counts.size
        )
        self.phase_ms += np.asarray(phases, dtype=float).sum(axis=0)


def request_process(
    env: simpy.Environment,
    request: int,
    cycle_length: Callable[[Sequence[float]], int],
    output_tokens: int,
    draws: Iterator[CycleDraw],
    rec: Recorder,
    trace: Trace | None = None,
    extend_scale: list[float] | None = None,
):
    """One request: cycles until ``output_tokens`` tokens are out (the last may overshoot).

    ``extend_scale[L - 1]`` multiplies the drawn extend of a cycle that accepted L tokens
    (None: the extend does not depend on L)."""
    start = env.now
    emitted = 0
    cycle = 0
    lengths: list[int] = []
    phase_log: list[tuple[float, float, float, float]] = []
    if trace:
        trace(env.now, request, cycle, "start")
    while emitted < output_tokens:
        phases, u = next(draws)
        draft_ms, verify_ms, extend_ms, overhead_ms = phases
        if draft_ms > 0:
            yield env.timeout(draft_ms)
            if trace:
                trace(env.now, request, cycle, "draft")
        yield env.timeout(verify_ms)
        if trace:
            trace(env.now, request, cycle, "verify")
        length = cycle_length(u)
        if trace:
            trace(env.now, request, cycle, f"accept L={length}")
        if extend_scale is not None:
            extend_ms *= extend_scale[length - 1]
            phases = (draft_ms, verify_ms, extend_ms, overhead_ms)
        if extend_ms > 0:
            yield env.timeout(extend_ms)
            if trace:
                trace(env.now, request, cycle, "extend")
        if overhead_ms > 0:
            yield env.timeout(overhead_ms)
            if trace:
                trace(env.now, request, cycle, "overhead")
        emitted += length
        cycle += 1
        lengths.append(length)
        phase_log.append(phases)
    rec.request_done(request, env.now - start, lengths, phase_log)
    if trace:
        trace(env.now, request, cycle, "done")


def server_process(
    env: simpy.Environment,
    plan: EnginePlan,
    rates: np.ndarray,
    rngs: ReplicationRngs,
    rec: Recorder,
    trace: Trace | None = None,
):
    """Batch 1: run the requests one after another. ``rates`` has shape (Q, P): each
    request's acceptance parameters (a chain's rates, a tree's top-1 rates)."""
    scale = plan.extend_scale().tolist() if plan.extend_varies else None
    for r, row in enumerate(rates.tolist()):
        draws = cycle_draws(
            plan.cycle_times,
            plan.num_steps,
            request_stream(rngs.accept, r),
            request_stream(rngs.timing, r),
        )
        length = plan.acceptance.sequential_length(row)
        yield env.process(
            request_process(env, r, length, plan.output_tokens, draws, rec, trace, scale)
        )


def run_replication(
    plan: EnginePlan, rngs: ReplicationRngs, trace: Trace | None = None
) -> EngineOutput:
    """One replication in SimPy; arrays with a leading replication axis of length 1."""
    request_class, rates = plan.acceptance.sample_requests(rngs.requests, plan.requests)
    import simpy  # lazy: the fast engine's runs never import SimPy (start-up)

    rec = Recorder(plan.requests, plan.num_steps)
    env = simpy.Environment()
    env.process(server_process(env, plan, rates, rngs, rec, trace))
    env.run()
    return EngineOutput(
        tok_s=request_tok_s(plan.output_tokens, rec.request_ms)[None, :],
        request_ms=rec.request_ms[None, :],
        cycles=rec.cycles[None, :],
        emitted_tokens=rec.emitted[None, :],
        request_class=request_class[None, :],
        accept_counts=rec.accept_counts[None, :],
        phase_ms=rec.phase_ms[None, :],
    )


def run_des(plan: EnginePlan, rngs: Sequence[ReplicationRngs]) -> EngineOutput:
    """Simulate one replication per entry of ``rngs`` (see ``EngineOutput`` for shapes)."""
    return EngineOutput.concatenate([run_replication(plan, r) for r in rngs])
