"""Layer-level SimPy pass (``--fidelity layer``): tensor-parallel ranks, barriers, launcher.

Each tensor-parallel rank is a SimPy process running the pass's kernels in order
(sim/hardware/launch.py ``KernelSchedule``): compute kernels take the rank's share of the
pass compute times its jitter multiplier for that layer segment
(sim/hardware/jitter.py), plus any fixed GPU time of their own (unfused ops), and an
all-reduce kernel is a barrier: the all-reduce starts when the last rank arrives and ends
``allreduce_ms`` later for everyone. When the pass is not graphed each rank's CPU issues
kernels one by one (each its own CPU cost, sim/hardware/eager.py), a kernel cannot start
before it is issued, and after a host-sync kernel the CPU waits for its GPU to finish it.
Each rank keeps its CPU and GPU clocks and steps them kernel by kernel
(``run_until_barrier``: start = max(GPU free, issued)); the process yields only at the
barriers. The straggler cost of jitter and the launch-bound regime are not formulas here;
they come out of the schedule. Without jitter the pass ends exactly at the closed-form
critical path of ``launch.critical_path_ms``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sim.hardware.jitter import sample_multipliers
from sim.hardware.launch import KernelSchedule

if TYPE_CHECKING:
    import simpy


@dataclass(frozen=True, slots=True)
class LayerPass:
    """One pass to simulate: its kernels, compute time (ms), TP ranks, jitter cv."""

    schedule: KernelSchedule
    compute_ms: float
    ranks: int
    jitter_cv: float = 0.0


@dataclass
class RankClock:
    """One rank's two timelines (ms): when its GPU is next free, and when its CPU has
    issued everything so far. Mutable state of one SimPy rank process only."""

    gpu_ms: float = 0.0
    cpu_ms: float = 0.0


def run_until_barrier(
    clock: RankClock,
    kernel_ms: np.ndarray,
    schedule: KernelSchedule,
    start: int,
) -> int:
    """Advance ``clock`` through the compute kernels from ``start`` up to the next
    all-reduce (or the end); return that kernel's index.

    Kernel i is issued when the CPU has spent ``cpu_ms[i]`` more, starts when issued and
    the GPU is free, and runs ``kernel_ms[i]``; after a host-sync kernel the CPU waits for
    the GPU to finish it and then ``sync_ms``. Pure arithmetic on the clock.
    """
    i, n = start, schedule.num_kernels
    while i < n and not schedule.is_allreduce[i]:
        clock.cpu_ms += schedule.cpu_ms[i]
        clock.gpu_ms = max(clock.gpu_ms, clock.cpu_ms) + kernel_ms[i]
        if schedule.host_sync[i] and i < n - 1:
            clock.cpu_ms = max(clock.cpu_ms, clock.gpu_ms) + schedule.sync_ms
        i += 1
    return i


def _rank(
    env: simpy.Environment,
    kernel_ms: np.ndarray,
    layer_pass: LayerPass,
    arrivals: np.ndarray,
    all_arrived: list[simpy.Event | None],
) -> Generator:
    """One rank: its CPU issues, its GPU runs; it meets the others at each all-reduce.

    Between two all-reduces the rank's clock advances in one step (``run_until_barrier``)
    and the process waits until its GPU reaches the barrier; the all-reduce starts when the
    last rank arrives and lasts ``fixed_ms`` for everyone.
    """
    schedule = layer_pass.schedule
    n = schedule.num_kernels
    clock = RankClock()
    i = 0
    while i < n:
        i = run_until_barrier(clock, kernel_ms, schedule, i)
        if i >= n:
            break
        clock.cpu_ms += schedule.cpu_ms[i]
        yield env.timeout(max(clock.gpu_ms, clock.cpu_ms) - env.now)
        arrivals[i] += 1
        event = all_arrived[i]
        assert event is not None
        if arrivals[i] == layer_pass.ranks:
            event.succeed()
        yield event
        clock.gpu_ms = env.now + schedule.fixed_ms[i]
        if schedule.host_sync[i] and i < n - 1:
            clock.cpu_ms = max(clock.cpu_ms, clock.gpu_ms) + schedule.sync_ms
        i += 1
    yield env.timeout(clock.gpu_ms - env.now)


def simulate_pass_ms(layer_pass: LayerPass, rng: np.random.Generator) -> float:
    """One pass through SimPy; its duration in ms (the last rank's finish)."""
    import simpy  # lazy: only the layer fidelity imports SimPy (start-up)

    schedule = layer_pass.schedule
    n_segments = int(schedule.segment.max()) + 1 if schedule.num_kernels else 0
    multipliers = sample_multipliers(layer_pass.jitter_cv, (layer_pass.ranks, n_segments), rng)
    base = schedule.compute_share * layer_pass.compute_ms  # (num_kernels,)
    # Fixed GPU time of compute kernels (unfused ops, sim/hardware/eager.py), not jittered;
    # an all-reduce's fixed time is its barrier's.
    fixed = np.where(schedule.is_allreduce, 0.0, schedule.fixed_ms)
    env = simpy.Environment()
    arrivals = np.zeros(schedule.num_kernels, dtype=int)
    all_arrived: list[simpy.Event | None] = [
        env.event() if ar else None for ar in schedule.is_allreduce
    ]
    ranks = [
        env.process(
            _rank(
                env,
                base * multipliers[r, schedule.segment] + fixed,
                layer_pass,
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
