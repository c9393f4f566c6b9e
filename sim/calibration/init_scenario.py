"""``specsim init``: a scenario of a server from what its owner has, every value with its
origin (a user flag, a config.json field, a named engine default).

From the model's Hugging Face ``config.json`` (sim/calibration/hf_config.py), a GPU preset
and count, the tensor-parallel size, the engine (sim/calibration/engine_defaults.py), the
drafter and k (not given: those a ``trtllm-bench`` report states, its
``decoding_stats.mode`` and draft length, sim/calibration/reported_drafter.py). Measurement
files, when given, go to ``calibrate`` with this scenario as its base (the CLI does it):
the pass times then come from them, the rest from here.

The drafter's weights read a pass (``model.draft_params``):

- ``eagle3``: from the drafter's own config.json when given (``--draft-config``;
  sim/calibration/eagle3_drafter.py: its layer, fc and LM head over its draft vocabulary,
  checked against the target's hidden size and vocabulary); else, dense targets only, one
  decoder layer over the 2 x hidden input (q, k, v from 2 x hidden, o, the target's dense
  FFN), the fc fusing three hidden states (3 x hidden x hidden) and an LM head over the full
  vocabulary (an upper end: EAGLE-3 drafters often keep a 32k draft vocabulary);
- ``eagle``: one decoder layer over the hidden size, the fc (2 x hidden x hidden) and the
  target's LM head;
- ``mtp``: the config's MTP modules, ``num_nextn_predict_layers`` (DeepSeek-V3, Kimi-K2) or
  ``mtp_num_hidden_layers`` (the Qwen3.5 family, in ``text_config`` when nested), each a
  target decoder layer (its active experts only, at batch 1) with eh_proj / fc (2 x hidden x
  hidden) and the shared LM head (a DeepSeek-style module of a checkpoint stored at mixed
  widths at its own mean, ``model.draft_bytes_per_param``: sim/calibration/weight_bytes.py
  ``mtp_module_bytes``); on a hybrid target the MTP layer is full attention
  (vLLM's qwen3_5_mtp.py), so its KV a token is one full-attention layer's
  (``model.draft_kv_bytes_per_token``: the target's KV over its full-attention layers,
  times the modules);
- ``draft_model``: every layer of the draft model's own config.json and its LM head;
- ``dflash``, ``dspark``: block-parallel drafters (``speculation.parallel_draft``: the k
  drafts from one drafter pass), sized from the checkpoint's config.json (``--draft-config``;
  sim/calibration/parallel_drafter.py): its decoder layers, the fc over the target layers it
  reads, the target's LM head when it shares the vocabulary, DSpark's Markov projection at
  each position; its layers and KV a token too.

An MLA model (``kv_lora_rank``) under ``--engine vllm`` gets the KV block vLLM's MLA backend
forces on the GPU as ``serving.kv_block_tokens`` (sim/calibration/mla_blocks.py: 64 on
Hopper and, with FlashInfer MLA, Blackwell; 128 with CUTLASS MLA; 16 elsewhere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from sim.binding.bind import pass_times
from sim.calibration.calibrate import calibrate
from sim.calibration.drafter_size import UNSTATED_DTYPE, drafter_bytes, unstated_bytes
from sim.calibration.eagle3_drafter import eagle3_drafter, is_eagle3_drafter
from sim.calibration.engine_defaults import ENGINES, GPU_INTERCONNECT
from sim.calibration.hf_config import (
    HfModel,
    hf_model_of,
    language_config,
    quantized_part,
    read_hf_config,
    read_json,
    read_raw,
)
from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.init_job import InitJob
from sim.calibration.init_workload import init_workload
from sim.calibration.kv_cache_dtype import (
    KvCache,
    drafter_kv_cache,
    kv_cache_of,
    reported_kv_cache,
)
from sim.calibration.measurements import Measurements
from sim.calibration.mla_blocks import vllm_mla_block
from sim.calibration.parallel_drafter import PARALLEL_DRAFTERS, parallel_drafter
from sim.calibration.reported_drafter import check_reported_drafter, reported_drafter
from sim.calibration.result import Calibration
from sim.calibration.server_match import check_init_quantization, check_init_server
from sim.calibration.settings import TABLE_TIMING_FIT
from sim.errors import SpecsimError, UnknownNameError
from sim.hardware.gpus import gpu_preset
from sim.hardware.passes import (
    DENSE_LAYER_KERNELS,
    MOE_LAYER_KERNELS,
    TRTLLM_MOE_LAYER_KERNELS,
    PassMemo,
)
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

DRAFTERS = ("eagle3", "eagle", "mtp", "draft_model", *PARALLEL_DRAFTERS)
#: The drafters ``--draft-config`` sizes (their own config.json).
DRAFT_CONFIG_DRAFTERS = ("eagle3", "draft_model", *PARALLEL_DRAFTERS)

#: The config.json fields that count a model's MTP modules: DeepSeek-V3's and Kimi-K2's,
#: then the Qwen3.5 family's (Qwen3.5, 3.6: ``text_config.mtp_num_hidden_layers``).
MTP_FIELDS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


@dataclass(frozen=True, slots=True)
class InitRequest:
    """What the owner gives (flags of ``specsim init``); None: not given."""

    config: str
    gpu: str
    engine: str
    gpus: int | None = None
    tensor_parallel: int | None = None
    expert_parallel: int | None = None
    interconnect: str | None = None
    engine_version: str | None = None
    drafter: str | None = None
    num_steps: int | None = None
    draft_params: float | None = None
    draft_config: str | None = None
    accept_length: float | None = None
    #: Where ``accept_length`` came from (a flag, or the measurement it was read from).
    accept_length_source: str = "--accept-length"
    name: str | None = None
    model_id: str | None = None
    #: Where ``model_id`` came from (a flag, or the file that names the model).
    model_id_source: str = "--model-id"
    #: Where ``engine_version`` came from: the flag, or the figures' file that states it.
    engine_version_source: str = "--engine-version"
    #: Where ``expert_parallel`` came from: the flag, or the figures' file that states it.
    expert_parallel_source: str = "--ep"
    #: The mean context (tokens) the measured figures' runs decoded at (prompt + half the
    #: answer); None: the figures' own files say it, or there are none.
    context_tokens: float | None = None
    #: The served prompt and answer lengths (``--input-tokens``, ``--output-tokens``);
    #: None: the files' (``lengths``), else the scenario's defaults.
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: The prompt and answer lengths the measurement files' runs had.
    lengths: tuple[RequestLengths, ...] = ()
    #: A run replayed as the served job (``--replay``): its keys, written after the
    #: workload's.
    job: InitJob | None = None
    #: The verify pass the owner measured (``--verify-ms``, batch 1, over the tokens the
    #: engine verifies a cycle); None: derived from the weights or fitted to the figures.
    verify_ms: float | None = None
    #: Whether the engine runs the verify in a CUDA graph (``--verify-cuda-graph`` /
    #: ``--no-verify-cuda-graph``); None: the engine's default.
    verify_cuda_graph: bool | None = None
    #: Kernels one decoder layer issues run eagerly (``--kernels-per-layer``); None: a named
    #: default where specsim has one.
    kernels_per_layer: int | None = None
    #: The plain decode pass the figures give (1000 / the baseline tok/s) and its source:
    #: what an ungraphed measured verify's GPU work is taken from (``verify_compute``).
    decode_ms: tuple[float, str] | None = None
    #: The server's ``--kv-cache-dtype`` (engine spellings, sim/calibration/kv_cache_dtype.py);
    #: None: ``auto``.
    kv_cache_dtype: str | None = None
    #: The measurement file and field that stated ``kv_cache_dtype`` (None: the flag).
    kv_cache_source: str | None = None
    #: Where ``drafter`` and ``num_steps`` came from: the flags, or the report that states
    #: them (sim/calibration/reported_drafter.py).
    drafter_source: str = "--drafter"
    num_steps_source: str = "--num-steps"


@dataclass(frozen=True, slots=True)
class InitScenario:
    """The scenario, its comments (dotted key -> where the value came from) and header."""

    scenario: Scenario
    comments: dict[str, str]
    header: str
    #: Lines for init's report (the workload written, and from what).
    notes: tuple[str, ...] = ()


#: Keys a quantized checkpoint's layout derives (sim/calibration/weight_bytes.py): their
#: provenance says derived, with the fields read.
LAYOUT_DERIVED = frozenset({"weight_bytes_per_param", "expert_bytes_per_param"})


def _set(raw: dict[str, Any], comments: dict[str, str], dotted: str, value: Any, why: str):
    section, key = dotted.split(".", 1)
    raw.setdefault(section, {})[key] = value
    comments[dotted] = why


def _set_uncertainty(
    raw: dict[str, Any], comments: dict[str, str], dotted: str, entry: dict[str, Any]
) -> None:
    """``[uncertainty]``'s ``entry`` of field ``dotted`` beside the section's others."""
    section, key = dotted.split(".", 1)
    raw.setdefault("uncertainty", {}).setdefault(section, {})[key] = entry
    comments.setdefault(f"uncertainty.{section}", "")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())[:60].strip("-")


#: A Hugging Face hub cache folder of a snapshot's file: ``models--ORG--NAME/snapshots/REV``
#: (huggingface_hub ``file_download.repo_folder_name``: ``models--`` + the repo id with
#: ``/`` as ``--``), where ``hf_hub_download`` puts a config.json.
_HF_CACHE_SNAPSHOT = re.compile(r"models--(?P<repo>.+)/snapshots/[^/]+")


def folder_model_name(config: Path) -> tuple[str, str]:
    """(a model name, its origin) from where a config.json lies when the file names none:
    the repo id of a Hugging Face cache snapshot (``Qwen/Qwen3-32B`` for
    ``models--Qwen--Qwen3-32B/snapshots/REV/config.json``, not the revision hash), else the
    folder's name."""
    parent = config.resolve().parent
    cached = _HF_CACHE_SNAPSHOT.search(parent.as_posix())
    if cached is not None and parent.parent.name == "snapshots":
        folder = parent.parent.parent.name
        return cached["repo"].replace("--", "/"), f"the Hugging Face cache folder {folder}"
    return parent.name, "the config.json's folder name"


