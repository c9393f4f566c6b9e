"""The one binding: what a validated ``Scenario`` means as model objects.

Everything downstream (engines, studies, reports) gets its acceptance model, rates, pass
times, cycle cost and cycle-time model from here, so the meaning of each scenario key is
written down once:

* ``[acceptance]`` -> ``AcceptanceModel`` (sim/model/acceptance.py): one rate class, or a
  class per ``[[acceptance.mix]]`` entry. The shape of the rates by position is resolved
  once (``acceptance_shape``): given, chosen by held-out error on a listed profile, or the
  draft method's decay prior (sim/binding/priors.py); ``resolve_acceptance`` takes the
  shape, then the model, in that order (the closed forms' factors are the result's,
  ``ResolvedAcceptance.factors``). An ``alpha`` or ``accept_length`` fixes the accept
  length at ``measured_num_steps`` and the shape the rest; ``first_rate`` is a_1;
  ``per_position`` lists continue past their length by the shape (``repeat``: the last
  rate repeats); ``concentration``/``std`` become each class's Beta ``Spread`` (a class
  without its own takes the top-level one);
* ``[timing]``, ``[model]``, ``[hardware]`` -> ``PassTimes`` (measured, re-composed or
  derived by the hardware model, sim/hardware/pass_model.py) -> ``CycleCost``;
* ``timing.jitter_cv`` or the layer-level pass (``fidelity="layer"``) -> the cycle-time
  model the Monte Carlo engines draw durations from;
* the same passes at batch > 1 (serving): sim/binding/serving.py, from the ``Bound``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from sim.binding.decompose import scenario_hardware, scenario_pass_times
from sim.binding.priors import DecayPrior, ShapeError, decay_prior, shape_error
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import PassMemo, pass_schedule
from sim.model.acceptance import AcceptanceModel, RateClass, Spread
from sim.model.closed_forms import leviathan_accept_length
from sim.model.cycle import CycleCost, PassTimes, throughput_tok_s
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.model.cycletime import CycleTimeModel
from sim.model.rates import mean_accept_length
from sim.model.shapes import (
    continue_rates,
    first_rate_for_accept_length,
    rates_for_positions,
    shape_factors,
    tilt_factors,
    tilted,
)
from sim.scenario.schema import Scenario
from sim.scenario.sections.acceptance import AcceptanceClass, AcceptanceSpec

if TYPE_CHECKING:
    from sim.binding.tree_analysis import TreeAnalysis
    from sim.hardware.layer import LayerPass
    from sim.model.layer_cycletime import LayerCycleTimes
    from sim.model.tree import Tree
    from sim.model.tree.acceptance import Acceptance, TreeDraft
    from sim.model.tree.rates import Shares

# Trees, the layer-level pass and the batched (serving) costs are imported where they are
# used: a chain scenario's ``specsim run`` never needs them (start-up).

#: Pass-time fidelities of the Monte Carlo: ``cycle`` (the cost model, optional gamma
#: jitter) or ``layer`` (the layer-level SimPy pass of sim/hardware/layer.py).
FIDELITIES: tuple[str, ...] = ("cycle", "layer")

# --------------------------------------------------------------------------- acceptance


@dataclass(frozen=True, slots=True)
class AcceptanceShape:
    """How a scenario's conditional rates vary with position, resolved.

    ``shape`` is one of sim/model/shapes.py's ``CONTINUATIONS``; ``decay`` its parameter
    (1 for flat and repeat); ``origin`` where it comes from (``measured``: given in the
    file, ``override``, ``derived``: chosen by held-out error on the listed rates or taken
    from the decay prior, ``default``); ``prior`` the draft method's prior when the decay
    comes from it (its range is the decay's uncertainty); ``tilt`` the tilt the rates take
    (given, the method's nominal shape error when left to it, else 0); ``tilt_error`` the
    method's shape error when the tilt is left to it (``implicit_tilt``), else None.
    """

    shape: str
    decay: float
    origin: str
    reason: str
    prior: DecayPrior | None = None
    tilt: float = 0.0
    tilt_error: ShapeError | None = None

    def factors(self, num_steps: int) -> np.ndarray:
        """g_1..g_k of an anchored profile (a flat one for ``repeat``), shape (k,)."""
        shape = "flat" if self.shape == "repeat" else self.shape
        return shape_factors(shape, self.decay, num_steps)


#: Listed rates at or above this length choose their continuation by held-out error.
HOLDOUT_MIN_POSITIONS = 3
#: Standard error given to listed rates when choosing a continuation (printed precision).
LISTED_SIGMA = 1e-3


def _listed_choice(rates: list[float]) -> AcceptanceShape:
    """Continuation of a listed profile chosen by held-out error (flat/step: repeat)."""
    # lazy: a fit is made only when no stored one serves (start-up)
    from sim.model.profile_fit import ProfileData, choose_shape, fit_profile

    c = np.cumprod(rates)
    data = ProfileData(
        positions=tuple(range(1, len(rates) + 1)),
        cumulative=tuple(float(x) for x in c),
        cumulative_sigma=(LISTED_SIGMA,) * len(rates),
    )
    choice = choose_shape(data)
    assert choice is not None
    errors = ", ".join(f"{s} {100 * e:.2g}%" for s, e in choice.errors.items() if e is not None)
    if choice.shape == "geometric":
        decay = fit_profile("geometric", data).decay
        return AcceptanceShape(
            "geometric",
            decay,
            "derived",
            f"geometric continuation (decay {decay:.3f} fitted to the {len(rates)} listed "
            f"rates): lowest held-out error ({errors})",
        )
    return AcceptanceShape(
        "repeat",
        1.0,
        "derived",
        f"the last listed rate repeats: {choice.shape} has the lowest held-out error on the "
        f"{len(rates)} listed rates ({errors})",
    )


def acceptance_shape(spec: AcceptanceSpec, origin: str = "measured") -> AcceptanceShape:
    """The shape of ``spec``'s rates by position with its tilt; ``origin`` of given keys
    (``measured`` or ``override``). See ``AcceptanceSpec``: given, held-out choice on a
    listed profile of three or more rates, else the decay prior of ``spec.method``."""
    error = shape_error(spec.method) if implicit_tilt(spec) else None
    nominal = error.nominal if error is not None else 0.0
    tilt = spec.tilt if spec.tilt is not None else nominal
    return replace(_untilted_shape(spec, origin), tilt=tilt, tilt_error=error)


def _untilted_shape(spec: AcceptanceSpec, origin: str) -> AcceptanceShape:
    if spec.shape in ("flat", "repeat"):
        return AcceptanceShape(spec.shape, 1.0, origin, f"acceptance.shape = {spec.shape!r}")
    if spec.rank_rates_by_depth is not None and spec.shape in ("auto", "repeat"):
        return AcceptanceShape(
            "repeat",
            1.0,
            "default" if spec.shape == "auto" else origin,
            "rank_rates_by_depth: the last depth's rates repeat below the list",
        )
    if spec.shape == "auto" and spec.rank_rates is not None:
        return AcceptanceShape(
            "flat", 1.0, "default", "rank_rates are given at every depth (set shape to decay them)"
        )
    if spec.shape in ("geometric", "step") and spec.decay is not None:
        return AcceptanceShape(
            spec.shape, spec.decay, origin, f"acceptance.decay = {spec.decay:g} (given)"
        )
    listed = spec.per_position
    if spec.shape == "auto" and listed is not None and len(listed) >= HOLDOUT_MIN_POSITIONS:
        return _listed_choice(listed)
    family = None if spec.shape == "auto" else spec.shape
    prior = decay_prior(spec.method, family)
    return AcceptanceShape(prior.shape, prior.median, "derived", prior.reason, prior)


def anchored_rates(
    spec: AcceptanceSpec | AcceptanceClass,
    shape: AcceptanceShape,
    num_steps: int,
    measured_num_steps: int | None,
) -> np.ndarray:
    """Mean rates a_1..a_k, shape (k,), of one class's anchor under ``shape``.

    ``alpha``: the accept length it gives at ``measured_num_steps`` (k0) with equal rates,
    the shape scaled to it (a flat shape returns alpha itself); ``accept_length``: the
    same from the accept length; ``first_rate``: a_1; ``per_position``: continued.
    """
    k0 = measured_num_steps or max(num_steps, 1)
    factor_shape = "flat" if shape.shape == "repeat" else shape.shape
    if spec.per_position is not None:
        return continue_rates(spec.per_position, shape.shape, shape.decay, num_steps)
    by_depth = getattr(spec, "rank_rates_by_depth", None)  # each depth's top-1 rate
    if by_depth is not None:
        top1 = [row[0] for row in by_depth]
        return continue_rates(top1, shape.shape, shape.decay, num_steps)
    first = getattr(spec, "first_rate", None)
    ranks = getattr(spec, "rank_rates", None)  # q_1 is the top-1 rate
    if first is not None:
        return rates_for_positions(factor_shape, first, shape.decay, num_steps)
    if ranks is not None:
        return rates_for_positions(factor_shape, ranks[0], shape.decay, num_steps)
    if spec.alpha is not None and factor_shape == "flat":
        return np.full(num_steps, spec.alpha, dtype=float)
    stated = getattr(spec, "accept_length", None)  # a class has none
    if spec.alpha is not None:
        al0 = leviathan_accept_length(spec.alpha, k0)
    elif stated is not None:
        al0 = float(stated)
    else:
        raise ValueError("an anchor needs alpha, accept_length, first_rate or per_position")
    a1 = first_rate_for_accept_length(factor_shape, shape.decay, al0, k0)
    return rates_for_positions(factor_shape, float(a1), shape.decay, num_steps)


def measured_depth(spec: AcceptanceSpec | AcceptanceClass, measured_num_steps: int | None) -> int:
    """Positions the acceptance was measured over: a listed profile's length, else the
    num_steps its alpha, accept length or fitted first rate was measured at (1 if none)."""
    if spec.per_position is not None:
        return len(spec.per_position)
    by_depth = getattr(spec, "rank_rates_by_depth", None)
    if by_depth is not None:
        return len(by_depth)
    return measured_num_steps or 1


def implicit_tilt(spec: AcceptanceSpec) -> bool:
    """True when the tilt is left to the shape error: shape ``auto``, no tilt given (rank
    rates, given at every depth, excepted)."""
    return (
        spec.tilt is None
        and spec.shape == "auto"
        and spec.rank_rates is None
        and spec.rank_rates_by_depth is None
    )


def anchored_factors(
    spec: AcceptanceSpec, num_steps: int, shape: AcceptanceShape | None = None
) -> np.ndarray:
    """The shape factors g_1..g_k of an anchored profile with its tilt, shape (k,)
    (``shape``: ``acceptance_shape(spec)``, when the caller has it)."""
    shape = shape or acceptance_shape(spec)
    depth = measured_depth(spec, spec.measured_num_steps)
    g = shape.factors(num_steps)
    return g * tilt_factors(shape.tilt, depth, num_steps) if shape.tilt else g


def _rate_class(
    cls: AcceptanceClass | AcceptanceSpec,
    spec: AcceptanceSpec,
    num_steps: int,
    shape: AcceptanceShape,
    *,
    name: str,
    weight: float,
) -> RateClass:
    """One class of ``spec`` (``spec`` itself without a mix): its anchor's rates under the
    spec's ``shape`` with its tilt past the class's measured depth, and its spread (the
    spec's when the class gives none)."""
    k0 = spec.measured_num_steps
    depth = measured_depth(cls, k0)
    means = anchored_rates(cls, shape, num_steps, k0)
    if shape.tilt:
        means = tilted(means, shape.tilt, depth)
    own = cls.concentration is not None or cls.std is not None
    spread: AcceptanceClass | AcceptanceSpec = cls if own else spec
    return RateClass(name, weight, means, Spread(spread.concentration, spread.std))


def acceptance_model(spec: AcceptanceSpec | None, num_steps: int) -> AcceptanceModel:
    """The acceptance model of a scenario's ``[acceptance]`` at k = ``num_steps``, its
    arrays read-only (as ``bind``'s).

    ``spec`` None (plain decoding, k = 0) gives one class with no drafts. Built at each
    call: anchoring a shape is a root solve of 0.2-0.5 ms, and the commands ask for a spec
    they asked for before at most a few times (docs/speed.md, "Machinery measured").
    ``bind`` builds its own once (``resolve_acceptance``).
    """
    return _read_only(_acceptance_model(spec, num_steps))


def _read_only(model: AcceptanceModel) -> AcceptanceModel:
    for array in (model._weights, *(c.mean_rates for c in model.classes)):
        array.flags.writeable = False
    for c in model.classes:
        if c.concentration is not None:
            c.concentration.flags.writeable = False
    return model


def _acceptance_model(
    spec: AcceptanceSpec | None, num_steps: int, shape: AcceptanceShape | None = None
) -> AcceptanceModel:
    if spec is None or num_steps == 0:
        return AcceptanceModel(num_steps, (RateClass("all", 1.0, np.zeros(num_steps)),))
    shape = shape or acceptance_shape(spec)
    members: list[tuple[AcceptanceClass | AcceptanceSpec, str, float]] = (
        [(spec, "all", 1.0)] if spec.mix is None else [(c, c.name, c.weight) for c in spec.mix]
    )
    return AcceptanceModel(
        num_steps,
        tuple(
            _rate_class(c, spec, num_steps, shape, name=name, weight=weight)
            for c, name, weight in members
        ),
    )


def rank_shares(spec: AcceptanceSpec, topk: int) -> Shares:
    """Residual shares h_2..h_topk of the scenario's rank shape (sim/model/tree/rates.py):
    from ``rank_rates`` or ``rank_profile``, extended geometrically when asked; for
    ``rank_rates_by_depth`` one row of shares per listed depth (the last repeats). () for
    topk = 1 or no rank shape (a chain needs none)."""
    from sim.model.tree.rates import extend_shares, residual_shares  # lazy: trees only

    shape = spec.rank_shape()
    if topk == 1 or shape is None:
        return ()

    def shares(profile: list[float]) -> tuple[float, ...]:
        h = residual_shares(profile)
        if spec.rank_extend == "geometric":
            h = extend_shares(h, topk)
        return tuple(float(x) for x in h[: topk - 1])

    if spec.rank_rates_by_depth is not None:
        return tuple(shares(list(row)) for row in spec.rank_rates_by_depth)
    return shares(shape)


def tree_draft(scenario: Scenario) -> TreeDraft | Tree:
    """The tree a tree scenario drafts: the static ``[speculation.tree]``, else SGLang's
    (num_steps, topk, num_draft_tokens)."""
    from sim.model.tree.acceptance import TreeDraft  # lazy: trees only

    sp = scenario.speculation
    static = sp.static_tree
    if static is not None:
        return static
    assert sp.num_draft_tokens is not None
    return TreeDraft(sp.num_steps, sp.topk, sp.num_draft_tokens)


@dataclass(frozen=True, slots=True)
class ResolvedAcceptance:
    """A scenario's ``[acceptance]`` resolved once, in order (``resolve_acceptance``).

    ``spec``: the ``[acceptance]`` it resolves (None: plain decoding); ``shape``: the shape
    of its rates by position with its tilt (None without acceptance); ``top1``: the chain's
    acceptance model at the scenario's num_steps, read-only (a chain's acceptance, and a
    tree's top-1 rates). It gives the top-1 model at another k on the same shape (``at``),
    the shape factors the closed forms scale at each k (``factors``) and a tree's rank
    shares (``rank_shares``).
    """

    spec: AcceptanceSpec | None
    shape: AcceptanceShape | None
    top1: AcceptanceModel
    #: A mix's or a spread's factors by k, integrated once each (every target's answer
    #: asks for the same k).
    _integrated: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def at(self, num_steps: int) -> AcceptanceModel:
        """The top-1 model at ``num_steps`` positions on the resolved shape, read-only:
        ``top1`` itself at its own k (a serving plan whose policies draft longer or
        shorter than the scenario's k takes another)."""
        if num_steps == self.top1.num_steps:
            return self.top1
        return _read_only(_acceptance_model(self.spec, num_steps, self.shape))

    def factors(self, num_steps: int) -> np.ndarray:
        """The shape factors g_1..g_k (g_1 = 1) the closed forms scale at k = ``num_steps``,
        shape (k,); ones without acceptance.

        An anchored profile (alpha, accept length, first rate) gives its shape's factors
        with its tilt (``anchored_factors``); a listed profile, a mix or per-request spread
        the closed-form rates of the model at k (``at``) divided by their first (so scaling
        them keeps the profile, as search does).
        """
        spec, shape = self.spec, self.shape
        if spec is None or shape is None:
            return np.ones(num_steps)
        listed = (
            spec.mix is not None
            or spec.per_position is not None
            or spec.rank_rates_by_depth is not None
            or spec.heterogeneous
        )
        if not listed:
            return anchored_factors(spec, num_steps, shape)
        if num_steps not in self._integrated:
            rates = self.at(num_steps).closed_form_rates()
            ones = np.ones(num_steps)
            self._integrated[num_steps] = rates / rates[0] if rates.size and rates[0] > 0 else ones
        return self._integrated[num_steps].copy()

    def rank_shares(self, topk: int) -> Shares:
        """Residual shares h_2..h_topk of its rank shape (``rank_shares``): what a tree of
        ``topk`` ranks draws its ranks from; () for a chain or without acceptance."""
        return rank_shares(self.spec, topk) if self.spec is not None else ()


def resolve_acceptance(spec: AcceptanceSpec | None, num_steps: int) -> ResolvedAcceptance:
    """``spec`` at k = ``num_steps`` in one pass: the shape (given, chosen on a listed
    profile, or the method's decay prior, with its tilt), then each class's rates anchored
    to that shape; each step reads only the ones before it. The factors the closed forms
    scale are the result's (``ResolvedAcceptance.factors``), read from its shape and its
    model when asked."""
    shape = acceptance_shape(spec) if spec is not None else None
    return ResolvedAcceptance(spec, shape, _read_only(_acceptance_model(spec, num_steps, shape)))


@dataclass(frozen=True, slots=True)
class ChainBinding:
    """What a chain of k drafts (topk 1; k = 0 plain decoding) binds to: its acceptance is
    the top-1 model at k, its cycle the chain's (sim/model/cycle.py ``cycle_cost``)."""

    num_steps: int

    @property
    def draft(self) -> int:
        """The chain as a draft (sim/model/drafts.py): its k."""
        return self.num_steps

    def acceptance(self, resolved: ResolvedAcceptance) -> Acceptance:
        return resolved.top1

    def cycle(self, passes: PassTimes, hw: PassModel) -> CycleCost:
        return chain_cycle_cost(passes, self.num_steps)

    def tree_analysis(self, acceptance: Acceptance, cost: CycleCost) -> None:
        """A chain has no tree to analyse."""
        return None


@dataclass(frozen=True, slots=True)
class TreeBinding:
    """What a tree scenario (topk > 1, or a static ``[speculation.tree]``) binds to: SGLang's
    tree of (num_steps, topk, num_draft_tokens) or the static tree; its acceptance the
    top-1 model with the rank shares on that tree (``TreeAcceptance``), its cycle the
    tree's (``scenario_tree_cost``)."""

    scenario: Scenario

    @property
    def draft(self) -> TreeDraft | Tree:
        return tree_draft(self.scenario)

    def acceptance(self, resolved: ResolvedAcceptance) -> Acceptance:
        from sim.model.tree.acceptance import TreeAcceptance  # lazy: trees only

        assert resolved.spec is not None
        shares = resolved.rank_shares(self.scenario.speculation.rank_width)
        return TreeAcceptance(resolved.top1, shares, self.draft)

    def cycle(self, passes: PassTimes, hw: PassModel) -> CycleCost:
        return scenario_tree_cost(self.scenario, passes, hw)

    def tree_analysis(self, acceptance: Acceptance, cost: CycleCost) -> TreeAnalysis:
        """SGLang's tree and the best tree at the bound ``acceptance`` and expected cycle
        ``cost``, with the top-1 rate each target needs (sim/binding/tree_analysis.py)."""
        from sim.binding.tree_analysis import analyze_tree  # lazy: trees only
        from sim.model.tree.acceptance import TreeAcceptance

        assert isinstance(acceptance, TreeAcceptance)
        return analyze_tree(self.scenario, acceptance, cost)


def draft_binding(scenario: Scenario) -> ChainBinding | TreeBinding:
    """How the scenario drafts, decided once: a chain or a tree. ``bind`` asks it for the
    acceptance and the cycle and the ``Bound`` holds it (``Bound.drafting``), so the
    analysis asks it for the tree's part instead of asking again which one it is."""
    sp = scenario.speculation
    return TreeBinding(scenario) if sp.is_tree else ChainBinding(sp.num_steps)


def conditional_rates(
    spec: AcceptanceSpec | None, num_steps: int, drawn: bool = False
) -> np.ndarray:
    """Conditional rates a_1..a_k, shape (num_steps,), that the closed forms take.

    The listed rates (the last repeats); for a mix or per-request heterogeneity the
    effective rates E[c_i] / E[c_(i-1)] (c_i = a_1 ... a_i, expectations over requests), so
    the closed forms fed with them give the exact per-request expectations of the accept
    length and its pmf (sim/model/acceptance.py). No acceptance: zeros. ``drawn``: an
    uncertainty study's drawn scenario, whose expectations take the coarser rule
    (sim/model/acceptance.py ``drawn_quadrature``); the nominal answer keeps the exact one.
    """
    if spec is None:
        return np.zeros(num_steps)
    return acceptance_model(spec, num_steps).closed_form_rates(drawn)


def scenario_rates(scenario: Scenario, num_steps: int | None = None) -> np.ndarray:
    """``conditional_rates`` of a scenario at its own or another ``num_steps`` (k,); a
    tree at its own configuration gives its chain-equivalent rates (depth,)."""
    if num_steps is None and scenario.speculation.is_tree:  # as bind binds it
        resolved = resolve_acceptance(scenario.acceptance, scenario.num_steps)
        return draft_binding(scenario).acceptance(resolved).closed_form_rates()
    k = scenario.num_steps if num_steps is None else num_steps
    return conditional_rates(scenario.acceptance, k)


# --------------------------------------------------------------------------- timing


def pass_times(scenario: Scenario, memo: PassMemo | None = None) -> PassTimes:
    """The pass times a scenario implies on its hardware.

    As measured when the hardware is the one the timings were measured on
    (``timing.measured_on``); otherwise re-composed (calibrated compute + the new
    communication and launch) or derived by the hardware model (sim/hardware/pass_model.py).
    Computed once per bound model (``Bound.pass_times``, sim/binding/bound.py). ``memo``:
    the hardware answers of what asks for many scenarios' passes (sim/hardware/passes.py
    ``PassMemo``; None: the hardware model's own).
    """
    return scenario_pass_times(scenario, memo)


def draft_pass_table_ms(hw: PassModel, max_tokens: int) -> tuple[float, ...] | None:
    """The drafter's decode pass over m = 1..max_tokens tokens (beams), ms, from the
    scenario's hardware model ``hw`` when the model geometry is known
    (sim/hardware/pass_model.py), else None (then ``timing.draft_ms_per_extra_token`` grows
    it linearly, default 0: flat)."""
    known = hw.model.layers is not None and hw.model.hidden_size is not None
    if not known:
        return None
    return hw.draft_step_table_ms(max_tokens)


def tree_cost(
    scenario: Scenario,
    num_steps: int,
    topk: int,
    num_draft_tokens: int,
    passes: PassTimes,
    hw: PassModel,
) -> CycleCost:
    """The SGLang tree cycle of (num_steps, topk, num_draft_tokens) on ``passes``; topk = 1
    is the chain cycle exactly (sim/model/tree/cost.py). ``hw``: the scenario's hardware
    model (its drafter table)."""
    if topk == 1:
        return chain_cycle_cost(passes, num_steps)
    from sim.model.tree.cost import tree_cycle_cost  # lazy: trees only

    table = draft_pass_table_ms(hw, topk)
    return tree_cycle_cost(
        passes,
        num_steps,
        topk,
        num_draft_tokens,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        draft_table_ms=table,
    )


def scenario_tree_cost(scenario: Scenario, passes: PassTimes, hw: PassModel) -> CycleCost:
    """The cycle of a tree scenario at its own configuration: SGLang's tree cycle
    (``tree_cost``), or a static tree's (sim/model/drafts.py ``draft_cycle_cost``: one
    drafter pass per level below the first over every node drafted so far, the verify
    over its node count)."""
    sp = scenario.speculation
    static = sp.static_tree
    if static is None:
        assert sp.num_draft_tokens is not None
        return tree_cost(scenario, sp.num_steps, sp.topk, sp.num_draft_tokens, passes, hw)
    from sim.model.drafts import draft_cycle_cost, max_beams  # lazy: trees only

    table = draft_pass_table_ms(hw, max_beams(static))
    return draft_cycle_cost(
        passes,
        static,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        draft_table_ms=table,
    )


def bound_cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """The cycle of a scenario at its own ``num_steps`` or at another (a chain there; a
    tree at its own configuration is the tree cycle), the draft extend at the pass times'
    own accept length; ``CycleCost.at_accept_length`` moves it to an E[L]. At the
    scenario's own k it is computed once per bound model (``Bound.cycle``)."""
    if num_steps is not None:
        return chain_cycle_cost(pass_times(scenario), num_steps)
    hw = scenario_hardware(scenario)
    return draft_binding(scenario).cycle(hw.passes, hw)


def cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """The expected cycle of a scenario at its own ``num_steps`` or at another
    (``bound_cycle_cost``), the draft extend taken at the accept length E[L] its
    acceptance gives (exact: the extend is linear in L; ``CycleCost.at_accept_length``).
    An extend that does not grow with L needs no E[L] (no acceptance model is built)."""
    cost = bound_cycle_cost(scenario, num_steps)
    if cost.num_steps == 0 or cost.extend_per_token_ms == 0.0:
        return cost
    return cost.at_accept_length(mean_accept_length(scenario_rates(scenario, num_steps)))


def baseline_tok_s(scenario: Scenario) -> float:
    """Plain decoding throughput, tokens per second: 1000 / decode_ms."""
    return 1000.0 / pass_times(scenario).decode_ms


def closed_form_tok_s(scenario: Scenario, num_steps: int | None = None) -> float:
    """Long-run tok/s of a scenario by renewal-reward: 1000 E[L] / E[T_cycle] (a tree at its
    own configuration: its E[L] and its cycle)."""
    al = mean_accept_length(scenario_rates(scenario, num_steps))
    return throughput_tok_s(al, cycle_cost(scenario, num_steps))


# --------------------------------------------------------------------------- cycle times


def layer_pass(
    scenario: Scenario, hw: PassModel, pass_name: str, tokens: int | None = None
) -> LayerPass:
    """The layer-level pass of a scenario's ``pass_name`` (decode, verify, draft_step,
    draft_extend) over ``tokens`` tokens (default as measured), on its hardware model
    ``hw``, with its calibrated (or derived) compute (sim/hardware/pass_model.py)."""
    from sim.hardware.layer import LayerPass  # lazy: layer fidelity only

    m = hw.default_tokens(pass_name) if tokens is None else tokens
    compute_ms, _ = hw.compute_ms(pass_name, m)
    shape = hw.shape(pass_name, m, hw.current)
    schedule, _, _ = pass_schedule(shape, hw.current, hw.geom)
    return LayerPass(schedule, compute_ms, hw.current.gpus, scenario.hardware.rank_jitter_cv)


def sample_pass_ms(
    scenario: Scenario,
    hw: PassModel,
    pass_name: str,
    n: int,
    rng: np.random.Generator,
    tokens: int | None = None,
) -> np.ndarray:
    """``n`` layer-level draws of one pass's time (ms) on the hardware model ``hw``,
    shape (n,)."""
    from sim.hardware.layer import sample_layer_pass_ms  # lazy: layer fidelity only

    return sample_layer_pass_ms(layer_pass(scenario, hw, pass_name, tokens), n, rng)


def layer_cycle_times(
    scenario: Scenario, hw: PassModel, rng: np.random.Generator, pool_size: int = 256
) -> LayerCycleTimes:
    """Pools of ``pool_size`` layer-level pass times for the scenario's num_steps k, on its
    hardware model ``hw`` (the bound one: ``Bound.hardware``).

    k = 0: the cycle is one decode pass (reported as the verify phase, as in CycleCost).
    A deterministic layer pass (no rank jitter) needs one draw per pass.
    """
    from sim.model.layer_cycletime import LayerCycleTimes  # lazy: layer fidelity only

    k = scenario.num_steps
    size = pool_size if scenario.hardware.rank_jitter_cv > 0 else 1
    if k == 0:
        empty = np.zeros(1)
        decode = sample_pass_ms(scenario, hw, "decode", size, rng)
        return LayerCycleTimes(0, empty, decode, empty, 0.0)
    sp = scenario.speculation  # a tree: drafter passes over topk beams, verify over its N
    if sp.tree is not None:
        raise SpecsimError(
            "the layer-level pass model draws a chain's or SGLang's drafter passes; a static "
            "tree's passes differ by level: use fidelity cycle",
            field="speculation.tree",
        )
    return LayerCycleTimes(
        num_steps=k,
        draft_step_pool_ms=sample_pass_ms(scenario, hw, "draft_step", size, rng, tokens=sp.topk),
        verify_pool_ms=sample_pass_ms(scenario, hw, "verify", size, rng, tokens=sp.draft_tokens),
        extend_pool_ms=sample_pass_ms(scenario, hw, "draft_extend", size, rng),
        overhead_ms=scenario.timing.cycle_overhead_ms,
    )


def drawn_cycle_times(
    scenario: Scenario, hw: PassModel, fidelity: str, rng: np.random.Generator | None
) -> CycleTimeModel:
    """The cycle-time model of a fidelity other than ``cycle`` (``Bound.cycle_time_model``
    holds the ``cycle`` one): ``layer``'s pools of layer-level SimPy pass times on the
    hardware model ``hw``, drawn with ``rng`` (required); SpecsimError for a fidelity not in
    ``FIDELITIES``."""
    if fidelity == "layer":
        if rng is None:
            raise ValueError("the layer-level cycle-time model draws its pools: pass rng")
        return layer_cycle_times(scenario, hw, rng)
    raise SpecsimError(
        f"unknown fidelity {fidelity!r}; choose one of {', '.join(FIDELITIES)}", param="fidelity"
    )
