"""A bound scenario's passes at batch > 1: the batched iteration cost a serving plan runs
on (``serving_cost``, sim/model/batched_cost.py over sim/hardware/batched.py), built from
the ``Bound``'s own hardware model and batch-1 pass times (``measured_passes``), and with
its scenario's ``[model]`` terms at the reference context (``scenario_serving_cost``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from sim.binding.bound import Bound
from sim.binding.graph_limits import GraphLimits, graph_limits
from sim.binding.per_request_costs import logit_rows, recurrent_state
from sim.binding.reference_context import reference_context
from sim.binding.tree_cost import draft_pass_table_ms
from sim.errors import SpecsimError
from sim.scenario.sections.timing import TimingPoint

if TYPE_CHECKING:
    from sim.hardware.batched import BatchedPass
    from sim.hardware.experts import FusedMoeKernel
    from sim.hardware.pass_model import PassModel
    from sim.hardware.pass_physics import MeasuredPass, PassPhysics
    from sim.hardware.pass_terms import PassTerms
    from sim.hardware.roofline import Weights
    from sim.model.batched_cost import IterationCost
    from sim.model.host_work import HostWork
    from sim.scenario.sections.serving import ServingSpec


#: Pass kinds of a serving iteration, and whether each runs on the drafter.
SERVING_PASSES: dict[str, bool] = {
    "decode": False,
    "verify": False,
    "prefill": False,
    "draft_step": True,
    "draft_extend": True,
    "draft_prefill": True,
}


def measured_passes(
    bound: Bound, context_tokens: float
) -> tuple[dict[str, MeasuredPass], dict[str, list[MeasuredPass]]]:
    """What the bound scenario's batched cost is calibrated to, as measured passes: its
    batch-1 pass times at ``context_tokens`` of context, by kind (decode and draft step
    over 1 token, verify over ``verify_tokens``, draft extend over k + 1), and its
    ``timing.points``, a list by kind (each point's tokens, default the verify's draft
    tokens, the draft extend's k + 1, else 1; KV and attention pairs over batch x its
    context, default ``timing.context_tokens``). Both are read the same way: a pass of
    ``batch`` sequences of m tokens each (sim/model/pass_curves.py ``pass_load``)."""
    # lazy: serving only
    from sim.hardware.pass_physics import MeasuredPass
    from sim.model.pass_curves import pass_load

    scenario, passes, k = bound.scenario, bound.passes, bound.num_steps
    batch1 = "scenario [timing], batch 1"
    # (kind, batch, tokens a sequence, context a sequence, ms, source, field: None at batch 1)
    rows: list[tuple[str, int, int, float, float, str, str | None]] = [
        ("decode", 1, 1, context_tokens, passes.decode_ms, batch1, None),
        ("verify", 1, passes.verify_tokens, context_tokens, passes.verify_ms, batch1, None),
        ("draft_step", 1, 1, context_tokens, passes.draft_step_ms, batch1, None),
        ("draft_extend", 1, k + 1, context_tokens, passes.draft_extend_ms, batch1, None),
    ]
    default_context = scenario.timing.context_tokens or 0.0
    points: list[TimingPoint] = scenario.timing.points or []
    for i, p in enumerate(points):
        m = p.tokens
        if m is None:
            m = {"verify": scenario.speculation.draft_tokens, "draft_extend": k + 1}.get(p.kind, 1)
        context = default_context if p.context_tokens is None else p.context_tokens
        rows.append((p.kind, p.batch, m, context, p.ms, p.source, f"timing.points[{i}]"))
    anchors: dict[str, MeasuredPass] = {}
    measured: dict[str, list[MeasuredPass]] = {}
    for kind, batch, m, context, ms, source, field in rows:
        tokens, kv, pairs = pass_load(batch, m, batch * context)
        found = MeasuredPass(tokens, float(kv), float(pairs), ms, source, field, sequences=batch)
        if field is None:
            anchors[kind] = found
        else:
            measured.setdefault(kind, []).append(found)
    return anchors, measured


def serving_cost(
    bound: Bound,
    *,
    kv_bytes_per_token: float = 0.0,
    attention_flops_per_pair: float = 0.0,
    reference_context_tokens: float = 0.0,
    speculative: bool = True,
    draft_kv_bytes_per_token: float | None = None,
    max_beams: int = 1,
    terms: PassTerms | None = None,
) -> IterationCost:
    """The bound scenario's batched iteration cost (sim/model/batched_cost.py).

    Each pass kind is a ``BatchedPass`` (sim/hardware/batched.py) calibrated to the
    scenario's batch-1 time of that pass plus its ``timing.points`` of that kind (measured
    passes at other batch sizes; both read by ``measured_passes``). A pass measured at batch
    1 only follows the curve fitted to the measured points of a pass on the same weights
    (the verify the decode's, shifted through its own batch-1 time), else grows at the
    kernel slope, and every pass grows beyond its last measured point at most at that slope
    (sim/hardware/batched.py). A prefill without a measured point takes the calibration
    curve of the decode pass (the drafter's, of the draft extend): the same weights on the
    same GPU, an assumption a measured prefill point replaces. Decode and draft passes are
    graphed (SGLang captures them), the verify as ``timing.verify_cuda_graph`` says,
    prefills are not. ``kv_bytes_per_token`` / ``attention_flops_per_pair`` are per
    tensor-parallel rank for the target; the drafter's scale by its share of decoder
    layers unless ``draft_kv_bytes_per_token`` is given. ``reference_context_tokens``: the
    context at which the batch-1 times hold. ``speculative``: build the drafter's passes
    (they need ``model.draft_params``). ``max_beams``: the widest drafter pass a tree
    drafts (its batch-1 time over 1..max_beams beams is tabulated as the batch-1 tree
    engines take it, ``draft_pass_table_ms``). ``terms``: the passes' token-count terms,
    shared with the other costs its caller builds (sim/hardware/pass_terms.py
    ``PassTerms``; None: a table for this cost). The routed experts' kernel and routing,
    the kernel slope and the CUDA-graph capture limits come from ``[serving]`` and
    ``[hardware]`` (``_shared_inputs``); the host's per-request work and the iterations
    that hide it from ``serving.host_us_per_request`` and ``serving.host_overlap``
    (sim/model/host_work.py). The hardware model and the batch-1 pass times are the
    ``Bound``'s (``bound.hardware``, ``bound.passes``): nothing is decomposed again here.

    In three stages: what every pass shares (``_shared_inputs``), the passes each
    calibrated to its measured times (``_calibrated_passes``), and the iteration cost over
    them with the drafter's tree table, the host's work, the logit rows and the recurrent
    state.
    """
    # lazy: serving only
    from sim.hardware.pass_terms import PassTerms
    from sim.model.batched_cost import IterationCost
    from sim.model.pass_curves import ServingCurves

    scenario, hw, batch1 = bound.scenario, bound.hardware, bound.passes
    shared = _shared_inputs(
        bound,
        kv_bytes_per_token=kv_bytes_per_token,
        attention_flops_per_pair=attention_flops_per_pair,
        draft_kv_bytes_per_token=draft_kv_bytes_per_token,
    )
    terms = PassTerms() if terms is None else terms
    anchors, extra = measured_passes(bound, reference_context_tokens)
    if hw.verify_from_decode:  # a launch-bound eager verify: its time does not fix its compute
        compute, _ = hw.compute_ms("verify", batch1.verify_tokens)
        anchors["verify"] = replace(anchors["verify"], compute_ms=compute)
    if shared.limits.limited and hw.geom.kernels_per_layer is None:
        raise SpecsimError(
            "needed with serving.graph_max_tokens or serving.graph_max_batch: a pass beyond "
            "the CUDA-graph capture limit runs eagerly and pays each kernel's launch",
            field="model.kernels_per_layer",
        )
    built = _calibrated_passes(bound, shared, anchors, extra, speculative=speculative, terms=terms)
    curves = ServingCurves(
        decode=built["decode"],
        verify=built["verify"],
        prefill=built["prefill"],
        draft_step=built.get("draft_step"),
        draft_extend=built.get("draft_extend"),
        draft_prefill=built.get("draft_prefill"),
    )
    table = draft_pass_table_ms(hw, max_beams) if speculative and max_beams > 1 else None
    return IterationCost(
        batch1,
        curves,
        reference_context_tokens,
        draft_table_ms=table,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        host=_host_work(scenario.serving),
        logits=logit_rows(scenario, hw.current),
        state=recurrent_state(scenario, hw.current, hw),
    )


@dataclass(frozen=True, slots=True)
class _SharedInputs:
    """What every serving pass's physics takes from the scenario (``_shared_inputs``):
    the fused-MoE kernel, the experts' step overlap and Zipf skew, the MoE tiling, the
    verify's KV re-reads, the target's KV bytes per token and attention FLOPs per pair
    (per tensor-parallel rank) and the drafter's own KV bytes (None: the target's scaled),
    the growth slope of a pass measured at batch 1 only, and the CUDA-graph capture limits."""

    moe_kernel: FusedMoeKernel
    expert_overlap: float
    expert_skew: float
    moe_tiles: Literal["none", "sglang-default"]
    verify_kv_rereads: float
    kv_bytes_per_token: float
    attention_flops_per_pair: float
    draft_kv_bytes_per_token: float | None
    slope: float
    limits: GraphLimits


def _shared_inputs(
    bound: Bound,
    *,
    kv_bytes_per_token: float,
    attention_flops_per_pair: float,
    draft_kv_bytes_per_token: float | None,
) -> _SharedInputs:
    """Stage 1 of ``serving_cost``: the ``[serving]`` and ``[hardware]`` fields every pass
    takes. Routed experts cost as the fused-MoE kernel fitted on public benchmarks does
    (``H100_FUSED_MOE``, per distinct expert, its reads at
    ``hardware.expert_read_efficiency`` of peak when set; consecutive tokens of a request
    share ``serving.expert_overlap`` of their experts (None: ``STEP_EXPERT_OVERLAP``),
    experts are popular by a Zipf law, ``serving.expert_skew`` (None:
    ``SERVING_STEP_SKEW``), and the token-expert pairs' FLOPs run at
    ``serving.pair_flop_efficiency`` of peak (None: ``PAIR_FLOP_EFFICIENCY``)). The growth
    slope of a pass measured at batch 1 only is ``serving.kernel_slope`` (None:
    ``DEFAULT_SLOPE``), which also caps any pass's growth beyond its last measured point:
    a steep segment between small measured batches holds costs that do not recur per
    token (host work, launch-bound kernels), and a tree's verify over batch x draft
    tokens, far beyond the decode's measured tokens, extrapolated it (+132% at batch 32 in
    issue 30's evidence). The CUDA-graph capture limits (a graphed pass beyond them runs
    eagerly) are ``serving.graph_max_tokens`` and ``serving.graph_max_batch`` (the
    verify's and the drafter's from ``serving.graph_max_batch_speculative`` when given,
    the drafter's from ``serving.graph_max_batch_draft`` when given;
    sim/binding/graph_limits.py)."""
    # lazy: serving only
    from sim.hardware.compute_curve import DEFAULT_SLOPE
    from sim.hardware.expert_reads import expert_kernel
    from sim.hardware.experts import H100_FUSED_MOE, SERVING_STEP_SKEW, STEP_EXPERT_OVERLAP

    scenario = bound.scenario
    serving = scenario.serving
    expert_eff = scenario.hardware.expert_read_efficiency
    moe_kernel = H100_FUSED_MOE if expert_eff is None else expert_kernel(expert_eff)
    pair_eff = serving.pair_flop_efficiency if serving is not None else None
    if pair_eff is not None:
        moe_kernel = replace(moe_kernel, pair_flop_efficiency=pair_eff)
    overlap = serving.expert_overlap if serving is not None else None
    skew = serving.expert_skew if serving is not None else None
    slope = serving.kernel_slope if serving is not None else None
    return _SharedInputs(
        moe_kernel=moe_kernel,
        expert_overlap=STEP_EXPERT_OVERLAP if overlap is None else overlap,
        expert_skew=SERVING_STEP_SKEW if skew is None else skew,
        moe_tiles=serving.moe_tiles if serving is not None else "none",
        verify_kv_rereads=serving.verify_kv_rereads if serving is not None else 0.0,
        kv_bytes_per_token=kv_bytes_per_token,
        attention_flops_per_pair=attention_flops_per_pair,
        draft_kv_bytes_per_token=draft_kv_bytes_per_token,
        slope=DEFAULT_SLOPE if slope is None else slope,
        limits=graph_limits(serving),
    )


def _pass_physics(
    name: str, drafter: bool, hw: PassModel, weights: Weights, shared: _SharedInputs
) -> PassPhysics:
    """What pass ``name`` runs on: the target's or (``drafter``) the drafter's weights and
    layers; graphed unless a prefill (the verify as ``timing.verify_cuda_graph`` says); the
    drafter's KV and attention terms the target's times its share of decoder layers unless
    its own KV bytes are given; the verify's KV re-reads; its capture limits."""
    # lazy: serving only
    from sim.hardware.pass_physics import PassPhysics

    geom = hw.geom
    share = geom.draft_layers / geom.layers if drafter else 1.0
    own_kv = shared.draft_kv_bytes_per_token
    return PassPhysics(
        name=name,
        weights=weights,
        layers=geom.draft_layers if drafter else geom.layers,
        hardware=hw.current,
        geometry=geom,
        graphed=hw.current.verify_cuda_graph if name == "verify" else "prefill" not in name,
        kv_bytes_per_token=(
            own_kv if drafter and own_kv is not None else shared.kv_bytes_per_token * share
        ),
        attention_flops_per_pair=shared.attention_flops_per_pair * share,
        moe_kernel=shared.moe_kernel,
        moe_tiles=shared.moe_tiles,
        kv_rereads=shared.verify_kv_rereads if name == "verify" else 0.0,
        expert_overlap=shared.expert_overlap,
        expert_skew=shared.expert_skew,
        graph_max_tokens=shared.limits.max_tokens,
        graph_max_rows=shared.limits.max_rows(name, drafter),
        graph_rows=shared.limits.padded_to(name),
    )


