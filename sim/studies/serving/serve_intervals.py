"""``serve``'s 90% intervals from inputs and model (``serve_intervals``): each drawn
scenario's replications on the nominal run's first seeds, at the one load of ``serve``,
the levels of each policy and the paired speedup (``SERVE_METRICS``) read from them as
draws.py's studies read theirs (sim/studies/serving/draw_intervals.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.errors import SpecsimError
from sim.simulation.serving.serving_record import ServingRecord
from sim.studies.serving.draw_intervals import (
    DRAW_REPLICATIONS,
    IntervalSources,
    answering,
    interval90,
    paired_gain,
    shifted,
    sources90,
    weakest,
)
from sim.uncertainty.model_error import model_error_term
from sim.uncertainty.perturb import DRAWS, Refit, input_draws, perturbed

if TYPE_CHECKING:
    from sim.binding.bound import Bound

__all__ = ["SERVE_METRICS", "serve_intervals"]


#: The ``serve`` metrics given a 90% interval from inputs and model (paired_metrics.py
#: ``METRICS`` names), levels of each policy and the paired speedup.
SERVE_METRICS: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s", "tpot_p50_ms")


def serve_intervals(
    bound: Bound,
    records: Mapping[str, list[ServingRecord]],
    *,
    slo: Any,
    seed: int,
    base_dir: Any = None,
    source: str = "scenario",
    workers: int = 1,
    baseline: str = "baseline",
    batch: float = 1.0,
    draws: int = DRAWS,
    replications: int = DRAW_REPLICATIONS,
    refit: Refit | None = None,
    model_error: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    """``serve``'s 90% intervals from inputs and model: for each policy of ``records``
    (its nominal replications) the levels of ``SERVE_METRICS``, and each policy's paired
    speedup over ``baseline``, each the draws' answers (every draw ``replications``
    replications at the nominal run's first seeds, the nominal moved by the paired shift)
    joined with the nominal's Monte Carlo 95% interval; ``batch``: the mean decode batch
    of the nominal run, against the highest measured one (``beyond_note``); ``refit``: the
    draws conditioned on the calibration figures (``input_draws``). The draws perturb the
    nominal run's bound scenario ``bound`` and bind each (sim/uncertainty/perturb.py
    ``perturbed``). Each interval from the inputs then takes the model-error term at
    ``batch`` (sim/uncertainty/model_error.py: ``model_error`` (the levels' s, the gains'
    ceiling a and scale d0), default the scenario's or the shipped one). The document's
    ``label`` says what its intervals hold (draw_intervals.py ``IntervalSources``, the
    least of them: fewer than two draws answering one metric makes it Monte Carlo), and
    ``sources`` gives it where that is not the inputs' draws."""
    # lazy: the serving setup and the uncertainty layer only when serve draws
    from sim.hardware.pass_terms import PassTerms
    from sim.simulation.serving.setup import serving_setup
    from sim.simulation.serving.simulate import simulate_serving
    from sim.studies.serving.paired_metrics import gain, level, policy_point, replication_values

    sampled = input_draws(bound, seed, draws, refit)  # found once: drawn and described
    r = min(replications, min(len(v) for v in records.values()))
    runs = []  # each draw's records, its first r replications
    terms = PassTerms()  # the draws' plans share their passes' terms
    for ov in sampled.overrides:
        try:
            drawn_bound = perturbed(bound, ov)
            setup = serving_setup(drawn_bound, base_dir=base_dir, source=source, terms=terms)
        except SpecsimError:
            continue  # outside what the scenario allows
        run = simulate_serving(
            setup.plan, setup.draftings, replications=r, seed=seed, workers=workers
        )
        runs.append(run.records)
    # the nominal's per-replication values; its first r are the ones the draws' seeds share
    nominal = {name: policy_point(recs, slo) for name, recs in records.items()}
    # a draw's values only: its batch and backlog are never read
    drawn = [{name: replication_values(recs, slo) for name, recs in got.items()} for got in runs]
    # each answer's nominal and its interval from the inputs
    levels: dict[str, dict[str, tuple[float, list[float] | None]]] = {}
    held: list[IntervalSources] = []  # what each interval holds
    uncertain = bool(sampled.inputs)
    for name, point in nominal.items():
        levels[name] = {}
        for m in SERVE_METRICS:
            values = [
                shifted(float(np.mean(point.values[m])), d[name][m], point.values[m][:r])
                for d in drawn
            ]
            lv = level(point, m)
            levels[name][m] = (lv.mean, interval90(values, lv.ci95, positive=True))
            held.append(sources90(answering(values), lv.ci95, uncertain))
    speedup: dict[str, dict[str, tuple[float, list[float] | None]]] = {}
    for name, point in nominal.items():
        if name == baseline or baseline not in nominal:
            continue
        speedup[name] = {}
        for m in SERVE_METRICS:
            g = gain(point, nominal[baseline], m)
            own = paired_gain(point.values[m][:r], nominal[baseline].values[m][:r], m)
            values = [
                shifted(g.mean, paired_gain(d[name][m], d[baseline][m], m), own) for d in drawn
            ]
            speedup[name][m] = (g.mean, interval90(values, g.ci95, positive=True))
            held.append(sources90(answering(values), g.ci95, uncertain))
    # then the model's error at the nominal run's batch on each
    term = model_error_term(bound.scenario, batch, model_error)
    note = term.beyond_note()
    sources = weakest(held)
    return {
        **sampled.doc(r),
        "label": sources.label,
        **({"sources": sources.value} if sources is not IntervalSources.INPUTS else {}),
        "draws_run": len(drawn),
        "levels": {
            name: {m: term.level(*v, name != baseline) for m, v in ms.items()}
            for name, ms in levels.items()
        },
        "speedup": {
            name: {m: term.gain(*v) for m, v in ms.items()} for name, ms in speedup.items()
        },
        "model_error": term.doc(),
        **({"note": note} if note else {}),
    }
