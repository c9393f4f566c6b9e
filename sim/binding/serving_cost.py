"""A bound scenario's passes at batch > 1: the batched iteration cost a serving plan runs
on (``serving_cost``, sim/model/batched_cost.py over sim/hardware/batched.py), built from
the ``Bound``'s own hardware model and batch-1 pass times (``measured_passes``), and with
its scenario's ``[model]`` terms at the reference context (``scenario_serving_cost``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sim.binding.bound import Bound
from sim.binding.per_request_costs import logit_rows, recurrent_state
from sim.binding.reference_context import reference_context
from sim.binding.tree_cost import draft_pass_table_ms
from sim.errors import SpecsimError
from sim.scenario.sections.timing import TimingPoint

if TYPE_CHECKING:
    from sim.hardware.batched import BatchedPass
    from sim.hardware.pass_physics import MeasuredPass
    from sim.hardware.pass_terms import PassTerms
    from sim.model.batched_cost import IterationCost


#: Pass kinds of a serving iteration, and whether each runs on the drafter.
SERVING_PASSES: dict[str, bool] = {
    "decode": False,
    "verify": False,
    "prefill": False,
    "draft_step": True,
    "draft_extend": True,
    "draft_prefill": True,
}

#: The passes a graphed engine pads up to its captured batch sizes (``serving.graph_batches``):
#: SGLang's target runner (decode, verify) and its EAGLE draft runner (draft step) share
#: ``get_batch_sizes_to_capture``; its draft extend ran eagerly until sgl-project/sglang
#: PR #6606 (2025-05) and its prefills run eagerly.
PADDED_PASSES = frozenset({"decode", "verify", "draft_step"})


def measured_passes(
    bound: Bound, context_tokens: float
) -> tuple[dict[str, MeasuredPass], dict[str, list[MeasuredPass]]]:
    """What the bound scenario's batched cost is calibrated to, as measured passes: its
    batch-1 pass times at ``context_tokens`` of context, by kind (decode and draft step
    over 1 token, verify over ``verify_tokens``, draft extend over k + 1), and its
    ``timing.points``, a list by kind (each point's tokens, default the verify's draft
    tokens, the draft extend's k + 1, else 1; KV and attention pairs over batch x its
    context, default ``timing.context_tokens``). Both are read the same way: a pass of
    ``batch`` sequences of m tokens each (sim/model/batched_cost.py ``pass_load``)."""
    # lazy: serving only
    from sim.hardware.pass_physics import MeasuredPass
    from sim.model.batched_cost import pass_load

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
    (the verify the decode's, shifted through its own batch-1 time), else grows at
    ``DEFAULT_SLOPE``. Routed experts cost as the fused-MoE kernel fitted on public
    benchmarks does (``H100_FUSED_MOE``, per distinct expert, its reads at
    ``hardware.expert_read_efficiency`` of peak when set; consecutive tokens of a
    request share ``serving.expert_overlap`` of their experts (None:
    ``STEP_EXPERT_OVERLAP``), experts are popular by a Zipf law, ``serving.expert_skew``,
    and the token-expert pairs' FLOPs run at ``serving.pair_flop_efficiency`` of peak
    (None: ``PAIR_FLOP_EFFICIENCY``)), and every pass grows beyond its last measured point
    at most at the kernel slope (sim/hardware/batched.py). A prefill without a measured
    point takes the calibration curve of the decode pass (the drafter's, of the draft
    extend): the same weights on the same GPU, an assumption a measured prefill point
    replaces. Decode and draft passes are graphed (SGLang captures them), the verify as
    ``timing.verify_cuda_graph`` says, prefills are not. ``kv_bytes_per_token`` /
    ``attention_flops_per_pair`` are per tensor-parallel rank for the target; the
    drafter's scale by its share of decoder layers unless ``draft_kv_bytes_per_token`` is
    given. ``reference_context_tokens``: the context at which the batch-1 times hold.
    ``speculative``: build the drafter's passes (they need ``model.draft_params``).
    ``max_beams``: the widest drafter pass a tree drafts (its batch-1 time over 1..max_beams
    beams is tabulated as the batch-1 tree engines take it, ``draft_pass_table_ms``).
    ``terms``: the passes' token-count terms, shared with the other costs its caller builds
    (sim/hardware/pass_terms.py ``PassTerms``; None: a table for this cost).
    The host's per-request work and the iterations that hide it come from
    ``serving.host_us_per_request`` and ``serving.host_overlap`` (sim/model/host_work.py);
    the growth slope of a pass measured at batch 1 only from ``serving.kernel_slope``
    (None: ``DEFAULT_SLOPE``), which also caps any pass's growth beyond its last measured
    point: a steep segment between small measured batches holds costs that do not recur
    per token (host work, launch-bound kernels), and a tree's verify over batch x
    draft tokens, far beyond the decode's measured tokens, extrapolated it (+132% at batch
    32 in issue 30's evidence);
    the expert popularity's Zipf exponent from ``serving.expert_skew`` (None:
    ``SERVING_STEP_SKEW``); the CUDA-graph capture limits (a graphed pass beyond them runs
    eagerly) from ``serving.graph_max_tokens`` and ``serving.graph_max_batch`` (the verify's
    and the drafter's from ``serving.graph_max_batch_speculative`` when given, the drafter's
    from ``serving.graph_max_batch_draft`` when given).
    The hardware model and the batch-1 pass times are the ``Bound``'s (``bound.hardware``,
    ``bound.passes``): nothing is decomposed again here.
    """
    # lazy: serving only
    from sim.hardware.batched import BatchedPass
    from sim.hardware.calibrated_pass import calibrated_pass
    from sim.hardware.compute_curve import DEFAULT_SLOPE
    from sim.hardware.expert_reads import expert_kernel
    from sim.hardware.experts import H100_FUSED_MOE, SERVING_STEP_SKEW, STEP_EXPERT_OVERLAP
    from sim.hardware.pass_physics import PassPhysics
    from sim.hardware.pass_terms import PassTerms
    from sim.model.batched_cost import IterationCost, ServingCurves
    from sim.model.host_work import DEFAULT_US_PER_REQUEST, HostWork

    scenario, hw, batch1 = bound.scenario, bound.hardware, bound.passes
    geom = hw.geom
    expert_eff = scenario.hardware.expert_read_efficiency
    moe_kernel = H100_FUSED_MOE if expert_eff is None else expert_kernel(expert_eff)
    overlap = scenario.serving.expert_overlap if scenario.serving is not None else None
    overlap = STEP_EXPERT_OVERLAP if overlap is None else overlap
    pair_eff = scenario.serving.pair_flop_efficiency if scenario.serving is not None else None
    if pair_eff is not None:
        moe_kernel = replace(moe_kernel, pair_flop_efficiency=pair_eff)
    terms = PassTerms() if terms is None else terms
    draft_share = geom.draft_layers / geom.layers
    anchors, extra = measured_passes(bound, reference_context_tokens)
    if hw.verify_from_decode:  # a launch-bound eager verify: its time does not fix its compute
        compute, _ = hw.compute_ms("verify", batch1.verify_tokens)
        anchors["verify"] = replace(anchors["verify"], compute_ms=compute)
    given = scenario.serving.kernel_slope if scenario.serving is not None else None
    slope = DEFAULT_SLOPE if given is None else given
    skew = scenario.serving.expert_skew if scenario.serving is not None else None
    skew = SERVING_STEP_SKEW if skew is None else skew
    serving = scenario.serving
    max_tokens = serving.graph_max_tokens if serving is not None else None
    max_rows = serving.graph_max_batch if serving is not None else None
    spec_rows = serving.graph_max_batch_speculative if serving is not None else None
    draft_rows = serving.graph_max_batch_draft if serving is not None else None
    sizes = serving.graph_batches if serving is not None else None
    spec_sizes = serving.graph_batches_speculative if serving is not None else None
    if spec_sizes is None and spec_rows is None:
        spec_sizes = sizes
    plain_list = None if sizes is None else tuple(sizes)
    spec_list = None if spec_sizes is None else tuple(spec_sizes)
    max_rows = max_rows if plain_list is None else plain_list[-1]
    spec_rows = spec_rows if spec_list is None else spec_list[-1]
    spec_rows = max_rows if spec_rows is None else spec_rows
    draft_rows = spec_rows if draft_rows is None else draft_rows
    limited = (max_tokens, max_rows, spec_rows, draft_rows) != (None, None, None, None)
    if limited and geom.kernels_per_layer is None:
        raise SpecsimError(
            "needed with serving.graph_max_tokens or serving.graph_max_batch: a pass beyond "
            "the CUDA-graph capture limit runs eagerly and pays each kernel's launch",
            field="model.kernels_per_layer",
        )
    rows_limit = {name: spec_rows for name in SERVING_PASSES}
    rows_limit.update({"decode": max_rows, "prefill": max_rows})
    rows_limit.update({name: draft_rows for name, drafter in SERVING_PASSES.items() if drafter})
    weights = {False: hw.target_weights()}
    if speculative:
        weights[True] = hw.draft_weights()
    built: dict[str, BatchedPass] = {}
    for name, drafter in SERVING_PASSES.items():
        if drafter and not speculative:
            continue
        share = draft_share if drafter else 1.0
        physics = PassPhysics(
            name=name,
            weights=weights[drafter],
            layers=geom.draft_layers if drafter else geom.layers,
            hardware=hw.current,
            geometry=geom,
            graphed=hw.current.verify_cuda_graph if name == "verify" else "prefill" not in name,
            kv_bytes_per_token=(
                draft_kv_bytes_per_token
                if drafter and draft_kv_bytes_per_token is not None
                else kv_bytes_per_token * share
            ),
            attention_flops_per_pair=attention_flops_per_pair * share,
            moe_kernel=moe_kernel,
            moe_tiles=serving.moe_tiles if serving is not None else "none",
            kv_rereads=(
                serving.verify_kv_rereads if serving is not None and name == "verify" else 0.0
            ),
            expert_overlap=overlap,
            expert_skew=skew,
            graph_max_tokens=max_tokens,
            graph_max_rows=rows_limit[name],
            graph_rows=(
                (plain_list if name == "decode" else spec_list) if name in PADDED_PASSES else None
            ),
        )
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
                slope=slope,
                max_tail_slope=slope,
                follow=follow,
                terms=terms,
            )
        else:  # a prefill without a measurement: the curve of a pass on the same weights
            source = built["draft_extend" if drafter else "decode"]
            built[name] = BatchedPass(physics, source.curve, terms)
    curves = ServingCurves(
        decode=built["decode"],
        verify=built["verify"],
        prefill=built["prefill"],
        draft_step=built.get("draft_step"),
        draft_extend=built.get("draft_extend"),
        draft_prefill=built.get("draft_prefill"),
    )
    table = draft_pass_table_ms(hw, max_beams) if speculative and max_beams > 1 else None
    host = (
        HostWork(
            scenario.serving.host_us_per_request,
            scenario.serving.host_overlap,
            scenario.serving.host_batch1_share,
            scenario.serving.host_spec_factor,
        )
        if scenario.serving is not None
        else HostWork(DEFAULT_US_PER_REQUEST)
    )
    return IterationCost(
        batch1,
        curves,
        reference_context_tokens,
        draft_table_ms=table,
        draft_ms_per_extra_token=scenario.timing.draft_ms_per_extra_token,
        host=host,
        logits=logit_rows(scenario, hw.current),
        state=recurrent_state(scenario, hw.current, hw),
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