def _drafter_label(req: InitRequest) -> str:
    """The drafter as the user gave it (``--drafter NAME``) or as the report named it."""
    if req.drafter_source == "--drafter":
        return f"--drafter {req.drafter}"
    return f"drafter {req.drafter} {req.drafter_source}"


def _eagle3_params(model: HfModel, source: str, drafter: str) -> tuple[float, str]:
    """(draft_params, why) of an EAGLE-3 drafter of the dense target ``model`` (config.json
    ``source``) without its own config.json; ``drafter``: how the user named it (errors)."""
    cfg = read_raw(source)
    hidden = model.get("hidden_size")
    inter = cfg.get("intermediate_size")
    if model.is_moe or not isinstance(inter, int):
        raise SpecsimError(
            "an EAGLE-3 drafter of a MoE target has its own FFN size: give the drafter's "
            "config.json (--draft-config) or --draft-params",
            source=drafter,
        )
    head_dim = cfg.get("head_dim") or hidden // model.heads
    attn = 2 * hidden * (model.heads + 2 * model.kv_heads) * head_dim
    attn += model.heads * head_dim * hidden
    total = attn + 3 * hidden * inter + 3 * hidden * hidden + model.get("lm_head_params")
    return float(total), (
        "derived: one decoder layer over 2 x hidden_size (q, k, v over 2 x hidden, o, FFN "
        "3 x hidden x intermediate_size), fc 3 x hidden x hidden, LM head over the full "
        "vocabulary (EAGLE-3 drafters may keep a smaller draft vocabulary: --draft-config)"
    )


