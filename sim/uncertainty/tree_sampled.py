"""A tree's answers over many draws of its uncertain inputs: SGLang's tree rebuilt from
each draw's rates, its cycle from each draw's pass times.

The chain's per-draw closed forms (sim/model/sampled.py) read the accept length off the
drafter's conditional rates; a tree's is no function of those alone: the tree SGLang
builds depends on the rates (sim/model/tree/build.py), so every draw gets its own tree,
built by the functions the nominal answer uses (``SampledTree.answers``):

* top-1 rates by depth: the draw's conditional rates (``sampled_acceptance``, the rates
  the chain's per-draw closed forms take, from the same draws), the lower ranks by the
  scenario's residual shares; SGLang's tree built at them (``TreeAcceptance``) and its
  accept length E[L] = 1 + the sum of its chain-equivalent cumulative rates. A mix or a
  per-request spread: as the nominal answer takes it (``TreeAcceptance``), in each
  distinct draw of the acceptance inputs: the scenario re-validated at them, every class's
  mean top-1 rates and spread, the tree built at the population's mean rates, E[L] over
  requests (each class's Beta quadrature, mixed with the class weights);
* the tree's cycle (sim/model/tree/cost.py): drafter passes over topk beams, the verify
  over num_draft_tokens, the draft extend and the overhead, each input's effect on them
  tabulated (the tree scenario re-validated at a few values of the input, interpolated
  and added up: exact for the timing fields, which move one pass each linearly), the
  extend taken at the draw's E[L];
* tok/s by renewal-reward, 1000 E[L] / E[T_cycle], in ``throughput_tok_s``'s operations.

The nominal draw reproduces the nominal answer (sim/studies/analysis.py) to float rounding.
Rows whose rates are the same to the bit build one tree, and the rows of each distinct
tree go through its survival together. Shapes: n draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.binding.acceptance_model import acceptance_model, rank_shares
from sim.binding.bound import Bound
from sim.binding.closed_form import bound_cycle_cost
from sim.binding.inputs import UncertainInput, nominal_row
from sim.model.acceptance import AcceptanceModel
from sim.model.cycle import CycleCost
from sim.model.distinct_rows import distinct_rows
from sim.model.rates import cumulative_rates, mean_accept_length
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeAcceptance, TreeDraft
from sim.model.tree.rates import Shares
from sim.model.tree.theory import depth_survival
from sim.scenario.schema import Scenario
from sim.uncertainty.perturb import is_acceptance_input
from sim.uncertainty.sampled_draws import (
    MAX_STEPS,
    Drawn,
    PassResponse,
    acceptance_propagated,
    acceptance_rows,
    drawn_scenario,
    pass_response,
    sampled_acceptance,
)

__all__ = ["SampledTree", "TreeDraws", "sampled_tree", "tree_cycle_vector"]


def tree_cycle_vector(scenario: Scenario) -> np.ndarray:
    """The tree cycle's parts (6,) of a scenario (a draw's, re-validated): draft, verify,
    extend, overhead (ms), the extend's growth per accepted token (ms) and the accept
    length the extend is taken at (``cycle_vector``)."""
    return cycle_vector(bound_cycle_cost(scenario))


def cycle_vector(cost: CycleCost) -> np.ndarray:
    """A cycle's parts (6,): draft, verify, extend, overhead (ms), the extend's growth per
    accepted token (ms) and the accept length the extend is taken at."""
    return np.array(
        [
            cost.draft_ms,
            cost.verify_ms,
            cost.extend_ms,
            cost.overhead_ms,
            cost.extend_per_token_ms,
            cost.extend_tokens,
        ],
        dtype=float,
    )


def tree_acceptance(bound: Bound) -> TreeAcceptance:
    """The bound scenario's tree acceptance; a chain (topk 1) as the tree of topk 1, which
    is its chain (sim/model/tree/build.py)."""
    acc = bound.acceptance
    if isinstance(acc, TreeAcceptance):
        return acc
    k = bound.num_steps
    return TreeAcceptance(acc, (), TreeDraft(k, 1, k + 1))


def accept_lengths_by_tree(nominal: TreeAcceptance, top1: np.ndarray) -> np.ndarray:
    """E[L] of the tree built (as ``nominal``'s) at each row of top-1 rates ``top1`` (n,
    depth), one request's, shape (n,): each row's tree built at its rank rates (as
    ``TreeAcceptance`` builds it), then the rows of each distinct tree through its
    survival at once, in the operations of
    ``TreeAcceptance.closed_form_rates`` and ``mean_accept_length``."""
    q = nominal.rank_rates(top1)  # (n, depth, W)
    draft = nominal.draft
    trees = [draft if isinstance(draft, Tree) else draft.tree(row) for row in q]
    out = np.empty(top1.shape[0])
    for tree in set(trees):
        rows = np.array([i for i, t in enumerate(trees) if t == tree])
        s = depth_survival(tree, q[rows, : max(tree.max_depth, 1)])
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.clip(np.where(s[:, :-1] > 0, s[:, 1:] / s[:, :-1], 0.0), 0.0, 1.0)
        out[rows] = 1.0 + cumulative_rates(rates).sum(axis=-1)
    return out


#: Populations by (what makes them, the drawn acceptance values' bytes), beside a chain's
#: drawn rates (sim/uncertainty/sampled_draws.py ``Drawn``).
Populations = Drawn


@dataclass(frozen=True, slots=True)
class Population:
    """One draw's requests: the top-1 rate classes (means and spread) and the rank shares."""

    top1: AcceptanceModel
    shares: Shares


