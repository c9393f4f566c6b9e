"""What a crossover study answers: each metric's gain curve at each k and the document.

``MetricCurve`` (one metric at one k over the loads, its crossings and their 90%
intervals, the rates above a bound decided without simulating: ``Overloaded``) and
``CrossoverResult`` (every curve, the latency distributions at the grid loads at
``LEVELS``, the engine configurations a per-user crossover reads as, the document).
Built by sim/studies/serving/crossover.py; no text (sim/report/crossover.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.simulation.serving.metrics import Ratio
from sim.simulation.serving.overload import at_most
from sim.simulation.serving.stability import LoadCheck
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.break_even import STOPS, Crossing
from sim.studies.serving.draw_intervals import IntervalSources
from sim.studies.serving.paired_metrics import METRICS, PolicyPoint, ratio_doc

__all__ = [
    "LEVELS",
    "NEITHER",
    "PLAIN",
    "SPECULATION",
    "CrossoverResult",
    "MetricCurve",
    "Overloaded",
    "latency_quantiles",
    "overload_summary",
]


#: Quantile levels of the latency distributions kept per grid load (0, 1, ..., 100%).
LEVELS = np.linspace(0.0, 1.0, 101)


def latency_quantiles(point: PolicyPoint) -> dict[str, list[float]]:
    """Pooled TTFT and TPOT quantiles (ms) at ``LEVELS`` (empty lists without samples)."""
    return {
        name: (np.quantile(v, LEVELS).tolist() if v.size else [])
        for name, v in point.samples.items()
    }


#: Who wins a rate above a bound, without simulating: the one still stable, or neither.
SPECULATION, PLAIN, NEITHER = "speculation", "plain decoding", "neither"


@dataclass(frozen=True, slots=True)
class Overloaded:
    """A rate (``load``, requests/s) above speculation's or plain decoding's service bound
    (``speculative_bound`` and ``baseline_bound``, requests/s): ``verdict`` the policy
    still stable there (``SPECULATION`` or ``PLAIN``), or ``NEITHER``."""

    load: float
    verdict: str
    speculative_bound: float
    baseline_bound: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "stable": False,
            "winner": self.verdict,
            "speculative_service_bound_per_s": self.speculative_bound,
            "baseline_service_bound_per_s": self.baseline_bound,
        }


def overload_summary(overloaded: Sequence[Overloaded], num_steps: int) -> str:
    """What the rates above a bound decide, in words (``MetricCurve.summary``)."""
    out = []
    for verdict in (PLAIN, SPECULATION, NEITHER):
        rows = [o for o in overloaded if o.verdict == verdict]
        if not rows:
            continue
        rates = ", ".join(f"{o.load:g}" for o in rows)
        spec = f"k = {num_steps} ({at_most(rows[0].speculative_bound)})"
        base = f"plain decoding ({at_most(rows[0].baseline_bound)})"
        if verdict == PLAIN:
            out.append(f"plain decoding wins at {rates} requests/s: above what {spec} answers")
        elif verdict == SPECULATION:
            out.append(f"speculation wins at {rates} requests/s: above what {base} answers")
        else:
            out.append(f"neither is stable at {rates} requests/s: above {spec} and {base}")
    return "; ".join(out)


@dataclass(frozen=True, slots=True)
class MetricCurve:
    """One metric at one k over the load grid (and the loads refinement added):
    ``loads`` (n,), ``gain``, ``speculative`` and ``baseline`` levels per load."""

    metric: str
    num_steps: int
    loads: tuple[float, ...]
    gain: tuple[Ratio, ...]
    speculative: tuple[Ratio, ...]
    baseline: tuple[Ratio, ...]
    crossings: tuple[Crossing, ...]
    #: Grid rates above a bound, decided without simulating (``Overloaded``).
    overloaded: tuple[Overloaded, ...] = ()
    #: Per crossing, its 90% interval from inputs and model (sim/studies/serving/draws.py:
    #: the draws' crossings on the neighbouring grid loads joined with the Monte Carlo
    #: interval; an end None: beyond the loads the draws ran).
    interval90: tuple[tuple[float | None, float | None], ...] = ()
    #: Without a crossing: the load whose gain is nearest 1 and that gain's 90% interval
    #: from inputs and model (None: no draws).
    nearest: tuple[float, list[float] | None] | None = None
    #: What each crossing's ``interval90`` holds, or without a crossing the nearest
    #: gain's (sim/studies/serving/draw_intervals.py ``IntervalSources``; () : no draws).
    sources: tuple[IntervalSources, ...] = ()

    def _sources(self, i: int, key: str) -> dict[str, str]:
        """``{key: sources}`` where interval ``i`` is not from the inputs' draws (else
        nothing: a document from two or more draws reads as before)."""
        held = self.sources[i] if i < len(self.sources) else IntervalSources.INPUTS
        return {} if held is IntervalSources.INPUTS else {key: held.value}

    def _simulated_summary(self) -> str:
        if self.crossings:
            return "; ".join(f"{c.direction} at {c.at:.3g}" for c in self.crossings)
        means = [g.mean for g in self.gain]
        if not means:
            return "no load simulated"
        if all(m >= 1.0 for m in means):
            return "pays at every load simulated"
        if all(m < 1.0 for m in means):
            return "never pays at the loads simulated"
        return "no crossing"

    def summary(self) -> str:
        """What the curve says in words (pays throughout, never, or where it crosses; and
        who wins the rates above a bound)."""
        text = self._simulated_summary()
        if self.overloaded:
            text += "; " + overload_summary(self.overloaded, self.num_steps)
        return text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "num_steps": self.num_steps,
            "summary": self.summary(),
            "crossings": [
                {
                    **c.to_dict(),
                    **({"interval90": list(self.interval90[i])} if self.interval90 else {}),
                    **(self._sources(i, "interval90_sources") if self.interval90 else {}),
                }
                for i, c in enumerate(self.crossings)
            ],
            **(
                {
                    "nearest_one": {
                        "load": self.nearest[0],
                        "gain_interval90": self.nearest[1],
                        **self._sources(0, "gain_interval90_sources"),
                    }
                }
                if self.nearest is not None
                else {}
            ),
            "points": [
                {
                    "load": x,
                    "gain": ratio_doc(g),
                    "speculative": ratio_doc(s),
                    "baseline": ratio_doc(b),
                }
                for x, g, s, b in zip(
                    self.loads, self.gain, self.speculative, self.baseline, strict=True
                )
            ],
        }
        if self.overloaded:  # only then: a stable grid's document is as it was
            out["overloaded"] = [o.to_dict() for o in self.overloaded]
            out["overload_summary"] = overload_summary(self.overloaded, self.num_steps)
        return out


@dataclass(frozen=True, slots=True)
class CrossoverResult:
    scenario: str
    load_kind: str
    grid: tuple[float, ...]
    num_steps: tuple[int, ...]
    curves: tuple[MetricCurve, ...]
    distributions: dict[float, dict[str, dict[str, list[float]]]]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    #: Grid rates above some policy's bound (``LoadCheck``, policies named by k)
    overloads: tuple[LoadCheck, ...] = ()
    #: Simulated (load, policy k, replications not steady, replications) where the
    #: requests in the system grew through the window (serve's NOT STEADY)
    not_steady: tuple[tuple[float, int, int, int], ...] = ()
    #: The scenario's draft method (acceptance.method), named in the engine configs.
    draft_method: str | None = None
    #: The model-error term the crossings' 90% intervals include (``ModelErrorTerm.doc``
    #: at the largest decode batch run; None: no draws, Monte Carlo intervals only).
    model_error: dict[str, Any] | None = None

    def curve(self, metric: str, k: int) -> MetricCurve:
        return next(c for c in self.curves if c.metric == metric and c.num_steps == k)

    def threshold_rows(self, k: int) -> tuple[tuple[int, int, int], ...] | None:
        """The per-user tok/s crossover at ``k`` as a ``[start_bs, end_bs, k]`` table: k
        up to the batch before speculation stops paying, plain decoding from there (a
        closed loop without think time keeps about one request a user in the batch).
        None: a load in requests/s, no per-user curve, or a curve that does not stop
        paying exactly once from the first load."""
        if self.load_kind != "concurrency" or not self.curves:
            return None
        curve = next(
            (c for c in self.curves if c.metric == "per_user_tok_s" and c.num_steps == k), None
        )
        if curve is None:
            return None
        top = int(max(self.grid))
        if not curve.crossings:
            pays = all(g.mean >= 1.0 for g in curve.gain)
            return ((1, top, k),) if pays else None
        if len(curve.crossings) != 1 or curve.crossings[0].direction != STOPS:
            return None
        first_plain = int(curve.crossings[0].at)
        if first_plain <= 1:
            return None
        rows = [(1, first_plain - 1, k)]
        if first_plain <= top:
            rows.append((first_plain, top, 0))
        return tuple(rows)

    def engine_configs(self) -> dict[str, Any]:
        """Each k's crossover as each engine accepts it (sim/studies/engine_configs.py)."""
        out: dict[str, Any] = {}
        for k in self.num_steps:
            rows = self.threshold_rows(k)
            if rows is not None:
                out[str(k)] = {"table": [list(r) for r in rows],
                               **engine_configs(rows, self.draft_method)}  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "load_kind": self.load_kind,
            "engine_configs": self.engine_configs(),
            "grid": list(self.grid),
            "num_steps": list(self.num_steps),
            "metrics": {m: _metric_doc(m) for m in dict.fromkeys(c.metric for c in self.curves)},
            **self.settings,
            "runs": self.runs,
            "assumptions": list(self.assumptions),
            "curves": [c.to_dict() for c in self.curves],
            **({"model_error": self.model_error} if self.model_error is not None else {}),
            "distribution_levels": [float(q) for q in LEVELS],
            "distributions": [
                {"load": x, "by_num_steps": by_k} for x, by_k in self.distributions.items()
            ],
            **({"overloads": [c.to_dict() for c in self.overloads]} if self.overloads else {}),
            **(
                {
                    "not_steady": [
                        {"load": x, "num_steps": k, "replications": n, "of": r}
                        for x, k, n, r in self.not_steady
                    ]
                }
                if self.not_steady
                else {}
            ),
        }


def _metric_doc(name: str) -> dict[str, Any]:
    spec = METRICS[name]
    return {"label": spec.label, "unit": spec.unit, "higher_is_better": spec.higher_is_better}
