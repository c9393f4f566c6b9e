"""The scenario file format: frozen, validated pydantic models of the TOML (schema only).

A scenario describes one server and drafter as the user measured them. Every section
forbids unknown keys and is strict about types (TOML ``"2"`` is not an integer), so a
typo is an error that names the file and the dotted field instead of a silent default.
Loading is sim/scenario/load.py, validation sim/scenario/validate.py, ``--set`` and the
other overrides sim/scenario/overrides.py; what the values mean is sim/binding/bind.py.
"""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
import itertools
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from sim.errors import UnknownNameError
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import (
    InlineInterconnect,
    Library,
    preset_names,
    resolve_interconnect,
)
from sim.model.host_work import DEFAULT_US_PER_REQUEST
from sim.model.kv_blocks import VLLM_BLOCK_SIZES, VLLM_PREFIX_CACHING
from sim.scenario.origins import FieldOrigin, FieldOrigins, Origins, given_prefixes

if TYPE_CHECKING:
    from sim.model.tree import Tree

# The draft-policy and tree modules (sim.model.policy, sim.model.tree.presets) are imported
# where a validator needs them: a chain scenario never does, and importing them (and the
# tree modules they import) cost every ``run`` about 10 ms of start-up.

# Bounds. Every number is finite (``allow_inf_nan=False``: TOML's inf and nan are refused),
# and every size has a ceiling well above any real server, so that a typo (1e9 layers)
# is an error naming the field instead of a multi-GiB allocation or a run that never ends:
#: One hour: no pass of a decoding step takes longer (real ones take 1-100 ms).
MAX_MS = 3_600_000.0
#: Draft length: EAGLE/SGLang/vLLM use 1-10; 64 positions cover every published setting.
MAX_NUM_STEPS = 64
#: Decoder layers (the largest public models have ~130) and kernels one layer launches.
MAX_LAYERS = 1_000
MAX_KERNELS_PER_LAYER = 1_000
#: Tensor-parallel degree: NVL72 racks are the largest single all-reduce domain (72).
MAX_GPUS = 1_024
#: Output tokens of one request: the longest context windows are ~1M tokens.
MAX_OUTPUT_TOKENS = 1_000_000
#: Most requests a recorded run's job may list (sim/calibration/run_job.py).
MAX_JOB_REQUESTS = 1_000_000
#: Requests per replication and replications: results hold R x Q per-request rows
#: (sim/simulation/budget.py bounds their product and the run time as well).
MAX_REQUESTS = 1_000_000
MAX_REPLICATIONS = 100_000
#: Slowest and fastest Poisson arrival rates (requests/s): one request in 11.6 days, ten
#: million a second (beyond any server; a smaller rate's gaps overflow a simulated clock).
MIN_RATE_PER_S = 1e-6
MAX_RATE_PER_S = 1e7
#: Log-space standard deviation of a lognormal length: at 10 one standard deviation is a
#: factor of 22,000 (real traffic is 0.5-1.5); beyond ~1e154 its square overflows.
MAX_LOG_SIGMA = 10.0
#: Parameters (weights) of one layer, expert or head: 1e13 is beyond any model.
MAX_PARAMS = 1e13
#: Throughput targets: no decoding reaches 1e7 tok/s per request.
MAX_TOK_S = 1e7
#: Entries of a list in a scenario (per-position rates, mix classes, targets).
MAX_LIST = 64
#: Figures a calibration records (``[[serving.calibrated_on]]``): every run of a sweep
#: re-fitted in each draw of an interval; a thousand is beyond any load sweep.
MAX_CALIBRATION_FIGURES = 1_000

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveMs = Annotated[float, Field(gt=0.0, le=MAX_MS)]
NonNegativeMs = Annotated[float, Field(ge=0.0, le=MAX_MS)]
Params = Annotated[float, Field(gt=0.0, le=MAX_PARAMS)]
#: Batch sizes an engine captured as CUDA graphs (``serving.graph_batches``).
CapturedBatches = Annotated[
    list[Annotated[int, Field(gt=0, le=MAX_REQUESTS)]], Field(min_length=1, max_length=MAX_LIST)
]