def drawn_population(
    scenario: Scenario,
    nominal: TreeAcceptance,
    inputs: list[UncertainInput],
    row: np.ndarray,
) -> Population | None:
    """``nominal``'s classes and shares with the acceptance ``inputs`` at ``row`` (A,): the
    scenario re-validated at them (``drawn_scenario``; None where it rejects them or a
    class's std is too wide for its drawn means), the classes and shares built as the
    nominal answer builds them."""
    other = drawn_scenario(scenario, inputs, row)
    if other is scenario:
        return Population(nominal.top1, nominal.shares)
    if other is None:
        return None
    spec = other.acceptance
    assert spec is not None
    top1 = acceptance_model(spec, nominal.top1.num_steps)
    if top1.infeasible() is not None:
        return None
    return Population(top1, rank_shares(spec, other.speculation.rank_width))


@dataclass(frozen=True, slots=True)
class TreeDraws:
    """The tree's answers in every draw: accept length, tok/s and the cycle (ms, the
    extend at that accept length), each (n,), and the number of distinct rows of rates (a
    tree built for each)."""

    accept_length: np.ndarray
    tok_s: np.ndarray
    cycle_ms: np.ndarray
    distinct_rows: int


@dataclass(frozen=True, slots=True)
class SampledTree:
    """A scenario's inputs, the response tables of its tree cycle (the non-acceptance
    inputs), its nominal cycle vector (6,) and tree; ``answers(values)`` rebuilds the tree
    in every draw."""

    scenario: Scenario
    inputs: tuple[UncertainInput, ...]
    responses: tuple[PassResponse | None, ...]
    base: np.ndarray
    nominal: TreeAcceptance
    #: Positions the drawn rates cover (those of the chain's draws, and at least the
    #: tree's depth and the measured num_steps the anchor is fitted at).
    max_steps: int = MAX_STEPS
    #: A mix's or a spread's population (``population``) by what makes it (``_key``)
    #: and its acceptance inputs' bytes, shared by the copies ``replace`` makes (the best
    #: tree's draws reuse SGLang's) and by the scenarios given the same dict.
    populations: Populations = field(default_factory=dict, repr=False, compare=False)

    def accept_lengths(self, values: np.ndarray) -> tuple[np.ndarray, int]:
        """E[L] (n,) of the tree rebuilt in each draw ``values`` (n, F), and the number of
        distinct rows of rates (a tree built for each)."""
        if not acceptance_propagated(self.scenario):
            return self._over_requests(values)
        depth = self.nominal.top1.num_steps
        rates, _ = sampled_acceptance(self.scenario, self.inputs, values, self.max_steps)
        rates = np.clip(rates[:, :depth], 0.0, 1.0)
        first, again = distinct_rows(rates)
        al = accept_lengths_by_tree(self.nominal, rates[first])[again]
        return al, int(first.size)

    def population(self, row: np.ndarray) -> Population | None:
        """The top-1 rate classes and rank shares at one draw ``row`` (A,) of the acceptance
        inputs (``acceptance_rows``), as the nominal answer takes them; None where the
        scenario rejects the draw's values."""
        inputs = [inp for inp in self.inputs if is_acceptance_input(inp.field)]
        key = (self._key(inputs), row.tobytes())
        if key not in self.populations:
            self.populations[key] = drawn_population(self.scenario, self.nominal, inputs, row)
        return self.populations[key]

    def _key(self, inputs: list[UncertainInput]) -> str:
        """What a population depends on besides the drawn values: the acceptance section,
        the depths and width its classes and shares cover, the drawn fields."""
        spec = self.scenario.acceptance
        section = spec.model_dump_json() if spec is not None else ""
        depth, topk = self.nominal.top1.num_steps, self.scenario.speculation.rank_width
        return f"{section}|{depth}|{topk}|{'|'.join(inp.field for inp in inputs)}"

    def _over_requests(self, values: np.ndarray) -> tuple[np.ndarray, int]:
        """``accept_lengths`` of a mix or a spread: E[L] over requests of the tree rebuilt
        at each distinct draw's population (``population``)."""
        distinct, again = acceptance_rows(self.inputs, values)
        out = np.full(distinct.shape[0], np.nan)
        for i, row in enumerate(distinct):
            pop = self.population(row)
            if pop is not None:
                tree = TreeAcceptance(pop.top1, pop.shares, self.nominal.draft)
                out[i] = mean_accept_length(tree.closed_form_rates())
        return out[again], int(distinct.shape[0])

    def cycle_vectors(self, values: np.ndarray) -> np.ndarray:
        """The tree cycle's parts (``tree_cycle_vector``) in each draw, shape (n, 6)."""
        n = values.shape[0]
        vec = np.broadcast_to(self.base, (n, self.base.size)).copy()
        below, above = np.empty_like(vec), np.empty_like(vec)
        for j, resp in enumerate(self.responses):
            if resp is not None:
                resp.add_to(vec, values[:, j], below, above)
        return vec

    def answers(self, values: np.ndarray) -> TreeDraws:
        """The tree's accept length and tok/s in each draw ``values`` (n, F)."""
        al, built = self.accept_lengths(values)
        draft, verify, extend, overhead, per_token, tokens = self.cycle_vectors(values).T
        # CycleCost.at_accept_length, then total_ms, elementwise in the same order
        extend_at = np.where(per_token == 0.0, extend, extend + per_token * (al - tokens))
        total_ms = draft + verify + extend_at + overhead
        return TreeDraws(al, 1000.0 * al / total_ms, total_ms, built)


