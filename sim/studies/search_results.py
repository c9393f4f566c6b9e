"""What the inverse search answers (sim/studies/search.py ``search_acceptance``): per
target and k the acceptance it needs (``KResult``), per target the best k and its
interval (``TargetResult``), and the whole search with its settings and notes
(``SearchResult``), with the documents' fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.uncertainty.answers import TargetUncertainty

__all__ = ["KResult", "SearchResult", "TargetResult"]


@dataclass(frozen=True, slots=True)
class KResult:
    """One target at one draft length k."""

    num_steps: int
    reachable: bool
    alpha: float | None
    alpha_ci95: tuple[float | None, float | None]
    required_accept_length: float | None
    closed_form_alpha: float | None
    ceiling_tok_s: float
    simulated_ceiling_tok_s: float | None
    per_position: list[float] | None
    #: The mean rate (alpha) the simulated ceiling ran at: the highest the search reaches,
    #: 1 unless a Beta std forbids mean rates near 1 (``AcceptanceLever.spread_limited``).
    simulated_ceiling_alpha: float | None = None
    method: str = "monte_carlo"  # where the root came from: "exact" law or "monte_carlo"
    first_rate: float | None = None
    first_rate_ci95: tuple[float | None, float | None] = (None, None)
    closed_form_first_rate: float | None = None
    flat_alpha: float | None = None  # closed form, equal rates
    scale: float | None = None  # the lever value: the profile's scale (drafter quality)
    #: 90% interval (inputs and model) of the closed-form first-position rate at this k.
    interval90: list[float | None] | None = None
    #: The root asks for a first-position rate above 1 under the shape (``over_cap``).
    over_cap: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "method": self.method,
            "reachable": self.reachable,
            "over_cap": self.over_cap,
            "alpha": self.alpha,
            "alpha_ci95": list(self.alpha_ci95),
            "first_rate": self.first_rate,
            "first_rate_ci95": list(self.first_rate_ci95),
            "closed_form_first_rate": self.closed_form_first_rate,
            "flat_alpha": self.flat_alpha,
            "interval90": self.interval90,
            "required_accept_length": self.required_accept_length,
            "closed_form_alpha": self.closed_form_alpha,
            "ceiling_tok_s": self.ceiling_tok_s,
            "simulated_ceiling_tok_s": self.simulated_ceiling_tok_s,
            "simulated_ceiling_alpha": self.simulated_ceiling_alpha,
            "per_position": self.per_position,
        }


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target over the k range: the best k (lowest alpha) and every k."""

    tok_s: float
    quantile: float | None
    per_num_steps: tuple[KResult, ...]
    reason: str | None
    #: The closed-form answer's 90% interval from inputs and model (mean tok/s only).
    uncertainty: TargetUncertainty | None = None

    @property
    def best(self) -> KResult | None:
        """The k needing the lowest first-position rate (the drafter accuracy asked for)."""
        ok = [r for r in self.per_num_steps if r.reachable]
        return min(ok, key=lambda r: (r.scale, r.num_steps)) if ok else None

    @property
    def note(self) -> str | None:
        best = self.best
        ks = [r.num_steps for r in self.per_num_steps]
        if best is not None and len(ks) > 1 and best.num_steps == max(ks):
            return (
                f"the best k is the largest searched ({best.num_steps}); a longer draft may "
                "need a lower rate: widen --num-steps"
            )
        return None

    @property
    def best_flat(self) -> KResult | None:
        """The k needing the lowest equal rate (closed form): the flat answer at its own best
        k, the quantity whose interval ``uncertainty.flat_interval90`` gives."""
        ok = [r for r in self.per_num_steps if r.reachable and r.flat_alpha is not None]
        return min(ok, key=lambda r: (r.flat_alpha, r.num_steps)) if ok else None

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        flat = self.best_flat
        top = max(self.per_num_steps, key=lambda r: r.ceiling_tok_s)
        return {
            "tok_s": self.tok_s,
            "quantile": self.quantile,
            # as run's closed form: a first-position rate of at most 1 under the shape
            "reachable": best is not None and not best.over_cap,
            "reachable_flat": flat is not None,
            "needs_rates_falling_less": best is not None and best.over_cap,
            "best_num_steps": best.num_steps if best else None,
            "alpha": best.alpha if best else None,
            "alpha_ci95": list(best.alpha_ci95) if best else [None, None],
            "first_rate": best.first_rate if best else None,
            "first_rate_ci95": list(best.first_rate_ci95) if best else [None, None],
            "flat_alpha": flat.flat_alpha if flat else None,
            "flat_num_steps": flat.num_steps if flat else None,
            "required_accept_length": best.required_accept_length if best else None,
            "ceiling_tok_s": top.ceiling_tok_s,
            "ceiling_num_steps": top.num_steps,
            "uncertainty": self.uncertainty.to_dict() if self.uncertainty else None,
            "reason": self.reason,
            "note": self.note,
            "per_num_steps": [r.to_dict() for r in self.per_num_steps],
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    scenario: str
    engine: str
    fidelity: str
    evaluations: int
    note: str
    targets: tuple[TargetResult, ...]
    settings: dict[str, Any]
    refused: int = 0  # lever values refused without a run (a load above its service bound)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "engine": self.engine,
            "fidelity": self.fidelity,
            "evaluations": self.evaluations,
            "acceptance_lever": self.note,
            **self.settings,
            "targets": [t.to_dict() for t in self.targets],
        }