class Section(BaseModel):
    """Base of every section: immutable, strict types, unknown keys rejected."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True
    )


class ModelSpec(Section):
    """The target model; optional while timings are given directly."""

    name: Annotated[str, Field(max_length=200)] = "unnamed"
    layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] | None = None
    hidden_size: Annotated[int, Field(gt=0, le=1_000_000)] | None = None
    experts: Annotated[int, Field(gt=0, le=100_000)] | None = None
    experts_per_token: Annotated[int, Field(gt=0, le=100_000)] | None = None
    # Hardware model (sim/hardware/, docs/reference.md §All-reduce): kernels one layer launches
    # (counting its all-reduces), tensor-parallel all-reduces per layer, bytes per
    # activation element in an all-reduce message, decoder layers of the drafter.
    kernels_per_layer: Annotated[int, Field(gt=0, le=MAX_KERNELS_PER_LAYER)] | None = None
    allreduces_per_layer: Annotated[int, Field(ge=0, le=100)] = 2
    activation_bytes: Annotated[int, Field(gt=0, le=16)] = 2
    draft_layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] = 1
    # Weights, for compute derived from a GPU preset when timings are missing (roofline):
    # params per layer outside the routed experts (attention, shared expert; the whole
    # layer of a dense model), per dense layer of a MoE model, per routed expert, in the
    # LM head, and in the drafter; bytes per param (experts may be quantized apart).
    dense_layers: Annotated[int, Field(ge=0, le=MAX_LAYERS)] = 0
    layer_params: Params | None = None
    dense_layer_params: Params | None = None
    expert_params: Params | None = None
    lm_head_params: Annotated[float, Field(ge=0, le=MAX_PARAMS)] = 0.0
    draft_params: Params | None = None
    weight_bytes_per_param: Annotated[float, Field(gt=0, le=16.0)] = 2.0
    expert_bytes_per_param: Annotated[float, Field(gt=0, le=16.0)] | None = None
    # Serving (sim/hardware/batched.py): KV-cache bytes ONE tensor-parallel rank reads per
    # token of context in a target pass, all layers (MLA's latent KV is replicated on every
    # rank; GQA heads are split), and attention FLOPs per (query, key) pair per rank; the
    # drafter's KV bytes per token (default: the target's per decoder layer).
    kv_bytes_per_token: Annotated[float, Field(ge=0, le=1e12)] | None = None
    attention_flops_per_pair: Annotated[float, Field(ge=0, le=1e12)] | None = None
    draft_kv_bytes_per_token: Annotated[float, Field(ge=0, le=1e12)] | None = None
    # A hybrid target's recurrent state a request (linear attention, Gated DeltaNet, Mamba
    # layers), bytes per tensor-parallel rank, all layers: read once and written once per
    # token by every target pass (sim/model/recurrent_state.py); None or 0: none.
    state_bytes_per_request: Annotated[float, Field(ge=0, le=1e12)] | None = None
    # Its conv state beside it (the short causal convolution before each linear layer):
    # bytes per rank of one position of every linear layer's window (the conv channels /
    # TP x the model's dtype x the layers), and the window's positions in plain decoding
    # (the kernel size - 1; a server speculating k tokens keeps k more); given together.
    conv_state_bytes_per_position: Annotated[float, Field(ge=0, le=1e12)] | None = None
    conv_state_positions: Annotated[int, Field(gt=0, le=1024)] | None = None
    # The linear layers that keep those states (the rest of ``layers`` keep KV): vLLM's
    # block layout of a hybrid's pool reads it (sim/model/recurrent_state.py
    # ``BlockLayout``); None: the pool charges the states' bytes.
    linear_layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)] | None = None

    @model_validator(mode="after")
    def _kernels_cover_allreduces(self) -> Self:
        segments = max(self.allreduces_per_layer, 1)
        if (
            self.kernels_per_layer is not None
            and self.kernels_per_layer < self.allreduces_per_layer + segments
        ):
            raise ValueError(
                f"kernels_per_layer ({self.kernels_per_layer}) must count the "
                f"{self.allreduces_per_layer} all-reduces and at least one compute kernel "
                "before each"
            )
        return self

    @model_validator(mode="after")
    def _conv_state_together(self) -> Self:
        if (self.conv_state_bytes_per_position is None) != (self.conv_state_positions is None):
            raise ValueError(
                "conv_state_bytes_per_position and conv_state_positions are given together "
                "(a position's bytes and the window's positions)"
            )
        return self

    @model_validator(mode="after")
    def _linear_layers_fit(self) -> Self:
        if self.linear_layers is not None and (
            self.layers is None or self.linear_layers >= self.layers
        ):
            raise ValueError(
                f"linear_layers ({self.linear_layers}) needs layers, and at least one "
                f"attention layer beside them (layers: {self.layers})"
            )
        return self

    @model_validator(mode="after")
    def _experts_consistent(self) -> Self:
        if self.experts_per_token is not None:
            if self.experts is None:
                raise ValueError("experts_per_token is set but experts is not")
            if self.experts_per_token > self.experts:
                raise ValueError(
                    f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})"
                )
        return self


class ServerSpec(Section):
    """``[server]``: what serves the model, as the scenario's owner states it (``specsim
    init`` writes it): the engine and its version, the model's Hugging Face id, tensor
    and expert parallel sizes. ``specsim calibrate`` refuses figures whose files name
    another engine, model, num_steps or GPU count (sim/calibration/server_match.py)."""

    engine: Literal["vllm", "sglang", "trtllm"] | None = None
    engine_version: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    model_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    tensor_parallel: Annotated[int, Field(gt=0, le=1024)] | None = None
    expert_parallel: Annotated[int, Field(gt=0, le=1024)] | None = None


class HardwareSpec(Section):
    """Tensor-parallel degree, interconnect and GPU presets, launch cost, jitter.

    ``interconnect`` names a preset (``specsim hardware --list``) or an inline
    ``[hardware.interconnects.NAME]`` table; ``launch_us`` is the CPU time one kernel costs
    without a CUDA graph, all-in (framework Python, PyTorch dispatch, launch). Left out
    (None) it is derived where a measured ungraphed verify fixes it
    (``timing.verify_compute = "decode"``, sim/hardware/pass_model.py; stating it there too
    is an error), else the public 18.9 us, calibrated on a graphed-vs-eager pair
    (sim/hardware/eager.py);
    ``allreduce`` picks ``nccl`` alone, the engine's ``custom`` all-reduce where it applies,
    or ``auto`` (the faster; sim/hardware/allreduce.py); ``rank_jitter_cv`` the coefficient
    of variation of one rank's compute per layer segment (layer-level pass only; 0 =
    deterministic).
    """

    interconnects: Annotated[dict[str, InlineInterconnect], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    gpus: Annotated[int, Field(gt=0, le=MAX_GPUS)] = 1
    interconnect: str = "pcie-gen4"
    gpu: str | None = None
    launch_us: Annotated[float, Field(ge=0.0, le=1_000_000.0)] | None = None
    allreduce: Library = "auto"
    rank_jitter_cv: Annotated[float, Field(ge=0.0, le=10.0)] = 0.0
    #: Fraction of the GPU's peak memory bandwidth and FLOPs that derived compute achieves
    #: (the batch-1 roofline of a missing pass, and the extra weight reads and FLOPs of a
    #: longer verify); 1 is the roofline, which the README calls about 2x optimistic.
    bandwidth_efficiency: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0

    @field_validator("interconnect")
    @classmethod
    def _known_interconnect(cls, value: str, info: ValidationInfo) -> str:
        known = preset_names(info.data.get("interconnects"))
        if value not in known:
            raise ValueError(str(UnknownNameError("interconnect", value, known)))
        return value

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str | None) -> str | None:
        if value is not None and value not in GPU_PRESETS:
            raise ValueError(str(UnknownNameError("gpu", value, tuple(GPU_PRESETS))))
        return value


class MeasuredOn(Section):
    """The hardware the [timing] figures were measured on (filled from the file itself).

    ``load_scenario`` copies the file's own ``hardware.*`` and ``timing.verify_cuda_graph``
    here before ``--set`` overrides apply, so an override describes a what-if and the pass
    times are re-composed from this reference point (sim/hardware/pass_model.py).
    """

    interconnect: str
    gpus: Annotated[int, Field(gt=0, le=MAX_GPUS)]
    gpu: str | None = None
    verify_cuda_graph: bool
    allreduce: Library = "auto"


class TimingPoint(Section):
    """One measured pass at some batch size (``[[timing.points]]``), with its provenance.

    ``kind``: which pass; ``batch``: requests in it; ``tokens``: tokens each brings
    (default 1 for decode and draft step, k + 1 for verify and draft extend; required for
    prefills); ``context_tokens``: each request's context (default ``timing.context_tokens``,
    else 0); ``ms``: the measured time; ``source``: where the number comes from (a URL, a
    repo and path, "measured on our server on DATE").
    """

    kind: Literal["decode", "verify", "draft_step", "draft_extend", "prefill", "draft_prefill"]
    batch: Annotated[int, Field(gt=0)]
    ms: PositiveMs
    source: Annotated[str, Field(min_length=1)]
    tokens: Annotated[int, Field(gt=0)] | None = None
    context_tokens: Annotated[float, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _prefill_tokens(self) -> Self:
        if self.kind.endswith("prefill") and self.tokens is None:
            raise ValueError(f"a measured {self.kind} pass needs its tokens (prompt length)")
        return self


class TimingSpec(Section):
    """Pass times in milliseconds, as measured on the user's server (batch 1).

    The verify pass over ``m`` tokens costs
    ``verify_ms + (m - verify_tokens) * verify_ms_per_extra_token``; the line must stay
    positive down to ``m = 1``.

    A pass time left out is derived by the hardware model (sim/hardware/pass_model.py):
    verify from the calibrated decode compute scaled by the weights it reads, anything
    else from the model's weights and the GPU preset.
    """

    decode_ms: PositiveMs | None = None
    verify_ms: PositiveMs | None = None
    verify_tokens: Annotated[int, Field(gt=0, le=MAX_NUM_STEPS + 1)] | None = None
    #: Growth of the verify pass per extra verified token; left out, the hardware model
    #: derives it (sim/hardware/pass_model.py ``verify_slope``), or it is 0 when the model
    #: lacks the weights or GPU to, and the answer lists it among its assumptions.
    verify_ms_per_extra_token: NonNegativeMs | None = None
    #: How the measured verify pass grows with tokens: ``linear`` (verify_ms_per_extra_token)
    #: or ``experts``: the weight reads (and FLOPs) of the extra distinct routed experts
    #: E(1 - (1 - e/E)^m) are added to the calibrated compute (needs the model's weights
    #: and hardware.gpu).
    verify_growth: Literal["linear", "experts"] = "linear"
    #: Where the verify pass's GPU work comes from: ``measured`` (calibrated from verify_ms
    #: on the hardware it was measured on) or ``decode``: the graphed decode's calibrated
    #: compute plus the growth over the extra tokens (verify_growth), with an ungraphed
    #: verify_ms then fixing the per-kernel CPU cost of eager execution instead
    #: (sim/hardware/pass_model.py). ``decode`` needs decode_ms, and suits a graphed decode
    #: and an ungraphed verify measured on the same server.
    verify_compute: Literal["measured", "decode"] = "measured"
    draft_step_ms: PositiveMs | None = None
    #: Growth of a drafter decode pass per extra token it runs over (a tree's topk beams),
    #: used when the hardware model cannot tabulate the pass (no model geometry); 0: flat,
    #: which a memory-bound one-layer drafter at batch 1 nearly is.
    draft_ms_per_extra_token: NonNegativeMs = 0.0
    draft_extend_ms: PositiveMs | None = None
    #: The draft extend runs over the L tokens a cycle accepted: it grows by
    #: ``draft_extend_ms_per_token`` per token, ``draft_extend_ms`` being its time at
    #: ``draft_extend_tokens`` (default num_steps + 1). The closed forms take it at E[L]
    #: (exact, the growth is linear); the Monte Carlo at each cycle's L.
    draft_extend_ms_per_token: NonNegativeMs = 0.0
    draft_extend_tokens: Annotated[float, Field(gt=0.0)] | None = None
    #: Per-step drafter cost beyond a derived drafter pass (sampling, tree bookkeeping,
    #: host work): added to every drafter step the hardware model derives. A measured
    #: ``draft_step_ms`` already contains it, so giving both is an error.
    draft_step_overhead_ms: NonNegativeMs = 0.0
    cycle_overhead_ms: NonNegativeMs = 0.0
    verify_cuda_graph: bool = False
    measured_on: MeasuredOn | None = None
    #: Pass-time jitter for the Monte Carlo engines: each phase of each cycle lasts a
    #: gamma-distributed time with the phase's mean and this coefficient of variation
    #: (std / mean); 0 means every cycle takes exactly its mean (see sim/model/cycletime.py).
    #: Below 1: a gamma of shape a = 1/cv^2 has E[1/X] = 1/((a - 1) scale) only for a > 1,
    #: so the mean per-request tok/s of a one-cycle request is finite only for cv < 1
    #: (at cv = 10 a one-token request averaged 2.5e92 tok/s).
    jitter_cv: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.0
    #: Serving: the context (tokens) at which the batch-1 times above were measured (needed
    #: when KV reads or attention are modelled), and measured passes at other batch sizes.
    context_tokens: Annotated[float, Field(ge=0, le=1e8)] | None = None
    points: Annotated[list[TimingPoint], Field(max_length=MAX_LIST)] | None = None

    @model_validator(mode="after")
    def _overhead_only_for_derived_steps(self) -> Self:
        if self.draft_step_overhead_ms > 0 and self.draft_step_ms is not None:
            raise ValueError(
                "draft_step_overhead_ms is added to a derived drafter step; a measured "
                "draft_step_ms already contains it (give one of the two)"
            )
        return self


class TreeSpec(Section):
    """``[speculation.tree]``: a static draft tree verified every cycle, as vLLM's
    ``speculative_token_tree`` and EAGLE-1 configure one (sim/model/tree/inputs.py).

    Exactly one of ``paths`` (rank paths from the root: ``[[0], [1], [0, 0]]``, rank 0 the
    drafter's top-1 guess), ``vllm`` (vLLM's own string, ``"[(0,), (1,), (0, 0)]"``),
    ``preset`` (``eagle1-default``: EAGLE-1's ``mc_sim_7b_63``) or ``growmap`` (a Sequoia
    growmap saved as JSON, relative to the scenario file; read when the file is loaded,
    which replaces it by its ``paths`` and says so in ``source``). ``source``: where the
    tree comes from (free text, kept in the answer).
    """

    paths: (
        Annotated[
            list[Annotated[list[int], Field(min_length=1, max_length=MAX_NUM_STEPS)]],
            Field(min_length=1, max_length=1024),
        ]
        | None
    ) = None
    vllm: Annotated[str, Field(min_length=2, max_length=100_000)] | None = None
    preset: str | None = None
    growmap: Annotated[str, Field(min_length=1)] | None = None
    source: Annotated[str, Field(max_length=500)] | None = None

    @field_validator("paths")
    @classmethod
    def _paths_make_a_tree(cls, value: list[list[int]] | None) -> list[list[int]] | None:
        from sim.model.tree.inputs import tree_from_paths  # lazy: start-up

        if value is not None:
            tree_from_paths(value)  # ValueError naming the path
        return value

    @field_validator("vllm")
    @classmethod
    def _vllm_tree(cls, value: str | None) -> str | None:
        from sim.model.tree.inputs import parse_vllm_tree  # lazy: start-up

        if value is not None:
            parse_vllm_tree(value)
        return value

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        from sim.model.tree.inputs import TREE_PRESETS  # lazy: start-up

        if value is not None and value not in TREE_PRESETS:
            raise ValueError(str(UnknownNameError("tree preset", value, sorted(TREE_PRESETS))))
        return value

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        given = [n for n in ("paths", "vllm", "preset", "growmap") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of paths, vllm, preset, growmap")
        return self

    def rank_paths(self) -> tuple[tuple[int, ...], ...]:
        """The tree's rank paths as given (ValueError for a growmap not yet read)."""
        # lazy: only a static tree needs them (start-up)
        from sim.model.tree.inputs import parse_vllm_tree, preset_paths

        if self.paths is not None:
            return tuple(tuple(p) for p in self.paths)
        if self.vllm is not None:
            return parse_vllm_tree(self.vllm)
        if self.preset is not None:
            return preset_paths(self.preset)
        raise ValueError(
            f"growmap {self.growmap!r} is read when the scenario is loaded from its file"
        )

    def tree(self) -> "Tree":
        """The ``Tree`` (sim/model/tree/nodes.py) these paths make (built once per path list)."""
        from sim.model.tree.inputs import tree_from_paths  # lazy: start-up

        return tree_from_paths(self.rank_paths())


