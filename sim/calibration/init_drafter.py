"""The drafter's fields ``specsim init`` writes: its kind's names, its size, its own bytes
a weight, its layers and its KV a token, each with where it came from.

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
"""

from __future__ import annotations

from typing import Any

from sim.calibration.drafter_size import UNSTATED_DTYPE, drafter_bytes, unstated_bytes
from sim.calibration.eagle3_drafter import eagle3_drafter
from sim.calibration.hf_config import HfModel, hf_model_of
from sim.calibration.hf_fields import language_config, read_json, read_raw
from sim.calibration.init_fields import set_field, set_uncertainty
from sim.calibration.init_request import InitRequest
from sim.calibration.kv_cache_dtype import KvCache, drafter_kv_cache
from sim.calibration.parallel_drafter import PARALLEL_DRAFTERS, parallel_drafter
from sim.errors import SpecsimError

DRAFTERS = ("eagle3", "eagle", "mtp", "draft_model", *PARALLEL_DRAFTERS)
#: The drafters ``--draft-config`` sizes (their own config.json).
DRAFT_CONFIG_DRAFTERS = ("eagle3", "draft_model", *PARALLEL_DRAFTERS)

#: The config.json fields that count a model's MTP modules: DeepSeek-V3's and Kimi-K2's,
#: then the Qwen3.5 family's (Qwen3.5, 3.6: ``text_config.mtp_num_hidden_layers``).
MTP_FIELDS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def drafter_label(req: InitRequest) -> str:
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


def drafter_params(
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
        params, why = _eagle3_params(model, req.config, drafter_label(req))
        return params, 1, why, None
    if req.drafter == "eagle":
        layer = model.get("layer_params")
        if model.is_moe:
            raise SpecsimError(
                "an EAGLE drafter of a MoE target: give --draft-params", source=drafter_label(req)
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
            source=drafter_label(req),
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


def parallel_drafter_fields(
    req: InitRequest, model: HfModel, tp: int, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """A block-parallel drafter's fields: ``speculation.parallel_draft`` and its size,
    from ``--draft-params`` or its checkpoint's config.json (``--draft-config``)."""
    flag = drafter_label(req)
    set_field(
        raw,
        comments,
        "speculation.parallel_draft",
        True,
        f"{flag}: block-parallel, the k drafts from one drafter pass over k query tokens",
    )
    if req.draft_params is not None:
        set_field(raw, comments, "model.draft_params", req.draft_params, "--draft-params")
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
    set_field(raw, comments, "model.draft_params", drafter.params, drafter.params_why)
    draft_bytes_fields(drafter.bytes_per_param, drafter.bytes_why, raw, comments)
    set_field(raw, comments, "model.draft_layers", drafter.layers, drafter.layers_why)
    set_field(
        raw, comments, "model.draft_kv_bytes_per_token", drafter.kv_bytes_per_token, drafter.kv_why
    )


def draft_bytes_fields(
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
    set_field(raw, comments, "model.draft_bytes_per_param", bytes_per_param, f"derived: {why}")
    entry = {"origin": "derived", "reason": why}
    set_uncertainty(raw, comments, "model.draft_bytes_per_param", entry)


def eagle3_drafter_fields(
    req: InitRequest, model: HfModel, tp: int, raw: dict[str, Any], comments: dict[str, str]
) -> None:
    """An EAGLE-3 drafter's fields from its own config.json (``--draft-config``;
    sim/calibration/eagle3_drafter.py): its parameters, layers and KV a token."""
    assert req.draft_config is not None
    kv = _draft_kv(req, model, read_json(req.draft_config))
    drafter = eagle3_drafter(req.draft_config, model, tensor_parallel=tp, kv=kv)
    set_field(raw, comments, "model.draft_params", drafter.params, drafter.params_why)
    draft_bytes_fields(drafter.bytes_per_param, drafter.bytes_why, raw, comments)
    if drafter.layers != 1:
        set_field(raw, comments, "model.draft_layers", drafter.layers, drafter.layers_why)
    set_field(
        raw, comments, "model.draft_kv_bytes_per_token", drafter.kv_bytes_per_token, drafter.kv_why
    )
