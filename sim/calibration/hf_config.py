"""A model's geometry and weights from its Hugging Face ``config.json`` (read, never fetched).

Field names as transformers' configuration classes spell them (``LlamaConfig``,
``Qwen3MoeConfig``, ``DeepseekV3Config``, ``MixtralConfig``; a multimodal config's
``text_config`` is read instead when present). Weights per layer, read once a decode:

- attention, grouped-query: q ``hidden x heads*head_dim``, k and v ``hidden x
  kv_heads*head_dim`` each, o ``heads*head_dim x hidden``; multi-head latent (``kv_lora_rank``
  present, DeepSeek-V2/V3, Kimi-K2): q ``hidden x q_lora + q_lora x heads*(nope+rope)``
  (or ``hidden x heads*(nope+rope)`` without ``q_lora_rank``), kv_a ``hidden x
  (kv_lora+rope)``, kv_b ``kv_lora x heads*(nope+v)``, o ``heads*v x hidden``;
- a gated (SwiGLU) MLP ``3 x hidden x intermediate``: the dense FFN with
  ``intermediate_size``, each routed expert with ``moe_intermediate_size``, shared experts
  with ``n_shared_experts x moe_intermediate_size`` (DeepSeek) or
  ``shared_expert_intermediate_size`` (Qwen2-MoE); the router ``hidden x experts``;
- the LM head ``vocab x hidden`` (read every pass, tied to the embedding or not).

Norms and biases (under 0.1% of a layer) are left out. Bytes per parameter from
``torch_dtype``/``dtype``; a ``quantization_config`` (FP8 included: its LM head and routers
stay at the model's dtype) module by module (sim/calibration/quant_layout.py), what every
pass reads apart from the routed experts (sim/calibration/weight_bytes.py).
KV bytes per token and attention FLOPs per (query, key) pair are per tensor-parallel rank:
GQA's KV heads are split over ranks (at least one each), MLA's latent is on every rank; an
element of the cache at the server's KV cache dtype (sim/calibration/kv_cache_dtype.py).

Hybrid targets (Qwen3-Next and Qwen3.5 style: ``layer_types`` naming ``linear_attention``
and ``full_attention`` layers, or ``full_attention_interval``, with ``linear_*`` Gated
DeltaNet fields): the KV and the attention FLOPs are the full-attention layers' only, and
``state_bytes_per_request`` is derived (``recurrent_state_bytes``): the linear layers'
recurrent state a request per rank, as vLLM allocates it (vllm/model_executor/layers/
mamba/mamba_utils.py ``gated_delta_net_state_shape``: value heads / TP x value head dim x
key head dim a layer) in ``mamba_ssm_dtype`` (vLLM 0.30 takes it from the checkpoint for
the Qwen3.5 family, model_executor/models/config.py ``Qwen3_5ForConditionalGenerationConfig``;
without it the model's dtype, vLLM's ``"auto"``), and its conv state (``conv_state``: a
window of ``linear_conv_kernel_dim - 1`` positions, k more when speculating, of the conv
channels / TP in the model's dtype). A config without linear-attention layers derives
none. A hybrid's ``layer_params`` is the mean over its layers of the two mixers
(``gated_delta_net_params`` for a linear layer; a full-attention layer's q_proj twice as
wide with ``attn_output_gate``, the gate) and the MLP they share; an MTP module's layer is a
full-attention layer (``HfModel.full_attention_layer_params``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.calibration import checkpoint_modules as names
from sim.calibration.kv_cache_dtype import KvCache, bytes_text, kv_cache_of
from sim.calibration.quant_layout import LM_HEAD, ROUTED, ROUTER, Width, read_layout
from sim.calibration.weight_bytes import LayerWeights, layout_bytes, mtp_module_bytes
from sim.errors import SpecsimError
from sim.files import json_depth, read_bounded_text

#: Bytes per parameter by ``torch_dtype``.
DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "float8_e4m3fn": 1.0}
#: What a config.json without a dtype init reads is told: the ones it reads.
NO_DTYPE_HINT = f": specsim init reads {', '.join(DTYPE_BYTES)} (the checkpoint's own)"


@dataclass(frozen=True, slots=True)
class Derived:
    """One value with where it came from (``config.json: num_hidden_layers``)."""

    value: Any
    origin: str


@dataclass(frozen=True, slots=True)
class HfModel:
    """The scenario's ``[model]`` values from a config.json, each with its origin."""

    source: str
    architecture: str
    values: dict[str, Derived] = field(default_factory=dict)
    is_moe: bool = False
    is_mla: bool = False
    heads: int = 0
    kv_heads: int = 0
    #: The layers that keep a KV cache (a hybrid's full-attention layers; else every layer).
    attention_layers: int = 0
    #: ``layer_params`` of a full-attention layer (a hybrid's ``layer_params`` is the mean
    #: over both kinds; an MTP module's layer is full attention).
    full_attention_layer_params: float = 0.0
    #: The server's KV cache its ``kv_bytes_per_token`` is priced at.
    kv_cache: KvCache | None = None
    #: One DeepSeek-style MTP module's bytes a weight and its widths by kind
    #: (``mtp_module_bytes``), for a checkpoint stored at mixed widths with
    #: ``num_nextn_predict_layers``; None: its modules are at ``weight_bytes_per_param``.
    mtp_bytes: tuple[float, str] | None = None

    def get(self, name: str) -> Any:
        return self.values[name].value


