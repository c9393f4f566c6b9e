"""What ``best_k`` answers (sim/studies/serving/best_k.py): the selection, the engine
forms, the check and its verdicts (``BestKResult``), with the document's fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.model.policy import DisableAbove, FixedK
from sim.simulation.serving.metrics import Ratio
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.best_k_check import Check
from sim.studies.serving.best_k_forms import table_row_k
from sim.studies.serving.best_k_selection import LoadChoice
from sim.studies.serving.paired_metrics import METRICS, ratio_doc

__all__ = ["BestKResult"]


@dataclass(frozen=True, slots=True)
class BestKResult:
    scenario: str
    objective: str
    num_steps: tuple[int, ...]
    choices: tuple[LoadChoice, ...]
    table: tuple[tuple[int, int, int], ...]
    threshold: DisableAbove | FixedK | None
    threshold_note: str
    check_seed: int
    checks: dict[str, tuple[Check, ...]]
    fixed: dict[int, tuple[Ratio, ...]]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    #: The scenario's draft method (acceptance.method), named in the engine configs.
    draft_method: str | None = None

    @property
    def beats_every_fixed_k(self) -> bool:
        """No fixed k is significantly better than the table at any load of the check."""
        return not any(c.worse_than() for c in self.checks["table"])

    def verdict(self, name: str = "table") -> dict[str, Any]:
        checks = self.checks[name]
        ks = sorted(checks[0].advantage)
        shortfalls = [
            (-c.advantage[k].mean / self.fixed[k][i].mean, k, c.users)
            for i, c in enumerate(checks)
            for k in c.worse_than()
            if self.fixed[k][i].mean
        ]
        worst = max(shortfalls, default=None)
        own = (
            {
                str(k): [
                    c.users
                    for c in checks
                    if k in c.worse_than() and table_row_k(self.table, c.users) == k
                ]
                for k in ks
            }
            if name == "table"
            else {}
        )
        return {
            "beats_every_fixed_k_within_ci": not any(c.worse_than() for c in checks),
            "worst_shortfall": (
                None
                if worst is None
                else {"relative": worst[0], "num_steps": worst[1], "users": worst[2]}
            ),
            "significantly_better_at": {
                str(k): [c.users for c in checks if k in c.better_than()] for k in ks
            },
            "significantly_worse_at": {
                str(k): [c.users for c in checks if k in c.worse_than()] for k in ks
            },
            # loads where the fixed k that beats the table is the table's own k there (the
            # table's server pays for having speculation configured; no boundary to move)
            "worse_where_the_table_runs_that_k": {k: u for k, u in own.items() if u},
        }

    def to_dict(self) -> dict[str, Any]:
        spec = METRICS[self.objective]
        t = self.threshold
        return {
            "scenario": self.scenario,
            "objective": self.objective,
            "objective_label": spec.label,
            "objective_unit": spec.unit,
            "num_steps": list(self.num_steps),
            **self.settings,
            "selection": [c.to_dict() for c in self.choices],
            "vllm_table": [list(r) for r in self.table],
            "vllm_speculative_config": {
                "num_speculative_tokens": max(r[2] for r in self.table),
                "num_speculative_tokens_per_batch_size": [list(r) for r in self.table],
            },
            "sglang_threshold": (
                None
                if t is None
                else {
                    "num_steps": t.k,
                    "disable_above_batch": getattr(t, "max_batch", None),
                }
            ),
            "sglang_threshold_note": self.threshold_note,
            "engine_configs": engine_configs(self.table, self.draft_method),
            "check": {
                "seed": self.check_seed,
                "users": [c.users for c in self.checks["table"]],
                "fixed": {
                    str(k): [ratio_doc(r) for r in rs] for k, rs in sorted(self.fixed.items())
                },
                "policies": {
                    name: {"points": [c.to_dict() for c in cs], **self.verdict(name)}
                    for name, cs in self.checks.items()
                },
            },
            "runs": self.runs,
            "assumptions": list(self.assumptions),
        }
