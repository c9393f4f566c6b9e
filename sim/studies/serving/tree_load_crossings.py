"""Where a tree stops beating a chain in ``tree-load`` (stages 4 and 5 of
sim/studies/serving/tree_load.py ``tree_load_study``): a pair's crossing on the grid
(``crossing_of``, log-linear in the concurrency), every ratio's 90% interval from inputs and
model (``with_intervals``), and every crossing with its 90% interval (``study_crossings``)
joined with the loads where the model-error band holds 1 (``model_band``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.studies.serving.draw_intervals import ratio_interval
from sim.studies.serving.tree_load_drafts import AskedDrafts
from sim.studies.serving.tree_load_draws import RatioDraws, crossing_interval
from sim.studies.serving.tree_load_result import METRICS, Crossing, LoadPoint
from sim.uncertainty.model_error import ModelErrorTerm, crossing_band, join_ends

__all__ = ["crossing_of", "model_band", "study_crossings", "with_intervals"]


def crossing_of(
    tree: str, chain: str, metric: str, grid: Sequence[int], ratios: Sequence[float]
) -> Crossing:
    last_win: int | None = None
    for i, (c, r) in enumerate(zip(grid, ratios, strict=True)):
        if r > 1.0:
            last_win = c
            continue
        again = tuple(g for g, x in zip(grid[i + 1 :], ratios[i + 1 :], strict=True) if x > 1.0)
        if last_win is None:
            return Crossing(tree, chain, metric, None, c, None, again)
        a, b = math.log(grid[i - 1]), math.log(c)
        ra = ratios[i - 1]
        at = math.exp(a + (ra - 1.0) / (ra - r) * (b - a)) if ra != r else float(c)
        return Crossing(tree, chain, metric, last_win, c, at, again)
    return Crossing(tree, chain, metric, last_win, None, None)


def with_intervals(
    points: Sequence[LoadPoint], drawn: RatioDraws, terms_at: Mapping[int, ModelErrorTerm]
) -> list[LoadPoint]:
    """Stage 4 of ``tree_load_study``: every point with ``vs_chain_interval90``: each
    ratio's 90% interval from the draws' ratios joined with its Monte Carlo 95% interval
    (draw_intervals.py ``ratio_interval``), widened by the model-error term at the load's
    decode batch (``ModelErrorTerm.gain``)."""
    return [
        replace(
            p,
            vs_chain_interval90={
                t: {
                    ch: {
                        m: terms_at[p.concurrency].gain(
                            x.mean, ratio_interval(drawn.at[p.concurrency][t][ch][m], x.ci95)
                        )
                        for m, x in ms.items()
                    }
                    for ch, ms in d.items()
                }
                for t, d in p.vs_chain.items()
            },
        )
        for p in points
    ]


def study_crossings(
    grid: Sequence[int],
    points: Sequence[LoadPoint],
    drawn: RatioDraws,
    terms_at: dict[int, ModelErrorTerm],
    asked: AskedDrafts,
) -> tuple[Crossing, ...]:
    """Stage 5 of ``tree_load_study``: per tree, chain and metric the crossing of the
    nominal ratios (``crossing_of``) with its 90% interval: the draws' crossings
    (tree_load_draws.py ``crossing_interval``) joined, where it crosses, with the loads
    where the model-error band holds 1 (``model_band``)."""
    crossings = []
    for t in asked.trees:
        for ch in asked.chains:
            for m in METRICS:
                nominal_cross = crossing_of(
                    t, ch, m, grid, [p.vs_chain[t][ch][m].mean for p in points]
                )
                table = np.array([drawn.at[c][t][ch][m] for c in grid])  # (loads, D)

                def at(values: Sequence[float], t: str = t, ch: str = ch, m: str = m) -> Any:
                    x = crossing_of(t, ch, m, grid, values)
                    return x.last_win, x.at

                ends = crossing_interval(
                    table, (nominal_cross.last_win, nominal_cross.first_loss), at
                )
                joined = (ends[0], ends[1])
                if nominal_cross.at is not None:  # and the loads where the term's band holds 1
                    band = model_band(
                        grid,
                        [p.vs_chain[t][ch][m].mean for p in points],
                        terms_at,
                        nominal_cross.at,
                    )
                    joined = join_ends(joined, band, integer=False)
                crossings.append(replace(nominal_cross, interval90=joined))
    return tuple(crossings)


def model_band(
    grid: Sequence[int],
    ratios: Sequence[float],
    terms_at: dict[int, ModelErrorTerm],
    at: float,
) -> tuple[float | None, float | None]:
    """The loads around a crossing at ``at`` where the model-error band of the tree /
    chain ratio (the gains' term at each load's decode batch) holds 1
    (sim/uncertainty/model_error.py ``crossing_band``; an open end: the grid's edge)."""
    if len(grid) < 2 or min(ratios) <= 0:
        return (at, at)
    return crossing_band(grid, ratios, [terms_at[c].gain_sigma for c in grid], at)
