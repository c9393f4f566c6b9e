"""Monte Carlo runs: replications, seeds and worker processes.

Seeds become generators here and only here: ``SeedSequence(seed).spawn(replications)``
gives one child per replication (``model_rng`` one more, for models built once per
run, such as the layer-level pass-time pools), and each child spawns the replication's
three streams (``ReplicationRngs``: requests, accept, timing; the SimPy engine derives one
sub-stream per request from them with ``jumped``). A replication reads only its own
streams, so results do not depend on ``workers`` (blocks of replications on the one
executor of sim/parallel.py), on scheduling or on how the engines batch replications.
Statistics of a result: sim/simulation/summary.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sim.errors import SpecsimError
from sim.model.cycletime import CycleTimeModel
from sim.model.tree_acceptance import Acceptance
from sim.parallel import LocalExecutor
from sim.scenario.bind import FIDELITIES, cycle_time_model, extend_growth, scenario_acceptance
from sim.scenario.schema import Scenario
from sim.simulation.budget import check_run_size
from sim.simulation.engines import ENGINES
from sim.simulation.engines.common import EngineOutput, EnginePlan, ReplicationRngs
from sim.simulation.results import MonteCarloResult

Progress = Callable[[int, int], None]


def replication_rngs(child: np.random.SeedSequence) -> ReplicationRngs:
    """The three independent streams of one replication from its SeedSequence child."""
    requests, accept, timing = child.spawn(3)
    return ReplicationRngs(
        requests=np.random.Generator(np.random.PCG64(requests)),
        accept=np.random.Generator(np.random.PCG64(accept)),
        timing=np.random.Generator(np.random.PCG64(timing)),
    )


#: Spawn key of the stream that builds a model shared by all replications before they run
#: (the layer-level pass-time pools of ``fidelity="layer"``): child 2**32 - 1 of the root
#: SeedSequence, apart from the replication children 0..R-1.
MODEL_STREAM_KEY = 2**32 - 1


def model_rng(seed: int) -> np.random.Generator:
    """The generator for models built once per run (independent of replication streams)."""
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(MODEL_STREAM_KEY,)))
    )


def run_block(
    task: tuple[str, EnginePlan, Sequence[np.random.SeedSequence]],
) -> EngineOutput:
    """Run one block of replications: (engine name, plan, their SeedSequence children)."""
    engine, plan, children = task
    return ENGINES[engine](plan, [replication_rngs(c) for c in children])


def _blocks(replications: int, engine: str, requests: int, output_tokens: int) -> list[range]:
    """Replication blocks: one each for the SimPy engine; for the fast engine, blocks of
    about 2 M simulated tokens so a progress bar moves and workers share the load."""
    size = 1 if engine == "des" else max(1, 2_000_000 // max(1, requests * output_tokens))
    return [range(i, min(i + size, replications)) for i in range(0, replications, size)]


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
    scenario: Scenario,
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
) -> MonteCarloResult:
    """Run the Monte Carlo of ``scenario``.

    None takes the value from the scenario (``simulation.replications``, ``workload.requests``,
    ``simulation.seed``). ``fidelity`` chooses the pass-time model (``cycle``: cost model +
    ``timing.jitter_cv``; ``layer``: the layer-level SimPy pass, pools drawn from
    ``model_rng(seed)``). ``workers`` > 1 runs blocks of replications in that many processes
    (identical results). ``progress(done, total)`` is called as replications complete.
    ``cycle_times`` and ``acceptance`` replace the models the scenario binds to (a search
    scales the acceptance model instead of re-validating a scenario per rate).
    """
    r_n = scenario.simulation.replications if replications is None else replications
    q_n = scenario.workload.requests if requests is None else requests
    seed = scenario.simulation.seed if seed is None else seed
    sizes = {"replications": r_n, "requests": q_n, "workers": workers}
    _check_settings(engine, fidelity, sizes, seed)
    k = scenario.num_steps
    check_run_size(r_n, q_n, scenario.workload.output_tokens, k, engine, workers)
    if cycle_times is None:
        rng = model_rng(seed) if fidelity == "layer" else None
        cycle_times = cycle_time_model(scenario, fidelity=fidelity, rng=rng)
    speculating = scenario.num_steps > 0
    per_token, extend_tokens = extend_growth(scenario) if speculating else (0.0, 0.0)
    plan = EnginePlan(
        acceptance=acceptance or scenario_acceptance(scenario),
        cycle_times=cycle_times,
        output_tokens=scenario.workload.output_tokens,
        requests=q_n,
        extend_per_token_ms=per_token,
        extend_tokens=extend_tokens,
    )
    children = np.random.SeedSequence(seed).spawn(r_n)
    blocks = _blocks(r_n, engine, q_n, plan.output_tokens)
    tasks = [(engine, plan, [children[j] for j in block]) for block in blocks]
    parts: dict[int, EngineOutput] = {}
    done = 0
    for i, part in LocalExecutor(workers).map_unordered(run_block, tasks):
        parts[i] = part
        done += len(blocks[i])
        if progress:
            progress(done, r_n)
    out = EngineOutput.concatenate([parts[i] for i in range(len(blocks))])
    arrays = {
        "tok_s": out.tok_s,
        "request_ms": out.request_ms,
        "request_tokens": np.full(out.tok_s.shape, plan.output_tokens, dtype=np.int64),
        "emitted_tokens": out.emitted_tokens,
        "cycles": out.cycles,
        "request_class": out.request_class,
        "accept_counts": out.accept_counts,
        "phase_ms": out.phase_ms,
    }
    for a in arrays.values():
        a.setflags(write=False)
    return MonteCarloResult(
        scenario=scenario,
        acceptance=plan.acceptance,
        engine=engine,
        fidelity=fidelity,
        seed=seed,
        replications=r_n,
        requests=q_n,
        output_tokens=plan.output_tokens,
        num_steps=plan.num_steps,
        class_names=plan.acceptance.class_names,
        **arrays,
    )
