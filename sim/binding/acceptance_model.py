"""``[acceptance]`` -> ``AcceptanceModel`` (sim/model/acceptance.py): one rate class, or a
class per ``[[acceptance.mix]]`` entry, each anchored on the resolved shape
(sim/binding/acceptance_shape.py); ``concentration``/``std`` become each class's Beta
``Spread`` (a class without its own takes the top-level one). ``resolve_acceptance`` takes
the shape, then the model, in that order (the closed forms' factors are the result's,
``ResolvedAcceptance.factors``); a tree's rank shares: ``rank_shares``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.binding.acceptance_shape import (
    AcceptanceShape,
    acceptance_shape,
    anchored_factors,
    anchored_rates,
    measured_depth,
)
from sim.model.acceptance import AcceptanceModel, RateClass, Spread
from sim.model.shapes import tilted
from sim.scenario.sections.acceptance import AcceptanceClass, AcceptanceSpec

if TYPE_CHECKING:
    from sim.model.tree.rates import Shares


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