def mtp_modules(config: str) -> tuple[int, str]:
    """(MTP modules, where the count comes from) of a config.json: the first of
    ``MTP_FIELDS`` it sets (in ``text_config`` when nested); SpecsimError naming the file
    when it sets none, or 0."""
    cfg, where = language_config(read_json(config))
    name = next((f for f in MTP_FIELDS if cfg.get(f) is not None), None)
    n = cfg.get(name) if name else None
    if name is None or not isinstance(n, int) or isinstance(n, bool) or n < 1:
        said = f"{name} = {n!r}" if name else f"no {' or '.join(MTP_FIELDS)}"
        raise SpecsimError(
            f"{said}: this model has no MTP module (use eagle3 or a draft model)",
            source=config,
        )
    return n, f"{where}: {name} = {n}"


def _drafter_params(
    req: InitRequest, model: HfModel, mtp: tuple[int, str] | None
) -> tuple[float, int, str, tuple[float, str] | None]:
    """(draft_params, draft_layers, why, the draft model's own bytes a weight and where
    from, else None: the target's); ``mtp``: the MTP modules and where the count comes from
    (``mtp_modules``, read once by the caller), for ``--drafter mtp``."""
    if req.draft_params is not None:
        return req.draft_params, 1, "--draft-params", None
    hidden = model.get("hidden_size")
    head = model.get("lm_head_params")
    if req.drafter == "eagle3" and req.draft_config is None:
        params, why = _eagle3_params(model, req.config, _drafter_label(req))
        return params, 1, why, None
    if req.drafter == "eagle":
        layer = model.get("layer_params")
        if model.is_moe:
            raise SpecsimError(
                "an EAGLE drafter of a MoE target: give --draft-params", source=_drafter_label(req)
            )
        return (
            float(layer + 2 * hidden * hidden + head),
            1,
            (
                "derived: one target decoder layer (layer_params), fc 2 x hidden x hidden and the "
                "target's LM head"
            ),
            None,
        )
    if req.drafter == "mtp":
        assert mtp is not None
        n, origin = mtp
        layer = model.full_attention_layer_params  # an MTP layer is full attention
        if model.is_moe:
            layer += model.get("experts_per_token") * model.get("expert_params")
        per_module = layer + 2 * hidden * hidden + head
        own = None
        if model.mtp_bytes is not None:  # stored at mixed widths: its own mean
            mean, kinds = model.mtp_bytes
            own = (mean, f"{req.config}: an MTP module's parameter-weighted mean: {kinds}")
        return (
            float(n * per_module),
            n,
            (
                f"derived: {n} MTP module(s) ({origin}), each a decoder layer with its active "
                "experts, eh_proj 2 x hidden x hidden and the shared LM head"
            ),
            own,
        )
    if req.draft_config is None:
        raise SpecsimError(
            "a draft model needs its config.json (--draft-config) or --draft-params",
            source=_drafter_label(req),
        )
    path = str(req.draft_config)
    raw = read_json(path)
    draft = hf_model_of(
        raw, path, unstated_bytes=unstated_bytes(model, path), kv_cache=_draft_kv(req, model, raw)
    )
    layers = draft.get("layers")
    total = layers * draft.get("layer_params") + draft.get("lm_head_params")
    if draft.is_moe:
        total += layers * draft.get("experts_per_token") * draft.get("expert_params")
    why = f"derived from {path}: every layer and its LM head"
    return float(total), layers, why, drafter_bytes(draft, path)


def _draft_kv(req: InitRequest, model: HfModel, draft: dict[str, Any]) -> KvCache:
    """The KV cache of the drafter of config ``draft`` (``--draft-config``) on the server
    of target ``model`` (``drafter_kv_cache``)."""
    assert model.kv_cache is not None and req.draft_config is not None
    return drafter_kv_cache(model.kv_cache, req.engine, draft, req.draft_config)