#: Deepest nesting of a config.json read (a real one nests two or three levels).
MAX_CONFIG_DEPTH = 32

#: The largest count or dimension a config.json field read here can hold (the largest
#: published are vocabularies of some 260k and FFN widths of some 100k): a value above it
#: is not a model's, and would overflow the parameter counts.
MAX_CONFIG_INT = 2**24

#: Fields a model cannot have zero of (the head count divides the hidden size).
_POSITIVE = frozenset(
    {"num_hidden_layers", "n_layer", "num_layers", "hidden_size", "n_embd", "d_model",
     "num_attention_heads", "n_head", "vocab_size"}
)  # fmt: skip


def _int(cfg: dict[str, Any], *names: str, source: str, required: bool = True) -> int | None:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise SpecsimError(
                    f"must be a non-negative integer, got {value!r}", source=source, field=name
                )
            if value > MAX_CONFIG_INT or (value == 0 and name in _POSITIVE):
                low = 1 if name in _POSITIVE else 0
                got = (
                    value if value.bit_length() < 64 else f"an integer of {len(str(value))} digits"
                )
                raise SpecsimError(
                    f"must be an integer from {low} to {MAX_CONFIG_INT:,}, got {got}",
                    source=source,
                    field=name,
                )
            return value
    if required:
        raise SpecsimError(
            "missing: specsim init cannot derive the model without it",
            source=source,
            field=names[0],
        )
    return None


def _first(cfg: dict[str, Any], *names: str) -> str | None:
    return next((n for n in names if cfg.get(n) is not None), None)


def _bytes_per_param(cfg: dict[str, Any], source: str, where: str = "config.json") -> Derived:
    """Bytes a weight of unquantized ``cfg`` (named ``where`` in the origin): its
    ``torch_dtype``/``dtype``."""
    name, dtype = _dtype(cfg, ("torch_dtype", "dtype"), source, NO_DTYPE_HINT)
    return Derived(DTYPE_BYTES[dtype], f"{where}: {name} = {dtype}")


#: The unquantized weights' dtype of an mxfp4 checkpoint that states none (gpt-oss's
#: config.json states no torch_dtype): bfloat16, the dtype its non-expert tensors are
#: published in (openai/gpt-oss-120b model card: "MXFP4 for the MoE weights, BF16 the rest").
MXFP4_UNSTATED_DTYPE = "bfloat16"


