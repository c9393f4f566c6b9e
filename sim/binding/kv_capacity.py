"""A scenario's KV cache in tokens: given (``serving.kv_capacity_tokens``) or derived from
its own GPU's memory, model, tensor-parallel degree and engine (sim/hardware/memory.py).

Only the scenario's values enter: the GPU preset's memory (``hardware.gpu``), the
weights its model geometry gives (every layer and expert, the LM head and an input
embedding of the head's size), the drafter's ``draft_params`` (at its own
``draft_bytes_per_param``, else the target's) and KV, ``hardware.gpus``
ranks, and ``server.engine`` (vLLM's rule when not given, said so). The reserve the
engine keeps beyond the weights and the KV cache is not identified by a batch-1
calibration: ``serving.kv_reserve_gib`` when given, else the engine's default with its
published range (``reserve_range_gib``), drawn in the serving intervals.

Plain decoding runs on a server without the drafter: its capacity is derived apart
(``plain``), as a user who compares both would measure it.

A hybrid target's recurrent state (``model.state_bytes_per_request``) lives in vLLM's KV
pool, 1 + ``num_speculative_tokens`` pages a request, or whole blocks of its block layout
with ``model.linear_layers`` (sim/model/recurrent_state.py ``PooledState``): a derived vLLM
capacity carries it (``state``), and every running request
holds its state's share of the pool beside its context, so the pool bounds concurrency with
the state included. SGLang keeps a hybrid's states in a pool of their own, carved out of
the same memory before the KV cache (sim/hardware/state_pool.py): a derived SGLang capacity
is what that pool leaves, and the requests whose states fit bound how many run
(``state_pool``, ``running``). A given capacity carries no state (the engine's own line
reports what it holds).

vLLM hands each request its KV in whole blocks (sim/model/kv_blocks.py): under its rule
(a derived capacity with vLLM's rule, or a given one with ``server.engine = "vllm"``) each
running request's context and lookahead slots are charged in blocks of ``block_tokens``
tokens: ``serving.kv_block_tokens`` when given (vLLM's ``--block-size``, or an MLA
backend's forced block, which ``specsim init`` writes), else 16 (vLLM's default), or, with a
derived capacity, a hybrid's block layout's; SGLang's and an unnamed engine's given pool
are per token (``serving.kv_block_tokens`` is refused there, and with a hybrid's layout).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sim.binding.state_shape import state_shape
from sim.errors import SpecsimError
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.memory import ENGINE_RULES, Engine, KvMemory, ServerMemory
from sim.hardware.state_pool import (
    SGLANG_MAMBA_FULL_MEMORY_RATIO,
    SGLANG_STATE_SLOTS_PER_REQUEST,
    StatePool,
    sglang_state_pool,
)
from sim.model.kv_blocks import VLLM_BLOCK_TOKENS
from sim.model.recurrent_state import BlockLayout, PooledState, StateShape, block_layout
from sim.scenario.schema import Scenario
from sim.scenario.sections.serving import ServingSpec

__all__ = [
    "KvCapacity",
    "derived_engine",
    "kv_capacity",
    "memory_gib",
    "server_memory",
    "stored_weight_bytes",
]


@dataclass(frozen=True, slots=True)
class KvCapacity:
    """The KV capacity a serving plan runs with. ``tokens``: for policies that draft (the
    speculative server); ``plain``: for plain decoding (None: ``tokens``); ``origin``:
    ``given``, ``derived`` or ``unlimited``; ``range``: the speculative server's tokens at
    the ends of the reserve's range (derived with a default reserve only); ``memory`` the
    speculative server's arithmetic; ``note``: one line for the assumptions; ``state``: a
    hybrid target's recurrent state in the pool (derived under vLLM's rule only; None:
    none); ``state_pool``: SGLang's pool of a hybrid target's states, sized apart, of the
    speculating server and of the plain one (derived under SGLang's rule only; None:
    none); ``block_tokens``: the tokens of a KV block each running request's context and
    lookahead slots are charged in, on the speculating server and on the plain one (vLLM's
    whole blocks; 1: per token)."""

    tokens: int | None
    plain: int | None
    origin: str
    note: str
    range: tuple[int, int] | None = None
    memory: KvMemory | None = None
    state: PooledState | None = None
    state_pool: tuple[StatePool, StatePool] | None = None
    block_tokens: tuple[int, int] = (1, 1)

    def blocks(self, drafts: bool) -> int:
        """The KV block's tokens on the speculating server (``drafts``) or the plain one."""
        return self.block_tokens[0 if drafts else 1]

    def running(self, drafts: bool) -> int | None:
        """The running requests whose states SGLang's pool holds on the speculating server
        (``drafts``) or the plain one (None: no such bound)."""
        if self.state_pool is None:
            return None
        return self.state_pool[0 if drafts else 1].requests

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "tokens": self.tokens,
            "plain_tokens": self.plain,
            "origin": self.origin,
            "range": list(self.range) if self.range else None,
        }
        if self.block_tokens != (1, 1):  # vLLM's whole blocks (an SGLang answer is unchanged)
            out["block_tokens"] = list(self.block_tokens)
        if self.state is not None:  # a hybrid target's (every other answer is unchanged)
            shape = self.state.shape
            state: dict[str, object] = {
                "recurrent_bytes": shape.recurrent_bytes,
                "conv_bytes_per_position": shape.conv_bytes_per_position,
                "conv_positions": shape.conv_positions,
            }
            layouts = self.state.layouts
            if layouts is not None:  # vLLM's block layout (model.linear_layers)
                state["block_tokens"] = [layouts[0].block_tokens, layouts[1].block_tokens]
                state["linear_groups"] = layouts[0].linear_groups
            out["state"] = state
        if self.state_pool is not None:  # a hybrid target's under SGLang's rule
            spec, plain = self.state_pool
            out["state_pool"] = {
                "requests": spec.requests,
                "plain_requests": plain.requests,
                "slots": spec.slots,
                "plain_slots": plain.slots,
                "state_gib": spec.state_gib,
                "plain_state_gib": plain.state_gib,
                "slots_per_request": spec.slots_per_request,
                "draft_tokens": spec.draft_tokens,
                "memory_ratio": SGLANG_MAMBA_FULL_MEMORY_RATIO,
            }
        return out


