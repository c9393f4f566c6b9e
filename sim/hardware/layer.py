"""Layer-level SimPy pass (``--fidelity layer``): tensor-parallel ranks, barriers, launcher.

Each tensor-parallel rank is a SimPy process running the pass's kernels in order
(sim/hardware/launch.py ``KernelSchedule``): compute kernels take the rank's share of the
pass compute times its jitter multiplier for that layer segment
(sim/hardware/jitter.py), and an all-reduce kernel is a barrier: the all-reduce starts when
the last rank arrives and ends ``allreduce_ms`` later for everyone. When the pass is not
graphed a CPU launcher process issues kernels one by one, one launch cost apart, and a rank
cannot start a kernel before it is issued. The straggler cost of jitter and the
launch-bound regime are not formulas here; they come out of the schedule. Without jitter
the pass ends exactly at the critical path of ``launch.critical_path_ms``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import simpy

from sim.hardware.jitter import sample_multipliers
from sim.hardware.launch import KernelSchedule


@dataclass(frozen=True)
class LayerPass:
    """One pass to simulate: its kernels, compute time (ms), TP ranks, jitter cv."""

    schedule: KernelSchedule
    compute_ms: float
    ranks: int
    jitter_cv: float = 0.0


def _launcher(env: simpy.Environment, issued: list[simpy.Event], launch_ms: float) -> Generator:
    """The CPU: issue kernel i at (i + 1) x launch_ms."""
    for event in issued:
        yield env.timeout(launch_ms)
        event.succeed()


def _rank(
    env: simpy.Environment,
    kernel_ms: np.ndarray,
    layer_pass: LayerPass,
    issued: list[simpy.Event] | None,
    arrivals: np.ndarray,
    all_arrived: list[simpy.Event | None],
) -> Generator:
    """One rank: run kernels in order; wait for issue; meet the others at each all-reduce.

    Consecutive compute kernels already issued run as one timeout (same end time).
    """
    schedule = layer_pass.schedule
    is_ar, fixed = schedule.is_allreduce, schedule.fixed_ms
    n = schedule.num_kernels
    i = 0
    while i < n:
        if issued is not None and not issued[i].triggered:
            yield issued[i]
        if is_ar[i]:
            arrivals[i] += 1
            event = all_arrived[i]
            assert event is not None
            if arrivals[i] == layer_pass.ranks:
                event.succeed()
            yield event
            yield env.timeout(fixed[i])
            i += 1
            continue
        busy = 0.0
        while i < n and not is_ar[i] and (issued is None or issued[i].triggered):
            busy += kernel_ms[i]
            i += 1
        yield env.timeout(busy)


def simulate_pass_ms(layer_pass: LayerPass, rng: np.random.Generator) -> float:
    """One pass through SimPy; its duration in ms (the last rank's finish)."""
    schedule = layer_pass.schedule
    n_segments = int(schedule.segment.max()) + 1 if schedule.num_kernels else 0
    multipliers = sample_multipliers(layer_pass.jitter_cv, (layer_pass.ranks, n_segments), rng)
    base = schedule.compute_share * layer_pass.compute_ms  # (num_kernels,)
    env = simpy.Environment()
    issued: list[simpy.Event] | None = None
    if schedule.launch_ms > 0:
        issued = [env.event() for _ in range(schedule.num_kernels)]
        env.process(_launcher(env, issued, schedule.launch_ms))
    arrivals = np.zeros(schedule.num_kernels, dtype=int)
    all_arrived: list[simpy.Event | None] = [
        env.event() if ar else None for ar in schedule.is_allreduce
    ]
    ranks = [
        env.process(
            _rank(
                env,
                base * multipliers[r, schedule.segment],
                layer_pass,
                issued,
                arrivals,
                all_arrived,
            )
        )
        for r in range(layer_pass.ranks)
    ]
    env.run(until=simpy.AllOf(env, ranks))
    return float(env.now)


def sample_layer_pass_ms(layer_pass: LayerPass, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent pass times (ms), shape (n,)."""
    return np.array([simulate_pass_ms(layer_pass, rng) for _ in range(n)])