def _weight_bytes(
    raw: dict[str, Any],
    cfg: dict[str, Any],
    where: str,
    source: str,
    weights: LayerWeights,
    unstated_bytes: Derived | None,
    mtp: tuple[float, float] | None = None,
) -> tuple[dict[str, Derived], tuple[float, str] | None]:
    """``weight_bytes_per_param`` (and, for a MoE stored at mixed widths, its
    ``expert_bytes_per_param``): the ``quantization_config`` at the top level, else the
    language model's; its unquantized weights at the language model's dtype, else the top
    level's (a nested config may state it either side). With ``mtp`` (an MTP module's active
    routed-expert and eh_proj parameters) and a quantization read by layout, also
    ``mtp_module_bytes``'s (else None)."""
    quant_cfg, quant_where = (raw, "config.json") if "quantization_config" in raw else (cfg, where)
    quant = quant_cfg.get("quantization_config")
    if not isinstance(quant, dict):
        stated = "quantization_config" in raw or _first(raw, "torch_dtype", "dtype") is not None
        unstated = _first(cfg, "torch_dtype", "dtype") is None
        if unstated_bytes is not None and not stated and unstated:
            return {"weight_bytes_per_param": unstated_bytes}, None
        if "quantization_config" in raw or unstated:
            return {"weight_bytes_per_param": _bytes_per_param(raw, source)}, None
        return {"weight_bytes_per_param": _bytes_per_param(cfg, source, where)}, None
    own = _first(cfg, "torch_dtype", "dtype") is not None
    dtype_cfg, dtype_where = (cfg, where) if own else (raw, "config.json")
    stated = _first(dtype_cfg, "torch_dtype", "dtype") is not None
    if not stated and unstated_bytes is not None:
        dense = Width(unstated_bytes.value, unstated_bytes.origin)
    elif not stated and str(quant.get("quant_method", "")).lower() == "mxfp4":
        dense = Width(
            DTYPE_BYTES[MXFP4_UNSTATED_DTYPE],
            f"{MXFP4_UNSTATED_DTYPE}: no torch_dtype; gpt-oss's unquantized weights as published",
        )
    else:  # stated, or none to stand in: _dtype then names the missing field
        name, dtype = _dtype(dtype_cfg, ("torch_dtype", "dtype"), source, NO_DTYPE_HINT)
        dense = Width(DTYPE_BYTES[dtype], f"{dtype_where}: {name} = {dtype}")
    layout = read_layout(quant, dense, source)
    weight, expert = layout_bytes(weights, layout, quant_where, source)
    out = {"weight_bytes_per_param": Derived(*weight)}
    if expert is not None:
        out["expert_bytes_per_param"] = Derived(*expert)
    module = mtp_module_bytes(weights, layout, dense, *mtp, source) if mtp else None
    return out, module


def _dtype(cfg: dict[str, Any], names: tuple[str, ...], source: str, hint: str) -> tuple[str, str]:
    """(the first of ``names`` the config sets, its dtype); SpecsimError naming the field
    when none is set or the dtype is not one of ``DTYPE_BYTES`` (``hint`` ends the line)."""
    name = _first(cfg, *names)
    if name is None:
        raise SpecsimError(
            f"missing {names[0]} (or {', '.join(names[1:])}){hint}",
            source=source,
            field=names[0],
        )
    dtype = str(cfg[name])
    if dtype not in DTYPE_BYTES:
        raise SpecsimError(f"unknown dtype {dtype!r}{hint}", source=source, field=name)
    return name, dtype


#: The layer type of a linear-attention (Gated DeltaNet) layer in ``layer_types``.
LINEAR_ATTENTION = "linear_attention"


def linear_layers(cfg: dict[str, Any], layers: int, source: str) -> tuple[int, str]:
    """(linear-attention layers, where the count comes from) of a config: the
    ``"linear_attention"`` entries of ``layer_types``, else, with ``linear_num_value_heads``
    and ``full_attention_interval`` n, every layer but each n-th (transformers'
    ``Qwen3NextConfig``); 0 when neither says so."""
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise SpecsimError(
                f"must be a list of the {layers} layers' types", source=source, field="layer_types"
            )
        return sum(t == LINEAR_ATTENTION for t in types), "layer_types"
    interval = _int(cfg, "full_attention_interval", source=source, required=False)
    if interval and cfg.get("linear_num_value_heads") is not None:
        return layers - layers // interval, "full_attention_interval"
    return 0, ""


def linear_flags(cfg: dict[str, Any], layers: int) -> tuple[bool, ...]:
    """Whether each layer is a linear-attention layer (``linear_layers``' rule, layer by
    layer: ``layer_types``, else every layer but each ``full_attention_interval``-th)."""
    types = cfg.get("layer_types")
    if isinstance(types, list):
        return tuple(t == LINEAR_ATTENTION for t in types)
    interval = cfg.get("full_attention_interval")
    assert isinstance(interval, int) and interval > 0  # (linear_layers counted them so)
    return tuple((i + 1) % interval != 0 for i in range(layers))


@dataclass(frozen=True, slots=True)
class LinearHeads:
    """A Gated DeltaNet layer's heads as its config gives them (``linear_num_key_heads``,
    ``linear_key_head_dim``, ``linear_num_value_heads``, ``linear_value_head_dim``)."""

    key_heads: int
    key_dim: int
    value_heads: int
    value_dim: int