def stored_weight_bytes(scenario: Scenario) -> float | None:
    """Bytes of the target's weights on the GPUs (all ranks): every layer, every routed
    expert, the LM head and an input embedding of the head's size (an untied head,
    ASSUMED); None without ``model.layers`` and ``model.layer_params``."""
    m = scenario.model
    if m.layers is None or m.layer_params is None:
        return None
    moe = bool(m.experts and m.expert_params)
    moe_layers = m.layers - m.dense_layers if moe else 0
    dense = m.layers - moe_layers
    params = moe_layers * m.layer_params + dense * (m.dense_layer_params or m.layer_params)
    total = (params + 2 * m.lm_head_params) * m.weight_bytes_per_param
    if moe:
        assert m.experts is not None and m.expert_params is not None
        per = m.expert_bytes_per_param or m.weight_bytes_per_param
        total += moe_layers * m.experts * m.expert_params * per
    return total


def _missing(scenario: Scenario) -> str | None:
    """Why no capacity can be derived (None: it can)."""
    m, hw = scenario.model, scenario.hardware
    if hw.gpu is None:
        return "no hardware.gpu (its memory)"
    if m.kv_bytes_per_token is None or m.kv_bytes_per_token <= 0:
        return "no model.kv_bytes_per_token"
    if stored_weight_bytes(scenario) is None:
        return "no model.layers and model.layer_params (the weights)"
    engine = scenario.server.engine
    if engine is not None and engine not in ENGINE_RULES:
        return f"no memory rule for server.engine = {engine!r} (vllm and sglang have one)"
    return None


def derived_engine(scenario: Scenario) -> Engine | None:
    """The engine whose rule derives the scenario's KV capacity (None: the capacity is
    given, or none can be derived)."""
    serving = scenario.serving
    if serving is not None and serving.kv_capacity_tokens is not None:
        return None
    return None if _missing(scenario) is not None else _engine(scenario)


def _engine(scenario: Scenario) -> Engine:
    engine = scenario.server.engine
    return "sglang" if engine == "sglang" else "vllm"


def memory_gib(scenario: Scenario) -> float:
    """One GPU's memory (GiB): the preset's (``_missing`` must be None)."""
    assert scenario.hardware.gpu is not None
    return GPU_PRESETS[scenario.hardware.gpu].memory_gb


