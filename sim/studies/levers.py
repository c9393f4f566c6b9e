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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sim.binding.bound import Bound, bind
from sim.binding.provenance import (
    eager_verify,
    kernel_count_range,
    launch_origin,
)
from sim.errors import SpecsimError
from sim.hardware.eager import EAGER_KERNEL_US
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import alpha_for_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.answers import TREE_NOTE, OffCentre, answer_uncertainty, off_centre

if TYPE_CHECKING:
    from sim.uncertainty.tree_sampled import Populations

__all__ = [
    "KIMI_K2_DRAFTER",
    "VARIANTS",
    "Drafter",
    "KernelSweep",
    "Lever",
    "LeverRow",
    "LeverTable",
    "Variant",
    "default_levers",
    "drafter_for",
    "kernel_sweep",
    "lever_scenarios",
    "lever_table",
    "not_applicable",
]


@dataclass(frozen=True, slots=True)
class Drafter:
    """A drafter to try: its num_steps and the accept lengths it is reported to reach."""

    num_steps: int
    accept_lengths: tuple[float, ...]
    source: str

    @property
    def typical_accept_length(self) -> float:
        return sum(self.accept_lengths) / len(self.accept_lengths)


#: A public EAGLE-3 drafter for Kimi-K2 trained on 1.4M samples, at num_steps 3 / 4 draft
#: tokens: HumanEval 3.372, GSM8K 3.165, Math500 3.490 (AQ-MedAI/Kimi-K2-Instruct-eagle3
#: model card; docs/reference.md §Seed).
KIMI_K2_DRAFTER = Drafter(
    num_steps=3,
    accept_lengths=(3.165, 3.372, 3.490),
    source="AQ-MedAI/Kimi-K2-Instruct-eagle3 model card (HumanEval 3.372, GSM8K 3.165, "
    "Math500 3.490 at num_steps 3)",
)


@dataclass(frozen=True, slots=True)
class Lever:
    name: str
    description: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    reference: bool = False


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    description: str
    overrides: Mapping[str, Any]


VARIANTS: tuple[Variant, ...] = (
    Variant("as specified", "the scenario's own settings", {}),
    Variant(
        "experts growth",
        "the verify's compute grows with the routed experts read (timing.verify_growth = "
        "experts) instead of the scenario's linear estimate",
        {"timing.verify_growth": "experts"},
    ),
    Variant(
        "verify time as GPU work",
        "the ungraphed verify's compute calibrated from its own time at the eager model's "
        "public per-kernel cost (timing.verify_compute = measured): a lower bound on what "
        "graphing gains",
        {"timing.verify_compute": "measured"},
    ),
)


def drafter_for(scenario: Scenario) -> Drafter | None:
    """The public drafter to try for the scenario's target model (None: none is known); the
    model named bare or by its Hugging Face id (``moonshotai/Kimi-K2.5``)."""
    name = scenario.model.name.lower().rsplit("/", 1)[-1]
    return KIMI_K2_DRAFTER if name.startswith("kimi") else None


def default_levers(scenario: Scenario, drafter: Drafter | None = None) -> tuple[Lever, ...]:
    """Plain decoding (reference), the scenario, and the levers alone and combined; the
    better-drafter levers only where a drafter is known (``drafter_for``)."""
    drafter = drafter or drafter_for(scenario)
    graphed = {"timing.verify_cuda_graph": True}
    nvlink = {"hardware.interconnect": "nvlink4"}
    plain: dict[str, Any] = {"speculation.num_steps": 0}
    if scenario.speculation.is_tree:  # a tree of num_steps 0 is no scenario: plain is a chain
        plain["speculation.topk"] = 1
    base = (
        Lever("plain decoding", "no speculation (the reference)", plain, True),
        Lever("as is", f"{scenario.name} as measured"),
        Lever("graph the verify", "the verify pass captured in a CUDA graph", graphed),
        Lever("NVLink", "NVLink4 through NVSwitch instead of the interconnect, same GPUs", nvlink),
    )
    if drafter is None:
        return (*base, Lever("graph + NVLink", "both", {**graphed, **nvlink}))
    k, al = drafter.num_steps, drafter.typical_accept_length
    better = {
        "speculation.num_steps": k,
        "acceptance.alpha": alpha_for_accept_length(al, k),
        "acceptance.measured_num_steps": k,  # the drafter's accept length is measured at k
    }
    return (
        *base,
        Lever(
            "better drafter",
            f"a drafter reaching accept length {min(drafter.accept_lengths):g}-"
            f"{max(drafter.accept_lengths):g} at num_steps {k} ({drafter.source})",
            better,
        ),
        Lever("graph + drafter", "both", {**graphed, **better}),
        Lever("graph + NVLink", "both", {**graphed, **nvlink}),
    )


