"""The lines a serving report's assumptions take from the bound scenario: the host work per
request, a hybrid target's recurrent state, a MoE's expert routing inputs and the logit
rows, each with where its value comes from."""

from __future__ import annotations

from sim.binding.bound import Bound
from sim.model.logit_rows import BYTES_PER_LOGIT_RANGE, LogitRows
from sim.model.recurrent_state import STATE_BANDWIDTH_READINGS, RecurrentState
from sim.scenario.schema import Scenario


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