class SpeculationSpec(Section):
    """Chain or tree drafting as SGLang's EAGLE worker runs it (``--speculative-num-steps``,
    ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``).

    ``topk = 1`` is a chain: SGLang sets ``num_draft_tokens`` to ``num_steps + 1`` (and says
    so); the same adjustment is applied here (``draft_tokens``) and said (``adjustments``).
    ``topk > 1`` is a tree (sim/model/tree/build.py): ``num_draft_tokens`` is required, and SGLang's
    ``torch.topk`` over its ``topk + (num_steps - 1) topk^2`` candidates must be able to pick
    ``num_draft_tokens - 1`` of them. SGLang does not refuse ``topk > num_draft_tokens - 1``
    (no such check in its server arguments), so neither does specsim: the tree then verifies
    fewer drafts than the drafter expands at depth 1.
    """

    num_steps: Annotated[int, Field(ge=0, le=MAX_NUM_STEPS)]
    topk: Annotated[int, Field(gt=0, le=MAX_LIST)] = 1
    num_draft_tokens: Annotated[
        int | None, Field(gt=0, le=MAX_NUM_STEPS * MAX_LIST, validate_default=True)
    ] = None
    #: A static tree (vLLM ``speculative_token_tree``, EAGLE-1, a Sequoia growmap): then
    #: topk stays 1, num_draft_tokens unset, and num_steps is the tree's depth.
    tree: TreeSpec | None = None
    #: A block-parallel drafter (DFlash, DSpark, P-EAGLE): the chain of num_steps drafts
    #: comes from one drafter pass over num_steps query tokens a request (the sampled token
    #: and num_steps - 1 masks) instead of num_steps - 1 sequential passes; the verify and
    #: acceptance are the chain's (sim/model/cycle.py). A chain only (topk 1, no tree).
    parallel_draft: bool = False

    @field_validator("num_draft_tokens")
    @classmethod
    def _tree_fits(cls, value: int | None, info: ValidationInfo) -> int | None:
        steps, topk = info.data.get("num_steps"), info.data.get("topk")
        if steps is None or topk is None or topk == 1:
            return value
        if steps < 1:
            raise ValueError(f"topk = {topk} drafts a tree: num_steps must be >= 1")
        if value is None:
            raise ValueError(
                f"required with topk = {topk} (SGLang's --speculative-num-draft-tokens: the "
                "root plus the drafts verified)"
            )
        pool = topk + (steps - 1) * topk**2
        if not 2 <= value <= pool + 1:
            raise ValueError(
                f"{value}: SGLang verifies the root plus 1..{pool} of the {pool} candidates "
                f"that num_steps {steps} and topk {topk} draft (topk + (num_steps - 1) "
                f"topk^2), so it must be in 2..{pool + 1}"
            )
        return value

    @model_validator(mode="after")
    def _parallel_is_a_chain(self) -> Self:
        if self.parallel_draft and (self.topk != 1 or self.tree is not None):
            raise ValueError(
                "speculation.parallel_draft: a block-parallel drafter proposes a chain; "
                "leave topk at 1 and speculation.tree out"
            )
        return self

    @model_validator(mode="after")
    def _static_tree_fits(self) -> Self:
        if self.tree is None or self.tree.growmap is not None:
            return self
        if self.topk != 1 or self.num_draft_tokens is not None:
            raise ValueError(
                "speculation.topk: a static tree (speculation.tree) fixes its own width "
                "and size; leave topk and num_draft_tokens out"
            )
        depth = self.tree.tree().max_depth
        if self.num_steps != depth:
            raise ValueError(
                f"speculation.num_steps: {self.num_steps}, but speculation.tree is {depth} "
                f"deep; set num_steps = {depth} (the most drafts one cycle can accept)"
            )
        return self

    @property
    def is_tree(self) -> bool:
        return self.topk > 1 or self.tree is not None

    @property
    def static_tree(self) -> "Tree | None":
        """The static ``Tree`` of ``[speculation.tree]``, or None (a chain or SGLang's)."""
        return None if self.tree is None else self.tree.tree()

    @property
    def rank_width(self) -> int:
        """Ranks the acceptance needs rates for: topk, or the static tree's width."""
        return self.topk if self.tree is None else max(self.tree.tree().width, 1)

    @property
    def draft_tokens(self) -> int:
        """Tokens in one verify pass: the last accepted token plus the drafts."""
        if self.tree is not None:
            return int(self.tree.tree().size)
        if self.is_tree:
            assert self.num_draft_tokens is not None
            return self.num_draft_tokens
        return self.num_steps + 1

    @property
    def adjustments(self) -> tuple[str, ...]:
        """SGLang's own adjustments of the given values, as sentences: a chain's
        num_draft_tokens is num_steps + 1 whatever is given (the given value is kept in the
        file's data, so a later topk > 1 override finds it)."""
        n = self.num_draft_tokens
        if self.is_tree or n is None or n == self.num_steps + 1:
            return ()
        return (
            f"speculation.num_draft_tokens {n} -> {self.num_steps + 1}: SGLang sets it to "
            "num_steps + 1 when topk = 1",
        )