def linear_heads(cfg: dict[str, Any], source: str) -> LinearHeads:
    """``cfg``'s Gated DeltaNet heads; SpecsimError naming the first field missing or
    malformed."""
    names = (
        "linear_num_key_heads",
        "linear_key_head_dim",
        "linear_num_value_heads",
        "linear_value_head_dim",
    )
    values = []
    for name in names:
        value = _int(cfg, name, source=source)
        assert value is not None  # (required: _int raised otherwise)
        values.append(value)
    return LinearHeads(*values)


def recurrent_state_bytes(
    cfg: dict[str, Any], linear: int, tensor_parallel: int, where: str, source: str
) -> Derived:
    """The ``linear`` Gated DeltaNet layers' recurrent state a request per rank:
    ``linear x ceil(linear_num_value_heads / TP) x linear_value_head_dim x
    linear_key_head_dim x`` the bytes of ``mamba_ssm_dtype`` (else the model's dtype)."""
    h = linear_heads(cfg, source)
    name, dtype = _dtype(cfg, ("mamba_ssm_dtype", "torch_dtype", "dtype"), source, "")
    per_rank = max(math.ceil(h.value_heads / tensor_parallel), 1)
    return Derived(
        float(linear * per_rank * h.value_dim * h.key_dim * DTYPE_BYTES[dtype]),
        f"derived: {linear} linear-attention layers x ceil(linear_num_value_heads / TP "
        f"{tensor_parallel}) x linear_value_head_dim x linear_key_head_dim x "
        f"{DTYPE_BYTES[dtype]:g} bytes ({where}: {name} = {dtype}), per rank; read and "
        "written by every target pass",
    )


def gated_delta_net_params(cfg: dict[str, Any], hidden: int, source: str) -> float:
    """A Gated DeltaNet layer's mixer weights (transformers' ``Qwen3NextGatedDeltaNet``,
    vLLM's qwen3_next.py): in_proj_qkvz ``hidden x (2 x key heads x key dim + 2 x value
    heads x value dim)``, in_proj_ba ``hidden x 2 x value heads``, out_proj ``value heads
    x value dim x hidden``; the conv weights (channels x kernel), norms and gate vectors
    (under 0.1%) left out."""
    h = linear_heads(cfg, source)
    value = h.value_heads * h.value_dim
    key = h.key_heads * h.key_dim
    return float(hidden * (2 * key + 2 * value) + hidden * 2 * h.value_heads + value * hidden)


def conv_state(
    cfg: dict[str, Any], linear: int, tensor_parallel: int, where: str, source: str
) -> tuple[Derived, Derived]:
    """The ``linear`` Gated DeltaNet layers' conv state a request per rank, as vLLM keeps
    it (mamba_utils.py ``gated_delta_net_state_shape``: (kernel - 1 + k) positions x conv
    channels / TP, the channels 2 x key heads x key dim + value heads x value dim, in the
    model's dtype): (bytes a position of every layer's window, the window's positions in
    plain decoding, ``linear_conv_kernel_dim - 1``)."""
    h = linear_heads(cfg, source)
    kernel = _int(cfg, "linear_conv_kernel_dim", source=source)
    assert kernel is not None
    if kernel < 2:
        raise SpecsimError(
            f"must be at least 2 (a causal convolution keeps kernel - 1 positions), got {kernel}",
            source=source,
            field="linear_conv_kernel_dim",
        )
    name, dtype = _dtype(cfg, ("torch_dtype", "dtype"), source, "")
    channels = 2 * h.key_heads * h.key_dim + h.value_heads * h.value_dim
    per_rank = math.ceil(channels / tensor_parallel)
    return (
        Derived(
            float(linear * per_rank * DTYPE_BYTES[dtype]),
            f"derived: {linear} linear-attention layers x ceil(conv channels {channels:,} / TP "
            f"{tensor_parallel}) x {DTYPE_BYTES[dtype]:g} bytes ({where}: {name} = {dtype}; the "
            "channels 2 x linear_num_key_heads x linear_key_head_dim + linear_num_value_heads "
            "x linear_value_head_dim), a position of the conv window, per rank",
        ),
        Derived(
            kernel - 1,
            f"{where}: linear_conv_kernel_dim = {kernel}, minus 1: the conv window in plain "
            "decoding (a server speculating k tokens keeps k more)",
        ),
    )


