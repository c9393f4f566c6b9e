"""A scenario's batched iteration cost: its batch-1 pass times plus the hardware model.

Each pass kind gets a ``BatchedPass`` (sim/hardware/batched.py) calibrated to the
scenario's batch-1 time of that pass (decode over 1 token, verify over ``verify_tokens``,
draft step over 1, draft extend over k + 1), plus any measured points given for it. The
prefill passes have no batch-1 measurement: the target's prefill takes the decode pass's
efficiency and the drafter's prefill the draft extend's (the same weights on the same GPU;
an assumption, stated in the serving report, that a measured prefill point replaces).
Decode and draft passes are graphed (SGLang captures them), the verify as the scenario says,
prefills are not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sim.costs import PassTimes, pass_times
from sim.errors import SpecsimError
from sim.hardware.batched import BatchedPass, MeasuredPass, PassPhysics, calibrated_pass
from sim.hardware.decompose import ScenarioHardware, draft_weights, target_weights
from sim.model.batched_cost import IterationCost, ServingCurves, pass_load
from sim.scenario import Scenario

__all__ = ["SERVING_PASSES", "batch1_points", "serving_cost"]

#: Pass kinds of a serving iteration, and whether each runs on the drafter.
SERVING_PASSES: Mapping[str, bool] = {
    "decode": False,
    "verify": False,
    "prefill": False,
    "draft_step": True,
    "draft_extend": True,
    "draft_prefill": True,
}


def batch1_points(
    passes: PassTimes, num_steps: int, context_tokens: float
) -> dict[str, MeasuredPass]:
    """The batch-1 pass times as measured points at ``context_tokens`` of context."""
    shapes = {
        "decode": (1, passes.decode_ms),
        "verify": (passes.verify_tokens, passes.verify_ms),
        "draft_step": (1, passes.draft_step_ms),
        "draft_extend": (num_steps + 1, passes.draft_extend_ms),
    }
    out = {}
    for name, (m, ms) in shapes.items():
        tokens, kv, pairs = pass_load(1, m, context_tokens)
        out[name] = MeasuredPass(tokens, float(kv), float(pairs), ms, "scenario [timing], batch 1")
    return out


def serving_cost(
    scenario: Scenario,
    *,
    kv_bytes_per_token: float = 0.0,
    attention_flops_per_pair: float = 0.0,
    reference_context_tokens: float = 0.0,
    points: Mapping[str, Sequence[MeasuredPass]] | None = None,
    speculative: bool = True,
) -> IterationCost:
    """The scenario's iteration cost (sim/model/batched_cost.py).

    ``kv_bytes_per_token`` / ``attention_flops_per_pair``: per tensor-parallel rank, for the
    target (the drafter's scale by its share of decoder layers); ``reference_context_tokens``:
    the context at which the batch-1 times hold; ``points``: further measured passes per
    kind (batch > 1); ``speculative``: build the drafter's passes (they need
    ``model.draft_params``).
    """
    batch1 = pass_times(scenario)
    hw = ScenarioHardware(scenario)
    geom = hw.geom
    draft_share = geom.draft_layers / geom.layers
    anchors = batch1_points(batch1, scenario.num_steps, reference_context_tokens)
    extra = dict(points or {})
    built: dict[str, BatchedPass] = {}
    names = [n for n, drafter in SERVING_PASSES.items() if speculative or not drafter]
    weights = {False: target_weights(scenario)}
    if speculative:
        weights[True] = draft_weights(scenario)
    for name in names:
        drafter = SERVING_PASSES[name]
        layers = geom.draft_layers if drafter else geom.layers
        share = draft_share if drafter else 1.0
        graphed = hw.current.verify_cuda_graph if name == "verify" else not name.endswith("prefill")
        physics = PassPhysics(
            name=name,
            weights=weights[drafter],
            layers=layers,
            hardware=hw.current,
            geometry=geom,
            graphed=graphed,
            kv_bytes_per_token=kv_bytes_per_token * share,
            attention_flops_per_pair=attention_flops_per_pair * share,
        )
        measured = ([anchors[name]] if name in anchors else []) + list(extra.get(name, ()))
        if measured:
            built[name] = calibrated_pass(physics, measured, field=f"timing.{name}_ms")
        else:  # a prefill: the efficiency of the decode pass on the same weights
            source = built["draft_extend" if drafter else "decode"]
            built[name] = BatchedPass(physics, source.efficiency)
    missing = [n for n in ("decode", "verify", "prefill") if n not in built]
    if missing:
        raise SpecsimError(f"no {missing[0]} pass could be built", field="timing")
    curves = ServingCurves(
        decode=built["decode"],
        verify=built["verify"],
        prefill=built["prefill"],
        draft_step=built.get("draft_step"),
        draft_extend=built.get("draft_extend"),
        draft_prefill=built.get("draft_prefill"),
    )
    return IterationCost(batch1, curves, reference_context_tokens)
