"""The top-1 rate a tree configuration needs, re-solved in every draw of the uncertain
inputs: the 90% interval of ``specsim search --topk``'s answers.

The nominal answer (sim/studies/tree_search.py ``_refine``) is the lowest factor f on the
top-1 mean rates at which E[L] of SGLang's tree, rebuilt at the scaled rates, reaches the
accept length the target needs on the configuration's cycle, E[L] >= target x T / 1000
(sim/model/tree/required.py ``required_scale``). In a draw (sim/uncertainty/tree_sampled.py):

* the top-1 rates by depth are the draw's conditional rates r_d (``sampled_acceptance``,
  those of the chain's draws); the lever u is the draw's depth-1 top-1 rate, the rates
  min(1, u r_d / r_1) (the draw's shape kept, as the nominal answer keeps the scenario's),
  the lower ranks by the residual shares, SGLang's tree rebuilt at each u;
* under a workload mix (``_Populations``): each draw's classes, re-built as the nominal
  answer builds them at the draw's acceptance inputs; the lever u is their mean depth-1
  top-1 rate, every class's means scaled by u / (that mean) (capped at 1), SGLang's tree
  rebuilt at the scaled classes' mean and E[L] mixed with the class weights, as
  ``required_scale`` takes it (a per-request spread would need each class's quadrature at
  every trial rate: sim/studies/tree_search.py gives it a note instead);
* the cycle T is the search's (the draft extend at the pass times' own accept length)
  moved by what the draw changes in the configuration's cycle (``cycle_vectors``), so the
  nominal row needs exactly the nominal accept length.

Per draw, E[L](u) of SGLang's tree rises with u where the top-1 guess is the likeliest
(sim/model/tree/required.py). Checked on the seed with the Sequoia rank profile (flat and
decaying top-1 rates; 16 of the draws x 6 configurations from 3/4/8 to 16/4/64, 401 rates
each): E[L] fell between neighbouring rates only below a depth-1 rate of 0.025, where E[L]
is within 0.01 of 1; there the crossing found next to the window may not be the lowest
crossing from the top that the nominal answer takes.

The roots are solved from a window of +-0.02 around the nominal root, widened until it
brackets the crossing, by Anderson-Bjorck steps (regula falsi that scales the kept end's
value when one end is replaced twice running), every draw's trial rate at once: each step
builds the trees of all draws at their trial rates, the rows of identical rates one tree
(``accept_lengths_by_tree`` groups them by tree), about 4 trees per draw in all on the
seed's best trees. A draw whose rates at their cap (all 1, or u where the lowest
reaches 1) fall short is out of reach (NaN). Shapes: n draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model.acceptance import quadrature_weights
from sim.model.distinct_rows import distinct_rows
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeAcceptance
from sim.model.tree.rates import Shares, residual_rank_rates
from sim.model.tree.required import max_scale
from sim.model.tree.theory import depth_survival
from sim.uncertainty.sampled_draws import acceptance_propagated, acceptance_rows, sampled_acceptance
from sim.uncertainty.tree_sampled import SampledTree, accept_lengths_by_tree

__all__ = ["DrawnRoots", "drawn_accept_lengths", "required_top1_draws"]

#: Half-width of the first window around the nominal root (top-1 rate units).
WINDOW = 0.02
#: The solve stops when the bracket is this narrow (top-1 rate units; printed to 0.001).
XTOL = 1e-7
#: Anderson-Bjorck steps before the remaining brackets are bisected.
MAX_SECANT = 40


@dataclass(frozen=True, slots=True)
class DrawnRoots:
    """Per draw (n,): the required lever u (NaN: out of reach) and the depth-1 top-1 rate
    it is, capped at 1 as the nominal answer reports it (``top1``), the accept length the
    draw needs and the E[L] at the root; ``evaluations`` the tree rows built (after
    grouping identical rows)."""

    rate: np.ndarray
    top1: np.ndarray
    need: np.ndarray
    accept_length: np.ndarray
    evaluations: int


class _Draws:
    """The per-draw pieces of the solve: shapes r_d / r_1 (n, depth), u at the cap (n,);
    for a mix or a spread each draw's population instead (``_Populations``)."""

    def __init__(self, sampled: SampledTree, values: np.ndarray) -> None:
        self.built = 0
        self.valid = np.ones(values.shape[0], dtype=bool)
        self.populations: _Populations | None = None
        if not acceptance_propagated(sampled.scenario):
            self.populations = _Populations(sampled, values)
            self.u_max, self.valid = self.populations.u_max, self.populations.valid
            return
        depth = sampled.nominal.top1.num_steps
        rates, _ = sampled_acceptance(sampled.scenario, sampled.inputs, values, sampled.max_steps)
        rates = np.clip(rates[:, :depth], 0.0, 1.0)
        first = rates[:, :1]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.shape = np.where(first > 0, rates / first, 1.0)
            low = np.where(self.shape > 0, self.shape, np.inf).min(axis=1)
        self.u_max = np.where(np.isfinite(low), 1.0 / low, 1.0)
        nominal = sampled.nominal
        if isinstance(nominal.draft, Tree) or nominal.draft.topk == 1:
            # a chain (or a given tree): the same tree at every rate
            nominal = TreeAcceptance(nominal.top1, nominal.shares, nominal.tree)
        self.nominal = nominal

    def accept_length(self, u: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """E[L] of SGLang's tree in draws ``rows`` (m,) at their rates ``u`` (m,)."""
        if self.populations is not None:
            self.built += rows.size
            return self.populations.accept_length(u, rows)
        top1 = np.clip(u[:, None] * self.shape[rows], 0.0, 1.0)
        first, again = distinct_rows(top1)
        self.built += int(first.size)
        return accept_lengths_by_tree(self.nominal, top1[first])[again]


class _Populations:
    """A mix's or a spread's draws: each draw's top-1 rate classes and rank shares
    (``SampledTree.population``), the lever u the population's mean depth-1 top-1 rate
    x_0; at u every class's means are scaled by u / x_0 (capped at 1, spreads kept) and
    E[L] over requests is taken of SGLang's tree rebuilt at the scaled population's mean
    rates, as the nominal answer's ``required_scale`` takes it. A draw the scenario
    rejects is not solved (``valid`` False)."""

    def __init__(self, sampled: SampledTree, values: np.ndarray) -> None:
        distinct, again = acceptance_rows(sampled.inputs, values)
        draft = sampled.nominal.draft
        if isinstance(draft, Tree) or draft.topk == 1:
            # a chain (or a given tree): the same tree at every rate
            draft = sampled.nominal.tree
        models: list[TreeAcceptance | None] = []
        for row in distinct:
            pop = sampled.population(row)
            models.append(None if pop is None else TreeAcceptance(pop.top1, pop.shares, draft))
        x0 = np.array([np.nan if m is None else float(m.mean_rates()[0]) for m in models])
        cap = np.array([np.nan if m is None else max_scale(m) for m in models])
        self.models, self.which = models, again
        self.x0 = x0[again]
        self.valid = np.isfinite(self.x0)
        self.u_max = np.where(self.valid, cap[again] * self.x0, 1.0)

    def accept_length(self, u: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """E[L] over requests in draws ``rows`` (m,) at their levers ``u`` (m,): each
        draw's classes scaled (``AcceptanceModel.scaled``), its tree built at their mean
        (``TreeAcceptance``'s), then every class row (a class's mean rates, or its Beta
        quadrature's) of the evaluations that share a tree through its survival at once."""
        # by tree and rank shares (a population's own when a rank rate is drawn)
        by_tree: dict[tuple[Tree, Shares], list[tuple[int, np.ndarray, np.ndarray]]]
        by_tree = {}
        for i, (x, r) in enumerate(zip(u.tolist(), rows.tolist(), strict=True)):
            model = self.models[self.which[r]]
            assert model is not None
            x0 = self.x0[r]
            scaled = model.top1.scaled(x / x0 if x0 > 0 else 0.0)
            draft = model.draft
            if not isinstance(draft, Tree):  # as TreeAcceptance builds it: at the mean rates
                draft = draft.tree(model.rank_rates(scaled.mean_rates()[None, :])[0])
            parts, weights = [], []
            for w, c in zip(scaled.weights, scaled.classes, strict=True):
                if c.varies:
                    parts.append(c.quadrature_rates())
                    weights.append(w * quadrature_weights())
                else:
                    parts.append(c.mean_rates[None, :])
                    weights.append(np.array([w]))
            rates, weights_ = np.concatenate(parts), np.concatenate(weights)
            by_tree.setdefault((draft, model.shares), []).append((i, rates, weights_))
        out = np.empty(rows.size)
        for (tree, shares), items in by_tree.items():
            top1 = np.concatenate([rates for _, rates, _ in items])[:, : max(tree.max_depth, 1)]
            s = depth_survival(tree, residual_rank_rates(top1, np.asarray(shares)))
            start = 0
            for i, rates, row_weights in items:
                out[i] = float((row_weights @ s[start : start + rates.shape[0]]).sum())
                start += rates.shape[0]
        return out


def required_top1_draws(
    sampled: SampledTree,
    values: np.ndarray,
    target_tok_s: float,
    cycle_ms: float,
    u_nominal: float | None,
    *,
    xtol: float = XTOL,
) -> DrawnRoots:
    """The lowest depth-1 top-1 rate reaching ``target_tok_s`` in every draw ``values``
    (n, F) of ``sampled``'s inputs (see the module docstring). ``cycle_ms``: the
    configuration's cycle as the search takes it (the nominal row's); ``u_nominal``: the
    nominal root f x_0, uncapped (None: out of reach at the nominal inputs, the window
    then starts at the cap)."""
    d = _Draws(sampled, values)
    n = values.shape[0]
    parts = sampled.cycle_vectors(values)[:, :4].sum(axis=1)
    need = target_tok_s * (cycle_ms + (parts - sampled.base[:4].sum())) / 1000.0
    root = np.full(n, np.nan)
    at_root = np.full(n, np.nan)
    easy = (need <= 1.0) & d.valid  # one token per cycle needs no draft (required_scale's 0)
    root[easy], at_root[easy] = 0.0, 1.0
    rows = np.flatnonzero(~easy & d.valid)
    u_max = d.u_max[rows]
    start = u_max if u_nominal is None else np.minimum(u_nominal, u_max)
    lo, hi, g_lo, g_hi = _bracket(d, rows, need[rows], start, u_max)
    ok = g_hi >= 0.0  # the others fall short at the cap: out of reach
    rows, lo, hi, g_lo, g_hi = rows[ok], lo[ok], hi[ok], g_lo[ok], g_hi[ok]
    done = g_lo >= 0.0  # reached at u = 0 (the window widened to it)
    at_zero = g_lo[done]
    lo[done], g_lo[done] = hi[done], g_hi[done]
    hi, g_hi = _illinois(d, rows, need[rows], lo, hi, g_lo, g_hi, xtol)
    hi[done], g_hi[done] = 0.0, at_zero
    root[rows] = hi
    at_root[rows] = g_hi + need[rows]
    return DrawnRoots(root, np.minimum(root, 1.0), need, at_root, d.built)


def drawn_accept_lengths(sampled: SampledTree, values: np.ndarray, u: np.ndarray) -> np.ndarray:
    """E[L] (n,) of SGLang's tree in each draw ``values`` (n, F) at its lever ``u`` (n,)."""
    return _Draws(sampled, values).accept_length(u, np.arange(values.shape[0]))


def _bracket(
    d: _Draws,
    rows: np.ndarray,
    need: np.ndarray,
    start: np.ndarray,
    u_max: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, g(lo), g(hi)) per row, g(lo) < 0 <= g(hi) (or lo = 0 with g(0) >= 0; or
    hi = u_max with g(hi) < 0: out of reach): the window [start - w, start + w] widened,
    doubling w, towards the side the crossing is on, u_max bounding it above. (A Newton
    step from ``start`` with the nominal row's slope as the second point cost a fifth
    more trees: the Anderson-Bjorck steps from its lopsided bracket took longer.)"""
    w = np.full(rows.size, WINDOW)
    hi = np.minimum(start + w, u_max)
    lo = np.maximum(start - w, 0.0)
    g_hi = d.accept_length(hi, rows) - need
    g_lo = d.accept_length(lo, rows) - need
    while True:
        up = (g_hi < 0.0) & (hi < u_max)  # the crossing is above the window: move it up
        down = (g_lo >= 0.0) & (lo > 0.0)  # below: move it down
        if not (up.any() or down.any()):
            return lo, hi, g_lo, g_hi
        w = np.where(up | down, 2.0 * w, w)
        lo[up], g_lo[up] = hi[up], g_hi[up]
        hi[up] = np.minimum(hi[up] + w[up], u_max[up])
        if up.any():
            g_hi[up] = d.accept_length(hi[up], rows[up]) - need[up]
        hi[down], g_hi[down] = lo[down], g_lo[down]
        lo[down] = np.maximum(lo[down] - w[down], 0.0)
        if down.any():
            g_lo[down] = d.accept_length(lo[down], rows[down]) - need[down]


def _illinois(
    d: _Draws,
    rows: np.ndarray,
    need: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    g_lo: np.ndarray,
    g_hi: np.ndarray,
    xtol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Shrink every bracket g(lo) < 0 <= g(hi) to ``xtol`` (Anderson-Bjorck steps, then
    bisection); (hi, g(hi)) per row: the least rate found that reaches the need."""
    lo, hi, g_lo, g_hi = lo.copy(), hi.copy(), g_lo.copy(), g_hi.copy()
    reached, short = g_hi.copy(), g_lo.copy()  # g at hi and lo, never scaled
    side = np.zeros(rows.size, dtype=int)  # the end replaced last step: -1 lo, +1 hi
    for step in range(200):
        active = np.flatnonzero(hi - lo > xtol)
        if active.size == 0:
            break
        a, b, ga, gb = lo[active], hi[active], g_lo[active], g_hi[active]
        if step < MAX_SECANT:
            u = (a * gb - b * ga) / (gb - ga)
            # keep the trial strictly inside and off the ends by a hair
            u = np.clip(u, a + 0.25 * xtol, b - 0.25 * xtol)
        else:
            u = 0.5 * (a + b)
        g = d.accept_length(u, rows[active]) - need[active]
        reach = g >= 0.0
        s = side[active]
        # an end replaced twice running scales the other end's g by 1 - g(new) / g(old)
        # (0.5 when that is not in (0, 1)): Anderson and Bjorck, BIT 12 (1972) 503-508
        i_hi, i_lo = active[reach], active[~reach]
        again = i_hi[s[reach] == 1]
        g_lo[again] *= _factor(g[reach][s[reach] == 1], reached[again])
        hi[i_hi], g_hi[i_hi], reached[i_hi], side[i_hi] = u[reach], g[reach], g[reach], 1
        again = i_lo[s[~reach] == -1]
        g_hi[again] *= _factor(g[~reach][s[~reach] == -1], short[again])
        lo[i_lo], g_lo[i_lo], short[i_lo], side[i_lo] = u[~reach], g[~reach], g[~reach], -1
    return hi, reached


def _factor(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Anderson-Bjorck's scale 1 - new / old of the kept end's g, 0.5 outside (0, 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = 1.0 - new / old
    return np.where((m > 0.0) & (m < 1.0), m, 0.5)
