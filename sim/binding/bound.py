"""``bind(scenario) -> Bound``: a scenario turned, once, into the model everything above uses.

A ``Bound`` holds what the scenario means (each meaning written down once in this folder:
acceptance_shape.py, acceptance_model.py, draft_binding.py, closed_form.py,
drawn_cycle_times.py):
the pass times on its hardware, the acceptance model by position (a tree's for a tree),
the closed-form rates, the cycle at the pass times' own accept length (the one the Monte
Carlo engines shift cycle by cycle) and the expected cycle at E[L]. Analysis, the Monte
Carlo, serving and the studies take the ``Bound`` and read these instead of deriving
them again. ``bind`` is also where a problem the hardware model finds (a measured time
below its modelled communication + launch floor, a missing model field) is reported
against the scenario's file, as its loader reports a problem of the file itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from sim.binding.acceptance_model import ResolvedAcceptance, resolve_acceptance
from sim.binding.acceptance_shape import AcceptanceShape
from sim.binding.decompose import scenario_hardware
from sim.binding.draft_binding import ChainBinding, TreeBinding, draft_binding
from sim.binding.drawn_cycle_times import drawn_cycle_times
from sim.binding.inputs import UncertainInput, uncertain_inputs
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import FactorsFn
from sim.model.cycle import CycleCost, PassTimes, throughput_tok_s
from sim.model.cycletime import CostCycleTimes, CycleTimeModel
from sim.model.rates import mean_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.model.tree.acceptance import Acceptance

#: Scenario sections whose values the hardware model reads: a problem it finds is
#: reported as ``FILE (--set)`` when the last step that made the scenario set one of them.
HARDWARE_SECTIONS: tuple[str, ...] = ("hardware.", "model.", "timing.")


@dataclass(frozen=True, slots=True, eq=False)
class Bound:
    """One scenario bound to its model, built once by ``bind``; read-only.

    ``passes``: the pass times on the scenario's hardware (measured, re-composed or
    derived: ``hardware.passes``); ``acceptance``: the acceptance model at its own configuration (a
    ``TreeAcceptance`` for topk > 1), its arrays read-only; ``rates``: the conditional
    rates a_1..a_k the closed forms take, shape (k,) (a tree: its chain-equivalent rates,
    shape (depth,)); ``cycle``: the cycle with the draft extend at the pass times' own
    accept length (``CycleCost.at_accept_length`` moves it; a tree's own cycle);
    ``cost``: the expected cycle, the extend at E[L] = 1 + sum of cumulative rates;
    ``resolved``: its ``[acceptance]`` resolved once (sim/binding/acceptance_model.py
    ``resolve_acceptance``: the shape with its tilt and the top-1 model), which gives the
    top-1 model at another k on the same shape, the shape factors and the rank shares of a
    tree;
    ``hardware``: the scenario's passes taken apart on its hardware
    (sim/hardware/pass_model.py); ``inputs``: its uncertain
    inputs (sim/binding/inputs.py), which the 90% intervals draw; ``drafting``: how it
    drafts, a chain or a tree, decided once (sim/binding/draft_binding.py ``draft_binding``). Two
    bound models are equal only when they are the same object (their scenarios compare).
    """

    scenario: Scenario
    acceptance: Acceptance
    rates: np.ndarray
    cycle: CycleCost
    cost: CycleCost
    resolved: ResolvedAcceptance
    hardware: PassModel
    inputs: tuple[UncertainInput, ...]
    drafting: ChainBinding | TreeBinding

    @property
    def passes(self) -> PassTimes:
        """The pass times on the scenario's hardware: the hardware model's own."""
        return self.hardware.passes

    @property
    def shape(self) -> AcceptanceShape | None:
        """The acceptance shape by position with its tilt (None without acceptance)."""
        return self.resolved.shape

    @property
    def factors(self) -> FactorsFn:
        """The shape factors g_1..g_k the closed forms scale at each k
        (sim/binding/acceptance_model.py ``ResolvedAcceptance.factors``)."""
        return self.resolved.factors

    @property
    def num_steps(self) -> int:
        return self.scenario.num_steps

    @property
    def accept_length(self) -> float:
        """E[L] at the scenario's own configuration: 1 + sum_i a_1 ... a_i."""
        return mean_accept_length(self.rates)

    @property
    def closed_form_tok_s(self) -> float:
        """Long-run tok/s by renewal-reward: 1000 E[L] / E[T_cycle] (a tree: its own)."""
        return throughput_tok_s(self.accept_length, self.cost)

    @property
    def baseline_tok_s(self) -> float:
        """Plain decoding throughput, tokens per second: 1000 / decode_ms."""
        return 1000.0 / self.passes.decode_ms

    @property
    def extend_growth(self) -> tuple[float, float]:
        """(ms per accepted token, accept length) of the draft extend's growth with L
        (its pass times' ``draft_extend_ms_per_token`` and ``draft_extend_tokens``)."""
        tokens = self.passes.draft_extend_tokens
        return self.passes.draft_extend_ms_per_token, float(
            self.num_steps + 1 if tokens is None else tokens
        )

    def with_targets(self, tok_s: Sequence[float], source: str = "override") -> Bound:
        """The same bound model answering ``tok_s`` (``targets.tok_s`` set by ``source``):
        no binding step reads the targets, so nothing is bound again."""
        targets = {"targets.tok_s": [float(t) for t in tok_s]}
        scenario = with_overrides(self.scenario, targets, source=source)
        return replace(self, scenario=scenario, drafting=draft_binding(scenario))

    def with_serving(self, values: Mapping[str, float], source: str = "override") -> Bound:
        """The same bound model with ``values`` (``serving.*`` fields only) set by
        ``source``: no binding step reads ``[serving]`` (the serving plan reads it from the
        bound scenario, sim/binding/serving_model.py), so nothing is bound again but the
        uncertain inputs, whose nominal values are the scenario's (a fit's every step:
        sim/calibration/load_fit.py)."""
        outside = sorted(k for k in values if not k.startswith("serving."))
        if outside:
            raise ValueError(f"not serving fields: {', '.join(outside)}")
        scenario = with_overrides(self.scenario, dict(values), source=source)
        inputs = uncertain_inputs(
            scenario,
            self.resolved.shape,
            self.hardware.uses_derived_compute(),
            self.hardware.grows_experts(),
        )
        return replace(self, scenario=scenario, inputs=inputs)

    def cycle_time_model(
        self, *, fidelity: str = "cycle", rng: np.random.Generator | None = None
    ) -> CycleTimeModel:
        """The cycle-time model at a pass-time fidelity: at ``cycle`` the held cycle plus
        ``timing.jitter_cv``; else drawn (sim/binding/drawn_cycle_times.py)."""
        if fidelity == "cycle":
            return CostCycleTimes(self.cycle, self.scenario.timing.jitter_cv)
        return drawn_cycle_times(self.scenario, self.hardware, fidelity, rng)


def bind(scenario: Scenario, memo: PassMemo | None = None) -> Bound:
    """The scenario's ``Bound``: pass times, acceptance, rates, cycles and uncertain
    inputs, computed once.

    A problem the hardware model finds is reported against the scenario's source (its
    file, or the study that set its values), ``(--set)`` when that step set a hardware,
    model or timing field (sim/scenario/origins.py). ``memo``: the hardware model's
    answers a study keeps for every scenario it binds (sim/hardware/passes.py ``PassMemo``;
    None: the bound model's own).
    """
    try:
        hardware = scenario_hardware(scenario, memo)
    except SpecsimError as exc:
        where = scenario.origins.where(HARDWARE_SECTIONS)
        raise SpecsimError(exc.message, source=where, field=exc.field) from None
    # whether compute is derived from the weights: then the bandwidth efficiency is uncertain
    derived_compute = hardware.uses_derived_compute()
    passes = hardware.passes
    drafting = draft_binding(scenario)  # a chain or a tree, decided once
    resolved = resolve_acceptance(scenario.acceptance, scenario.num_steps)
    acceptance = drafting.acceptance(resolved)
    cycle = drafting.cycle(passes, hardware)
    rates = acceptance.closed_form_rates()
    rates.flags.writeable = False
    cost = cycle
    if cycle.num_steps and cycle.extend_per_token_ms != 0.0:
        cost = cycle.at_accept_length(mean_accept_length(rates))
    inputs = uncertain_inputs(scenario, resolved.shape, derived_compute, hardware.grows_experts())
    return Bound(scenario, acceptance, rates, cycle, cost, resolved, hardware, inputs, drafting)


def as_bound(model: Bound | Scenario) -> Bound:
    """``model`` itself if bound, else ``bind(model)``: a library entry that is handed a
    scenario binds it once there and passes the ``Bound`` down."""
    return model if isinstance(model, Bound) else bind(model)
