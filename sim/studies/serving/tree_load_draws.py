"""90% intervals from inputs and model for ``tree-load``: each tree / chain ratio, its sign,
and where the tree stops beating the chain.

The draws are those of every serving answer (sim/uncertainty/perturb.py: ``input_draws``,
scrambled Sobol draws of the scenario's uncertain inputs and of the default batched terms
over their published ranges). Each draw runs every grid concurrency with ``replications``
replications on the seeds of the nominal run's first replications (common random numbers:
the same users, lengths and acceptance uniforms), every chain and tree at once as the
nominal does (not plain decoding, which no ratio uses).
A draw's ratio at a load is the nominal ratio moved by the paired shift
(``draw_intervals.shifted``): mean over those replications of (draw - nominal).

* A ratio's interval: the draws' 5%-95% quantiles and normal prediction interval joined
  with the nominal ratio's Monte Carlo 95% interval (``draw_intervals.ratio_interval``); the
  sign is ``wins`` (the interval above 1), ``loses`` (below 1) or ``undecided`` (it holds 1).
* A crossing's interval: each draw's crossing found on its shifted ratios over the grid as
  the nominal's is (``tree_load_crossings.crossing_of``: log-linear between the last win
  and the first loss), a draw that never wins counted below the first load and one that
  always wins above the last; 5%-95% over the draws (``inverted_cdf``: quantiles that are draws'
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
from sim.studies.serving.draw_intervals import one_replication_enough, probe_draws, shifted
from sim.uncertainty.perturb import Overrides

__all__ = [
    "RatioDraws",
    "crossing_interval",
    "drawn_ratios",
    "every_ratio_enough",
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


@dataclass(frozen=True, slots=True)
class RatioDraws:
    """Each draw's shifted ratios ``at[c][tree][chain][metric]`` (D,) at grid load c (NaN
    for a draw the scenario rejects); ``run``: the draws that ran; ``replications[c]``:
    the replications each draw that ran ran at load c, in draw order (``drawn_ratios``)."""

    at: dict[int, PairArrays]
    run: int
    replications: dict[int, tuple[int, ...]] = field(default_factory=dict)


def every_ratio_enough(
    drawn: PairArrays, nominal: PairArrays, differences: PairArrays | None = None
) -> bool:
    """Whether the draws' first replication at a load suffices for every ratio there
    (sim/studies/serving/draw_intervals.py ``one_replication_enough``, the rule of every study's
    sequential draws): ``drawn`` each ratio's shifted draws (D,), ``nominal`` its
    per-replication values (R,), whose Monte Carlo 95% interval joins the draws' in the
    interval the move is measured against; ``differences``: each probe draw's e1 - e2
    (m,) of every ratio (the measured bound), None for the a priori one."""
    from sim.simulation.serving.metrics import Ratio  # lazy: serving only

    for t, d in drawn.items():
        for ch, ms in d.items():
            for m, values in ms.items():
                own = nominal[t][ch][m]
                measured = None if differences is None else differences[t][ch][m]
                if not one_replication_enough(values, own, Ratio.across(own).ci95, measured):
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
    ``sequential``: every draw runs its first replication at every load; where the a
    priori bound on the move a second replication makes does not settle every ratio
    (``every_ratio_enough``), the probe draws (sim/studies/serving/draw_intervals.py
    ``probe_draws``) run the others, and where the move measured on them does not either,
    every draw does. Decided on the values alone, after each whole batch: the same for
    any worker count."""
    out: dict[int, PairArrays] = {
        c: {
            t: {ch: {m: np.full(len(draws), np.nan) for m in ms} for ch, ms in d.items()}
            for t, d in nominal[c].items()
        }
        for c in grid
    }
    setups = _drawn_setups(base, grid, draws, policies, base_dir, source)
    if not setups:
        return RatioDraws(out, 0)
    pool = executor if executor is not None else LocalExecutor(workers)
    cells = _DrawnCells(grid, policies, nominal, ratios, setups, pool, out)
    first = 1 if sequential and replications > 1 else replications
    cells.run([(i, j) for i in setups for j in range(len(grid))], 0, first)
    if first < replications:
        probes = [i for i in probe_draws(len(draws)) if i in setups]
        gated = [c for c in grid if not every_ratio_enough(out[c], nominal[c])]
        cells.run([(i, grid.index(c)) for i in probes for c in gated], first, replications - first)
        more = [
            c
            for c in gated
            if not every_ratio_enough(out[c], nominal[c], cells.differences(c, probes))
        ]
        rest = [i for i in setups if i not in probes]
        cells.run([(i, grid.index(c)) for i in rest for c in more], first, replications - first)
    ran = {
        c: tuple(len(next(iter(cells.records[(i, j)].values()))) for i in setups)
        for j, c in enumerate(grid)
    }
    return RatioDraws(out, len(setups), ran)