def _current(scenario: Scenario, dotted: str) -> Any:
    """The scenario's value of a speculation or acceptance field (None: not set)."""
    section, key = dotted.split(".", 1)
    return getattr(getattr(scenario, section), key, None)


def not_applicable(scenario: Scenario, lever: Lever) -> str | None:
    """Why ``lever`` changes nothing on ``scenario`` (None: it applies): a verify already
    graphed, an interconnect with no all-reduce to speed up (one GPU) or already the one
    asked for, the drafter already in use. A combination is not applicable when one of its
    parts is not (it is then the other part alone, which has its own row)."""
    o = lever.overrides
    reasons = []
    if o.get("timing.verify_cuda_graph") is True and scenario.timing.verify_cuda_graph:
        reasons.append("the verify is already graphed (timing.verify_cuda_graph = true)")
    if "hardware.interconnect" in o:
        if scenario.hardware.gpus == 1:
            reasons.append(
                "one GPU (hardware.gpus = 1): no all-reduce for an interconnect to speed up"
            )
        elif scenario.hardware.interconnect == o["hardware.interconnect"]:
            reasons.append(f"already on {scenario.hardware.interconnect} (hardware.interconnect)")
    drafter = {k: v for k, v in o.items() if k.startswith(("acceptance.", "speculation."))}
    if (
        drafter
        and not lever.reference
        and all(_current(scenario, k) == v for k, v in drafter.items())
    ):
        reasons.append("the scenario already has this drafter")
    return "; ".join(reasons) or None


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
class KernelSweep:
    """The levers across the kernel count's range (``counts``, the ends of
    ``model.kernels_per_layer``'s range): the per-kernel CPU cost at each (``launch_us``,
    with its origin), each lever's tok/s as specified (None where the count makes the
    scenario invalid), and graphing under the "verify time as GPU work" reading at each
    count (``gpu_work``; None: the public per-kernel cost's launches alone exceed the
    measured verify) with the largest count at which that reading fits
    (``gpu_work_fits_up_to``; None: it fits the whole range, or none at all)."""

    counts: tuple[int, ...]
    reason: str
    launch_us: tuple[float, ...]
    launch_origin: str
    tok_s: Mapping[str, tuple[float | None, ...]]
    gpu_work: tuple[float | None, ...]
    gpu_work_note: str
    gpu_work_fits_up_to: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": list(self.counts),
            "reason": self.reason,
            "launch_us": list(self.launch_us),
            "launch_origin": self.launch_origin,
            "tok_s": {k: list(v) for k, v in self.tok_s.items()},
            "gpu_work": list(self.gpu_work),
            "gpu_work_note": self.gpu_work_note,
            "gpu_work_fits_up_to": self.gpu_work_fits_up_to,
        }


#: The "verify time as GPU work" reading of graphing (``VARIANTS``' last, with the graph).
_GPU_WORK_GRAPHED = {"timing.verify_compute": "measured", "timing.verify_cuda_graph": True}


def _try_tok_s(
    scenario: Scenario, overrides: Mapping[str, Any], memo: PassMemo
) -> tuple[float | None, str]:
    """(tok/s, "") of the scenario with ``overrides``, or (None, why not); ``memo``: the
    reference model's hardware answers (``PassModel.memo``), which its what-ifs meet again."""
    try:
        return _tok_s(with_overrides(scenario, dict(overrides), source="lever"), memo), ""
    except SpecsimError as exc:
        return None, exc.message


