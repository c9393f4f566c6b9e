"""Monte Carlo engines: ``fast`` (vectorized NumPy) and ``des`` (SimPy, the model of record).

Both simulate the same model (sim/simulation/engines/common.py) from the same pure
functions (sim/model/samplers.py for the coin flips, sim/model/cycletime.py for durations)
and return an ``EngineOutput``; sim/simulation/simulate.py seeds them and assembles the
result. ``ENGINES`` is the registry ``simulate`` picks from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sim.simulation.engines.common import EngineOutput, EnginePlan, ReplicationRngs
from sim.simulation.engines.des import run_des
from sim.simulation.engines.fast import run_fast

Engine = Callable[[EnginePlan, Sequence[ReplicationRngs]], EngineOutput]

#: Engine name -> function (plan, replication streams) -> output.
ENGINES: dict[str, Engine] = {"fast": run_fast, "des": run_des}

__all__ = ["ENGINES", "Engine", "EngineOutput", "EnginePlan", "ReplicationRngs"]