def server_memory(scenario: Scenario) -> ServerMemory:
    """What a derived KV capacity reads of the scenario, read once (``_missing`` must be
    None): its engine, one GPU's memory, the GPUs, the target's stored weights, the
    drafter's, and the KV bytes per token per rank of the target and of the drafter (the
    drafter's: given, else the target's scaled by its share of decoder layers)."""
    m, hw = scenario.model, scenario.hardware
    weights = stored_weight_bytes(scenario)
    assert m.kv_bytes_per_token is not None and m.layers and weights is not None
    own = m.draft_bytes_per_param  # the drafter's own bytes a weight, else the target's
    draft_bytes = m.weight_bytes_per_param if own is None else own
    drafter_kv = (
        m.draft_kv_bytes_per_token
        if m.draft_kv_bytes_per_token is not None
        else m.kv_bytes_per_token * m.draft_layers / m.layers
    )
    return ServerMemory(
        _engine(scenario),
        memory_gib(scenario),
        hw.gpus,
        weights,
        (m.draft_params or 0.0) * draft_bytes,
        m.kv_bytes_per_token,
        drafter_kv,
    )


def kv_capacity(scenario: Scenario, speculates: bool) -> KvCapacity:
    """The scenario's KV capacity (``speculates``: some policy drafts): given, derived
    from its own GPU, model, TP and engine, or unlimited when it cannot be derived."""
    serving = scenario.serving
    given = serving.kv_capacity_tokens if serving is not None else None
    if given is not None:
        return _given_capacity(scenario, given)
    why = _missing(scenario)
    if why is not None:
        return KvCapacity(
            None,
            None,
            "unlimited",
            f"KV capacity: unlimited (no serving.kv_capacity_tokens; none derived: {why})",
        )
    return _derived_capacity(scenario, speculates)


def _given_capacity(scenario: Scenario, given: int) -> KvCapacity:
    """A given capacity of ``given`` tokens, both servers': per token, or in vLLM's whole
    blocks when ``server.engine = "vllm"`` (``serving.kv_block_tokens`` refused otherwise)."""
    if scenario.server.engine != "vllm":
        _no_block(scenario, "server.engine is not vllm with a given capacity")
        return KvCapacity(given, None, "given", f"KV capacity: {given} tokens (given)")
    block, source = _block(scenario)
    return KvCapacity(
        given,
        None,
        "given",
        f"KV capacity: {given} tokens (given); each running request's context and "
        f"lookahead in vLLM's whole blocks of {block} tokens ({source}; "
        "sim/model/kv_blocks.py)",
        block_tokens=(block, block),
    )


def _derived_capacity(scenario: Scenario, speculates: bool) -> KvCapacity:
    """A capacity derived from the scenario's GPU, model, TP and engine (``_missing`` must
    be None): the speculating server's tokens and the plain one's at the reserve
    (``serving.kv_reserve_gib``, else the engine's default, whose range's ends give the
    span), a hybrid's states in the pool or in SGLang's pool of their own, the KV block,
    and the note that says it all. SpecsimError when the derived KV cache is empty."""
    serving = scenario.serving
    server = server_memory(scenario)
    middle, low, high = server.reserve_range_gib()
    given_reserve = serving.kv_reserve_gib if serving is not None else None
    default = given_reserve is None
    reserve = middle if given_reserve is None else given_reserve  # per GPU, GiB
    shape = state_shape(scenario)
    spec, spec_pool = _divided(scenario, shape, server, reserve, speculates)
    plain, plain_pool = (spec, spec_pool)
    if speculates:
        plain, plain_pool = _divided(scenario, shape, server, reserve, False)
    span = None
    if default:  # the ends (SGLang's whole state slots can make the middle an end)
        ends = (
            _divided(scenario, shape, server, high, speculates)[0].tokens,
            spec.tokens,
            _divided(scenario, shape, server, low, speculates)[0].tokens,
        )
        span = (min(ends), max(ends))
    named = (
        f"server.engine = {server.engine}"
        if scenario.server.engine
        else "server.engine not given: vLLM's rule ASSUMED"
    )
    reserve_text = (
        f"reserve {reserve:g} GiB a GPU, the default within {low:g}-{high:g} from startup "
        "logs (sim/hardware/memory.py)"
        if default
        else f"reserve {reserve:g} GiB a GPU (serving.kv_reserve_gib)"
    )
    note = (
        f"KV capacity: derived, {spec.tokens:,} tokens"
        + (f" [{span[0]:,}, {span[1]:,}] over the reserve's range" if span else "")
        + (f", {plain.tokens:,} for plain decoding (no drafter)" if speculates else "")
        + f": {spec.describe()} ({named}; {reserve_text}; {server.gpus} GPU(s) "
        f"of {scenario.hardware.gpu})"
    )
    state = pooled_state(scenario, shape, spec, plain)
    blocks, block_note = _derived_blocks(scenario, spec, state)
    note += block_note
    if state is not None:
        note += _state_note(state, scenario.num_steps, speculates)
    pools = None
    if spec_pool is not None and plain_pool is not None:
        pools = (spec_pool, plain_pool)
        note += _state_pool_note(shape, spec_pool, plain_pool, speculates)
    if spec.tokens < 1:
        raise SpecsimError(
            f"the derived KV cache is empty: {spec.describe()} ({named}); give the server's "
            "serving.kv_capacity_tokens (or serving.kv_reserve_gib)",
            field="serving.kv_capacity_tokens",
        )
    return KvCapacity(spec.tokens, plain.tokens, "derived", note, span, spec, state, pools, blocks)