def _calibrated_passes(
    bound: Bound,
    shared: _SharedInputs,
    anchors: Mapping[str, MeasuredPass],
    extra: Mapping[str, Sequence[MeasuredPass]],
    *,
    speculative: bool,
    terms: PassTerms,
) -> dict[str, BatchedPass]:
    """Stage 2 of ``serving_cost``: every serving pass (the drafter's when
    ``speculative``) calibrated to its batch-1 time ``anchors`` and measured points
    ``extra`` (sim/hardware/calibrated_pass.py, ``shared.slope`` beyond a single point and
    at most beyond the last). A pass measured at batch 1 only follows the curve fitted for
    the first pass on the same weights with points of its own; a prefill without a
    measurement takes the curve of the decode (the drafter's: of the draft extend)."""
    # lazy: serving only
    from sim.hardware.batched import BatchedPass
    from sim.hardware.calibrated_pass import calibrated_pass

    hw = bound.hardware
    weights = {False: hw.target_weights()}
    if speculative:
        weights[True] = hw.draft_weights()
    built: dict[str, BatchedPass] = {}
    for name, drafter in SERVING_PASSES.items():
        if drafter and not speculative:
            continue
        physics = _pass_physics(name, drafter, hw, weights[drafter], shared)
        own = list(extra.get(name, ()))
        measured = ([anchors[name]] if name in anchors else []) + own
        # a pass measured at batch 1 only follows the curve fitted for another pass on the
        # same weights (the verify the decode's, the drafter's passes each other's)
        kin = [built[n] for n in built if SERVING_PASSES[n] == drafter and extra.get(n)]
        follow = kin[0].curve if kin and not own else None
        if measured:
            built[name] = calibrated_pass(
                physics,
                measured,
                field=f"timing.{name}_ms",
                slope=shared.slope,
                max_tail_slope=shared.slope,
                follow=follow,
                terms=terms,
            )
        else:  # a prefill without a measurement: the curve of a pass on the same weights
            source = built["draft_extend" if drafter else "decode"]
            built[name] = BatchedPass(physics, source.curve, terms)
    return built


