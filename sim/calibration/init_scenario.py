"""``specsim init``: a scenario of a server from what its owner has, every value with its
origin (a user flag, a config.json field, a named engine default).

From the model's Hugging Face ``config.json`` (sim/calibration/hf_config.py), a GPU preset
and count, the tensor-parallel size, the engine (sim/calibration/engine_defaults.py), the
drafter and k (not given: those a ``trtllm-bench`` report states, its
``decoding_stats.mode`` and draft length, sim/calibration/reported_drafter.py). Measurement
files, when given, go to ``calibrate`` with this scenario as its base (the CLI does it):
the pass times then come from them, the rest from here.

The drafter's size: sim/calibration/init_drafter.py; the kernels a layer issues eagerly:
sim/calibration/init_kernels.py; the verify the owner measured:
sim/calibration/init_verify.py; the calibration to the figures:
sim/calibration/init_calibrate.py.

An MLA model (``kv_lora_rank``) under ``--engine vllm`` gets the KV block vLLM's MLA backend
forces on the GPU as ``serving.kv_block_tokens`` (sim/calibration/mla_blocks.py: 64 on
Hopper and, with FlashInfer MLA, Blackwell; 128 with CUTLASS MLA; 16 elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.calibration.eagle3_drafter import is_eagle3_drafter
from sim.calibration.engine_defaults import ENGINES, GPU_INTERCONNECT
from sim.calibration.hf_config import HfModel, read_hf_config
from sim.calibration.hf_fields import quantized_part, read_json, read_raw
from sim.calibration.init_drafter import (
    DRAFT_CONFIG_DRAFTERS,
    DRAFTERS,
    draft_bytes_fields,
    drafter_label,
    drafter_params,
    eagle3_drafter_fields,
    mtp_modules,
    parallel_drafter_fields,
)
from sim.calibration.init_fields import set_field, set_uncertainty
from sim.calibration.init_kernels import prefill_kernels
from sim.calibration.init_request import InitRequest, InitScenario
from sim.calibration.init_verify import verify_flags
from sim.calibration.init_workload import init_workload
from sim.calibration.kv_cache_dtype import kv_cache_of
from sim.calibration.mla_blocks import vllm_mla_block
from sim.calibration.model_name import folder_model_name, name_slug
from sim.calibration.parallel_drafter import PARALLEL_DRAFTERS
from sim.errors import SpecsimError, UnknownNameError
from sim.hardware.gpus import GpuPreset, gpu_preset
from sim.scenario.validate import scenario_from_dict

#: Keys a quantized checkpoint's layout derives (sim/calibration/weight_bytes.py): their
#: provenance says derived, with the fields read.
LAYOUT_DERIVED = frozenset({"weight_bytes_per_param", "expert_bytes_per_param"})


def init_scenario(req: InitRequest) -> InitScenario:
    """The scenario of the server ``req`` describes; SpecsimError (one line naming the
    flag or field) for anything it cannot derive.

    In stages, each writing its fields in the scenario's order: the request checked
    (``_checked_server``); the name and ``[model]`` from the config.json
    (``_model_fields``); the drafter's size (``_drafter_fields``); ``[server]`` and
    ``[hardware]`` (``_server_fields``); the engine's defaults (``_engine_fields``); the
    draft length and acceptance (``_speculation_fields``); then the measured context, the
    workload and the replayed job, the prefill's kernels and the verify's flags."""
    gpu, tp, gpus = _checked_server(req)
    checkpoint = quantized_part(read_json(req.config))
    kv = kv_cache_of(checkpoint, req.config, req.kv_cache_dtype, req.kv_cache_source)
    model = read_hf_config(req.config, tensor_parallel=tp, kv_cache=kv)
    raw: dict[str, Any] = {}
    comments: dict[str, str] = {}
    _model_fields(req, model, gpu, gpus, raw, comments)
    _drafter_fields(req, model, tp, raw, comments)
    _server_fields(req, gpu, tp, gpus, raw, comments)
    _engine_fields(req, model, gpu, raw, comments)
    _speculation_fields(req, raw, comments)
    if req.context_tokens is not None:
        set_field(
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
            set_field(raw, comments, dotted, value, why)
    if raw.get("workload", {}).get("input_tokens", 0) > 0:
        prefill_kernels(model, req.engine, raw, comments)
    verify_flags(req, model, raw, comments)
    scenario = scenario_from_dict(raw, source="specsim init")
    notes = tuple(n.summary for n in (workload, req.job) if n is not None)
    return InitScenario(scenario, comments, _header(req), notes)


def _checked_server(req: InitRequest) -> tuple[GpuPreset, int, int]:
    """The GPU preset, the tensor-parallel size and the GPU count of the request (``--tp``
    default ``--gpus``, and the reverse; one GPU without either); SpecsimError naming the
    flag for an unknown engine, GPU or drafter, a drafter without k (or k without one), a
    data-parallel server, expert parallelism beyond the GPUs, a drafter's config.json given
    as the target's, or a ``--draft-config`` its drafter does not read."""
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
    return gpu, tp, gpus