def _derived_blocks(
    scenario: Scenario, spec: KvMemory, state: PooledState | None
) -> tuple[tuple[int, int], str]:
    """The KV block of a derived capacity, speculating server's and plain one's, and the
    note's words for it: per token under SGLang's rule, a hybrid's block layout's blocks,
    else vLLM's whole blocks (``_block``); ``serving.kv_block_tokens`` refused where it is
    not read."""
    blocks = (1, 1)
    note = ""
    if spec.engine != "vllm":
        _no_block(scenario, "SGLang's pool is per token")
    elif state is not None and state.layouts is not None:
        _no_block(scenario, "a hybrid's block layout sets its own block (model.linear_layers)")
        blocks = (state.layouts[0].block_tokens, state.layouts[1].block_tokens)
    else:  # whole blocks (sim/model/kv_blocks.py)
        block, source = _block(scenario)
        blocks = (block, block)
        note = (
            f"; each running request's context and lookahead in whole blocks of "
            f"{block} tokens ({source})"
        )
    return blocks, note


def _state_note(state: PooledState, k: int, speculates: bool) -> str:
    """The note's words for a hybrid's states in vLLM's KV pool: a slot's bytes, the
    (1 + k) slots a running request holds at num_steps ``k`` and their tokens of the pool
    (``PooledState.tokens``), and the block layout's when it has one."""
    return (
        f"; each running request also holds its states (recurrent and conv), "
        f"{state.shape.page_bytes(k) / 1e6:,.1f} MB a slot x (1 + k) slots "
        f"({state.tokens(1 + k, True):,} tokens of the pool at k = {k}"
        + (f", {state.tokens(1, False):,} for plain decoding" if speculates else "")
        + (
            "; vLLM's 1 + num_speculative_tokens state pages a request)"
            if state.layouts is None
            else _layout_note(state.layouts, speculates)
        )
    )


def _state_pool_note(
    shape: StateShape, spec_pool: StatePool, plain_pool: StatePool, speculates: bool
) -> str:
    """The note's words for SGLang's pool of a hybrid's states: its slots and their bytes,
    its GiB a GPU, the slots a running request holds and so the most that run at once, on
    the speculating server (``spec_pool``) and the plain one (``plain_pool``), with the
    SGLang defaults they rest on (sim/hardware/state_pool.py)."""
    return (
        f"; SGLang keeps the states (recurrent and conv) in a pool of their own: "
        f"{spec_pool.slots:,} slots of {shape.slot_bytes(1) / 1e6:,.1f} MB "
        f"({spec_pool.state_gib:.2f} GiB a GPU with the verify's {spec_pool.draft_tokens} "
        f"intermediate states a request), {spec_pool.slots_per_request} a running request: "
        f"at most {spec_pool.requests:,} run at once"
        + (
            f" ({plain_pool.requests:,} for plain decoding, {plain_pool.state_gib:.2f} GiB)"
            if speculates
            else ""
        )
        + f" (SGLang v0.5.23 defaults: mamba_full_memory_ratio "
        f"{SGLANG_MAMBA_FULL_MEMORY_RATIO:g}, {SGLANG_STATE_SLOTS_PER_REQUEST} state slots a "
        "request, the extra_buffer strategy's for a Gated DeltaNet target; "
        "sim/hardware/state_pool.py)"
    )


def _block(scenario: Scenario) -> tuple[int, str]:
    """vLLM's KV block (tokens) and where it came from: ``serving.kv_block_tokens`` when
    given, else ``VLLM_BLOCK_TOKENS`` (the CUDA platform's default, DEFAULTED)."""
    given = scenario.serving.kv_block_tokens if scenario.serving is not None else None
    if given is not None:
        return given, "serving.kv_block_tokens"
    return VLLM_BLOCK_TOKENS, (
        "vLLM's default block size, DEFAULTED, vllm/platforms/cuda.py; an MLA backend's "
        "larger block: serving.kv_block_tokens"
    )