def sampled_tree(
    bound: Bound,
    draws: np.ndarray | None = None,
    *,
    inputs: tuple[UncertainInput, ...] | None = None,
    max_steps: int = MAX_STEPS,
    populations: Populations | None = None,
) -> SampledTree:
    """The scenario's tree over its uncertain inputs (default: its own), the response
    tables spanning ``draws`` (n, F) (default: the nominal values only), the drawn rates
    over at least ``max_steps`` positions (the chain's); a mix's or a spread's tree takes
    its draws' populations instead, kept in ``populations`` when given (scenarios that
    differ elsewhere share them). The nominal tree and cycle are the ``Bound``'s; each
    response re-validates the scenario at other values and binds it."""
    scenario = bound.scenario
    inputs = bound.inputs if inputs is None else inputs
    if draws is None:
        draws = nominal_row(inputs)
    base = cycle_vector(bound.cycle)
    responses = tuple(
        None
        if is_acceptance_input(inp.field)
        else pass_response(
            scenario, inp, draws[:, j], base, vector=tree_cycle_vector, memo=bound.hardware.memo
        )
        for j, inp in enumerate(inputs)
    )
    nominal = tree_acceptance(bound)
    spec = scenario.acceptance
    measured = spec.measured_num_steps or 0 if spec is not None else 0
    needed = max(max_steps, nominal.top1.num_steps, measured)
    pops: Populations = {} if populations is None else populations
    return SampledTree(scenario, inputs, responses, base, nominal, needed, pops)
