"""Monte Carlo runs: replications, seeds and worker processes.

Seeds become generators here and only here: ``SeedSequence(seed).spawn(replications)``
gives one child per replication (``block_rngs`` makes their streams as first read;
``model_rng`` one more, for models built once per run, such as the layer-level pass-time
pools), and each child spawns the replication's three streams (``ReplicationRngs``:
requests, accept, timing; the SimPy engine derives one sub-stream per request from them
with ``jumped``). A replication reads only its own streams, so results do not depend on
``workers`` (blocks of replications on the one executor of sim/parallel/), on
scheduling or on how the engines batch replications. Statistics of a result:
sim/simulation/summary.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.binding.bound import Bound, as_bound
from sim.binding.drawn_cycle_times import FIDELITIES
from sim.errors import SpecsimError
from sim.model.cycletime import CycleTimeModel
from sim.parallel import LocalExecutor
from sim.scenario.load import in_its_file
from sim.scenario.schema import Scenario
from sim.simulation.budget import check_run_size
from sim.simulation.engines import ENGINES
from sim.simulation.engines.common import EngineOutput, EnginePlan, ReplicationRngs
from sim.simulation.results import MonteCarloResult

if TYPE_CHECKING:
    from sim.model.tree.acceptance import Acceptance
    from sim.simulation.stream import StreamStats

# The streamed statistics (sim.simulation.stream) are imported when a run streams: a run
# that keeps its arrays (``run`` at its default size) never needs them.

Progress = Callable[[int, int], None]


def replication_rngs(child: np.random.SeedSequence) -> ReplicationRngs:
    """The three independent streams of one replication from its SeedSequence child:
    stream i is ``child.spawn(3)[i]``, i.e. SeedSequence(entropy, spawn_key=child's + (i,)),
    made directly when first read."""

    def make(i: int) -> np.random.Generator:
        seq = np.random.SeedSequence(
            child.entropy, spawn_key=(*child.spawn_key, i), pool_size=child.pool_size
        )
        return np.random.Generator(np.random.PCG64(seq))

    return ReplicationRngs(make)


def block_rngs(seed: int, block: range) -> list[ReplicationRngs]:
    """The streams of replications ``block`` of a run seeded ``seed``: stream j of
    replication i is SeedSequence(seed).spawn(R)[i].spawn(3)[j], i.e. the SeedSequence with
    spawn key (i, j), made by NumPy when the replication first reads it, so a stream no
    replication reads costs nothing (most runs read only ``accept``)."""
    return [replication_rngs(np.random.SeedSequence(seed, spawn_key=(i,))) for i in block]


#: Spawn key of the stream that builds a model shared by all replications before they run
#: (the layer-level pass-time pools of ``fidelity="layer"``): child 2**32 - 1 of the root
#: SeedSequence, apart from the replication children 0..R-1.
MODEL_STREAM_KEY = 2**32 - 1


def model_rng(seed: int) -> np.random.Generator:
    """The generator for models built once per run (independent of replication streams)."""
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(MODEL_STREAM_KEY,)))
    )


def bind_for_run(
    model: Bound | Scenario, fidelity: str, seed: int, cycle_times: CycleTimeModel | None = None
) -> tuple[Bound, CycleTimeModel]:
    """The ``Bound`` of ``model`` (a scenario is bound here, once) and the cycle-time model
    ``simulate`` takes at ``fidelity`` and ``seed`` (the layer pass's pools are drawn from
    ``model_rng(seed)``; ``cycle_times``, when given, is kept); a field either finds wanting
    is named with the scenario's file."""
    try:
        bound = as_bound(model)
        if cycle_times is None:
            rng = model_rng(seed) if fidelity == "layer" else None
            cycle_times = bound.cycle_time_model(fidelity=fidelity, rng=rng)
    except SpecsimError as exc:
        raise in_its_file(exc, _scenario_of(model)) from None
    return bound, cycle_times


def _scenario_of(model: Bound | Scenario) -> Scenario:
    return model.scenario if isinstance(model, Bound) else model


@dataclass(frozen=True, slots=True)
class BlockTask:
    """One block of replications for a worker: engine, plan, root seed, indices, and the
    targets to count when the block is folded into ``StreamStats`` (None: keep arrays)."""

    engine: str
    plan: EnginePlan
    seed: int
    block: range
    fold: tuple[float, ...] | None = None


def run_block(task: BlockTask) -> EngineOutput | StreamStats:
    """Run one block of replications: its arrays, or their statistics when folding."""
    out = ENGINES[task.engine](task.plan, block_rngs(task.seed, task.block))
    if task.fold is None:
        return out
    # lazy: only a streamed run folds statistics (start-up)
    from sim.simulation.stream import StreamStats

    return StreamStats.of(out, task.fold, len(task.plan.acceptance.class_names))


#: Runs of more requests than this stream by default (``simulate(stream=None)``).
STREAM_ABOVE = 250_000
#: The per-request and per-replication arrays of a ``MonteCarloResult``.
ARRAYS = (
    "tok_s",
    "request_ms",
    "request_tokens",
    "emitted_tokens",
    "cycles",
    "request_class",
    "accept_counts",
    "phase_ms",
)


#: Simulated tokens per block of replications of the fast engine: large enough that a
#: block's fixed costs (seeding, set-up) are small, small enough that a progress bar
#: moves and workers share the load.
BLOCK_TOKENS = 8_000_000


#: A streamed run's blocks are this many times larger (fewer, smaller messages back).
STREAM_BLOCKS = 8


def _blocks(
    replications: int, engine: str, requests: int, output_tokens: int, scale: int = 1
) -> list[range]:
    """Replication blocks: one each for the SimPy engine; for the fast engine, blocks of
    about ``scale`` x ``BLOCK_TOKENS`` simulated tokens."""
    tokens = scale * BLOCK_TOKENS
    size = 1 if engine == "des" else max(1, tokens // max(1, requests * output_tokens))
    return [range(i, min(i + size, replications)) for i in range(0, replications, size)]


def constant_ints(value: int, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` at every index of ``shape``, int64, read-only: one element seen through
    zero strides (``np.broadcast_to``'s array, without its set-up), no memory per index."""
    one = np.array([value], dtype=np.int64)
    out = np.ndarray(shape, dtype=np.int64, buffer=one, strides=(0,) * len(shape))
    out.setflags(write=False)
    return out


def _check_settings(engine: str, fidelity: str, sizes: dict[str, int], seed: int) -> None:
    if engine not in ENGINES:
        raise SpecsimError(
            f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", param="engine"
        )
    if fidelity not in FIDELITIES:
        raise SpecsimError(
            f"unknown fidelity {fidelity!r}; choose one of {', '.join(FIDELITIES)}",
            param="fidelity",
        )
    for name, value in sizes.items():
        if value < 1:
            raise SpecsimError(f"must be at least 1, got {value}", param=name)
    if seed < 0:
        raise SpecsimError(f"must be >= 0, got {seed}", param="seed")


def simulate(
    model: Bound | Scenario,
    *,
    engine: str = "fast",
    fidelity: str = "cycle",
    replications: int | None = None,
    requests: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    cycle_times: CycleTimeModel | None = None,
    acceptance: Acceptance | None = None,
    stream: bool | None = None,
    targets: Sequence[float] | None = None,
) -> MonteCarloResult:
    """Run the Monte Carlo of a bound scenario (a scenario is bound here, once).

    None takes the value from the scenario (``simulation.replications``, ``workload.requests``,
    ``simulation.seed``). ``fidelity`` chooses the pass-time model (``cycle``: cost model +
    ``timing.jitter_cv``; ``layer``: the layer-level SimPy pass, pools drawn from
    ``model_rng(seed)``). ``workers`` > 1 runs blocks of replications in that many processes
    (identical results). ``progress(done, total)`` is called as replications complete.
    ``cycle_times`` and ``acceptance`` replace the models the scenario binds to (a search
    scales the acceptance model instead of re-validating a scenario per rate).

    ``stream``: fold each block into statistics where it runs and keep no per-request
    arrays (sim/simulation/stream.py: memory that does not grow with the requests; exact
    counts and means, percentiles within 1e-4 relative); None streams runs of more than
    ``STREAM_ABOVE`` requests. ``targets`` (default the scenario's) are the tok/s whose
    hits a streamed run counts.
    """
    scenario = _scenario_of(model)
    r_n = scenario.simulation.replications if replications is None else replications
    q_n = scenario.workload.requests if requests is None else requests
    seed = scenario.simulation.seed if seed is None else seed
    sizes = {"replications": r_n, "requests": q_n, "workers": workers}
    _check_settings(engine, fidelity, sizes, seed)
    k = scenario.num_steps
    streamed = r_n * q_n > STREAM_ABOVE if stream is None else stream
    check_run_size(r_n, q_n, scenario.workload.output_tokens, k, engine, workers, streamed)
    bound, cycle_times = bind_for_run(model, fidelity, seed, cycle_times)
    speculating = scenario.num_steps > 0
    per_token, extend_tokens = bound.extend_growth if speculating else (0.0, 0.0)
    chosen = acceptance or bound.acceptance
    n_tok = scenario.workload.output_tokens
    plan = EnginePlan(
        acceptance=chosen,
        cycle_times=cycle_times,
        output_tokens=n_tok,
        requests=q_n,
        extend_per_token_ms=per_token,
        extend_tokens=extend_tokens,
    )
    counted = tuple(float(t) for t in (scenario.target_tok_s if targets is None else targets))
    blocks = _blocks(r_n, engine, q_n, plan.output_tokens, STREAM_BLOCKS if streamed else 1)
    fold = counted if streamed else None
    tasks = [BlockTask(engine, plan, seed, block, fold) for block in blocks]
    parts: dict[int, EngineOutput] = {}
    stats = None
    if streamed:
        # lazy: only a streamed run folds statistics (start-up)
        from sim.simulation.stream import StreamStats

        stats = StreamStats(counted, len(plan.acceptance.class_names), plan.num_steps)
    pending: dict[int, StreamStats] = {}
    merged = 0  # blocks merged so far: merge in block order, whatever order blocks finish in
    done = 0
    for i, part in LocalExecutor(workers).map_unordered(run_block, tasks):
        if isinstance(part, EngineOutput):  # arrays kept (no stats folded)
            parts[i] = part
        elif stats is not None:
            pending[i] = part
            while merged in pending:
                stats.merge(pending.pop(merged))
                merged += 1
        done += len(blocks[i])
        if progress:
            progress(done, r_n)
    run: dict[str, Any] = {  # the fields of every result
        "scenario": scenario,
        "acceptance": plan.acceptance,
        "engine": engine,
        "fidelity": fidelity,
        "seed": seed,
        "replications": r_n,
        "requests": q_n,
        "output_tokens": plan.output_tokens,
        "num_steps": plan.num_steps,
        "class_names": plan.acceptance.class_names,
    }
    if stats is not None:
        none: dict[str, Any] = dict.fromkeys(ARRAYS)  # a streamed result keeps no arrays
        return MonteCarloResult(**run, **none, stream=stats)
    out = EngineOutput.concatenate([parts[i] for i in range(len(blocks))])
    arrays: dict[str, Any] = {
        "tok_s": out.tok_s,
        "request_ms": out.request_ms,
        "request_tokens": constant_ints(plan.output_tokens, out.tok_s.shape),
        "emitted_tokens": out.emitted_tokens,
        "cycles": out.cycles,
        "request_class": out.request_class,
        "accept_counts": out.accept_counts,
        "phase_ms": out.phase_ms,
    }
    for a in arrays.values():
        a.setflags(write=False)
    return MonteCarloResult(**run, **arrays)