def _no_block(scenario: Scenario, why: str) -> None:
    """Refuse ``serving.kv_block_tokens`` where vLLM's whole blocks are not what a request
    is charged in (``why``)."""
    serving = scenario.serving
    if serving is not None and serving.kv_block_tokens is not None:
        raise SpecsimError(
            f"serving.kv_block_tokens ({serving.kv_block_tokens}) is vLLM's --block-size, "
            f"not read here: {why}; remove it",
            field="serving.kv_block_tokens",
        )


def _layout_note(layouts: tuple[BlockLayout, BlockLayout], speculates: bool) -> str:
    """The assumptions' words for vLLM's block layout of the speculating server and of the
    plain one (``layouts``)."""
    layout = layouts[0]
    extra = "2 + k" if layout.prefix_caching else "1 + k"
    mode = (
        "under prefix caching's align mode"
        if layout.prefix_caching
        else "without prefix caching (serving.prefix_caching = false)"
    )
    return (
        f"; vLLM's block layout: blocks of {layout.block_tokens} tokens"
        + (f" ({layouts[1].block_tokens} for plain decoding)" if speculates else "")
        + f", {layout.linear_groups} groups of linear layers x ({extra}) state blocks a "
        f"request {mode}, each request's context and lookahead in whole blocks)"
    )


def _divided(
    scenario: Scenario,
    shape: StateShape,
    server: ServerMemory,
    reserve_gib: float,
    speculative: bool,
) -> tuple[KvMemory, StatePool | None]:
    """How the engine divides one GPU at ``reserve_gib`` (``ServerMemory.kv``), with
    SGLang's state pool of a hybrid target (its states ``shape``) carved out before the KV
    cache (None: no such pool): a verify of ``speculation.draft_tokens`` tokens when
    ``speculative``, the admission cap of that server."""
    memory = server.kv(reserve_gib, speculative)
    if server.engine != "sglang" or not shape or memory.rest_gib <= 0:
        return memory, None  # (no room at all: ``kv_capacity``'s error names it)
    serving = scenario.serving or ServingSpec()
    cap = serving.max_running_requests
    if speculative and serving.max_running_requests_speculative is not None:
        cap = serving.max_running_requests_speculative
    try:
        pool = sglang_state_pool(
            memory.rest_gib,
            shape.slot_bytes(1),
            draft_tokens=scenario.speculation.draft_tokens if speculative else 0,
            max_running_requests=cap,
        )
    except ValueError as exc:
        raise SpecsimError(
            f"{exc} ({memory.describe()}); give the server's serving.kv_capacity_tokens",
            field="model.state_bytes_per_request",
        ) from None
    return replace(memory, state_gib=pool.state_gib), pool


def pooled_state(
    scenario: Scenario, shape: StateShape, spec: KvMemory, plain: KvMemory
) -> PooledState | None:
    """The scenario's states (``shape``, sim/binding/state_shape.py) in the KV pool its
    capacity derives (``spec`` the speculating server's memory, ``plain`` the plain one's):
    vLLM's rule with a state a request; None otherwise."""
    if not shape or spec.engine != "vllm":
        return None
    layouts = None
    m = scenario.model
    serving = scenario.serving or ServingSpec()
    if m.linear_layers is not None:  # vLLM's block layout (sim/model/recurrent_state.py)
        assert m.layers is not None  # (schema: linear_layers needs layers)
        attention = m.layers - m.linear_layers
        per_layer = spec.kv_bytes_per_token / attention

        def layout(memory: KvMemory, k: int) -> BlockLayout:
            return block_layout(
                shape,
                linear_layers=m.linear_layers or 0,
                attention_layers=attention,
                drafter_layers=round(memory.drafter_kv_bytes_per_token / per_layer),
                kv_bytes_per_layer=per_layer,
                speculative_tokens=k,
                prefix_caching=serving.prefix_caching,
            )

        layouts = (layout(spec, scenario.num_steps), layout(plain, 0))
    return PooledState(
        shape,
        spec.kv_bytes_per_token + spec.drafter_kv_bytes_per_token,
        plain.kv_bytes_per_token + plain.drafter_kv_bytes_per_token,
        layouts,
    )
