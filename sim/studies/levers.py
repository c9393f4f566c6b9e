"""The levers a user can pull, ranked: graph the verify, move to NVLink, train a better
drafter, next to plain decoding (the reference) and the scenario as it is.

Each lever is a set of overrides on the scenario; its long-run tok/s is the closed form
(renewal-reward, sim/binding/closed_form.py), with two ranges:

* its 90% interval from inputs and model (sim/uncertainty/answers.py: the lever's
  scenario with its stated errors and ranges, the acceptance priors and shape error,
  derived compute's efficiency, drawn at Sobol points and re-solved);
* the range across the hardware model's plausible variants (``VARIANTS``), which the
  inputs' draws do not cover because they are choices of model: the verify's growth with
  tokens (the scenario's linear estimate, or the routed experts read) and, where the
  scenario takes the verify's GPU work from its graphed decode, the opposite reading (the
  ungraphed verify's time as GPU work, the eager model at its public per-kernel cost). The
  last one bounds graphing's gain from below: it attributes every millisecond the eager
  model cannot explain to GPU work. A better drafter adds the range of its published
  accept lengths.

Where the scenario states a range for the kernels an eager layer issues
(``model.kernels_per_layer`` under ``[uncertainty]``) and its verify runs ungraphed, the
table adds each lever at the range's ends (``KernelSweep``): with a measured ungraphed verify
the per-kernel CPU cost follows from it at each count, and the "verify time as GPU work"
reading (the public per-kernel cost) is shown where it fits the measured verify at all.

The levers, the drafter and the variants are sim/studies/lever_choices.py, the kernel
sweep sim/studies/lever_kernels.py; here the table (``lever_table``: a row a lever,
``_lever_row``) and the levers' scenarios (``lever_scenarios``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.binding.bound import Bound, bind
from sim.errors import SpecsimError
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import alpha_for_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.studies.lever_choices import (
    VARIANTS,
    Drafter,
    Lever,
    Variant,
    default_levers,
    drafter_for,
    lever_tok_s,
    not_applicable,
    scenario_tok_s,
)
from sim.studies.lever_kernels import KernelSweep, kernel_sweep
from sim.uncertainty.answers import TREE_NOTE, OffCentre, answer_uncertainty, off_centre

if TYPE_CHECKING:
    from sim.uncertainty.tree_sampled import Populations

__all__ = ["LeverRow", "LeverTable", "lever_scenarios", "lever_table"]


@dataclass(frozen=True, slots=True)
class LeverRow:
    """One lever: closed-form tok/s as specified, and its range over the variants."""

    lever: Lever
    tok_s: float | None
    low: float | None
    high: float | None
    per_variant: Mapping[str, float | None]
    accept_length: float | None
    cycle_ms: float | None
    error: str | None = None
    #: 90% interval of tok/s from inputs and model (None: no uncertain input, or failed)
    interval90: tuple[float, float] | None = None
    #: why the lever changes nothing here (``not_applicable``; then no tok/s, not ranked)
    not_applicable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {"not_applicable": self.not_applicable} if self.not_applicable else {}
        return {
            **extra,
            "name": self.lever.name,
            "description": self.lever.description,
            "overrides": dict(self.lever.overrides),
            "reference": self.lever.reference,
            "tok_s": self.tok_s,
            "low": self.low,
            "high": self.high,
            "per_variant": dict(self.per_variant),
            "accept_length": self.accept_length,
            "cycle_ms": self.cycle_ms,
            "error": self.error,
            "interval90": None if self.interval90 is None else list(self.interval90),
        }


@dataclass(frozen=True, slots=True)
class LeverTable:
    scenario: str
    rows: tuple[LeverRow, ...]
    variants: tuple[Variant, ...]
    drafter: Drafter | None
    kernels: KernelSweep | None = None
    #: inputs specified outside the 5-95% of their ranges (why a row can lie outside its 90%)
    off_centre: tuple[OffCentre, ...] = ()
    #: what the table leaves out and why (a tree's rows have no 90% interval)
    notes: tuple[str, ...] = ()

    @property
    def reference(self) -> LeverRow:
        return next(r for r in self.rows if r.lever.reference)

    def ranked(self) -> list[LeverRow]:
        """The single levers (not the reference, the scenario or combinations), best first
        by the tok/s as specified, ties by the lower end."""
        single = [r for r in self.rows if r.lever.name not in ("plain decoding", "as is")]
        single = [r for r in single if "+" not in r.lever.name and r.tok_s is not None]
        return sorted(single, key=lambda r: (-(r.tok_s or 0.0), -(r.low or 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "reference": self.reference.lever.name,
            "levers": [r.to_dict() for r in self.rows],
            "ranked": [r.lever.name for r in self.ranked()],
            "variants": [{"name": v.name, "description": v.description} for v in self.variants],
            "drafter": None
            if self.drafter is None
            else {
                "num_steps": self.drafter.num_steps,
                "accept_lengths": list(self.drafter.accept_lengths),
                "source": self.drafter.source,
            },
            "interval90": "90% interval from inputs and model",
            "interval": "range across the hardware model's variants",
            "kernels": None if self.kernels is None else self.kernels.to_dict(),
            "off_centre_inputs": [o.to_dict() for o in self.off_centre],
            "notes": list(self.notes),
        }


def _variant_values(
    scenario: Scenario,
    lever: Lever,
    variants: Sequence[Variant],
    drafter: Drafter | None,
    memo: PassMemo,
    applied: Bound,
) -> dict[str, float | None]:
    """tok/s of the lever under each variant (None where a variant does not apply), and,
    for a lever that sets the drafter, under each of its published accept lengths
    (``memo``: the reference model's hardware answers; ``applied``: the lever's scenario
    already bound, the variant that changes nothing at the lever's own acceptance)."""
    out: dict[str, float | None] = {}
    accept: list[float | None] = [None]
    if "acceptance.alpha" in lever.overrides and drafter is not None:
        accept = [alpha_for_accept_length(al, drafter.num_steps) for al in drafter.accept_lengths]
    for v in variants:
        if v.name == "verify time as GPU work" and scenario.timing.verify_compute != "decode":
            out[v.name] = None
            continue
        values = []
        for alpha in accept:
            overrides = {**v.overrides, **lever.overrides}
            if alpha is not None:
                overrides["acceptance.alpha"] = alpha
            if overrides == dict(lever.overrides):  # the lever's own scenario: bound once
                values.append(lever_tok_s(applied))
                continue
            try:
                values.append(
                    scenario_tok_s(with_overrides(scenario, overrides, source="lever"), memo)
                )
            except SpecsimError:
                values = []
                break
        out[v.name] = min(values) if values else None
        if len(values) > 1:
            out[f"{v.name}, best accept length"] = max(values)
    return out


def lever_scenarios(
    scenario: Scenario, levers: Sequence[Lever] | None = None, memo: PassMemo | None = None
) -> list[tuple[str, Bound]]:
    """(name, bound scenario) of every lever that makes a valid scenario, reference first
    (the hardware model may refuse one as well); ``memo``: the hardware answers they share
    (None: a memo of their own)."""
    memo = PassMemo() if memo is None else memo
    out = []
    for lever in levers or default_levers(scenario):
        if not_applicable(scenario, lever) is not None:
            continue  # the same scenario as another column
        try:
            out.append((lever.name, _applied(scenario, lever, memo)))
        except SpecsimError:
            continue
    return out


def _applied(scenario: Scenario, lever: Lever, memo: PassMemo) -> Bound:
    """The scenario with the lever pulled, bound (with the hardware answers ``memo``)."""
    return bind(with_overrides(scenario, dict(lever.overrides), source="lever"), memo)


def _interval90(applied: Bound, populations: Populations) -> tuple[float, float] | None:
    """The 90% tok/s interval from inputs and model of a lever's scenario (None if an end
    is missing); a tree's drawn populations under a mix or a spread kept in
    ``populations`` (the levers that leave acceptance alone share them)."""
    spread = answer_uncertainty(applied, [], populations=populations).tok_s_interval90
    if spread is None or spread.low is None or spread.high is None:
        return None
    return (spread.low, spread.high)


def lever_table(
    bound: Bound,
    levers: Sequence[Lever] | None = None,
    variants: Sequence[Variant] = VARIANTS,
    drafter: Drafter | None = None,
    intervals90: Mapping[str, tuple[float, float] | None] | None = None,
    levers_bound: Mapping[str, Bound] | None = None,
) -> LeverTable:
    """Every lever's closed-form tok/s as specified and its range over ``variants``, of the
    bound scenario ``bound`` (its hardware model prices the kernel sweep; its uncertain
    inputs say which are specified off the centre of their ranges, ``off_centre``).

    ``intervals90``: the levers' 90% intervals already computed on the same scenarios, by
    lever name (``compare --levers`` has them from its columns); the others are computed.
    ``levers_bound``: the levers' scenarios already bound, by lever name (``lever_scenarios``);
    the others are bound here. Every scenario bound here shares the hardware answers of
    ``bound``'s model (``PassModel.memo``).
    """
    scenario, memo = bound.scenario, bound.hardware.memo
    levers_bound = levers_bound or {}
    drafter = drafter or drafter_for(scenario)
    levers = tuple(levers or default_levers(scenario, drafter))
    populations: Populations = {}
    rows = [
        _lever_row(
            scenario,
            lever,
            variants,
            drafter,
            memo,
            levers_bound.get(lever.name),
            intervals90 or {},
            populations,
        )
        for lever in levers
    ]
    sweep = kernel_sweep(bound, [x for x in levers if not_applicable(scenario, x) is None])
    return LeverTable(
        scenario.name,
        tuple(rows),
        tuple(variants),
        drafter,
        sweep,
        off_centre(bound.inputs),
        (TREE_NOTE,) if scenario.speculation.is_tree else (),
    )


def _lever_row(
    scenario: Scenario,
    lever: Lever,
    variants: Sequence[Variant],
    drafter: Drafter | None,
    memo: PassMemo,
    applied: Bound | None,
    given: Mapping[str, tuple[float, float] | None],
    populations: Populations,
) -> LeverRow:
    """One lever's row: why it does not apply (``not_applicable``), or the error its
    scenario raises, or its tok/s as specified (``lever_tok_s``), its range over the
    ``variants`` (``_variant_values``; the tok/s itself where none gives one), its accept
    length (tok/s x cycle ms / 1000; 1 at plain decoding), its cycle, and its 90% interval
    (``given``'s, else ``_interval90`` with the drawn ``populations`` the levers share).
    ``applied``: the lever's scenario already bound (None: bound here with ``memo``)."""
    why = not_applicable(scenario, lever)
    if why is not None:
        return LeverRow(lever, None, None, None, {}, None, None, not_applicable=why)
    try:
        if applied is None:
            applied = _applied(scenario, lever, memo)
        tok_s = lever_tok_s(applied)
        cost = applied.cost
        al = applied.closed_form_tok_s * cost.total_ms / 1000 if applied.num_steps else 1.0
    except SpecsimError as exc:
        return LeverRow(lever, None, None, None, {}, None, None, exc.message)
    per_variant = _variant_values(scenario, lever, variants, drafter, memo, applied)
    known = [x for x in per_variant.values() if x is not None]
    interval90 = given[lever.name] if lever.name in given else _interval90(applied, populations)
    return LeverRow(
        lever,
        tok_s,
        min(known) if known else tok_s,
        max(known) if known else tok_s,
        per_variant,
        al,
        cost.total_ms,
        interval90=interval90,
    )
