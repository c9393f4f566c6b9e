"""What ``tree-load``'s answer rests on: the intervals' description (``intervals_doc``,
``TreeLoadResult.intervals``) and the assumption lines (``study_assumptions``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.model.drafts import verify_tokens
from sim.studies.serving.draw_intervals import IntervalSources, probe_draws, sources90
from sim.studies.serving.sequential import FIRST, describe
from sim.studies.serving.tree_load_drafts import AskedDrafts
from sim.studies.serving.tree_load_draws import RatioDraws
from sim.studies.serving.tree_load_result import LoadPoint
from sim.studies.serving.tree_load_runs import NominalLoads
from sim.uncertainty.model_error import beyond_measured_note
from sim.uncertainty.perturb import InputDraws

__all__ = ["intervals_doc", "study_assumptions"]


def intervals_doc(
    sampled: InputDraws,
    replications: int,
    drawn: RatioDraws,
    policies: int,
    nominal: NominalLoads,
    points: Sequence[LoadPoint],
) -> dict[str, Any]:
    """What the intervals took (``TreeLoadResult.intervals``): the draws' doc with
    ``replications`` a draw, what the intervals hold where fewer than two draws ran
    (draw_intervals.py ``IntervalSources``), the replications the draws ran (``policies``
    runs a replication), the widest model-error term and the note of loads beyond the
    highest measured batch."""
    top = nominal.term.highest_measured
    beyond = [p for p in points if p.beyond_measured]
    included = any(x.active for x in nominal.terms_at.values())
    note = beyond_measured_note(top, beyond[0].mean_batch.mean, included) if beyond else None
    held = sources90(drawn.run, (), bool(sampled.inputs))
    return {
        **sampled.doc(replications),
        "label": held.label,
        "draws_run": drawn.run,
        **({"sources": held.value} if held is not IntervalSources.INPUTS else {}),
        # per load, the replications every draw ran there; the loads where the probe
        # draws (the first ``probe_draws``) ran a second replication and the others
        # kept one (tree_load_draws.py ``drawn_ratios``); the serving replications the
        # draws ran in all
        "replications_per_draw_at": {str(c): min(n) for c, n in drawn.replications.items()},
        **(
            {"probes_ran_two_at": probed, "probe_draws": len(probe_draws(len(sampled.overrides)))}
            if (probed := [c for c, n in drawn.replications.items() if len(set(n)) > 1])
            else {}
        ),
        "draw_replications_run": policies * sum(sum(n) for n in drawn.replications.values()),
        "highest_measured_batch": top,
        "model_error": max(nominal.terms_at.values(), key=lambda x: x.gain_sigma).doc(),
        **({"note": note} if note else {}),
    }


def study_assumptions(asked: AskedDrafts, nominal: NominalLoads) -> tuple[str, ...]:
    """The study's assumption lines: what was defaulted, the sequential replications where
    a load stopped early (``describe``), the serving setup's, and the common draws with
    every draft's verify tokens per request."""
    replications = asked.scenario.simulation.replications
    stopped = any(n < replications for n in nominal.ran.values())
    drafts = asked.drafts
    return (
        *asked.notes,
        *((describe(FIRST, replications),) if stopped else ()),
        *nominal.first.assumptions,
        "common draws: drafts compared on the same users and acceptance draws at every "
        "load; the verify "
        f"covers {', '.join(f'{n}: {verify_tokens(d)}' for n, d in drafts.items())} "
        "tokens per request",
    )