def read_json(path: str | Path) -> dict[str, Any]:
    """A config.json as a mapping; SpecsimError naming the file if it is not one."""
    source = str(path)
    text = read_bounded_text(path)  # a regular file of bounded size (SpecsimError)
    if json_depth(text) > MAX_CONFIG_DEPTH:
        raise SpecsimError(
            f"not a config.json: nested deeper than {MAX_CONFIG_DEPTH}", source=source
        )
    try:
        raw = json.loads(text)
    except ValueError as exc:  # not JSON, or an integer of more digits than Python reads
        raise SpecsimError(f"not JSON: {str(exc)[:200]}", source=source) from None
    if not isinstance(raw, dict):
        raise SpecsimError("not a config.json object", source=source)
    return raw


#: ``model_type`` of targets whose layers are not attention-and-MLP blocks specsim derives:
#: state-space (Mamba) or recurrent mixers, alone or beside attention layers (transformers'
#: ``MambaConfig``, ``Mamba2Config``, ``FalconMambaConfig``, ``JambaConfig``, ``ZambaConfig``,
#: ``Zamba2Config``, ``BambaConfig``, ``NemotronHConfig``, ``FalconH1Config``,
#: ``GraniteMoeHybridConfig``, ``RwkvConfig``, ``RecurrentGemmaConfig``, ``xLSTMConfig``).
#: Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5) are derived (``linear_layers``).
UNMODELLED_MODEL_TYPES = frozenset(
    {"mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "nemotron_h",
     "falcon_h1", "granitemoehybrid", "rwkv", "recurrent_gemma", "xlstm"}
)  # fmt: skip

#: Architecture suffixes of models that do not decode text token by token (encoders,
#: classifiers, reward models: transformers' ``*ForMaskedLM`` and the pooling heads).
NON_GENERATIVE_SUFFIXES = (
    "ForMaskedLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForRewardModel",
)


def check_decoder_only(raw: dict[str, Any], source: str) -> None:
    """SpecsimError unless the config is of a decoder-only transformer: refused are
    encoder-decoder models (``is_encoder_decoder`` true: T5, BART, Whisper), the
    ``UNMODELLED_MODEL_TYPES`` (read at the top level and in ``text_config``) and
    architectures ending in a ``NON_GENERATIVE_SUFFIXES`` entry."""
    if raw.get("is_encoder_decoder") is True:
        raise SpecsimError(
            "true: an encoder-decoder model; specsim models decoder-only transformers",
            source=source,
            field="is_encoder_decoder",
        )
    text = raw.get("text_config")
    for cfg in (raw, text if isinstance(text, dict) else {}):
        kind = cfg.get("model_type")
        if isinstance(kind, str) and kind.lower() in UNMODELLED_MODEL_TYPES:
            raise SpecsimError(
                f"{kind!r}: its state-space or recurrent layers are not modelled (specsim "
                "derives attention layers, MoE, MLA and Gated DeltaNet hybrids)",
                source=source,
                field="model_type",
            )
    archs = raw.get("architectures")
    for arch in archs if isinstance(archs, list) else []:
        if isinstance(arch, str) and arch.endswith(NON_GENERATIVE_SUFFIXES):
            raise SpecsimError(
                f"{arch!r} does not generate text token by token; specsim models "
                "decoder-only language models (*ForCausalLM, *ForConditionalGeneration)",
                source=source,
                field="architectures",
            )


#: Fields that make only some layers routed (transformers' ``Llama4TextConfig``
#: ``interleave_moe_layer_step``, ``Qwen3MoeConfig`` ``decoder_sparse_step`` and
#: ``mlp_only_layers``, DeepSeek-V2's ``moe_layer_freq``): specsim derives
#: ``first_k_dense_replace`` dense layers, then routed ones, and refuses the others.
INTERLEAVE_FIELDS = ("interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq")

#: ``model_type`` of targets whose every routed layer also runs one shared expert of
#: ``intermediate_size`` that no field names (transformers ``Llama4TextMoe.shared_expert``).
IMPLICIT_SHARED_EXPERT = frozenset({"llama4_text"})