class Heterogeneity(Section):
    """Per-request spread of acceptance: a Beta distribution around each mean rate.

    Each request draws its rate from Beta(m * c, (1 - m) * c) with mean m (the class's
    ``alpha`` or each ``per_position`` entry) and concentration c, given directly
    (``concentration``) or through a standard deviation (``std``, giving
    c = m (1 - m) / std^2 - 1). Neither set: every request has exactly the mean rates.
    """

    concentration: Annotated[float, Field(gt=0.0, le=1e9)] | None = None
    std: Annotated[float, Field(ge=0.0, lt=0.5)] | None = None

    @model_validator(mode="after")
    def _one_spread(self) -> Self:
        if self.concentration is not None and self.std is not None:
            raise ValueError("give at most one of concentration or std")
        return self

    def _check_std(self, means: list[float]) -> None:
        """std must leave a proper Beta: std^2 < m (1 - m) for every mean strictly in (0, 1)."""
        if not self.std:
            return
        for m in means:
            if 0.0 < m < 1.0 and self.std**2 >= m * (1.0 - m):
                raise ValueError(
                    f"std {self.std:g} is too large for mean rate {m:g}: a Beta distribution "
                    f"with that mean has std below {(m * (1.0 - m)) ** 0.5:.4g}"
                )


class AcceptanceClass(Heterogeneity):
    """One class of a workload mix (``[[acceptance.mix]]``): e.g. chat or code."""

    name: Annotated[str, Field(max_length=200)]
    weight: Annotated[float, Field(gt=0.0, le=1e9)]
    alpha: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1, max_length=MAX_NUM_STEPS)] | None = None

    @model_validator(mode="after")
    def _exactly_one_rate(self) -> Self:
        given = [n for n in ("alpha", "per_position") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"mix class {self.name!r}: give exactly one of alpha or per_position")
        self._check_std([self.alpha] if self.alpha is not None else list(self.per_position or []))
        return self


#: Keys of [acceptance] that say what was measured; exactly one is given.
ACCEPTANCE_ANCHORS: tuple[str, ...] = (
    "alpha",
    "accept_length",
    "first_rate",
    "per_position",
    "mix",
    "rank_rates",
    "rank_rates_by_depth",
)

Shape = Literal["auto", "flat", "geometric", "step", "repeat"]
Method = Literal["eagle3", "eagle", "mtp", "draft_model", "generic"]


