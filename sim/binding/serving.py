"""A bound scenario's passes at batch > 1: the batched iteration cost a serving plan runs
on (``serving_cost``, sim/model/batched_cost.py over sim/hardware/batched.py), built from
the ``Bound``'s own hardware model and batch-1 pass times, and with it what else a serving
plan reads from the bound scenario (``serving_model``: its acceptance over the policies'
drafts, rank shares, KV capacity, notes), built once per serving setup."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sim.binding.bound import Bound
from sim.binding.kv_capacity import KvCapacity
from sim.binding.state_shape import state_bandwidth_fraction, state_shape
from sim.binding.tree_cost import draft_pass_table_ms
from sim.errors import SpecsimError
from sim.model.acceptance import AcceptanceModel
from sim.model.logit_rows import (
    BYTES_PER_LOGIT_RANGE,
    DEFAULT_BYTES_PER_LOGIT,
    LogitRows,
    logit_row_ms,
)
from sim.model.recurrent_state import STATE_BANDWIDTH_READINGS, RecurrentState
from sim.scenario.schema import Scenario
from sim.scenario.sections.timing import TimingPoint

if TYPE_CHECKING:
    from sim.hardware.batched import BatchedPass
    from sim.hardware.pass_model import PassModel
    from sim.hardware.pass_physics import MeasuredPass
    from sim.hardware.pass_terms import PassTerms
    from sim.hardware.passes import HardwarePoint
    from sim.model.batched_cost import IterationCost
    from sim.model.tree.rates import Shares


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


def host_work_note(scenario: Scenario) -> str:
    """One line for a serving report: the host work per request, where its value comes
    from, and which iterations hide it (sim/model/host_work.py)."""
    # lazy: serving only
    from sim.model.host_work import DEFAULT_US_PER_REQUEST, US_PER_REQUEST_RANGE
    from sim.scenario.sections.serving import ServingSpec

    serving = scenario.serving or ServingSpec()
    low, high = US_PER_REQUEST_RANGE
    origin, reason = scenario.given_origin("serving.host_us_per_request")
    if origin == "override":
        said = reason
    elif serving.host_us_per_request == DEFAULT_US_PER_REQUEST:
        said = f"assumed, the default; public measurements put it at {low:g}-{high:g} us"
    else:
        said = "given in the scenario"
    hides = {
        "baseline": "hidden behind the GPU in plain decoding only, serial in a speculating "
        "server's iterations (SGLang, TensorRT-LLM)",
        "both": "hidden behind the GPU in every iteration (vLLM >= 0.14)",
        "none": "serial in every iteration (vLLM before 0.14)",
    }[serving.host_overlap]
    share = (
        f"; {serving.host_batch1_share:g} of the batch-1 iteration is host work "
        "(serving.host_batch1_share), so the overlap hides only what the GPU's own growth "
        "covers"
        if serving.host_batch1_share
        else ""
    )
    factor = (
        f"; {serving.host_spec_factor:g} times that a request in an iteration that drafts "
        "and verifies (serving.host_spec_factor)"
        if serving.host_spec_factor != 1.0
        else ""
    )
    return (
        f"host work: {serving.host_us_per_request:g} us per running request per iteration "
        f"beyond the first ({said}), {hides} (serving.host_overlap = "
        f"'{serving.host_overlap}'){share}{factor}"
    )


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


def target_vocab(scenario: Scenario) -> float | None:
    """The target's vocabulary, ``model.lm_head_params`` / ``model.hidden_size`` (None:
    the scenario gives neither, and the logit rows are not priced)."""
    model = scenario.model
    if not model.lm_head_params or not model.hidden_size:
        return None
    return model.lm_head_params / model.hidden_size


def logit_rows(scenario: Scenario, hardware: HardwarePoint) -> LogitRows:
    """What a row of target logits costs on ``hardware`` (sim/model/logit_rows.py): the
    vocabulary (``target_vocab``) at ``serving.bytes_per_logit`` (None:
    ``DEFAULT_BYTES_PER_LOGIT``; ``LogitRows.given`` says which) and the tensor-parallel
    gather; not priced (0) without the vocabulary or a GPU preset."""
    vocab, gpu = target_vocab(scenario), hardware.gpu
    if vocab is None or gpu is None:
        return LogitRows()
    given = scenario.serving.bytes_per_logit if scenario.serving is not None else None
    per_logit = DEFAULT_BYTES_PER_LOGIT if given is None else given
    return LogitRows(
        logit_row_ms(
            vocab,
            per_logit,
            gpu.memory_bandwidth_gbps,
            hardware.gpus,
            hardware.interconnect.bus_bandwidth_gbps,
        ),
        vocab,
        per_logit,
        given is not None,
    )


def recurrent_state(
    scenario: Scenario, hardware: HardwarePoint, hw: PassModel | None = None
) -> RecurrentState:
    """A request's states in the target's passes (sim/model/recurrent_state.py):
    ``state_shape`` at ``state_bandwidth_fraction`` (the scenario's
    ``serving.state_bandwidth_fraction``, else its server's measured batch-1 memory
    efficiency) of the GPU preset's memory bandwidth; none
    when the scenario gives no state. SpecsimError naming ``hardware.gpu`` when a state is
    given without a GPU preset to move it at. ``hw``: the scenario's hardware model when
    the caller holds it (``serving_cost``: the ``Bound``'s), so it is not taken apart again."""
    shape = state_shape(scenario)
    if not shape:
        return RecurrentState()
    gpu = hardware.gpu
    if gpu is None:
        raise SpecsimError(
            "needed with model.state_bytes_per_request (or the conv state): the memory "
            "bandwidth the state moves at",
            field="hardware.gpu",
        )
    return RecurrentState(shape, gpu.memory_bandwidth_gbps, state_bandwidth_fraction(scenario, hw))


def recurrent_state_note(state: RecurrentState) -> str:
    """One line for a serving report: what a request's states add to a target pass
    (``state``, as ``recurrent_state`` priced it)."""
    plain_us = state.request_ms(0) * 1e3
    shape = state.shape
    conv = (
        f" and its conv state, {shape.conv_bytes_per_position * shape.conv_positions / 1e6:,.2f}"
        f" MB ({shape.conv_positions} positions, k more when speculating: read and the window "
        "written once a pass)"
        if shape.conv_bytes_per_position
        else "; conv state not priced"
    )
    low, high = STATE_BANDWIDTH_READINGS
    at = (
        "at the GPU's peak bandwidth (serving.state_bandwidth_fraction 1; public GDN decode "
        f"kernels reach {low:g}-{high:g} of peak)"
        if state.fraction == 1.0
        else f"at {state.fraction:.3g} of the GPU's peak bandwidth (serving."
        "state_bandwidth_fraction, else the server's measured batch-1 memory efficiency)"
    )
    return (
        f"recurrent state: {state.bytes_per_request / 1e6:,.1f} MB a request "
        "(model.state_bytes_per_request), read once and written once per token by every "
        f"target pass{conv}, {at}: {plain_us:.3g} us a request in plain decoding, more in a "
        "verify of k + 1 tokens; prefill chunks not priced"
    )


def expert_routing_note(bound: Bound) -> str | None:
    """One line for a serving report of a MoE (None: a dense target): the two routing inputs
    of its batched expert reads that no calibration identifies and that are held at their
    value unless the scenario draws them (among ``bound.inputs``, what the intervals draw;
    docs/studies/moe-routing-ranges.md): the overlap of a request's consecutive tokens'
    experts and the fused-MoE kernel's pair FLOP efficiency, each with where it comes from
    and its plausible range."""
    scenario = bound.scenario
    if not scenario.model.experts:
        return None
    # lazy: serving only
    from sim.hardware.experts import (
        PAIR_FLOP_EFFICIENCY,
        PAIR_FLOP_EFFICIENCY_RANGE,
        STEP_EXPERT_OVERLAP,
        STEP_EXPERT_OVERLAP_RANGE,
    )

    serving = scenario.serving
    drawn = {u.field for u in bound.inputs}
    parts = []
    for key, default, (low, high) in (
        ("expert_overlap", STEP_EXPERT_OVERLAP, STEP_EXPERT_OVERLAP_RANGE),
        ("pair_flop_efficiency", PAIR_FLOP_EFFICIENCY, PAIR_FLOP_EFFICIENCY_RANGE),
    ):
        given = getattr(serving, key) if serving is not None else None
        said = "assumed, the default" if given is None else "given in the scenario"
        held = "drawn" if f"serving.{key}" in drawn else "held"
        value = default if given is None else given
        parts.append(f"serving.{key} {value:g} ({said}; plausible {low:g}-{high:g}, {held})")
    return (
        "expert routing: "
        + ", ".join(parts)
        + "; a held one is not in the 90% interval (docs/studies/moe-routing-ranges.md: at "
        "their ends a 64-user gain moved by about 4%)"
    )


def logit_rows_note(rows: LogitRows) -> str:
    """One line for a serving report: what a row of target logits costs (``rows``, as
    ``logit_rows`` priced it: its vocabulary, bytes a logit and whether those are the
    scenario's or assumed, sim/model/logit_rows.py)."""
    row_us = rows.row_ms * 1e3
    if not row_us:
        return (
            "logit rows: not priced (no model.lm_head_params and model.hidden_size to give "
            "the vocabulary)"
        )
    low, high = BYTES_PER_LOGIT_RANGE
    said = (
        f"{rows.bytes_per_logit:g} bytes a logit, given in the scenario"
        if rows.given
        else f"{rows.bytes_per_logit:g} bytes a logit, greedy decoding, assumed; {low:g}-"
        f"{high:g} from an arg-max over the bf16 row to sampling with top-k and top-p"
    )
    return (
        f"logit rows: {row_us:.3g} us a row of {rows.vocab:,.0f} target logits ({said}; the "
        "tensor-parallel gather included), a row a request in plain decoding and the verify's "
        "tokens a request when speculating"
    )


#: The batch-1 pass times a scenario can give; any left out is derived by the hardware model.
BATCH1_FIELDS = ("decode_ms", "verify_ms", "draft_step_ms", "draft_extend_ms")


def reference_context(scenario: Scenario, source: str) -> tuple[float, str]:
    """(the context in tokens at which the batch-1 [timing] passes hold, a note for the
    assumptions, empty when the scenario states it): ``timing.context_tokens`` when given.
    Without it, when the scenario models context (``model.kv_bytes_per_token`` or
    ``attention_flops_per_pair``) and gives no batch-1 pass time and no ``timing.points``
    entry without its own context, 0: every batch-1 pass is then derived from the weights
    alone (sim/hardware/roofline.py leaves the KV reads and attention out), the pass at zero
    context, and the batched model adds each request's KV reads and attention at its own
    context. A measured pass holds at the context it was measured at, which only the file
    can say: SpecsimError naming ``timing.context_tokens`` (``source``: the scenario's
    file)."""
    model, timing = scenario.model, scenario.timing
    if timing.context_tokens is not None:
        return timing.context_tokens, ""
    if not (model.kv_bytes_per_token or model.attention_flops_per_pair):
        return 0.0, ""
    measured = [f"timing.{f}" for f in BATCH1_FIELDS if getattr(timing, f) is not None]
    measured += [
        f"timing.points[{i}]" for i, p in enumerate(timing.points or []) if p.context_tokens is None
    ]
    if measured:
        raise SpecsimError(
            "needed with model.kv_bytes_per_token or attention_flops_per_pair: the context at "
            f"which the [timing] passes were measured ({', '.join(measured)}; specsim init "
            "--context-tokens, or --set timing.context_tokens=N)",
            source=source,
            field="timing.context_tokens",
        )
    return 0.0, (
        "reference context: 0 tokens, derived (no timing.context_tokens and no measured "
        "batch-1 pass: the hardware model's passes read the weights only, so the KV reads and "
        "attention of each request's context are all added under load)"
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


@dataclass(frozen=True, slots=True)
class ServingModel:
    """What a serving plan takes from a bound scenario, built once: the batched iteration
    ``cost``, the ``acceptance`` model over the policies' longest draft, the
    ``rank_shares`` of their widest tree (empty without one), the ``kv`` capacity the
    scheduler runs with (sim/binding/kv_capacity.py), and the ``notes`` for the
    assumptions (the cost's, then the KV capacity's and the host work's)."""

    cost: IterationCost
    acceptance: AcceptanceModel
    rank_shares: Shares | tuple[()]
    kv: KvCapacity
    notes: tuple[str, ...]


def serving_model(
    bound: Bound,
    *,
    speculative: bool,
    max_beams: int,
    max_k: int,
    widest: int,
    source: str,
    capacity: KvCapacity,
    terms: PassTerms | None = None,
) -> ServingModel:
    """The serving plan's model of ``bound``: its batched cost (``serving_cost`` with the
    scenario's ``[model]`` KV and attention terms at ``timing.context_tokens`` and its
    ``timing.points``; ``speculative``: the drafter's passes; ``max_beams``: the widest
    drafter pass), the acceptance model up to ``max_k`` positions and the rank shares of
    ``widest`` ranks (both from the acceptance bind resolved, ``Bound.resolved``) and the
    KV ``capacity`` its caller derived (``kv_capacity(scenario, speculative)``, read once:
    a hybrid's state pool under SGLang's rule also bounds the admission caps the draft
    lookups take). Errors name ``source`` (the scenario's file); ``terms``: as
    ``serving_cost`` takes them."""
    scenario = bound.scenario
    spec, timing = scenario.model, scenario.timing
    notes = []
    kv = spec.kv_bytes_per_token
    attn = spec.attention_flops_per_pair
    _, reference_note = reference_context(scenario, source)
    if reference_note:
        notes.append(reference_note)
    if kv is None:
        notes.append("KV reads: not modelled (no model.kv_bytes_per_token): passes ignore context")
    if attn is None:
        notes.append("attention FLOPs: not modelled (no model.attention_flops_per_pair)")
    cost = scenario_serving_cost(
        bound, speculative=speculative, max_beams=max_beams, source=source, terms=terms
    )
    measured = sorted({p.kind for p in timing.points or []})
    notes.append(
        "batched passes: the hardware model calibrated to the batch-1 [timing] passes"
        + (f" and measured points for {', '.join(measured)}" if measured else "")
        + (
            ""
            if "prefill" in measured
            else "; prefill: no measured prefill, the decode pass's curve (assumed; the "
            "compute-bound prefill is then priced at the decode pass's slope)"
        )
    )
    logit_note = logit_rows_note(cost.logits)
    notes.extend((capacity.note, host_work_note(scenario), logit_note))
    routing = expert_routing_note(bound)
    if routing is not None:
        notes.append(routing)
    if cost.state.shape:
        notes.append(recurrent_state_note(cost.state))
    acceptance = bound.resolved.at(max_k)
    shares = bound.resolved.rank_shares(widest)
    return ServingModel(cost, acceptance, shares, capacity, tuple(notes))