def check_moe_layout(cfg: dict[str, Any], source: str, *, moe: bool) -> None:
    """SpecsimError when the config's experts are laid out in a way ``hf_model_of`` does
    not derive: routed layers interleaved with dense ones (``INTERLEAVE_FIELDS`` above 1,
    a non-empty ``mlp_only_layers``), or, when no expert count was read, a field naming
    experts (``moe_num_experts``: ERNIE-4.5) that would leave a MoE derived as dense."""
    if moe:
        for name in INTERLEAVE_FIELDS:
            step = cfg.get(name)
            if isinstance(step, int) and not isinstance(step, bool) and step > 1:
                raise SpecsimError(
                    f"{step}: one layer in {step} is routed; specsim derives routed layers "
                    "after first_k_dense_replace dense ones, not interleaved with them",
                    source=source,
                    field=name,
                )
        dense = cfg.get("mlp_only_layers")
        if isinstance(dense, list) and dense:
            raise SpecsimError(
                f"{len(dense)} dense layers among the routed ones; specsim derives routed "
                "layers after first_k_dense_replace dense ones, not interleaved with them",
                source=source,
                field="mlp_only_layers",
            )
        return
    for name, value in cfg.items():
        counted = isinstance(value, int) and not isinstance(value, bool) and value > 1
        if "expert" in name and counted:
            raise SpecsimError(
                f"{value}: a mixture-of-experts field, but no expert count specsim "
                "reads (n_routed_experts, num_experts, num_local_experts): the model "
                "would be derived as dense",
                source=source,
                field=name,
            )