class AcceptanceSpec(Heterogeneity):
    """Conditional per-position acceptance: what was measured, its shape by position, and
    for trees its rank-wise form.

    One anchor: ``alpha`` (the equal rate that gives the measured accept length at
    ``measured_num_steps``), ``accept_length`` (measured there), ``first_rate`` (a_1),
    ``per_position`` (measured conditional rates a_1..a_n), ``mix`` (weighted classes,
    each with ``alpha`` or ``per_position``) or ``rank_rates``. ``shape`` says how the rate
    varies with position (sim/model/shapes.py): ``flat``, ``geometric`` or ``step`` with
    ``decay``, and for a ``per_position`` list how it continues past the list (``repeat``:
    the last rate repeats). ``auto`` (the default): a list of three or more rates continues
    by the shape with the lowest held-out error on it; otherwise the decay prior of
    ``method`` (sim/binding/priors.py) gives shape and decay (``rank_rates``, given "at
    every depth", stay flat under ``auto``). ``concentration`` or ``std`` make the rates
    vary per request (Beta around the mean); at the top level of a mix they are the
    default of classes that set neither.

    Trees (``speculation.topk > 1``; sim/model/tree/theory.py) need the other ranks too:
    ``rank_rates = [q_1, ..., q_W]`` gives P(the target's token is the drafter's rank-r guess
    | its parent was accepted) at every depth (q_1 then plays the role of the first rate), or
    ``rank_profile`` names a published profile (sim/model/tree/presets.py) whose shape the
    ranks 2..W take while the other anchors give the top-1 rate. Either way the ranks
    below the first follow the top-1 rate by residual shares (sim/model/tree/rates.py:
    q_r = (1 - q_1) h_r, h_r = p_r / (1 - p_1)), so a search or a per-depth top-1 rate keeps
    the profile's shape. ``rank_rates_by_depth = [[q_1, ..., q_W], ...]`` gives the rank
    rates measured at each depth (row d at depth d + 1, the last row repeating below): the
    top-1 rate of each depth and, below it, that depth's own residual shares (rank profiles
    that differ by depth). ``rank_extend = "geometric"`` extends a profile shorter than topk
    (each further share is the last one times the ratio of the last two).
    """

    alpha: Rate | None = None
    accept_length: Annotated[float, Field(ge=1.0, le=MAX_NUM_STEPS + 1)] | None = None
    first_rate: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1, max_length=MAX_NUM_STEPS)] | None = None
    mix: Annotated[list[AcceptanceClass], Field(min_length=1, max_length=MAX_LIST)] | None = None
    rank_rates: Annotated[list[Rate], Field(min_length=1, max_length=MAX_LIST)] | None = None
    #: Rank rates measured at each depth: row d is [q_1, ..., q_W] at depth d + 1 (the last
    #: row repeats below the list); every row has the same W.
    rank_rates_by_depth: (
        Annotated[
            list[Annotated[list[Rate], Field(min_length=1, max_length=MAX_LIST)]],
            Field(min_length=1, max_length=MAX_NUM_STEPS),
        ]
        | None
    ) = None
    rank_profile: str | None = None
    rank_extend: Literal["none", "geometric"] = "none"
    shape: Shape = "auto"
    decay: Annotated[float, Field(gt=0.0, le=2.0)] | None = None
    method: Method = "generic"
    #: The num_steps the alpha or accept length was measured at (default: the file's
    #: speculation.num_steps, filled in when the scenario is read).
    measured_num_steps: Annotated[int, Field(gt=0, le=MAX_NUM_STEPS)] | None = None
    #: log rho: past the measured positions every rate is rho times the shape's per
    #: position (0: the shape as it is). Left out with shape ``auto``: the nominal shape
    #: error of published profiles and cross-run series, which falls
    #: (sim/binding/priors.py ``shape_error``); with a given shape 0.
    tilt: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None

    @field_validator("rank_rates")
    @classmethod
    def _disjoint_ranks(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and sum(value) > 1.0 + 1e-9:
            raise ValueError(
                f"rank rates sum to {sum(value):.6g} > 1: the ranks are disjoint events (the "
                "target's token is at most one of the drafter's guesses)"
            )
        if value is not None and len(value) > 1 and value[0] >= 1.0:
            raise ValueError("with q_1 = 1 the other ranks must be 0: give a single rate")
        return value

    @field_validator("rank_rates_by_depth")
    @classmethod
    def _rows_are_rank_rates(cls, value: list[list[float]] | None) -> list[list[float]] | None:
        if value is None:
            return value
        for d, row in enumerate(value, start=1):
            if len(row) != len(value[0]):
                raise ValueError(
                    f"depth {d} gives {len(row)} ranks, depth 1 gives {len(value[0])}: every "
                    "depth gives the same ranks"
                )
            cls._disjoint_ranks(row)
        return value

    @field_validator("rank_profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        # lazy: only a tree's rank profile needs it (start-up)
        from sim.model.tree.presets import RANK_PROFILES

        if value is not None and value not in RANK_PROFILES:
            raise ValueError(str(UnknownNameError("rank profile", value, sorted(RANK_PROFILES))))
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [n for n in ACCEPTANCE_ANCHORS if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(ACCEPTANCE_ANCHORS)}")
        if self.rank_rates is not None and self.rank_profile is not None:
            raise ValueError("give rank_rates or rank_profile, not both")
        if self.rank_rates_by_depth is not None and self.rank_profile is not None:
            raise ValueError("give rank_rates_by_depth or rank_profile, not both")
        if self.mix is not None:
            names_ = [c.name for c in self.mix]
            if len(set(names_)) != len(names_):
                raise ValueError(f"mix class names must be unique, got {names_}")
            if self.std:
                for cls in self.mix:
                    if cls.concentration is None and cls.std is None:
                        cls_rates = [cls.alpha] if cls.alpha is not None else cls.per_position
                        self._check_std(list(cls_rates or []))
        else:
            self._check_std(self.top1_listed())
        return self

    @model_validator(mode="after")
    def _shape_fits_anchor(self) -> Self:
        listed = self.per_position is not None or self.mix is not None
        if self.shape == "repeat" and not listed:
            raise ValueError("shape = 'repeat' continues a per_position list; use flat")
        if self.decay is not None and self.shape not in ("geometric", "step"):
            raise ValueError(
                f"decay is the parameter of shape 'geometric' or 'step', not {self.shape!r}"
            )
        k0 = self.measured_num_steps
        if self.accept_length is not None and k0 is not None and self.accept_length > k0 + 1:
            raise ValueError(
                f"accept_length {self.accept_length:g} exceeds measured_num_steps + 1 = {k0 + 1}"
            )
        return self

    @property
    def anchor(self) -> str:
        """Which of ``ACCEPTANCE_ANCHORS`` this section gives."""
        return next(n for n in ACCEPTANCE_ANCHORS if getattr(self, n) is not None)

    def top1_listed(self) -> list[float]:
        """The top-level top-1 rates as given (empty for a mix or an accept length)."""
        if self.alpha is not None:
            return [self.alpha]
        if self.first_rate is not None:
            return [self.first_rate]
        if self.rank_rates is not None:
            return [self.rank_rates[0]]
        if self.rank_rates_by_depth is not None:
            return [row[0] for row in self.rank_rates_by_depth]
        return list(self.per_position or [])

    def rank_shape(self) -> list[float] | None:
        """The rank profile p_1..p_W that shapes ranks 2..W (None: none given)."""
        if self.rank_rates is not None:
            return list(self.rank_rates)
        if self.rank_rates_by_depth is not None:  # depth 1's (each depth: ``rank_shapes``)
            return list(self.rank_rates_by_depth[0])
        if self.rank_profile is not None:
            # lazy: only a tree's rank profile needs it (start-up)
            from sim.model.tree.presets import rank_profile

            return list(rank_profile(self.rank_profile).rates)
        return None

    def rank_shape_field(self) -> str:
        if self.rank_rates_by_depth is not None:
            return "acceptance.rank_rates_by_depth"
        return "acceptance.rank_profile" if self.rank_profile else "acceptance.rank_rates"

    @property
    def heterogeneous(self) -> bool:
        """True when rates vary from request to request (a mix or a Beta spread)."""
        if self.mix is not None:
            return True
        return bool(self.concentration is not None or self.std)


class WorkloadSpec(Section):
    """Output tokens per request and requests per replication; for serving also prompts.

    Serving keys (absent keys keep the batch-1 meaning): ``input_tokens`` (prompt tokens,
    default 0); ``lengths``: ``fixed`` (every request has ``input_tokens`` and
    ``output_tokens``), ``lognormal`` (those are the means, ``input_sigma`` and
    ``output_sigma`` the log-space standard deviations, ``*_max_tokens`` the caps, default
    the 0.9999 quantile), ``empirical`` (input and output drawn from the rows of
    ``lengths_trace``, a trace CSV) or ``ordered`` (a closed-loop job replaying the rows of
    ``lengths_trace`` in file order: each of the ``serving.concurrency`` users sends the
    next row's request when its last one is answered, until none is left; measured whole,
    no warm-up); ``warmup_requests``: requests discarded at the start of each replication
    (default: the larger of the concurrency and a tenth of ``requests``).
    """

    output_tokens: Annotated[int, Field(gt=0, le=MAX_OUTPUT_TOKENS)] = 512
    requests: Annotated[int, Field(gt=0, le=MAX_REQUESTS)] = 100
    input_tokens: Annotated[int, Field(ge=0, le=10 * MAX_OUTPUT_TOKENS)] | None = None
    lengths: Literal["fixed", "lognormal", "empirical", "ordered"] | None = None
    input_sigma: Annotated[float, Field(ge=0, le=MAX_LOG_SIGMA)] | None = None
    output_sigma: Annotated[float, Field(ge=0, le=MAX_LOG_SIGMA)] | None = None
    input_max_tokens: Annotated[int, Field(gt=0, le=10 * MAX_OUTPUT_TOKENS)] | None = None
    output_max_tokens: Annotated[int, Field(gt=0, le=MAX_OUTPUT_TOKENS)] | None = None
    lengths_trace: Annotated[str, Field(min_length=1)] | None = None
    warmup_requests: Annotated[int, Field(ge=0, le=MAX_REQUESTS)] | None = None

    @model_validator(mode="after")
    def _length_model(self) -> Self:
        if self.lengths == "lognormal":
            if self.output_sigma is None:
                raise ValueError("lengths = 'lognormal' needs output_sigma")
            if (self.input_tokens or 0) > 0 and self.input_sigma is None:
                raise ValueError("lengths = 'lognormal' with input_tokens needs input_sigma")
        if self.lengths in ("empirical", "ordered") and self.lengths_trace is None:
            raise ValueError(f"lengths = {self.lengths!r} needs lengths_trace (a trace CSV)")
        if self.lengths_trace is not None and self.lengths not in ("empirical", "ordered"):
            raise ValueError("lengths_trace is only read with lengths = 'empirical' or 'ordered'")
        if self.lengths == "ordered" and self.warmup_requests:
            raise ValueError(
                "lengths = 'ordered' replays a job measured whole: warmup_requests must be "
                "absent or 0"
            )
        for side in ("input", "output"):
            cap = getattr(self, f"{side}_max_tokens")
            mean = getattr(self, f"{side}_tokens") or 0
            if cap is not None and cap < mean:
                raise ValueError(f"{side}_max_tokens ({cap}) is below {side}_tokens ({mean})")
        return self


class ModelErrorSpec(Section):
    """The serving model's own error under load (sim/model/model_error.py): the standard
    deviation of ln(measured / predicted) as a function of the log distance d of the
    decode batch to the nearest measured batch. A policy's tok/s or TPOT: s sqrt(d),
    ``level_per_sqrt_log_load`` = s; a paired ratio of two policies (speculative over plain
    decoding, one k over another): a (1 - exp(-d / d0)), ``gain_ceiling`` = a,
    ``gain_log_load_scale`` = d0 (> 0, in ln load). None: the default estimated on the
    public concurrency curves; s = 0 or a = 0: no model-error term of that kind.

    ``level`` and ``gain`` (s per unit ln load of the linear form s d, which the
    pre-registered rule replaced) are refused rather than read with the new meaning."""

    level_per_sqrt_log_load: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    gain_ceiling: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    gain_log_load_scale: Annotated[float, Field(gt=0.0, le=200.0)] | None = None
    level: SkipJsonSchema[None] = None
    gain: SkipJsonSchema[None] = None

    @field_validator("level", "gain", mode="before")
    @classmethod
    def _removed(cls, value: object, info: ValidationInfo) -> None:
        if value is not None:
            new = (
                "level_per_sqrt_log_load (s of s sqrt(d))"
                if info.field_name == "level"
                else "gain_ceiling and gain_log_load_scale (a and d0 of a (1 - exp(-d / d0)))"
            )
            raise ValueError(
                f"removed: it was s per unit ln(load) of the form s d, which the model error "
                f"no longer uses; give {new} (docs/serving-intervals.md)"
            )
        return None


class CalibrationFigure(Section):
    """One figure a calibration fitted (``[[serving.calibrated_on]]``), as ``specsim
    calibrate --load-sweep`` writes it: the serving answers' intervals re-fit the terms
    it identified (``serving.calibrated_terms``) to these figures in every draw, so that
    each drawn scenario still reproduces them (sim/calibration/load_record.py).

    ``metric``: what was measured (``tpot_ms``: a request's mean decode time per output
    token); ``measured``: its value; ``stderr``: its own standard error where the run gave
    a spread (std / sqrt(completed)); ``load``: requests decoding together (``load_kind``:
    ``concurrency`` of a closed loop, a static ``batch``, or the mean ``in flight`` of an
    open loop at ``rate_per_s``); ``speculative``: whether the run speculated (None: the
    file does not say, the scenario decides); ``accept_length`` (bonus included),
    ``context_tokens`` (mean prompt + half the answer), ``num_steps`` / ``topk`` /
    ``num_draft_tokens`` (the run's own draft) where the file gives them; ``source``: the
    file, ``where`` in it, ``format`` the tool that wrote it. ``workers``, ``input_lens``
    and ``output_lens`` (together): the run's own job where its file listed each
    completed request (sim/calibration/run_job.py), which the fit and every draw's refit
    price instead of the mean context.
    """

    metric: Literal["tpot_ms"]
    measured: PositiveMs
    stderr: NonNegativeMs | None = None
    load: Annotated[float, Field(ge=1e-6, le=1e6)]
    load_kind: Literal["concurrency", "batch", "in flight"]
    rate_per_s: Annotated[float, Field(ge=MIN_RATE_PER_S, le=MAX_RATE_PER_S)] | None = None
    speculative: bool | None = None
    accept_length: Annotated[float, Field(ge=1.0, le=4097.0)] | None = None
    context_tokens: Annotated[float, Field(ge=0.0, le=1e9)] | None = None
    num_steps: Annotated[int, Field(ge=0, le=4096)] | None = None
    topk: Annotated[int, Field(ge=0, le=4096)] | None = None
    num_draft_tokens: Annotated[int, Field(ge=0, le=4096)] | None = None
    source: Annotated[str, Field(min_length=1, max_length=1000)]
    where: Annotated[str, Field(max_length=200)] = ""
    format: Annotated[str, Field(max_length=200)] = ""
    workers: Annotated[int, Field(ge=1, le=MAX_JOB_REQUESTS)] | None = None
    input_lens: (
        Annotated[
            list[Annotated[int, Field(ge=0, le=10 * MAX_OUTPUT_TOKENS)]],
            Field(min_length=1, max_length=MAX_JOB_REQUESTS),
        ]
        | None
    ) = None
    output_lens: (
        Annotated[
            list[Annotated[int, Field(ge=0, le=MAX_OUTPUT_TOKENS)]],
            Field(min_length=1, max_length=MAX_JOB_REQUESTS),
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _whole_draft(self) -> Self:
        given = [self.num_steps is None, self.topk is None, self.num_draft_tokens is None]
        if len(set(given)) > 1:
            raise ValueError("give num_steps, topk and num_draft_tokens together, or none")
        return self

    @model_validator(mode="after")
    def _whole_job(self) -> Self:
        given = [self.workers is None, self.input_lens is None, self.output_lens is None]
        if len(set(given)) > 1:
            raise ValueError("give workers, input_lens and output_lens together, or none")
        if self.input_lens is not None and self.output_lens is not None:
            if len(self.input_lens) != len(self.output_lens):
                raise ValueError(
                    f"{len(self.output_lens)} output_lens against {len(self.input_lens)} "
                    "input_lens (one a request each)"
                )
            if max(self.output_lens) < 2:
                raise ValueError("no request of two or more output tokens: nothing decoded")
        return self


#: The batched terms a load sweep can fit (``serving.calibrated_terms``).
CalibratedTerm = Literal["host_us_per_request", "kernel_slope", "expert_skew", "host_spec_factor"]


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
    from one public serving trace; 0: uniform routing). ``specsim calibrate --load-sweep``
    fits them with ``host_us_per_request`` from measured concurrency sweeps, and records
    what it fitted: ``calibrated_on``, the figures (``CalibrationFigure``), and
    ``calibrated_terms``, the terms they identified; the serving answers' intervals re-fit
    those terms to those figures in every draw (docs/load-calibration.md).

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


class SimulationSpec(Section):
    """Monte Carlo replications and the root seed."""

    replications: Annotated[int, Field(gt=0, le=MAX_REPLICATIONS)] = 20
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0


class TargetsSpec(Section):
    """Throughput targets in tokens per second (per request, batch 1)."""

    tok_s: Annotated[
        list[Annotated[float, Field(gt=0.0, le=MAX_TOK_S)]],
        Field(min_length=1, max_length=MAX_LIST),
    ]


class FieldUncertainty(Section):
    """How well one numeric field is known: a standard error or a plausible range.

    ``stderr`` (a number, or for a list field one per entry) is a measurement error,
    sampled as a normal around the value; ``range = [low, high]`` a plausible range,
    sampled uniformly. ``origin`` says what the value is (``measured``, the default with a
    stderr; ``assumed``, the default with a range or with neither; ``calibrated``, written
    by ``specsim calibrate``; ``derived``, from published data, as calibrate writes the
    shape error); ``reason`` says why.
    """

    stderr: (
        Annotated[float, Field(ge=0.0)]
        | Annotated[list[Annotated[float, Field(ge=0.0)]], Field(max_length=MAX_NUM_STEPS)]
        | None
    ) = None
    range: Annotated[list[float], Field(min_length=2, max_length=2)] | None = None
    origin: Literal["measured", "assumed", "calibrated", "derived"] | None = None
    reason: Annotated[str, Field(max_length=10_000)] = ""

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if self.stderr is not None and self.range is not None:
            raise ValueError("give a stderr or a range, not both")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError(f"range low {self.range[0]:g} is above high {self.range[1]:g}")
        return self

    @property
    def resolved_origin(self) -> str:
        if self.origin is not None:
            return self.origin
        return "measured" if self.stderr is not None else "assumed"


class Correlation(Section):
    """Correlations between fields with a ``stderr`` (``specsim calibrate`` writes the
    correlations of the values it fits): a symmetric matrix with unit diagonal."""

    fields: Annotated[list[str], Field(min_length=2, max_length=MAX_LIST)]
    matrix: Annotated[list[list[float]], Field(max_length=MAX_LIST)]

    @model_validator(mode="after")
    def _valid_matrix(self) -> Self:
        n = len(self.fields)
        if len(set(self.fields)) != n:
            raise ValueError("correlation fields must be distinct")
        if len(self.matrix) != n or any(len(row) != n for row in self.matrix):
            raise ValueError(f"matrix must be {n} x {n}, one row and column per field")
        for i in range(n):
            if abs(self.matrix[i][i] - 1.0) > 1e-9:
                raise ValueError("matrix diagonal must be 1")
            for j in range(n):
                if abs(self.matrix[i][j] - self.matrix[j][i]) > 1e-9:
                    raise ValueError("matrix must be symmetric")
                if abs(self.matrix[i][j]) > 1.0 + 1e-9:
                    raise ValueError("correlations must lie in [-1, 1]")
        if np.linalg.eigvalsh(np.array(self.matrix, dtype=float)).min() < -1e-9:
            raise ValueError("matrix is not positive semi-definite")
        return self


class UncertaintySpec(Section):
    """``[uncertainty]``: errors and ranges of numeric fields, by section.

    ``timing.verify_ms = { stderr = 0.5, reason = "..." }`` under ``[uncertainty]`` (a
    TOML dotted key) or ``verify_ms = {...}`` under ``[uncertainty.timing]``; a list field
    takes a stderr per entry (``acceptance.per_position = { stderr = [0.01, 0.02] }``).
    ``[uncertainty.correlation]`` correlates fields that have a stderr (list entries as
    ``acceptance.per_position[0]``).
    """

    model: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    hardware: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    timing: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    acceptance: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    #: the batched terms (``serving.host_us_per_request``, ``kernel_slope``,
    #: ``expert_skew``): ``specsim calibrate --load-sweep`` writes their fitted errors or
    #: plausible ranges here, for the intervals of serving answers
    serving: Annotated[dict[str, FieldUncertainty], Field(max_length=MAX_LIST)] = Field(
        default_factory=dict
    )
    correlation: Correlation | None = None

    def entries(self) -> dict[str, FieldUncertainty]:
        """Every entry by its dotted field (``timing.verify_ms``)."""
        out: dict[str, FieldUncertainty] = {}
        for section in ("model", "hardware", "timing", "acceptance", "serving"):
            for key, entry in getattr(self, section).items():
                out[f"{section}.{key}"] = entry
        return out


class Scenario(Section):
    """One validated scenario file (after overrides): plain, frozen data.

    ``origins`` says where each value comes from (sim/scenario/origins.py): set by the
    loader beside the values, never read from a file, left out of dumps, of the JSON
    Schema and of equality (which compares the values only). What the values mean for the
    model is sim/binding/ (``bind(scenario) -> Bound``).
    """

    origins: SkipJsonSchema[Origins] = Field(default_factory=Origins, exclude=True, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        mine, theirs = dict(self.__dict__), dict(other.__dict__)
        mine.pop("origins", None)
        theirs.pop("origins", None)
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]  # lists inside: not hashable

    def given_origin(self, dotted: str) -> tuple[str, str]:
        """(origin, reason) of a field by how the scenario got it (no derivation): set
        afterwards, described under ``[uncertainty]``, given by the file, or the default."""
        found = self.field_origins()[dotted]
        return found.origin, found.reason

    def field_origins(self) -> FieldOrigins:
        """Every field's origin at once, as ``given_origin`` reads one: set afterwards
        (``override``), described under ``[uncertainty]`` (its origin, reason, stderr and
        range), given by the file (``measured``), else the default."""
        known = dict.fromkeys(
            given_prefixes(self.origins.given), FieldOrigin("measured", "given in the scenario")
        )
        for dotted, entry in self.uncertainty.entries().items():
            span = (entry.range[0], entry.range[1]) if entry.range is not None else None
            known[dotted] = FieldOrigin(entry.resolved_origin, entry.reason, entry.stderr, span)
        for dotted, via in self.origins.overrides.items():
            known[dotted] = FieldOrigin("override", f"set by {via}")
        return FieldOrigins(known)

    name: Annotated[str, Field(max_length=200)]
    description: Annotated[str, Field(max_length=10_000)] = ""
    model: ModelSpec = ModelSpec()
    server: ServerSpec = ServerSpec()
    hardware: HardwareSpec = HardwareSpec()
    timing: TimingSpec = TimingSpec()
    speculation: SpeculationSpec
    acceptance: AcceptanceSpec | None = None
    workload: WorkloadSpec = WorkloadSpec()
    serving: ServingSpec | None = None
    simulation: SimulationSpec = SimulationSpec()
    targets: TargetsSpec | None = None
    uncertainty: UncertaintySpec = UncertaintySpec()

    @model_validator(mode="before")
    @classmethod
    def _fill_measured_num_steps(cls, data: Any) -> Any:
        """An alpha or accept length was measured at the scenario's num_steps unless it
        says otherwise (files are filled at load, before ``--set``, see load.py)."""
        if isinstance(data, dict):
            fill_measured_num_steps(data)
        return data

    @model_validator(mode="after")
    def _uncertain_fields_are_numbers(self) -> Self:
        entries = self.uncertainty.entries()
        for dotted, entry in entries.items():
            where = f"uncertainty.{dotted}"
            section, key = dotted.split(".", 1)
            value = getattr(getattr(self, section), key, None) if hasattr(self, section) else None
            model_fields = type(getattr(self, section)).model_fields
            if key not in model_fields:
                raise _field_error(where, f"{section} has no field {key!r}")
            if isinstance(value, list):
                if not all(isinstance(v, int | float) for v in value):
                    raise _field_error(where, "not a numeric field")
                if entry.range is not None:
                    raise _field_error(where, "a list field takes a stderr (one or per entry)")
                if isinstance(entry.stderr, list) and len(entry.stderr) != len(value):
                    raise _field_error(
                        where,
                        f"{len(entry.stderr)} stderr{'s' * (len(entry.stderr) != 1)} for "
                        f"{len(value)} entr{'ies' if len(value) != 1 else 'y'}",
                    )
                continue
            if value is None:
                raise _field_error(where, f"{dotted} has no value here to be uncertain about")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _field_error(where, f"not a numeric field (value {value!r})")
            if isinstance(entry.stderr, list):
                raise _field_error(where, "a single value takes a single stderr")
            if entry.range is not None and not entry.range[0] <= value <= entry.range[1]:
                raise _field_error(
                    where,
                    f"range [{entry.range[0]:g}, {entry.range[1]:g}] does not contain the "
                    f"value {value:g}",
                )
        corr = self.uncertainty.correlation
        if corr is not None:
            for name in corr.fields:
                base = name.split("[", 1)[0]
                stated = entries.get(base)
                if stated is None or stated.stderr is None:
                    raise _field_error(
                        "uncertainty.correlation.fields",
                        f"{name} has no stderr in [uncertainty] to correlate",
                    )
        return self

    @model_validator(mode="after")
    def _acceptance_when_speculating(self) -> Self:
        if self.acceptance is None and self.speculation.num_steps > 0:
            raise ValueError("[acceptance] is required when speculation.num_steps > 0")
        timing = self.timing
        if timing.draft_extend_ms is not None and timing.draft_extend_ms_per_token > 0:
            tokens = timing.draft_extend_tokens or self.num_steps + 1
            at_one = timing.draft_extend_ms - (tokens - 1) * timing.draft_extend_ms_per_token
            if at_one < 0:
                raise ValueError(
                    "timing.draft_extend_ms_per_token is too large for timing.draft_extend_ms: "
                    f"the draft extend over 1 token would take {at_one:.3g} ms"
                )
        if timing.verify_ms is None:
            return self
        measured_tokens = timing.verify_tokens or self.speculation.draft_tokens
        at_one = timing.verify_ms - (measured_tokens - 1) * (
            timing.verify_ms_per_extra_token or 0.0
        )
        if at_one <= 0:
            raise ValueError(
                "timing.verify_ms_per_extra_token is too large for timing.verify_ms: the verify "
                f"pass over 1 token would take {at_one:.3g} ms"
            )
        return self

    @model_validator(mode="after")
    def _gpus_in_one_domain(self) -> Self:
        """Tensor parallelism within one domain of the link: no more GPUs than it holds
        (``Interconnect.max_gpus``), for the hardware asked about and the measured one."""
        checks = [("hardware.gpus", self.hardware.interconnect, self.hardware.gpus)]
        ref = self.timing.measured_on
        if ref is not None:
            checks.append(("timing.measured_on.gpus", ref.interconnect, ref.gpus))
        for where, name, gpus in checks:
            try:
                beyond = resolve_interconnect(name, self.hardware.interconnects).domain_error(gpus)
            except (UnknownNameError, ValueError):
                continue  # an unknown name is the interconnect field's own error
            if beyond is not None:
                raise _field_error(where, beyond)
        return self

    @property
    def num_steps(self) -> int:
        return self.speculation.num_steps

    @property
    def target_tok_s(self) -> tuple[float, ...]:
        return tuple(self.targets.tok_s) if self.targets else ()


def _field_error(field: str, message: str) -> ValueError:
    """A validation error naming a dotted field inside its message (validate.py reports it)."""
    return ValueError(f"{field}: {message}")


def fill_measured_num_steps(raw: dict[str, Any]) -> None:
    """Set ``acceptance.measured_num_steps`` from ``speculation.num_steps`` in place when
    the acceptance is an alpha, an accept length or a mix and does not say it."""
    acc, spec = raw.get("acceptance"), raw.get("speculation")
    if not isinstance(acc, dict) or not isinstance(spec, dict):
        return
    k = spec.get("num_steps")
    if "measured_num_steps" in acc or not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return
    if any(key in acc for key in ("alpha", "accept_length", "mix")):
        acc["measured_num_steps"] = k
