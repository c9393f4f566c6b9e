"""The cycle-time models the Monte Carlo draws durations from, other than the cost model's
(``Bound.cycle_time_model``, with ``timing.jitter_cv``): the layer-level pass
(``fidelity="layer"``, sim/hardware/layer.py), its pools drawn per pass. The layer-level
pass is imported where it is used: a cycle-fidelity run never needs it (start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import pass_schedule
from sim.model.cycletime import CycleTimeModel
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.hardware.layer import LayerPass
    from sim.model.layer_cycletime import LayerCycleTimes

#: Pass-time fidelities of the Monte Carlo: ``cycle`` (the cost model, optional gamma
#: jitter) or ``layer`` (the layer-level SimPy pass of sim/hardware/layer.py).
FIDELITIES: tuple[str, ...] = ("cycle", "layer")


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
