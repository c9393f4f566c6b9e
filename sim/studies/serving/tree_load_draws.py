"""90% intervals from inputs and model for ``tree-load``: each tree / chain ratio, its sign,
and where the tree stops beating the chain.

The draws are those of every serving answer (sim/uncertainty/perturb.py: ``input_draws``,
scrambled Sobol draws of the scenario's uncertain inputs and of the default batched terms
over their published ranges). Each draw runs every grid concurrency with ``replications``
replications on the seeds of the nominal run's first replications (common random numbers:
the same users, lengths and acceptance uniforms), every chain and tree at once as the
nominal does (not plain decoding, which no ratio uses).
A draw's ratio at a load is the nominal ratio moved by the paired shift
(``draws.shifted``): mean over those replications of (draw - nominal).

* A ratio's interval: the draws' 5%-95% quantiles and normal prediction interval joined
  with the nominal ratio's Monte Carlo 95% interval (``draws.ratio_interval``); the sign is ``wins``
  (the interval above 1), ``loses`` (below 1) or ``undecided`` (it holds 1).
* A crossing's interval: each draw's crossing found on its shifted ratios over the grid as
  the nominal's is (``tree_load._crossing``: log-linear between the last win and the
  first loss), a draw that never wins counted below the first load and one that always
  wins above the last; 5%-95% over the draws (``inverted_cdf``: quantiles that are draws'
  values) joined with the nominal's grid interval [last win, first loss]. An end beyond
  the grid is None.

Every grid load is run in every draw: the sign is the answer at each load, so each load
decides. The cost is ``draws x replications`` replications a load on top of the nominal's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import SpeculationPolicy
from sim.parallel import Executor, LocalExecutor
from sim.scenario.schema import Scenario
from sim.studies.serving.draws import shifted
from sim.uncertainty.perturb import Overrides

__all__ = [
    "NOISE_SHARE",
    "RatioDraws",
    "crossing_interval",
    "drawn_ratios",
    "one_is_enough",
    "sign_of",
]

#: ratios[tree][chain][metric]: one value a replication (R,) or a draw (D,).
PairArrays = dict[str, dict[str, dict[str, np.ndarray]]]
Ratios = Callable[[Mapping[str, Any]], PairArrays]

WINS, LOSES, UNDECIDED = "wins", "loses", "undecided"


def sign_of(interval: Sequence[float] | None) -> str:
    """``wins`` when the interval lies above 1, ``loses`` below, else ``undecided``."""
    if interval is None:
        return UNDECIDED
    lo, hi = interval
    return WINS if lo > 1.0 else LOSES if hi < 1.0 else UNDECIDED


#: A load's draws keep one replication where the noise of a one-replication shift,
#: bounded by twice the nominal ratio's per-replication standard deviation, is at most
#: this share of the draws' spread there, for every ratio (``one_is_enough``).
NOISE_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class RatioDraws:
    """Each draw's shifted ratios ``at[c][tree][chain][metric]`` (D,) at grid load c (NaN
    for a draw the scenario rejects); ``run``: the draws that ran; ``replications[c]``:
    the replications each draw ran at load c (``one_is_enough``)."""

    at: dict[int, PairArrays]
    run: int
    replications: dict[int, int] = field(default_factory=dict)


def one_is_enough(drawn: PairArrays, nominal: PairArrays) -> bool:
    """Whether the draws' first replication at a load suffices: for every ratio, the
    Monte Carlo noise of a draw's one-replication shift (draw - nominal on the same seed,
    standard deviation at most s_draw + s_nominal for any correlation, taken as 2
    s_nominal: a drawn scenario's replications vary as the nominal's) is at most
    ``NOISE_SHARE`` of the spread of the draws' shifted ratios ``drawn`` (D,) there: it
    then adds at most ``NOISE_SHARE``^2 to their variance, and the second replication
    could not move the 90% interval by more than that. ``nominal``: the nominal's
    per-replication ratios (R,); fewer than two of either: False."""
    for t, d in drawn.items():
        for ch, ms in d.items():
            for m, values in ms.items():
                v = values[np.isfinite(values)]
                own = nominal[t][ch][m]
                if v.size < 2 or own.size < 2:
                    return False
                noise = 2.0 * float(np.std(own, ddof=1))
                if not noise <= NOISE_SHARE * float(np.std(v, ddof=1)):
                    return False
    return True


def drawn_ratios(
    base: Scenario,
    grid: Sequence[int],
    draws: Sequence[Overrides],
    policies: Mapping[str, SpeculationPolicy],
    nominal: Mapping[int, PairArrays],
    ratios: Ratios,
    *,
    replications: int,
    workers: int = 1,
    executor: Executor | None = None,
    base_dir: Path | None = None,
    source: str = "scenario",
    sequential: bool = True,
) -> RatioDraws:
    """Run every draw at every grid load (``replications`` replications at the scenario's
    seed) and shift the nominal ratios ``nominal[c]`` (R,) by each draw's paired change;
    ``ratios``: a run's records (by policy name) -> its per-replication ratios.
    ``sequential``: every draw runs its first replication at every load, and the others
    only at the loads where one is not enough (``one_is_enough``, decided on the values
    alone: the same for any worker count)."""
    # lazy: the serving setup only when tree-load draws
    from sim.binding.bound import bind
    from sim.hardware.batched import PassTerms
    from sim.scenario.overrides import with_overrides
    from sim.simulation.serving.setup import serving_setup, with_load

    terms = PassTerms()  # the draws' plans at every load share their passes' terms
    out: dict[int, PairArrays] = {
        c: {
            t: {ch: {m: np.full(len(draws), np.nan) for m in ms} for ch, ms in d.items()}
            for t, d in nominal[c].items()
        }
        for c in grid
    }
    setups: dict[int, list[Any]] = {}
    for i, ov in enumerate(draws):
        try:
            drawn = with_overrides(base, dict(ov), source="uncertainty")
            setups[i] = [
                serving_setup(
                    bind(with_load(drawn, concurrency=c, source=source)),
                    base_dir=base_dir,
                    source=source,
                    policies=policies,
                    terms=terms,
                )
                for c in grid
            ]
        except SpecsimError:
            continue  # outside what the scenario allows
    if not setups:
        return RatioDraws(out, 0)
    records: dict[tuple[int, int], dict[str, list[Any]]] = {}
    pool = executor if executor is not None else LocalExecutor(workers)

    def run(cells: Sequence[tuple[int, int]], first: int, count: int) -> None:
        """Each (draw i, grid load j) of ``cells``: ``count`` more replications from
        ``first``, every cell's a task of the one batch; the draws' ratios shifted."""
        tasks = [
            _DrawTask(
                setups[i][j].plan,
                {n: setups[i][j].draftings[n] for n in policies},  # no ratio uses plain
                setups[i][j].seed,
                first,
                count,
            )
            for i, j in cells
        ]
        for k, got in pool.map_unordered(_run_draw, tasks):
            i, j = cells[k]
            have = records.get((i, j), {})
            records[(i, j)] = {n: [*have.get(n, []), *v] for n, v in got.items()}
        r = first + count
        for i, j in cells:
            c = grid[j]
            for t, d in ratios(records[(i, j)]).items():
                for ch, ms in d.items():
                    for m, values in ms.items():
                        own = nominal[c][t][ch][m]
                        out[c][t][ch][m][i] = shifted(float(np.mean(own)), values, own[:r])

    first = 1 if sequential and replications > 1 else replications
    run([(i, j) for i in setups for j in range(len(grid))], 0, first)
    ran = {c: first for c in grid}
    if first < replications:
        more = [c for c in grid if not one_is_enough(out[c], nominal[c])]
        ran.update({c: replications for c in more})
        cells = [(i, grid.index(c)) for i in setups for c in more]
        run(cells, first, replications - first)
    return RatioDraws(out, len(setups), ran)


@dataclass(frozen=True, slots=True)
class _DrawTask:
    """One draw at one load (picklable): replications ``first`` to ``first + count - 1``
    of ``seed`` for every drafting of ``draftings`` on ``plan``."""

    plan: Any
    draftings: dict[str, Any]
    seed: int
    first: int
    count: int


def _run_draw(task: _DrawTask) -> dict[str, list[Any]]:
    """Run a ``_DrawTask`` in this process: its records by drafting name."""
    from sim.simulation.serving.simulate import simulate_serving  # lazy: serving only

    return simulate_serving(
        task.plan,
        task.draftings,
        replications=task.count,
        seed=task.seed,
        first=task.first,
    ).records


def crossing_interval(
    drawn: np.ndarray,
    nominal: tuple[int | None, int | None],
    crossing_at: Callable[[Sequence[float]], tuple[int | None, float | None]],
) -> list[float | None]:
    """The 90% interval of a crossing: ``drawn`` (loads, D) each draw's ratios over the
    grid, ``crossing_at(ratios)`` its (last win, at) as the nominal's is found;
    a draw that never wins counts as -inf, one that always wins as +inf; 5-95% over the
    draws joined with the nominal's [last win, first loss] (``nominal``, None for an end
    off the grid); an end off the grid is None."""
    values = []
    for d in range(drawn.shape[1]):
        col = drawn[:, d]
        if not np.all(np.isfinite(col)):
            continue  # a draw the scenario rejects
        last, at = crossing_at(col.tolist())
        values.append(at if at is not None else (-math.inf if last is None else math.inf))
    lo_n, hi_n = nominal
    ends = [-math.inf if lo_n is None else float(lo_n), math.inf if hi_n is None else float(hi_n)]
    if values:
        ends += [float(q) for q in np.quantile(values, [0.05, 0.95], method="inverted_cdf")]
    low, high = min(ends), max(ends)
    return [low if math.isfinite(low) else None, high if math.isfinite(high) else None]