def _drawn_setups(
    base: Scenario,
    grid: Sequence[int],
    draws: Sequence[Overrides],
    policies: Mapping[str, SpeculationPolicy],
    base_dir: Path | None,
    source: str,
) -> dict[int, list[Any]]:
    """Each draw's serving setup at every grid load (by draw index, in grid order), the
    draws' plans sharing one table of their passes' terms; a draw the scenario rejects
    (outside what it allows) is left out."""
    # lazy: the serving setup only when tree-load draws
    from sim.binding.bound import bind
    from sim.hardware.pass_terms import PassTerms
    from sim.scenario.overrides import with_overrides
    from sim.simulation.serving.setup import serving_setup, with_load

    terms = PassTerms()  # the draws' plans at every load share their passes' terms
    setups: dict[int, list[Any]] = {}
    for i, ov in enumerate(draws):
        try:
            drawn = with_overrides(base, dict(ov), source="uncertainty")
            setups[i] = [
                serving_setup(
                    bind(with_load(drawn, concurrency=c, source=source), terms.passes),
                    base_dir=base_dir,
                    source=source,
                    policies=policies,
                    terms=terms,
                )
                for c in grid
            ]
        except SpecsimError:
            continue  # outside what the scenario allows
    return setups


@dataclass(slots=True)
class _DrawnCells:
    """The draws' runs, cell by cell (draw i, grid position j): each cell's setup
    (``setups[i][j]``), its replications' records by policy so far (``records``), its
    per-replication ratios (``per``), and every draw's shifted ratios (``out``, filled
    in place)."""

    grid: Sequence[int]
    policies: Mapping[str, SpeculationPolicy]
    nominal: Mapping[int, PairArrays]
    ratios: Ratios
    setups: dict[int, list[Any]]
    pool: Executor
    out: dict[int, PairArrays]
    records: dict[tuple[int, int], dict[str, list[Any]]] = field(default_factory=dict)
    per: dict[tuple[int, int], PairArrays] = field(default_factory=dict)

    def run(self, cells: Sequence[tuple[int, int]], first: int, count: int) -> None:
        """Each (draw i, grid load j) of ``cells``: ``count`` more replications from
        ``first``, every cell's a task of the one batch; the draws' ratios shifted."""
        if not cells:
            return
        tasks = [
            _DrawTask(
                self.setups[i][j].plan,
                {n: self.setups[i][j].draftings[n] for n in self.policies},  # not plain
                self.setups[i][j].seed,
                first,
                count,
            )
            for i, j in cells
        ]
        for k, got in self.pool.map_unordered(_run_draw, tasks):
            i, j = cells[k]
            have = self.records.get((i, j), {})
            self.records[(i, j)] = {n: [*have.get(n, []), *v] for n, v in got.items()}
        r = first + count
        for i, j in cells:
            c = self.grid[j]
            self.per[(i, j)] = self.ratios(self.records[(i, j)])
            for t, d in self.per[(i, j)].items():
                for ch, ms in d.items():
                    for m, values in ms.items():
                        own = self.nominal[c][t][ch][m]
                        self.out[c][t][ch][m][i] = shifted(float(np.mean(own)), values, own[:r])

    def differences(self, c: int, probes: Sequence[int]) -> PairArrays:
        """Each ratio's e1 - e2 over the ``probes`` draws at load c (m,), e_j a draw's
        shift on replication j (``measured_move``)."""
        j = self.grid.index(c)

        def diff(t: str, ch: str, m: str) -> np.ndarray:
            own = self.nominal[c][t][ch][m][:2]
            e = np.array([self.per[(i, j)][t][ch][m][:2] - own for i in probes])
            return e[:, 0] - e[:, 1] if e.size else np.zeros(0)

        return {
            t: {ch: {m: diff(t, ch, m) for m in ms} for ch, ms in d.items()}
            for t, d in self.nominal[c].items()
        }


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
