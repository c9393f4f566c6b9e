"""Plan builders for the serving decision tests: small plans built in code, and a small
scenario (the Llama-3.1-8B H100 file with short requests) for end-to-end checks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sim.model.pass_curves import ServingCurves
from sim.scenario.load import load_scenario
from sim.scenario.schema import Scenario
from sim.simulation.serving.plan import ServingPlan
from sim.studies.serving.paired_metrics import Load
from tests.simulation.serving.helpers import TOKEN_ONLY, plan

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
LLAMA = SCENARIOS / "llama31-8b-1xh100-eagle3.toml"

#: Passes whose time grows with the batch's tokens only (tests/simulation/serving/helpers.py):
#: with alpha 0.8 and k = 3 speculation pays about 1.2x at batch 1 and stops near 22 users.
STEEP = TOKEN_ONLY


@dataclass(frozen=True)
class CodePlans:
    """A ``PlanBuilder`` over the test scenario's batch-1 passes (decode 10, verify 20,
    draft 1 / 2, overhead 0.5 ms) and token-only pass curves."""

    alpha: float = 0.8
    output: int = 40
    requests: int = 24
    curves: ServingCurves = STEEP
    default_steps: int = 3

    def __call__(self, load: Load, num_steps: int) -> ServingPlan:
        users = int(load.value) if load.integer else 1
        return plan(
            load.arrivals(),
            acceptance={"alpha": self.alpha},
            k=num_steps,
            output=self.output,
            requests=self.requests,
            warmup=users,
            curves=self.curves,
        )


def small_scenario(*sets: str) -> Scenario:
    """The Llama-3.1-8B H100 scenario with 32-token answers, 8 requests, 2 replications."""
    return load_scenario(
        LLAMA,
        [
            "workload.output_tokens=32",
            "workload.requests=8",
            "simulation.replications=2",
            *sets,
        ],
    )


__all__ = ["LLAMA", "STEEP", "TOKEN_ONLY", "CodePlans", "small_scenario"]