def _parallel_drafter(
    req: InitRequest, model: HfModel, tp: int, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """A block-parallel drafter's fields: ``speculation.parallel_draft`` and its size,
    from ``--draft-params`` or its checkpoint's config.json (``--draft-config``)."""
    flag = _drafter_label(req)
    _set(
        raw,
        comments,
        "speculation.parallel_draft",
        True,
        f"{flag}: block-parallel, the k drafts from one drafter pass over k query tokens",
    )
    if req.draft_params is not None:
        _set(raw, comments, "model.draft_params", req.draft_params, "--draft-params")
        return
    if req.draft_config is None:
        raise SpecsimError(
            "a DFlash/DSpark drafter needs its checkpoint's config.json (--draft-config) or "
            "--draft-params",
            source=flag,
        )
    assert req.drafter is not None and req.num_steps is not None
    kv = _draft_kv(req, model, read_json(req.draft_config))
    drafter = parallel_drafter(
        req.draft_config, model, req.drafter, req.num_steps, tensor_parallel=tp, kv=kv
    )
    _set(raw, comments, "model.draft_params", drafter.params, drafter.params_why)
    _draft_bytes(drafter.bytes_per_param, drafter.bytes_why, raw, comments)
    _set(raw, comments, "model.draft_layers", drafter.layers, drafter.layers_why)
    _set(
        raw, comments, "model.draft_kv_bytes_per_token", drafter.kv_bytes_per_token, drafter.kv_why
    )


def _draft_bytes(
    bytes_per_param: float, bytes_why: str, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """``model.draft_bytes_per_param``: the drafter's own bytes a weight, derived from its
    config.json (``bytes_why``; a bf16 EAGLE-3 drafter beside an FP8 target reads 2 B a
    weight, not 1), with an ``[uncertainty]`` entry saying so; a config stating no dtype
    (``UNSTATED_DTYPE`` in ``bytes_why``) leaves it out: the scenario then reads the
    drafter at the target's bytes, its default, said so beside ``model.draft_params``."""
    if UNSTATED_DTYPE in bytes_why:
        comments["model.draft_params"] += f"; {bytes_why}"
        return
    why = f"the drafter's own bytes a weight, {bytes_why}"
    _set(raw, comments, "model.draft_bytes_per_param", bytes_per_param, f"derived: {why}")
    entry = {"origin": "derived", "reason": why}
    _set_uncertainty(raw, comments, "model.draft_bytes_per_param", entry)


def _eagle3_drafter(
    req: InitRequest, model: HfModel, tp: int, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """An EAGLE-3 drafter's fields from its own config.json (``--draft-config``;
    sim/calibration/eagle3_drafter.py): its parameters, layers and KV a token."""
    assert req.draft_config is not None
    kv = _draft_kv(req, model, read_json(req.draft_config))
    drafter = eagle3_drafter(req.draft_config, model, tensor_parallel=tp, kv=kv)
    _set(raw, comments, "model.draft_params", drafter.params, drafter.params_why)
    _draft_bytes(drafter.bytes_per_param, drafter.bytes_why, raw, comments)
    if drafter.layers != 1:
        _set(raw, comments, "model.draft_layers", drafter.layers, drafter.layers_why)
    _set(
        raw, comments, "model.draft_kv_bytes_per_token", drafter.kv_bytes_per_token, drafter.kv_why
    )


def _prefill_kernels(
    model: HfModel, engine: str, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """``model.kernels_per_layer`` and its range, for a workload with prompts: their
    prefill passes run without CUDA graphs, each kernel launched from the CPU, and init
    does not know the engine's count. The middle of the typical range
    (sim/hardware/passes.py: a dense layer 11-18, a routed-MoE layer 28-42, under
    TensorRT-LLM 19-28), the range under ``[uncertainty]`` so that the serving intervals
    draw it."""
    moe = model.is_moe
    if moe and engine == "trtllm":
        _counted_moe_kernels(engine, "middle", "assumed", raw, comments)
        return
    low, high = MOE_LAYER_KERNELS if moe else DENSE_LAYER_KERNELS
    kind = "a routed-MoE layer (SGLang's DeepSeek-V3/Kimi layer, counted from its source)"
    if not moe:
        kind = "a dense transformer layer (docs/reference.md §All-reduce)"
        if model.attention_layers < model.get("layers"):
            kind += "; a Gated DeltaNet layer's own count is not known to specsim"
    reason = (
        f"default: {kind} issues about {low}-{high} kernels run eagerly, as a prefill pass "
        "runs; count one layer of your engine (e.g. nsys) and set model.kernels_per_layer"
    )
    _set(raw, comments, "model.kernels_per_layer", (low + high) // 2, reason)
    entry = {"range": [low, high], "origin": "assumed", "reason": reason}
    _set_uncertainty(raw, comments, "model.kernels_per_layer", entry)


#: SGLang's routed-MoE layer (DeepSeek-V3/Kimi) run eagerly on its fused kernels, counted
#: from its source (sim/validation/hardware_data.py SGLANG_KIMI_LAYER_OPS): the low end of
#: ``MOE_LAYER_KERNELS``, whose high end is the PyTorch-native and triton paths.
SGLANG_MOE_REASON = (
    "default: SGLang's routed-MoE layer run eagerly issues {low} kernels on its fused paths, "
    "up to {high} on the PyTorch-native rotary, triton attention and compiled top-k ones "
    "(counted from its source: sim/validation/hardware_data.py); count one layer of your "
    "server (e.g. nsys) and give --kernels-per-layer"
)


#: TensorRT-LLM's routed-MoE layer (DeepSeek-V3/R1, PyTorch backend, TRTLLM-Gen MoE
#: backend), counted op by op (sim/validation/hardware_data.py
#: TRTLLM_DEEPSEEK_V3_LAYER_OPS; docs/studies/trtllm-engine-costs.md).
TRTLLM_MOE_REASON = (
    "default: TensorRT-LLM's routed-MoE layer (DeepSeek-V3/R1, PyTorch backend, "
    "TRTLLM-Gen MoE) issues {low}-{high} kernels run eagerly: the modules its tech blog 1 "
    "lists, the MLA, routing and expert kernels counted from its source "
    "(sim/validation/data/layer_kernels.toml; docs/studies/trtllm-engine-costs.md); other "
    "MoE backends not counted; count one layer of your server (e.g. nsys) and give "
    "--kernels-per-layer"
)

#: The engines whose routed-MoE layer specsim counted: its (low, high) kernels and the
#: scenario comment's template.
COUNTED_MOE_LAYERS: dict[str, tuple[tuple[int, int], str]] = {
    "sglang": (MOE_LAYER_KERNELS, SGLANG_MOE_REASON),
    "trtllm": (TRTLLM_MOE_LAYER_KERNELS, TRTLLM_MOE_REASON),
}


def _counted_moe_kernels(
    engine: str,
    value: Literal["low", "middle"],
    origin: str,
    raw: dict[str, Any],
    comments: dict[str, str],
) -> None:
    """``model.kernels_per_layer`` at ``engine``'s counted routed-MoE layer (its low end or
    the middle, (low + high) // 2), the range under ``[uncertainty]`` as ``origin``."""
    (low, high), template = COUNTED_MOE_LAYERS[engine]
    reason = template.format(low=low, high=high)
    kernels = low if value == "low" else (low + high) // 2
    _set(raw, comments, "model.kernels_per_layer", kernels, reason)
    entry = {"range": [low, high], "origin": origin, "reason": reason}
    _set_uncertainty(raw, comments, "model.kernels_per_layer", entry)


def _verify_flags(
    req: InitRequest, model: HfModel, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """What the owner measured about the verify: ``timing.verify_cuda_graph``,
    ``timing.verify_ms`` and, for an ungraphed one, the kernels a layer issues eagerly
    (its launch cost is priced per kernel) and, with a measured decode, the verify's GPU
    work taken from the graphed decode's (``verify_compute = "decode"``: the ungraphed
    verify_ms then fixes the per-kernel CPU cost, sim/hardware/pass_model.py)."""
    if req.drafter is None:
        for flag, given in (
            ("--verify-ms", req.verify_ms),
            ("--verify-cuda-graph", req.verify_cuda_graph),
        ):
            if given is not None:
                raise SpecsimError(
                    "plain decoding has no verify pass: give --drafter and --num-steps",
                    source=flag,
                )
    if req.verify_cuda_graph is not None:
        graphed = req.verify_cuda_graph
        flag = "--verify-cuda-graph" if graphed else "--no-verify-cuda-graph"
        why = "graphed" if graphed else "run without CUDA graphs (eagerly)"
        _set(raw, comments, "timing.verify_cuda_graph", graphed, f"{flag}: the verify {why}")
    if req.kernels_per_layer is not None:
        _set(raw, comments, "model.kernels_per_layer", req.kernels_per_layer, "--kernels-per-layer")
        raw.get("uncertainty", {}).get("model", {}).pop("kernels_per_layer", None)
    if req.verify_ms is None:
        return
    _set(
        raw,
        comments,
        "timing.verify_ms",
        req.verify_ms,
        f"--verify-ms: measured on this server (batch 1, num_steps {req.num_steps})",
    )
    if req.num_steps is not None:  # the tokens it was measured over stay when k is varied
        _set(
            raw,
            comments,
            "timing.verify_tokens",
            req.num_steps + 1,
            f"--verify-ms measured over num_steps {req.num_steps} + 1 tokens (a chain)",
        )
    if raw.get("timing", {}).get("verify_cuda_graph", False):
        return
    # a count given wins; else the engine's for its MoE layer; else a prefill's default
    counted = model.is_moe and req.engine in COUNTED_MOE_LAYERS
    if req.kernels_per_layer is None and not counted and "kernels_per_layer" not in raw["model"]:
        raise SpecsimError(
            "an ungraphed verify's launch cost is priced per kernel: give the kernels one "
            "layer of your engine issues eagerly (e.g. counted with nsys)",
            source="--kernels-per-layer",
        )
    if req.kernels_per_layer is None and counted:
        _counted_moe_kernels(req.engine, "low", "derived", raw, comments)
    if req.decode_ms is None:
        raise SpecsimError(
            "an ungraphed verify's GPU work is taken from the graphed decode's, its launches "
            "from the rest: give the plain decoding figure measured with it (--baseline-tok-s, "
            "--vllm-bench, --sglang-bench, ...)",
            source="--verify-ms",
        )
    decode_ms, source = req.decode_ms
    _set(raw, comments, "timing.decode_ms", round(decode_ms, 6), f"1000 / {source}")
    _set(
        raw,
        comments,
        "timing.verify_compute",
        "decode",
        "the ungraphed verify's GPU work is the graphed decode's plus its growth over the "
        "extra tokens; the rest of --verify-ms is eager execution, whose per-kernel CPU "
        "cost it fixes (sim/hardware/pass_model.py)",
    )


def init_scenario(req: InitRequest) -> InitScenario:
    """The scenario of the server ``req`` describes; SpecsimError (one line naming the
    flag or field) for anything it cannot derive."""
    if req.engine not in ENGINES:
        raise SpecsimError(
            f"unknown engine {req.engine!r}; use one of {', '.join(ENGINES)}", source="--engine"
        )
    try:
        gpu = gpu_preset(req.gpu)
    except UnknownNameError as exc:
        raise SpecsimError(str(exc), source="--gpu") from None
    if (req.drafter is None) != (req.num_steps is None):
        raise SpecsimError(
            "give the drafter and k together (--drafter and --num-steps)",
            source="--drafter" if req.drafter is None else "--num-steps",
        )
    if req.drafter is not None and req.drafter not in DRAFTERS:
        raise SpecsimError(
            f"unknown drafter {req.drafter!r}; use one of {', '.join(DRAFTERS)}", source="--drafter"
        )
    tp = req.tensor_parallel or req.gpus or 1
    gpus = req.gpus or tp
    if gpus != tp:
        raise SpecsimError(
            f"--tp {tp} on --gpus {gpus}: a scenario is one tensor-parallel group (data-parallel "
            "replicas are separate servers); give --gpus equal to --tp",
            source="--tp",
        )
    if req.expert_parallel is not None and req.expert_parallel > tp:
        raise SpecsimError(
            f"expert parallel {req.expert_parallel} exceeds the {tp} GPUs",
            source=req.expert_parallel_source,
        )
    if is_eagle3_drafter(read_json(req.config)):
        raise SpecsimError(
            "an EAGLE-3 drafter's config.json: give the target model's as --config and this "
            "one as --draft-config",
            source=req.config,
        )
    if req.draft_config is not None and req.drafter not in DRAFT_CONFIG_DRAFTERS:
        raise SpecsimError(
            f"read only with --drafter {', '.join(DRAFT_CONFIG_DRAFTERS)} (an MTP module's "
            "size comes from the target's config.json)",
            source="--draft-config",
        )
    checkpoint = quantized_part(read_json(req.config))
    kv = kv_cache_of(checkpoint, req.config, req.kv_cache_dtype, req.kv_cache_source)
    model = read_hf_config(req.config, tensor_parallel=tp, kv_cache=kv)
    engine = ENGINES[req.engine]
    raw: dict[str, Any] = {}
    comments: dict[str, str] = {}
    path = Path(req.config)
    named = read_raw(req.config).get("_name_or_path")
    model_name = req.model_id or (named if isinstance(named, str) and named else None)
    folder, folder_origin = folder_model_name(path)
    model_name = model_name or folder or model.architecture
    name = req.name or _slug(
        f"{model_name.split('/')[-1]}-{gpus}x{gpu.name}-{req.engine}"
        + (f"-{req.drafter}-k{req.num_steps}" if req.drafter else "")
    )
    raw["name"] = name
    raw["description"] = (
        f"{model_name} on {gpus}x {gpu.name}, {req.engine} {req.engine_version or engine.version}"
        + (f", {req.drafter} k={req.num_steps}" if req.drafter else "")
        + " (specsim init)"
    )
    _set(
        raw,
        comments,
        "model.name",
        model_name,
        req.model_id_source
        if req.model_id
        else "config.json: _name_or_path"
        if named
        else folder_origin,
    )
    for key, d in model.values.items():
        _set(raw, comments, f"model.{key}", d.value, d.origin)
        if key in LAYOUT_DERIVED and d.origin.startswith("derived: "):
            entry = {"origin": "derived", "reason": d.origin.removeprefix("derived: ")}
            _set_uncertainty(raw, comments, f"model.{key}", entry)
    if req.drafter in PARALLEL_DRAFTERS:
        _parallel_drafter(req, model, tp, raw, comments)
    elif req.drafter == "eagle3" and req.draft_config is not None and req.draft_params is None:
        _eagle3_drafter(req, model, tp, raw, comments)
    elif req.drafter is not None:
        hybrid = model.attention_layers < model.get("layers")
        # the config's MTP count, read once: the drafter's size and (hybrid) its KV need it
        needed = req.drafter == "mtp" and (req.draft_params is None or hybrid)
        mtp = mtp_modules(req.config) if needed else None
        params, layers, why, own_bytes = _drafter_params(req, model, mtp)
        _set(raw, comments, "model.draft_params", params, why)
        if own_bytes is not None:
            _draft_bytes(*own_bytes, raw, comments)
        if layers != 1:
            _set(raw, comments, "model.draft_layers", layers, why)
        if mtp is not None and hybrid:
            modules, origin = mtp
            kv = model.get("kv_bytes_per_token") / model.attention_layers * modules
            _set(
                raw,
                comments,
                "model.draft_kv_bytes_per_token",
                kv,
                f"derived: {modules} MTP layer(s) ({origin}), full attention on a hybrid target "
                "(vLLM qwen3_5_mtp.py), each keeping the KV a token of one of the target's "
                f"{model.attention_layers} full-attention layers",
            )
    _set(raw, comments, "server.engine", req.engine, "--engine")
    _set(
        raw,
        comments,
        "server.engine_version",
        req.engine_version or engine.version,
        req.engine_version_source
        if req.engine_version
        else "the version specsim's engine defaults below come from",
    )
    if req.model_id:
        _set(raw, comments, "server.model_id", req.model_id, req.model_id_source)
    _set(
        raw,
        comments,
        "server.tensor_parallel",
        tp,
        "--tp"
        if req.tensor_parallel
        else "--gpus (one tensor-parallel group)"
        if req.gpus
        else "default: one GPU",
    )
    if req.expert_parallel is not None:
        why = req.expert_parallel_source
        _set(raw, comments, "server.expert_parallel", req.expert_parallel, why)
    _set(raw, comments, "hardware.gpu", gpu.name, f"--gpu ({gpu.source})")
    _set(raw, comments, "hardware.gpus", gpus, "--gpus" if req.gpus else "--tp")
    interconnect = req.interconnect or GPU_INTERCONNECT.get(gpu.name, "pcie-gen4")
    _set(
        raw,
        comments,
        "hardware.interconnect",
        interconnect,
        "--interconnect"
        if req.interconnect
        else f"default for {gpu.name} servers (give --interconnect)",
    )
    for default in engine.defaults:
        field = default.field
        speculative = "overlap" in field or field.endswith("_speculative")
        if field.startswith("serving.") and req.drafter is None and speculative:
            continue
        why = f"{req.engine} {engine.version} default: {default.source}"
        _set(raw, comments, field, default.value, why)
    if req.engine == "vllm" and model.is_mla:
        block = vllm_mla_block(gpu.name, read_raw(req.config))
        if block is not None:
            _set(raw, comments, "serving.kv_block_tokens", block[0], block[1])
    _set(
        raw,
        comments,
        "speculation.num_steps",
        req.num_steps or 0,
        req.num_steps_source if req.drafter else "no drafter: plain decoding",
    )
    if req.drafter in PARALLEL_DRAFTERS:
        _set(
            raw,
            comments,
            "acceptance.method",
            "generic",
            f"{_drafter_label(req)}: no published profiles of its own in specsim's priors, "
            "the pooled ones (sim/binding/priors.py)",
        )
    elif req.drafter is not None:
        _set(raw, comments, "acceptance.method", req.drafter, req.drafter_source)
    if req.drafter is not None:
        flag = req.num_steps_source == "--num-steps"
        measured_at = "--num-steps" if flag else "speculation.num_steps's"
        if req.accept_length is None:
            raise SpecsimError(
                "the drafter's acceptance is not known: give --accept-length (measured at "
                "--num-steps) or measured figures (--point, --vllm-bench, --sglang-log, ...)",
                source="--drafter",
            )
        _set(
            raw,
            comments,
            "acceptance.accept_length",
            req.accept_length,
            f"{req.accept_length_source} (measured at num_steps {req.num_steps})",
        )
        _set(
            raw,
            comments,
            "acceptance.measured_num_steps",
            req.num_steps,
            "the num_steps the accept length was measured at (" + measured_at + ")",
        )
    if req.context_tokens is not None:
        _set(
            raw,
            comments,
            "timing.context_tokens",
            req.context_tokens,
            "--context-tokens: the mean context the measured figures' runs decoded at (prompt "
            "+ half the answer), where the measured passes hold under load",
        )
    workload = init_workload(req.lengths, req.input_tokens, req.output_tokens)
    # the replayed job's keys last: it is what is served
    for keys in (workload, req.job):
        for dotted, value, why in keys.fields if keys is not None else ():
            _set(raw, comments, dotted, value, why)
    if raw.get("workload", {}).get("input_tokens", 0) > 0:
        _prefill_kernels(model, req.engine, raw, comments)
    _verify_flags(req, model, raw, comments)
    header = (
        f"Written by `specsim init` from {req.config}: every value says where it came from\n"
        "(a flag, a config.json field, or a named default of the engine or of specsim).\n"
        + (
            "The verify pass is the one measured (--verify-ms); the others"
            if req.verify_ms is not None
            else "No pass time is measured here: the hardware model"
        )
        + " derives them from the weights\n"
        "over the GPU's peak bandwidth until `specsim calibrate` fits them to your figures."
    )
    scenario = scenario_from_dict(raw, source="specsim init")
    notes = tuple(n.summary for n in (workload, req.job) if n is not None)
    return InitScenario(scenario, comments, header, notes)


def provisional_accept_length(data: Measurements, num_steps: int) -> tuple[float, str] | None:
    """The accept length the figures give at ``num_steps`` (a measured accept length, or
    1 + the sum of vLLM's cumulative rates), with its source; None if they give none.
    ``calibrate`` then fits the acceptance to every figure and replaces it."""
    for a in data.accept_lengths:
        if a.num_steps == num_steps:
            return a.accept_length, a.source
    cumulative = sorted((c.position, c.rate, c.source) for c in data.cumulative)
    if cumulative and [p for p, _, _ in cumulative] == list(range(1, num_steps + 1)):
        return 1.0 + sum(r for _, r, _ in cumulative), cumulative[0][2]
    return None


def init_and_calibrate(
    req: InitRequest, data: Measurements, *, prefer: str | None = None
) -> tuple[InitScenario, Calibration | None]:
    """The scenario ``req`` describes and, with figures, its calibration to them (the
    scenario as the base; every pass time then comes from the figures or is derived at
    the efficiency they imply)."""
    req = replace(req, lengths=data.lengths)
    if data.empty:
        if req.context_tokens is not None:
            raise SpecsimError(
                "the context measured figures were taken at: without figures every pass is "
                "derived from the weights alone, at zero context (the serving commands add "
                "each request's own)",
                source="--context-tokens",
            )
        return init_scenario(req), None
    reported = reported_drafter(data, req.drafter, req.num_steps)
    if reported is not None and reported.drafter is not None:
        req = replace(req, drafter=reported.drafter, drafter_source=reported.drafter_why)
    if reported is not None and reported.num_steps is not None:
        req = replace(req, num_steps=reported.num_steps, num_steps_source=reported.num_steps_why)
    if prefer is None:  # --prefer says which wins; without it, refused here in the flags' words
        if req.drafter is not None and req.drafter_source == "--drafter":
            check_reported_drafter(req.drafter, data)
        config = read_json(req.config) if req.model_id is None else {}
        check_init_server(req.engine, config, req.config, data, req.num_steps)
        check_init_quantization(read_json(req.config), req.config, data)
    stated = tuple((str(f.value), f.source) for f in data.server if f.what == "kv_cache_dtype")
    kv_dtype, kv_source = reported_kv_cache(stated, req.kv_cache_dtype)
    req = replace(req, kv_cache_dtype=kv_dtype, kv_cache_source=kv_source)
    ep = next((f for f in data.server if f.what == "expert_parallel"), None)
    if req.expert_parallel is None and ep is not None:
        said = f"named by {ep.source} (recorded)"
        req = replace(req, expert_parallel=int(ep.value), expert_parallel_source=said)
    version = next((f for f in data.server if f.what == "engine_version"), None)
    if req.engine_version is None and version is not None:
        said = f"named by {version.source}"
        if req.engine in ENGINES:  # an unknown engine is refused in init_scenario
            said += f"; the engine defaults below are {req.engine} {ENGINES[req.engine].version}'s"
        req = replace(req, engine_version=str(version.value), engine_version_source=said)
    model = next((f for f in data.server if f.what == "model"), None)
    if req.model_id is None and model is not None:
        req = replace(req, model_id=str(model.value), model_id_source=f"named by {model.source}")
    if req.drafter is not None and req.accept_length is None:
        found = provisional_accept_length(data, req.num_steps or 0)
        if found is not None:
            req = replace(req, accept_length=found[0], accept_length_source=found[1])
    if req.verify_ms is not None and data.baselines:
        tok_s = sum(b.tok_s for b in data.baselines) / len(data.baselines)
        sources = ", ".join(dict.fromkeys(b.source for b in data.baselines))
        req = replace(req, decode_ms=(1000.0 / tok_s, f"the plain tok/s of {sources}"))
    init = init_scenario(req)
    memo = PassMemo()  # the hardware answers every fit of the command shares
    if req.verify_ms is not None:  # the measured verify is held; the figures fix the rest
        fit = TABLE_TIMING_FIT
        return init, calibrate(init.scenario, data, fit_timing=fit, prefer=prefer, memo=memo)
    cal = calibrate(init.scenario, data, prefer=prefer, memo=memo)
    return init, _refit_verify(data, cal, prefer, memo)


#: The drafter's passes a first fit writes from the hardware model when its figures cannot
#: fix them (sim/calibration/efficiency_range.py ``unidentified_drafter``).
DRAFTER_PASSES = ("draft_step_ms", "draft_extend_ms")

#: A speculative figure missed by more than this many standard errors (a normal error
#: falls beyond 3 sigma 0.27% of the time) with the hardware model's verify pass.
VERIFY_MISS_SIGMAS = 3.0


def _refit_verify(
    data: Measurements, cal: Calibration, prefer: str | None, memo: PassMemo
) -> Calibration:
    """``cal``, or, when the base's verify pass is the hardware model's and the calibrated
    scenario misses a speculative tok/s figure by more than ``VERIFY_MISS_SIGMAS`` (the
    intercept it fits, ``cycle_overhead_ms``, cannot go below 0), the calibration with
    the verify pass over the measured tokens fitted to the figures instead (a MoE's
    derived verify prices its extra experts' reads through the fused-MoE kernel at
    ``hardware.expert_read_efficiency``, an assumed share of peak with a range:
    docs/studies/moe-verify-reads.md). The other token counts' verify then takes the
    slope ``_measured_slope`` writes. ``memo``: the command's hardware answers."""
    passes = pass_times(cal.scenario, memo)  # the derived verify
    missed = [
        r
        for r in cal.residuals
        if r.what.startswith("tok/s at") and abs(r.normalized) > VERIFY_MISS_SIGMAS
    ]
    if passes.verify_table_ms is None or not missed or any(p.is_tree for p in data.points):
        return cal
    # the first fit's scenario (its decode measured: the verify's slope is the experts'
    # growth) with its verify pass given; the intercept that fit left at its bound and
    # the errors and correlations of what it fitted dropped (the refit writes its own);
    # the drafter passes' ranges kept, correlated with each other as they were
    start = cal.scenario.model_dump(exclude_none=True)
    start["timing"] = {**start["timing"], "verify_ms": passes.verify_ms, "cycle_overhead_ms": 0.0}
    drawn = start.get("uncertainty", {})
    for section, entries in list(drawn.items()):
        if isinstance(entries, dict) and section != "correlation":
            drawn[section] = {k: e for k, e in entries.items() if e.get("origin") != "calibrated"}
    corr = drawn.pop("correlation", None)
    if corr is not None:
        keep = [i for i, f in enumerate(corr["fields"]) if f.split(".", 1)[1] in DRAFTER_PASSES]
        if len(keep) > 1:
            drawn["correlation"] = {
                "fields": [corr["fields"][i] for i in keep],
                "matrix": [[corr["matrix"][i][j] for j in keep] for i in keep],
            }
    measured = scenario_from_dict(start, source="the first fit's scenario, its verify given")
    fit = ("decode_ms", "verify_ms")
    refit = calibrate(measured, data, fit_timing=fit, prefer=prefer, memo=memo)
    named = {"name": cal.scenario.name, "description": cal.scenario.description}
    refit = replace(refit, scenario=with_overrides(refit.scenario, named, source="specsim init"))
    refit = _measured_slope(refit, memo)
    # each value's base is the scenario init wrote (the first fit's), not the refit's start
    # (the first fit's own values: its decode read as the base scenario's pass)
    bases = {v.field: v.base for v in cal.values}
    values = tuple(replace(v, base=bases.get(v.field)) for v in refit.values)
    refit = replace(refit, values=values)
    worst = max(missed, key=lambda r: abs(r.normalized))
    note = (
        f"timing.verify_ms fitted to the figures: with the hardware model's verify pass "
        f"({passes.verify_ms:.4g} ms over {passes.verify_tokens} tokens) the scenario missed "
        f"{worst.what} by {100 * worst.relative:+.1f}% ({worst.normalized:+.1f} σ)"
    )
    return replace(refit, notes=(*refit.notes, note))


def _measured_slope(cal: Calibration, memo: PassMemo) -> Calibration:
    """``cal`` with ``timing.verify_ms_per_extra_token`` the line through its measured decode
    (1 token) and verify (``verify_tokens``), over a range to the hardware model's slope
    at peak bandwidth. The hardware model's own slope, above the line, would put a
    2-token verify below the decode. A MoE's distinct experts grow concavely with the
    tokens, so past the measured verify each token adds at most the line's slope, and at
    least the extra experts' reads at peak bandwidth; short of it the pass lies at or
    above the line. A line below those reads (consecutive tokens of a sequence share
    experts, which the union law leaves out) is taken as measured, the range up to them.
    ``memo``: the command's hardware answers."""
    s = cal.scenario
    tokens = pass_times(s, memo).verify_tokens
    if s.timing.decode_ms is None or s.timing.verify_ms is None or tokens < 2:
        return cal
    line = (s.timing.verify_ms - s.timing.decode_ms) / (tokens - 1)
    at_peak = {"hardware.bandwidth_efficiency": 1.0}
    if s.hardware.expert_read_efficiency is not None:
        at_peak["hardware.expert_read_efficiency"] = 1.0
    at_peak_passes = pass_times(with_overrides(s, at_peak, source="peak bandwidth"), memo)
    peak = at_peak_passes.verify_ms_per_extra_token
    if line <= 0.0 or peak == line:
        return cal
    why = (
        f"the line through the measured decode ({s.timing.decode_ms:.4g} ms) and verify "
        f"({s.timing.verify_ms:.4g} ms over {tokens} tokens); range to the hardware "
        f"model's extra experts' reads at peak bandwidth ({peak:.3g} ms a token)"
    )
    ends = [round(min(peak, line), 6), round(max(peak, line), 6)]
    entry = {"range": ends, "origin": "derived", "reason": why}
    overrides = {
        "timing.verify_ms_per_extra_token": round(line, 6),
        "uncertainty.timing.verify_ms_per_extra_token": entry,
    }
    scenario = with_overrides(s, overrides, source="specsim init")
    written = (*cal.written, ("timing.verify_ms_per_extra_token", f"derived: {why}"))
    values = tuple(
        replace(v, value=round(line, 6), reason=f"derived: {why}")
        if v.field == "timing.verify_ms_per_extra_token"
        else v
        for v in cal.values
    )
    return replace(cal, scenario=scenario, written=written, values=values)
