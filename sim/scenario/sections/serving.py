"""``[serving]``: load, scheduler, speculation policy and the batched terms of a served scenario."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
import itertools
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationError, field_validator, model_validator

from sim.model.host_work import DEFAULT_US_PER_REQUEST
from sim.model.kv_blocks import VLLM_BLOCK_SIZES, VLLM_PREFIX_CACHING
from sim.scenario.sections.bounds import (
    MAX_CALIBRATION_FIGURES,
    MAX_LIST,
    MAX_RATE_PER_S,
    MAX_REQUESTS,
    MIN_RATE_PER_S,
    CapturedBatches,
    NonNegativeMs,
    PositiveMs,
)
from sim.scenario.sections.calibrated_on import CalibratedTerm, CalibrationFigure
from sim.scenario.sections.model_error import ModelErrorSpec
from sim.scenario.sections.section import Section
from sim.scenario.sections.speculation import SpeculationSpec

# The draft policies (sim.model.policy) are imported where a validator needs them: a
# scenario without a k table never does (start-up).


class ServingSpec(Section):
    """How the server is loaded and scheduled (``specsim serve``; sim/simulation/serving/).

    Load, at most one of: ``concurrency`` (closed loop of that many users, each with an
    exponential ``think_time_ms`` between its requests), ``rate_per_s`` (Poisson arrivals)
    or ``trace`` (a file relative to the scenario: specsim's CSV of arrival_s,
    input_tokens, output_tokens[, class], an Azure LLM inference trace CSV, a BurstGPT CSV
    or a Mooncake JSONL; ``trace_format`` names it or ``auto`` tells it from the file,
    sim/simulation/serving/traces/). ``trace_window_s = [start, end]`` replays only the
    requests arriving in that window of the trace's clock (from its start);
    ``trace_rate_scale`` divides the arrival times (2: twice the rate). None: one user.

    Scheduler: ``max_running_requests`` (vLLM ``max_num_seqs``; default 1024, vLLM's for
    GPUs of 70 GiB or more, vllm/engine/arg_utils.py; SGLang derives it from memory),
    ``max_running_requests_speculative`` (the admission cap of the speculating server when
    it differs from the plain one's: SGLang resets ``max_running_requests`` to 48 when a
    speculative algorithm is on and none is given, python/sglang/srt/server_args.py, from
    v0.4.5, 32 in v0.4.4; None: ``max_running_requests``; a policy that never drafts keeps
    ``max_running_requests``),
    ``batching`` (``prefill_first``: SGLang's default; ``chunked``: vLLM's chunked prefill
    mixed with decode), ``token_budget`` (tokens per iteration: vLLM
    ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``), ``kv_capacity_tokens``
    (KV cache size in tokens, SGLang's ``max_total_num_tokens``, vLLM's "GPU KV cache
    size"; None: derived from the scenario's own GPU memory, weights, TP and
    ``server.engine`` (vLLM's rule when not given), unlimited where they are missing,
    sim/binding/kv_capacity.py), ``kv_reserve_gib`` (GiB per GPU the engine keeps beyond
    the weights and the KV cache, for activations, CUDA graphs and communicators; None:
    the engine's default, drawn over its published range, sim/hardware/memory.py),
    ``prefix_caching`` (vLLM's ``--enable-prefix-caching``, on by default,
    sim/model/kv_blocks.py ``VLLM_PREFIX_CACHING``; false for a server started with
    ``--no-enable-prefix-caching``: a hybrid's state blocks a request under vLLM's block
    layout are 1 + k a linear group instead of 2 + k, sim/model/recurrent_state.py
    ``BlockLayout``; nothing else reads it), ``kv_block_tokens`` (vLLM's ``--block-size``:
    the block each running request's context and lookahead slots are charged in, one of
    vLLM's ``BlockSize`` values, sim/model/kv_blocks.py ``VLLM_BLOCK_SIZES``; None: 16,
    vLLM's default; ``specsim init`` writes the MLA backends' forced block, 64 with
    FlashMLA or FlashInfer MLA, 128 with CUTLASS MLA; under vLLM's rule only, and not with
    a hybrid's block layout, which sets its own), ``prefill`` (``model`` or ``skip``: no prefill
    pass, an idealisation).

    Speculation policy (default: the scenario's ``[speculation]``, chain or tree, at every
    batch size): at most one of ``disable_above_batch`` (plain decoding when more requests
    decode), ``k_table`` (vLLM's ``[[start_bs, end_bs, K], ...]``, each K clamped to
    num_steps as vLLM does; chains only) or ``draft_table`` (``[[start_bs, end_bs,
    num_steps, topk, num_draft_tokens], ...]``, the same range rules with a chain (topk 1),
    an SGLang tree (topk > 1) or plain decoding (num_steps 0) per range: a tree at small
    batches falling back to a chain or to none). ``draft_extend``: ``accepted`` (the
    drafter's extend after the verify runs over each request's accepted tokens, as SGLang's
    eager extend and vLLM's proposer do) or ``padded`` (over the verify's width per request,
    as SGLang's CUDA-graphed draft extend runs). SLOs for attainment: ``ttft_slo_ms``,
    ``tpot_slo_ms``.

    Host work (sim/model/host_work.py): ``host_us_per_request`` (the host's work per
    running request per iteration; default 20 us, assumed, 7-38 from public measurements)
    and ``host_overlap``, which iterations hide it behind the GPU: ``baseline`` (plain
    decoding only: SGLang and TensorRT-LLM turn their overlap scheduler off for speculative
    decoding; the default), ``both`` (vLLM >= 0.14, asynchronous scheduling with EAGLE/MTP)
    or ``none`` (vLLM before 0.14); ``host_batch1_share``, the share of the batch-1
    iteration that is host work (default 0: a GPU-bound batch 1; 1: a host-bound server,
    whose every request's host work shows past the GPU's growth even where overlapped);
    ``host_spec_factor``, how many times ``host_us_per_request`` a request costs the host
    in an iteration that drafts and verifies (default 1; SGLang's EAGLE worker about 3:
    sim/model/host_work.py ``SGLANG_SPEC_FACTOR``, for a host work measured on plain
    decoding).

    Kernel growth (sim/hardware/batched.py): ``kernel_slope``, the compute ms a pass measured
    at batch 1 only adds per ms of extra work at the GPU's peak (1 / the achieved fraction of
    peak on the growth; None: ``DEFAULT_SLOPE`` = 1, assumed, 0.1-1.35 from public kernel
    profiles, ``SLOPE_RANGE``). Expert routing (sim/hardware/experts.py): ``expert_skew``,
    the Zipf exponent of expert popularity within a step (None: ``SERVING_STEP_SKEW``,
    from one public serving trace; 0: uniform routing); ``expert_overlap``, the share of a
    token's routed experts the previous token of the same request also chose, which sets
    how many experts a request's several verify or extend tokens add (None:
    ``STEP_EXPERT_OVERLAP`` = 0.38, one public measurement, assumed; plausible 0-0.5);
    ``pair_flop_efficiency``, the share of the GPU's dense peak at which the fused-MoE
    kernel multiplies its token-expert pairs (None: ``PAIR_FLOP_EFFICIENCY`` = 0.42,
    assumed; 0.22-0.80 from public kernel curves). Neither is drawn by default: a value
    with an ``[uncertainty]`` range draws it (docs/studies/moe-routing-ranges.md).
    ``specsim calibrate --load-sweep`` fits ``kernel_slope`` and ``expert_skew`` (not the
    overlap or the pair efficiency) with ``host_us_per_request`` from measured concurrency
    sweeps, and records what it fitted: ``calibrated_on``, the figures
    (``CalibrationFigure``), and ``calibrated_terms``, the terms they identified; the
    serving answers' intervals re-fit those terms to those figures in every draw
    (docs/load-calibration.md).

    Logit rows (sim/model/logit_rows.py): ``bytes_per_logit``, the bytes a rank moves per
    vocabulary entry of every row of target logits after the LM head (the gathered row cast
    to fp32 and picked or sampled from; None: ``DEFAULT_BYTES_PER_LOGIT`` = 12, greedy
    decoding, assumed, 4-40 from an arg-max over the bf16 row to sampling with top-k and
    top-p); a verify brings its draft tokens' rows a request, plain decoding one. Priced
    where ``model.lm_head_params`` and ``model.hidden_size`` give the vocabulary.

    Recurrent state (sim/model/recurrent_state.py): ``state_bandwidth_fraction``, the share
    of the GPU's peak memory bandwidth at which the engine's state kernels move a hybrid
    target's recurrent and conv states (``model.state_bytes_per_request``,
    ``model.conv_state_bytes_per_position``); None: the server's own memory efficiency,
    the share of peak its measured batch-1 decode (``timing.decode_ms``) reaches over the
    weights' roofline, clipped to 0.40-1, the range of public readings of other GDN decode
    kernels (``STATE_BANDWIDTH_FRACTION_RANGE``; sim/binding/state_shape.py
    ``state_bandwidth_fraction``); without a measured decode ``hardware.bandwidth_efficiency``.
    Set it from a timing of the server's own state kernels.

    Fused-MoE tiles (sim/hardware/experts.py ``tile_extra_rows``): ``moe_tiles``,
    "sglang-default" for a server whose Triton fused-MoE kernel ran SGLang's default config
    (no tuned config file for its experts, GPU and dtype; unquantized experts): each
    expert's rows padded to 64 when a pass has more tokens than the model has routed
    experts, the rows beyond a 16-row block priced as token-expert pairs; "none" (default):
    not charged (a tuned config, or not known).

    KV re-reads in the verify (sim/hardware/batched.py, KV re-reads):
    ``verify_kv_rereads``, the share of the per-query-row re-reads of each request's KV that
    the target's verify pays at the KV's bytes: 0 (default) for an attention backend that
    reads a request's KV once for all its verify rows (vLLM's ROCM_AITER_MLA, a packed MLA
    decode); up to 1 for one that runs each verify token as its own decode row (a patched
    TRITON_MLA); up to 1/3 for AITER's Triton unified attention at 6 query heads a KV head
    and 4 verify tokens (q blocks of 2 rows). Where the re-reads may hit a cache the value
    is a range from 0 to that bound (docs/studies/verify-kv-rereads.md, per backend).

    Model error (``[serving.model_error]``, ``ModelErrorSpec``): the term every serving
    answer's 90% interval adds beyond the decode batches the scenario measured.

    CUDA-graph capture (sim/hardware/batched.py): ``graph_max_tokens``, the most tokens a
    graphed pass replays as a graph (vLLM's ``max_cudagraph_capture_size``, 512 by default)
    and ``graph_max_batch``, the most requests (SGLang's ``cuda_graph_max_bs``, 160 on GPUs
    of 25 GB or more), and ``graph_max_batch_speculative``, the same for the verify and
    drafter passes when it differs (SGLang v0.4.4 captures batch sizes 1-32 for EAGLE;
    None: ``graph_max_batch``); a decode, verify or drafter pass beyond them runs eagerly,
    paying per-kernel launch costs (``model.kernels_per_layer``). None: no limit.
    ``graph_batches`` and ``graph_batches_speculative``: the batch sizes the engine
    captured, ascending, for the decode and for the verify and draft-step passes (None: every
    size up to the limit, no padding; the speculative list None: ``graph_batches`` unless
    ``graph_max_batch_speculative`` is given); a graphed pass over a batch between two of
    them runs padded up to the next (SGLang from v0.4.4.post2 with EAGLE: 1-8, 9-31 odd, 64,
    96, 128, 160; sim/hardware/batched.py, padding to captured sizes); the largest is the
    capture limit, so a list and its ``graph_max_batch`` field are not given together.
    ``graph_max_batch_draft``: the most requests whose drafter passes (draft steps, the
    draft extend, a block-parallel drafter's one pass) replay a graph, when the drafter's
    graphs stop below the verify's (None: the verify's limit); above it the drafter runs
    eagerly, each of its ``model.draft_layers`` x ``model.kernels_per_layer`` kernels issued
    by the CPU (sim/hardware/eager.py). At least 1: the batch-1 drafter passes are the
    scenario's graphed ones (a drafter eager at batch 1 too is not modelled; its measured
    batch-1 time is still the anchor).
    """

    concurrency: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] | None = None
    rate_per_s: Annotated[float, Field(ge=MIN_RATE_PER_S, le=MAX_RATE_PER_S)] | None = None
    trace: Annotated[str, Field(min_length=1)] | None = None
    trace_format: Literal["auto", "specsim", "azure", "burstgpt", "mooncake"] = "auto"
    trace_rate_scale: Annotated[float, Field(ge=1e-6, le=1e6)] = 1.0
    trace_window_s: (
        Annotated[list[Annotated[float, Field(ge=0.0, le=1e8)]], Field(min_length=2, max_length=2)]
        | None
    ) = None
    think_time_ms: NonNegativeMs = 0.0
    max_running_requests: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] = 1024
    max_running_requests_speculative: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] | None = None
    batching: Literal["prefill_first", "chunked"] = "prefill_first"
    token_budget: Annotated[int, Field(gt=0, le=100_000_000)] = 8192
    kv_capacity_tokens: Annotated[int, Field(gt=0, le=10**12)] | None = None
    kv_reserve_gib: Annotated[float, Field(ge=0.0, le=10_000.0)] | None = None
    prefix_caching: bool = VLLM_PREFIX_CACHING
    kv_block_tokens: Annotated[int, Field(gt=0, le=max(VLLM_BLOCK_SIZES))] | None = None
    prefill: Literal["model", "skip"] = "model"
    disable_above_batch: Annotated[int, Field(ge=0)] | None = None
    k_table: Annotated[list[list[int]], Field(min_length=1, max_length=MAX_LIST)] | None = None
    draft_table: Annotated[list[list[int]], Field(min_length=1, max_length=MAX_LIST)] | None = None
    draft_extend: Literal["accepted", "padded"] = "accepted"
    host_us_per_request: Annotated[float, Field(ge=0.0, le=1_000_000.0)] = DEFAULT_US_PER_REQUEST
    host_overlap: Literal["baseline", "both", "none"] = "baseline"
    host_batch1_share: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    host_spec_factor: Annotated[float, Field(ge=0.0, le=100.0)] = 1.0
    kernel_slope: Annotated[float, Field(ge=0.0, le=10.0)] | None = None
    expert_skew: Annotated[float, Field(ge=0.0, le=4.0)] | None = None
    expert_overlap: Annotated[float, Field(ge=0.0, lt=1.0)] | None = None
    pair_flop_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    bytes_per_logit: Annotated[float, Field(ge=0.0, le=1000.0)] | None = None
    state_bandwidth_fraction: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    moe_tiles: Literal["none", "sglang-default"] = "none"
    verify_kv_rereads: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    graph_max_tokens: Annotated[int, Field(gt=0, le=10**9)] | None = None
    graph_max_batch: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] | None = None
    graph_max_batch_speculative: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] | None = None
    graph_max_batch_draft: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] | None = None
    graph_batches: CapturedBatches | None = None
    graph_batches_speculative: CapturedBatches | None = None
    ttft_slo_ms: PositiveMs | None = None
    tpot_slo_ms: PositiveMs | None = None
    model_error: ModelErrorSpec | None = None
    calibrated_on: (
        Annotated[list[CalibrationFigure], Field(min_length=1, max_length=MAX_CALIBRATION_FIGURES)]
        | None
    ) = None
    calibrated_terms: Annotated[list[CalibratedTerm], Field(max_length=4)] | None = None

    @field_validator("kv_block_tokens")
    @classmethod
    def _vllm_block_size(cls, value: int | None) -> int | None:
        if value is not None and value not in VLLM_BLOCK_SIZES:
            sizes = ", ".join(str(b) for b in VLLM_BLOCK_SIZES)
            raise ValueError(f"{value} is not one of vLLM's block sizes ({sizes})")
        return value

    @field_validator("draft_table")
    @classmethod
    def _draft_rows(cls, value: list[list[int]] | None) -> list[list[int]] | None:
        if value is None:
            return value
        for i, row in enumerate(value):
            if len(row) != 5:
                raise ValueError(
                    f"row {i}: rows are [start_bs, end_bs, num_steps, topk, num_draft_tokens]"
                )
            try:
                SpeculationSpec(num_steps=row[2], topk=row[3], num_draft_tokens=row[4])
            except ValidationError as exc:
                detail = exc.errors()[0]
                msg = str(detail["msg"]).removeprefix("Value error, ")
                raise ValueError(
                    f"row {i} {row}: {'.'.join(map(str, detail['loc']))}: {msg}"
                ) from None
        # lazy: only a k table needs it (start-up)
        from sim.model.policy import KTable

        KTable(tuple((a, b, 0) for a, b, *_ in value))  # the range rules
        return value

    @model_validator(mode="after")
    def _graph_batches(self) -> Self:
        for name, limit in (
            ("graph_batches", "graph_max_batch"),
            ("graph_batches_speculative", "graph_max_batch_speculative"),
        ):
            sizes = getattr(self, name)
            if sizes is None:
                continue
            if any(b <= a for a, b in itertools.pairwise(sizes)):
                raise ValueError(f"{name} {sizes}: batch sizes in ascending order, each once")
            if getattr(self, limit) is not None:
                raise ValueError(
                    f"give {name} or {limit}, not both (the list's largest is the limit)"
                )
        listed = "graph_batches_speculative"
        if self.graph_batches_speculative is None and self.graph_max_batch_speculative is None:
            listed = "graph_batches"
        captured = getattr(self, listed)
        draft = self.graph_max_batch_draft
        if draft is not None and captured is not None and draft > captured[-1]:
            raise ValueError(
                f"graph_max_batch_draft {draft} exceeds {listed}' largest size "
                f"({captured[-1]}): the drafter's graphs are among the sizes captured"
            )
        return self

    @model_validator(mode="after")
    def _calibrated_terms_need_figures(self) -> Self:
        terms = self.calibrated_terms or []
        if len(set(terms)) < len(terms):
            raise ValueError(f"calibrated_terms {terms}: each term once")
        if terms and self.calibrated_on is None:
            raise ValueError(
                "calibrated_terms needs the figures they were fitted to ([[serving.calibrated_on]])"
            )
        return self

    @model_validator(mode="after")
    def _one_load_one_policy(self) -> Self:
        loads = [n for n in ("concurrency", "rate_per_s", "trace") if getattr(self, n) is not None]
        if len(loads) > 1:
            raise ValueError(f"give at most one of concurrency, rate_per_s, trace (got {loads})")
        if self.trace is None:
            stray = [
                name
                for name, default in (
                    ("trace_format", "auto"),
                    ("trace_rate_scale", 1.0),
                    ("trace_window_s", None),
                )
                if getattr(self, name) != default
            ]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply to a trace (serving.trace)")
        if self.trace_window_s is not None and self.trace_window_s[1] <= self.trace_window_s[0]:
            raise ValueError(
                f"trace_window_s {self.trace_window_s}: the end must be after the start"
            )
        policies = [
            n
            for n in ("disable_above_batch", "k_table", "draft_table")
            if getattr(self, n) is not None
        ]
        if len(policies) > 1:
            raise ValueError(
                f"give at most one of disable_above_batch, k_table, draft_table (got {policies})"
            )
        if self.k_table is not None:
            if any(len(row) != 3 for row in self.k_table):
                raise ValueError("k_table rows are [start_bs, end_bs, K]")
            # lazy: only a k table needs it (start-up)
            from sim.model.policy import KTable

            KTable(tuple((row[0], row[1], row[2]) for row in self.k_table))
        return self
