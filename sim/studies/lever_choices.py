"""The levers a user can pull on a scenario (``Lever``, ``default_levers``: graph the
verify, move to NVLink, train a better drafter, next to plain decoding and the scenario as
it is), the public drafter to try (``Drafter``, ``drafter_for``), the hardware model's
plausible variants they are read under (``Variant``, ``VARIANTS``), why a lever changes
nothing on a scenario (``not_applicable``), and a lever's tok/s (``lever_tok_s``). The
table that ranks them is sim/studies/levers.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.binding.bound import Bound, bind
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import alpha_for_accept_length
from sim.scenario.schema import Scenario

__all__ = [
    "KIMI_K2_DRAFTER",
    "VARIANTS",
    "Drafter",
    "Lever",
    "Variant",
    "default_levers",
    "drafter_for",
    "lever_tok_s",
    "not_applicable",
    "scenario_tok_s",
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


def scenario_tok_s(scenario: Scenario, memo: PassMemo) -> float:
    """``lever_tok_s`` of ``scenario`` bound with the hardware answers ``memo``."""
    return lever_tok_s(bind(scenario, memo))


def lever_tok_s(bound: Bound) -> float:
    """A lever's long-run tok/s: plain decoding's baseline at k = 0, else the closed form
    (renewal-reward, sim/binding/closed_form.py)."""
    return bound.baseline_tok_s if bound.num_steps == 0 else bound.closed_form_tok_s