def _model_fields(
    req: InitRequest,
    model: HfModel,
    gpu: GpuPreset,
    gpus: int,
    raw: dict[str, Any],
    comments: dict[str, str],
) -> None:
    """The scenario's name and description, and ``[model]``: its name (``--model-id``,
    else the config's ``_name_or_path``, else its folder's name, else its architecture)
    and every value the config.json gives (``model.values``), a quantized layout's derived
    bytes a weight with their ``[uncertainty]`` entry."""
    engine = ENGINES[req.engine]
    named = read_raw(req.config).get("_name_or_path")
    model_name = req.model_id or (named if isinstance(named, str) and named else None)
    folder, folder_origin = folder_model_name(Path(req.config))
    model_name = model_name or folder or model.architecture
    raw["name"] = req.name or name_slug(
        f"{model_name.split('/')[-1]}-{gpus}x{gpu.name}-{req.engine}"
        + (f"-{req.drafter}-k{req.num_steps}" if req.drafter else "")
    )
    raw["description"] = (
        f"{model_name} on {gpus}x {gpu.name}, {req.engine} {req.engine_version or engine.version}"
        + (f", {req.drafter} k={req.num_steps}" if req.drafter else "")
        + " (specsim init)"
    )
    set_field(
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
        set_field(raw, comments, f"model.{key}", d.value, d.origin)
        if key in LAYOUT_DERIVED and d.origin.startswith("derived: "):
            entry = {"origin": "derived", "reason": d.origin.removeprefix("derived: ")}
            set_uncertainty(raw, comments, f"model.{key}", entry)


def _drafter_fields(
    req: InitRequest, model: HfModel, tp: int, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """The drafter's size (sim/calibration/init_drafter.py): a block-parallel drafter's
    from its checkpoint, an EAGLE-3 drafter's from its config.json, else
    ``drafter_params`` (an MTP module's from the target's config), with its own bytes a
    weight and layers; an MTP drafter on a hybrid target keeps, each layer, the KV a token
    of one of the target's full-attention layers (vLLM qwen3_5_mtp.py). Nothing without a
    drafter."""
    if req.drafter in PARALLEL_DRAFTERS:
        parallel_drafter_fields(req, model, tp, raw, comments)
    elif req.drafter == "eagle3" and req.draft_config is not None and req.draft_params is None:
        eagle3_drafter_fields(req, model, tp, raw, comments)
    elif req.drafter is not None:
        hybrid = model.attention_layers < model.get("layers")
        # the config's MTP count, read once: the drafter's size and (hybrid) its KV need it
        needed = req.drafter == "mtp" and (req.draft_params is None or hybrid)
        mtp = mtp_modules(req.config) if needed else None
        params, layers, why, own_bytes = drafter_params(req, model, mtp)
        set_field(raw, comments, "model.draft_params", params, why)
        if own_bytes is not None:
            draft_bytes_fields(*own_bytes, raw, comments)
        if layers != 1:
            set_field(raw, comments, "model.draft_layers", layers, why)
        if mtp is not None and hybrid:
            modules, origin = mtp
            kv = model.get("kv_bytes_per_token") / model.attention_layers * modules
            set_field(
                raw,
                comments,
                "model.draft_kv_bytes_per_token",
                kv,
                f"derived: {modules} MTP layer(s) ({origin}), full attention on a hybrid target "
                "(vLLM qwen3_5_mtp.py), each keeping the KV a token of one of the target's "
                f"{model.attention_layers} full-attention layers",
            )


def _server_fields(
    req: InitRequest,
    gpu: GpuPreset,
    tp: int,
    gpus: int,
    raw: dict[str, Any],
    comments: dict[str, str],
) -> None:
    """``[server]`` (engine, its version, model id, tensor and expert parallel sizes) and
    ``[hardware]`` (the GPU, its count, the interconnect: ``--interconnect`` else the GPU's
    usual one, ``GPU_INTERCONNECT``, else PCIe Gen4)."""
    engine = ENGINES[req.engine]
    set_field(raw, comments, "server.engine", req.engine, "--engine")
    set_field(
        raw,
        comments,
        "server.engine_version",
        req.engine_version or engine.version,
        req.engine_version_source
        if req.engine_version
        else "the version specsim's engine defaults below come from",
    )
    if req.model_id:
        set_field(raw, comments, "server.model_id", req.model_id, req.model_id_source)
    set_field(
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
        set_field(raw, comments, "server.expert_parallel", req.expert_parallel, why)
    set_field(raw, comments, "hardware.gpu", gpu.name, f"--gpu ({gpu.source})")
    set_field(raw, comments, "hardware.gpus", gpus, "--gpus" if req.gpus else "--tp")
    interconnect = req.interconnect or GPU_INTERCONNECT.get(gpu.name, "pcie-gen4")
    set_field(
        raw,
        comments,
        "hardware.interconnect",
        interconnect,
        "--interconnect"
        if req.interconnect
        else f"default for {gpu.name} servers (give --interconnect)",
    )


def _engine_fields(
    req: InitRequest,
    model: HfModel,
    gpu: GpuPreset,
    raw: dict[str, Any],
    comments: dict[str, str],
) -> None:
    """The engine's defaults (sim/calibration/engine_defaults.py; the speculative serving
    ones only with a drafter), and an MLA model's KV block under vLLM
    (sim/calibration/mla_blocks.py)."""
    engine = ENGINES[req.engine]
    for default in engine.defaults:
        field = default.field
        speculative = "overlap" in field or field.endswith("_speculative")
        if field.startswith("serving.") and req.drafter is None and speculative:
            continue
        why = f"{req.engine} {engine.version} default: {default.source}"
        set_field(raw, comments, field, default.value, why)
    if req.engine == "vllm" and model.is_mla:
        block = vllm_mla_block(gpu.name, read_raw(req.config))
        if block is not None:
            set_field(raw, comments, "serving.kv_block_tokens", block[0], block[1])


def _speculation_fields(req: InitRequest, raw: dict[str, Any], comments: dict[str, str]) -> None:
    """``speculation.num_steps`` (0: plain decoding) and, with a drafter, its acceptance:
    the method (a block-parallel drafter's the pooled ``generic``) and the accept length
    measured at ``measured_num_steps``; SpecsimError naming ``--drafter`` when no accept
    length is known."""
    set_field(
        raw,
        comments,
        "speculation.num_steps",
        req.num_steps or 0,
        req.num_steps_source if req.drafter else "no drafter: plain decoding",
    )
    if req.drafter in PARALLEL_DRAFTERS:
        set_field(
            raw,
            comments,
            "acceptance.method",
            "generic",
            f"{drafter_label(req)}: no published profiles of its own in specsim's priors, "
            "the pooled ones (sim/binding/priors.py)",
        )
    elif req.drafter is not None:
        set_field(raw, comments, "acceptance.method", req.drafter, req.drafter_source)
    if req.drafter is None:
        return
    flag = req.num_steps_source == "--num-steps"
    measured_at = "--num-steps" if flag else "speculation.num_steps's"
    if req.accept_length is None:
        raise SpecsimError(
            "the drafter's acceptance is not known: give --accept-length (measured at "
            "--num-steps) or measured figures (--point, --vllm-bench, --sglang-log, ...)",
            source="--drafter",
        )
    set_field(
        raw,
        comments,
        "acceptance.accept_length",
        req.accept_length,
        f"{req.accept_length_source} (measured at num_steps {req.num_steps})",
    )
    set_field(
        raw,
        comments,
        "acceptance.measured_num_steps",
        req.num_steps,
        "the num_steps the accept length was measured at (" + measured_at + ")",
    )


def _header(req: InitRequest) -> str:
    """The written file's header: where its values come from, and which pass times are
    measured (``--verify-ms``) or derived from the weights until ``calibrate`` fits them."""
    return (
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