def language_config(raw: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The language model's part of a config.json (``text_config`` when present) and how an
    origin names it (``config.json`` or ``config.json: text_config``)."""
    if isinstance(raw.get("text_config"), dict):
        return raw["text_config"], "config.json: text_config"
    return raw, "config.json"


def quantized_part(raw: dict[str, Any]) -> dict[str, Any]:
    """The part of a config.json holding its ``quantization_config``: the top level when it
    has one, else the language model's (``language_config``)."""
    return raw if "quantization_config" in raw else language_config(raw)[0]


def read_raw(path: str | Path) -> dict[str, Any]:
    """The language model's part of a config.json (``language_config``)."""
    return language_config(read_json(path))[0]


def read_hf_config(
    path: str | Path, *, tensor_parallel: int = 1, kv_cache: KvCache | None = None
) -> HfModel:
    """The model geometry and weights of a config.json; SpecsimError naming the field that
    is missing or malformed."""
    return hf_model_of(
        read_json(path), str(path), tensor_parallel=tensor_parallel, kv_cache=kv_cache
    )


def kv_heads_named(cfg: dict[str, Any]) -> str:
    """How an origin names the KV heads: ``num_key_value_heads``, or, absent, the attention
    heads (transformers' configs default ``num_key_value_heads`` to
    ``num_attention_heads``: multi-head attention)."""
    if cfg.get("num_key_value_heads") is not None:
        return "num_key_value_heads"
    return "num_attention_heads as KV heads (no num_key_value_heads: transformers' default)"


def hf_model_of(
    raw: dict[str, Any],
    source: str,
    *,
    tensor_parallel: int = 1,
    unstated_bytes: Derived | None = None,
    kv_cache: KvCache | None = None,
) -> HfModel:
    """``read_hf_config`` of a config already read (``raw``; ``source`` names it in errors):
    a drafter checkpoint nests its layers' config inside its own (speculators'
    ``transformer_layer_config``). ``unstated_bytes``: the bytes a weight when the config
    states neither a quantization nor a dtype (a drafter: the target's); None: an error.
    ``kv_cache``: the server's KV cache (sim/calibration/kv_cache_dtype.py); None: what the
    engines' ``--kv-cache-dtype auto`` makes of this config."""
    check_decoder_only(raw, source)
    cfg, where = language_config(raw)
    archs = raw.get("architectures") or [raw.get("model_type", "unknown")]
    v: dict[str, Derived] = {}

    def cite(*names: str) -> str:
        return f"{where}: " + ", ".join(names)

    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", source=source)
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model", source=source)
    heads = _int(cfg, "num_attention_heads", "n_head", source=source)
    assert layers is not None and hidden is not None and heads is not None
    kv_heads = _int(cfg, "num_key_value_heads", source=source, required=False) or heads
    vocab = _int(cfg, "vocab_size", source=source)
    assert vocab is not None
    v["layers"] = Derived(layers, cite("num_hidden_layers"))
    v["hidden_size"] = Derived(hidden, cite("hidden_size"))
    linear, linear_why = linear_layers(cfg, layers, source)
    attention_layers = layers - linear

    # attention
    mla = cfg.get("kv_lora_rank") is not None
    if mla:
        kv_lora = _int(cfg, "kv_lora_rank", source=source)
        q_lora = _int(cfg, "q_lora_rank", source=source, required=False)
        nope = _int(cfg, "qk_nope_head_dim", source=source)
        rope = _int(cfg, "qk_rope_head_dim", source=source)
        v_dim = _int(cfg, "v_head_dim", source=source)
        assert kv_lora is not None and nope is not None and rope is not None
        assert v_dim is not None
        qk = nope + rope
        q = hidden * q_lora + q_lora * heads * qk if q_lora else hidden * heads * qk
        attn = q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim)
        attn += heads * v_dim * hidden
        attn_why = cite(
            "kv_lora_rank",
            "q_lora_rank",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
            "num_attention_heads",
        )
        kv_per_token_layer = (kv_lora + rope) * 1  # latent replicated on every rank
        pair_dims = qk + v_dim
        attn_names = names.MLA_ATTENTION if q_lora else names.MLA_ATTENTION_NO_Q_LORA
    else:
        head_dim = _int(cfg, "head_dim", source=source, required=False)
        if head_dim is None:
            if hidden % heads:
                raise SpecsimError(
                    "hidden_size is not a multiple of num_attention_heads: give head_dim",
                    source=source,
                    field="head_dim",
                )
            head_dim = hidden // heads
        attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
        attn_why = cite(
            "num_attention_heads",
            kv_heads_named(cfg),
            "head_dim" if cfg.get("head_dim") is not None else "hidden_size / heads",
        )
        if cfg.get("attn_output_gate") is True:  # the Qwen3.5 family: q_proj also gives the gate
            attn += hidden * heads * head_dim
            attn_why += ", attn_output_gate (q_proj twice as wide)"
        kv_per_token_layer = 2 * head_dim * max(math.ceil(kv_heads / tensor_parallel), 1)
        pair_dims = 2 * head_dim
        attn_names = names.GQA_ATTENTION
    full_attention = float(attn)  # one full-attention layer's mixer
    mixer = full_attention
    delta_net = 0.0
    if linear and not mla:
        delta_net = gated_delta_net_params(cfg, hidden, source)
        mixer = (attention_layers * full_attention + linear * delta_net) / layers
        attn_why = (
            f"the mean of {attention_layers} full-attention layers' ({attn_why}) and {linear} "
            "Gated DeltaNet layers' mixers (in_proj_qkvz hidden x (2 x key + 2 x value heads x "
            "dims), in_proj_ba hidden x 2 x value heads, out_proj value heads x dim x hidden)"
        )

    # MLP
    experts = _int(
        cfg, "n_routed_experts", "num_experts", "num_local_experts", source=source, required=False
    )
    inter = _int(cfg, "intermediate_size", "ffn_hidden_size", source=source, required=not experts)
    moe = bool(experts)
    check_moe_layout(cfg, source, moe=moe)
    naming = names.naming(cfg.get("model_type"))
    shared, shared_names, dense, dense_mlp = 0.0, naming.shared_experts, 0, 0.0
    if moe:
        assert experts is not None
        per_tok = _int(cfg, "num_experts_per_tok", "moe_topk", source=source)
        moe_inter = _int(cfg, "moe_intermediate_size", source=source, required=False) or inter
        if moe_inter is None:
            raise SpecsimError(
                "missing: the experts' size", source=source, field="moe_intermediate_size"
            )
        expert = 3 * hidden * moe_inter
        shared_why = "no shared expert"
        n_shared = _int(cfg, "n_shared_experts", source=source, required=False)
        shared_inter = _int(cfg, "shared_expert_intermediate_size", source=source, required=False)
        if n_shared:
            shared = n_shared * expert
            shared_why = cite("n_shared_experts", "moe_intermediate_size")
        elif shared_inter:
            shared = 3 * hidden * shared_inter
            shared_why = cite("shared_expert_intermediate_size")
            shared_names = naming.shared_expert
        elif cfg.get("model_type") in IMPLICIT_SHARED_EXPERT:
            shared, shared_names = float(expert), naming.shared_expert
            shared_why = (
                f"{cite('intermediate_size')}: {cfg['model_type']}'s one shared expert "
                "(transformers Llama4TextMoe)"
            )
        dense = _int(cfg, "first_k_dense_replace", source=source, required=False) or 0
        v["experts"] = Derived(experts, cite("n_routed_experts / num_experts"))
        v["experts_per_token"] = Derived(per_tok, cite("num_experts_per_tok"))
        v["expert_params"] = Derived(
            float(expert),
            f"3 x hidden_size x moe_intermediate_size ({cite('moe_intermediate_size')})",
        )
        v["layer_params"] = Derived(
            float(mixer + shared + hidden * experts),
            f"attention ({attn_why}) + shared experts ({shared_why}) + router "
            "(hidden_size x experts), outside the routed experts",
        )
        if dense:
            if inter is None:
                raise SpecsimError(
                    "missing: the dense layers' FFN size", source=source, field="intermediate_size"
                )
            dense_mlp = 3.0 * hidden * inter
            v["dense_layers"] = Derived(dense, cite("first_k_dense_replace"))
            v["dense_layer_params"] = Derived(
                float(mixer + 3 * hidden * inter),
                f"attention + 3 x hidden_size x intermediate_size ({cite('intermediate_size')})",
            )
    else:
        assert inter is not None
        dense_mlp = 3.0 * hidden * inter
        v["layer_params"] = Derived(
            float(mixer + 3 * hidden * inter),
            f"attention ({attn_why}) + 3 x hidden_size x intermediate_size "
            f"({cite('intermediate_size')})",
        )
    v["lm_head_params"] = Derived(float(vocab * hidden), cite("vocab_size", "hidden_size"))
    kinds: dict[str, tuple[tuple[str, ...], float]] = {
        "attention": (attn_names, full_attention),
        "linear attention": (names.LINEAR_ATTENTION, delta_net),
        "MLP": (naming.mlp, dense_mlp),
        LM_HEAD: ((), float(vocab * hidden)),
    }
    if moe:
        assert experts is not None
        kinds[ROUTED] = (naming.experts, float(experts * expert))
        kinds[ROUTER] = (naming.router, float(hidden * experts))
        if shared:
            kinds["shared experts"] = (shared_names, shared)
    flags = linear_flags(cfg, layers) if linear and not mla else (False,) * layers
    weights = LayerWeights(flags, dense if moe else layers, kinds, cfg is not raw)
    mtp = None
    if cfg.get("num_nextn_predict_layers"):  # DeepSeek-style MTP modules after the layers
        active = v["experts_per_token"].value * v["expert_params"].value if moe else 0.0
        mtp = (float(active), 2.0 * hidden * hidden)
    found, mtp_bytes = _weight_bytes(raw, cfg, where, source, weights, unstated_bytes, mtp)
    v.update(found)
    # the layers that keep a KV cache (a hybrid's full-attention layers only)
    kv_layers = (
        f"{layers} layers"
        if not linear
        else f"{attention_layers} full-attention layers ({cite(linear_why)})"
    )
    if kv_cache is None:
        kv_cache = kv_cache_of(quantized_part(raw), source, None)
    size, element = kv_cache.bytes_per_element, bytes_text(kv_cache.bytes_per_element)
    v["kv_bytes_per_token"] = Derived(
        float(kv_per_token_layer * size * attention_layers),
        (
            f"MLA latent (kv_lora_rank + qk_rope_head_dim) x {element} x {kv_layers}, on every rank"
            if mla
            else f"2 (K and V) x head_dim x ceil({kv_heads_named(cfg)} / TP {tensor_parallel}) "
            f"x {element} x {kv_layers}, per rank"
        )
        + f"; KV cache: {kv_cache.origin}",
    )
    heads_per_rank = heads / tensor_parallel
    v["attention_flops_per_pair"] = Derived(
        float(heads_per_rank * pair_dims * 2 * attention_layers),
        f"num_attention_heads / TP {tensor_parallel} x (qk + v head dims {pair_dims}) x 2 "
        f"FLOPs x {kv_layers}",
    )
    if linear:
        v["state_bytes_per_request"] = recurrent_state_bytes(
            cfg, linear, tensor_parallel, where, source
        )
        position, positions = conv_state(cfg, linear, tensor_parallel, where, source)
        v["conv_state_bytes_per_position"] = position
        v["conv_state_positions"] = positions
        v["linear_layers"] = Derived(linear, cite(linear_why))
    full_layer = v["layer_params"].value - mixer + full_attention  # an MTP layer's
    return HfModel(
        source,
        str(archs[0]),
        v,
        moe,
        mla,
        heads,
        kv_heads,
        attention_layers,
        full_layer,
        kv_cache,
        mtp_bytes,
    )
