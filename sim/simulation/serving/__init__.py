"""The serving simulation: arrivals, continuous batching and speculative decoding under
concurrency, in SimPy.

Modules: ``workload`` (arrival patterns, requests), ``lengths`` (length distributions),
``scheduler`` (continuous batching configuration; the speculation policies it runs are
sim/model/policy.py), ``counter_rng`` (per-request acceptance draws), ``decode_batch``
(the decode batch as arrays), ``accept_lengths``, ``block_plan`` and ``step_plan`` (the
arithmetic of a block of iterations and of one), ``engine`` (one replication, wired from
``plan`` (the plan and a policy worked out on it), ``streams`` (its random streams),
``server`` (the scheduler's state, wiring its rooms: ``admission``, ``planner``,
``advance``, ``answers``, ``prefills`` and ``kv_ledger``, with ``block_size``,
``deliveries`` and ``held_rows``), ``processes`` (the SimPy processes) and ``timeouts``
(timeouts landing on a block's ends)), ``records`` (what a replication records),
``metrics`` (TTFT, TPOT, ITL, throughput, paired speedups), ``simulate`` (replications
and seeds), ``stability`` (an upper bound on the requests a second a server answers, to
check an open load against before simulating it).
"""

from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.lengths import Empirical, Fixed, LogNormal
from sim.simulation.serving.metrics import ServingSummary, SloSpec, summarize_serving
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.scheduler import SchedulerConfig
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.simulate import ServingRun, simulate_serving, work_out
from sim.simulation.serving.streams import ServingStreams
from sim.simulation.serving.workload import ClosedLoop, Poisson, Tasks, Trace, Workload

__all__ = [
    "ClosedLoop",
    "DisableAbove",
    "Drafting",
    "Empirical",
    "Fixed",
    "FixedK",
    "KTable",
    "LogNormal",
    "Poisson",
    "SchedulerConfig",
    "ServingPlan",
    "ServingRecord",
    "ServingRun",
    "ServingStreams",
    "ServingSummary",
    "SloSpec",
    "SpeculationPolicy",
    "Tasks",
    "Trace",
    "Workload",
    "run_replication",
    "simulate_serving",
    "summarize_serving",
    "work_out",
]