def _host_work(serving: ServingSpec | None) -> HostWork:
    """The host's per-request work (sim/model/host_work.py): ``serving.host_us_per_request``,
    ``host_overlap``, ``host_batch1_share`` and ``host_spec_factor``; without a
    ``[serving]`` section, ``DEFAULT_US_PER_REQUEST``."""
    # lazy: serving only
    from sim.model.host_work import DEFAULT_US_PER_REQUEST, HostWork

    if serving is None:
        return HostWork(DEFAULT_US_PER_REQUEST)
    return HostWork(
        serving.host_us_per_request,
        serving.host_overlap,
        serving.host_batch1_share,
        serving.host_spec_factor,
    )


def scenario_serving_cost(
    bound: Bound,
    *,
    speculative: bool,
    max_beams: int,
    source: str,
    terms: PassTerms | None = None,
) -> IterationCost:
    """``serving_cost`` of ``bound`` with its scenario's ``[model]`` KV and attention terms
    (0 where not given) at the reference context (``reference_context``) and its drafter's
    own KV bytes when given; ``speculative``, ``max_beams`` and ``terms`` as
    ``serving_cost`` takes them. Errors name ``source`` (the scenario's file). What a
    serving plan's cost is (``serving_model``), and what a load fit's every step prices
    again with its serving terms (sim/calibration/tpot_model.py ``TpotModel``)."""
    spec = bound.scenario.model
    reference, _ = reference_context(bound.scenario, source)
    try:
        return serving_cost(
            bound,
            kv_bytes_per_token=spec.kv_bytes_per_token or 0.0,
            attention_flops_per_pair=spec.attention_flops_per_pair or 0.0,
            reference_context_tokens=reference,
            speculative=speculative,
            draft_kv_bytes_per_token=spec.draft_kv_bytes_per_token,
            max_beams=max_beams,
            terms=terms,
        )
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=source, field=exc.field) from None
