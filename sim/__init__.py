"""specsim: a discrete-event simulator of LLM speculative decoding.

The library API is plain functions over frozen config objects; the ``specsim`` command
(``sim.cli``) is a thin layer over it::

    import sim
    scenario = sim.load_scenario("scenarios/kimi-k25-8xpcie-eagle3.toml")  # the file
    bound = sim.bind(scenario)                                 # what it means, once
    print(sim.analyze(bound).throughput_tok_s)                 # closed form
    summary = sim.summarize(sim.simulate(bound, engine="des"))  # Monte Carlo
    best = sim.search_acceptance(scenario, [150.0], range(1, 17)).targets[0].best
    served = sim.serve(scenario, concurrency=16)                  # the server under load

Names are imported on first use (PEP 562), so ``import sim`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "SpecsimError": "sim.errors",
    "Scenario": "sim.scenario.schema",
    "load_scenario": "sim.scenario.load",
    "with_overrides": "sim.scenario.overrides",
    "bind": "sim.binding.bound",
    "Bound": "sim.binding.bound",
    "analyze": "sim.studies.analysis",
    "simulate": "sim.simulation.simulate",
    "summarize": "sim.simulation.summary",
    "search_acceptance": "sim.studies.search",
    "solve_lever": "sim.studies.solve",
    "run_sweep": "sim.studies.sweep",
    "compare_scenarios": "sim.studies.compare",
    "lever_table": "sim.studies.levers",
    "calibrate": "sim.calibration.calibrate",
    # serving: the server under load, and the decisions built on it
    "serve": "sim.studies.serving.serve",
    "serve_bound": "sim.studies.serving.serve",
    "serving_study": "sim.studies.serving.serve",
    "Load": "sim.studies.serving.paired_metrics",
    "crossover": "sim.studies.serving.crossover",
    "best_k": "sim.studies.serving.best_k",
    "capacity": "sim.studies.serving.capacity",
    "search_at_load": "sim.studies.serving.search",
    "tree_load_study": "sim.studies.serving.tree_load",
    "controller_study": "sim.studies.serving.controllers",
    "simulate_serving": "sim.simulation.serving.simulate",
    "summarize_serving": "sim.simulation.serving.metrics",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