def kernel_sweep(bound: Bound, levers: Sequence[Lever]) -> KernelSweep | None:
    """The levers at the ends of the kernel count's stated range (None: no range, or the
    verify is graphed wherever it matters), on the bound scenario's own hardware model."""
    scenario, hw = bound.scenario, bound.hardware
    counts = kernel_count_range(scenario)
    if counts is None:
        return None
    if not eager_verify(hw):
        return None
    entry = scenario.uncertainty.entries()["model.kernels_per_layer"]
    field = "model.kernels_per_layer"
    launch = tuple(hw.launch_us_at_kernels(k) for k in counts)
    # the count moves the cost, not how it is got
    origin = launch_origin(scenario, hw, scenario.field_origins())[0]
    tok_s = {
        lever.name: tuple(
            _try_tok_s(scenario, {**lever.overrides, field: k}, hw.memo)[0] for k in counts
        )
        for lever in levers
    }
    gpu_work = tuple(
        _try_tok_s(scenario, {**_GPU_WORK_GRAPHED, field: k}, hw.memo)[0] for k in counts
    )
    fits_up_to = None
    if scenario.timing.verify_compute == "decode" and gpu_work[0] is None:
        low = 2 * max(scenario.model.allreduces_per_layer, 1)  # the schema's least count
        for k in range(counts[0] - 1, low - 1, -1):
            if _try_tok_s(scenario, {**_GPU_WORK_GRAPHED, field: k}, hw.memo)[0] is not None:
                fits_up_to = k
                break
    note = _gpu_work_note(scenario, counts) if all(x is None for x in gpu_work) else ""
    return KernelSweep(counts, entry.reason, launch, origin, tok_s, gpu_work, note, fits_up_to)


def _gpu_work_note(scenario: Scenario, counts: tuple[int, ...]) -> str:
    """Why the "verify time as GPU work" reading fits no count of the range: the public
    per-kernel cost's launches (every kernel and eager all-reduce call one framework op,
    sim/hardware/eager.py) against the measured verify."""
    layers = scenario.model.layers or 0
    launch = [layers * k * EAGER_KERNEL_US / 1000.0 for k in counts]
    return (
        f"at the public {EAGER_KERNEL_US:.3g} us a kernel the launches of {layers} layers x "
        f"{counts[0]}-{counts[-1]} kernels alone take {launch[0]:.1f}-{launch[-1]:.1f} ms, "
        f"more than the measured {scenario.timing.verify_ms:g} ms verify"
    )


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


def _tok_s(scenario: Scenario, memo: PassMemo) -> float:
    return _bound_tok_s(bind(scenario, memo))


def _bound_tok_s(bound: Bound) -> float:
    return bound.baseline_tok_s if bound.num_steps == 0 else bound.closed_form_tok_s


def _variant_values(
    scenario: Scenario,
    lever: Lever,
    variants: Sequence[Variant],
    drafter: Drafter | None,
    memo: PassMemo,
) -> dict[str, float | None]:
    """tok/s of the lever under each variant (None where a variant does not apply), and,
    for a lever that sets the drafter, under each of its published accept lengths
    (``memo``: the reference model's hardware answers)."""
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
            try:
                values.append(_tok_s(with_overrides(scenario, overrides, source="lever"), memo))
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
    rows = []
    levers = tuple(levers or default_levers(scenario, drafter))
    populations: Populations = {}
    for lever in levers:
        why = not_applicable(scenario, lever)
        if why is not None:
            rows.append(LeverRow(lever, None, None, None, {}, None, None, not_applicable=why))
            continue
        try:
            applied = (
                levers_bound[lever.name]
                if lever.name in levers_bound
                else _applied(scenario, lever, memo)
            )
            tok_s = _bound_tok_s(applied)
            cost = applied.cost
            al = applied.closed_form_tok_s * cost.total_ms / 1000 if applied.num_steps else 1.0
        except SpecsimError as exc:
            rows.append(LeverRow(lever, None, None, None, {}, None, None, exc.message))
            continue
        per_variant = _variant_values(scenario, lever, variants, drafter, memo)
        known = [x for x in per_variant.values() if x is not None]
        given = intervals90 or {}
        interval90 = given[lever.name] if lever.name in given else _interval90(applied, populations)
        rows.append(
            LeverRow(
                lever,
                tok_s,
                min(known) if known else tok_s,
                max(known) if known else tok_s,
                per_variant,
                al,
                cost.total_ms,
                interval90=interval90,
            )
        )
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
