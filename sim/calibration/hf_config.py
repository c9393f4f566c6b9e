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
Its parts: the file read and its fields checked (sim/calibration/hf_fields.py), the bytes
a weight (sim/calibration/hf_weight_bytes.py), a hybrid's linear layers
(sim/calibration/hybrid_layers.py), the layouts refused (sim/calibration/decoder_checks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.calibration import checkpoint_modules as names
from sim.calibration.decoder_checks import (
    IMPLICIT_SHARED_EXPERT,
    check_decoder_only,
    check_moe_layout,
)
from sim.calibration.hf_fields import (
    Derived,
    config_int,
    language_config,
    quantized_part,
    read_json,
)
from sim.calibration.hf_weight_bytes import checkpoint_weight_bytes
from sim.calibration.hybrid_layers import (
    conv_state,
    gated_delta_net_params,
    linear_flags,
    linear_layers,
    recurrent_state_bytes,
)
from sim.calibration.kv_cache_dtype import KvCache, bytes_text, kv_cache_of
from sim.calibration.quant_layout import LM_HEAD, ROUTED, ROUTER
from sim.calibration.weight_bytes import LayerWeights
from sim.errors import SpecsimError


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
    engines' ``--kv-cache-dtype auto`` makes of this config.

    In stages: the shape (layers, hidden size, heads, vocabulary); one full-attention
    layer's mixer (``_attention``) and a hybrid's mean mixer; the MLP, dense or MoE
    (``_mlp``); the bytes a weight by part (``_layer_weights``,
    sim/calibration/hf_weight_bytes.py); the KV cache and attention FLOPs per rank
    (``_kv_terms``); a hybrid's recurrent state (sim/calibration/hybrid_layers.py)."""
    check_decoder_only(raw, source)
    cfg, where = language_config(raw)
    archs = raw.get("architectures") or [raw.get("model_type", "unknown")]
    v: dict[str, Derived] = {}
    layers = config_int(cfg, "num_hidden_layers", "n_layer", "num_layers", source=source)
    hidden = config_int(cfg, "hidden_size", "n_embd", "d_model", source=source)
    heads = config_int(cfg, "num_attention_heads", "n_head", source=source)
    assert layers is not None and hidden is not None and heads is not None
    kv_heads = config_int(cfg, "num_key_value_heads", source=source, required=False) or heads
    vocab = config_int(cfg, "vocab_size", source=source)
    assert vocab is not None
    v["layers"] = Derived(layers, _cite(where, "num_hidden_layers"))
    v["hidden_size"] = Derived(hidden, _cite(where, "hidden_size"))
    linear, linear_why = linear_layers(cfg, layers, source)
    attention_layers = layers - linear
    mla = cfg.get("kv_lora_rank") is not None
    attention = _attention(cfg, where, source, hidden, heads, kv_heads, tensor_parallel, mla)
    full_attention = float(attention.params)  # one full-attention layer's mixer
    mixer, attn_why = full_attention, attention.why
    delta_net = 0.0
    if linear and not mla:
        delta_net = gated_delta_net_params(cfg, hidden, source)
        mixer, attn_why = _hybrid_mixer(attention, delta_net, layers, linear)
    mlp = _mlp(cfg, where, source, hidden, mixer, attn_why)
    v.update(mlp.values)
    v["lm_head_params"] = Derived(float(vocab * hidden), _cite(where, "vocab_size", "hidden_size"))
    weights = _layer_weights(cfg, raw, attention, delta_net, mlp, hidden, vocab, layers, linear)
    mtp = None
    if cfg.get("num_nextn_predict_layers"):  # DeepSeek-style MTP modules after the layers
        active = v["experts_per_token"].value * v["expert_params"].value if mlp.moe else 0.0
        mtp = (float(active), 2.0 * hidden * hidden)
    found, mtp_bytes = checkpoint_weight_bytes(
        raw, cfg, where, source, weights, unstated_bytes, mtp
    )
    v.update(found)
    if kv_cache is None:
        kv_cache = kv_cache_of(quantized_part(raw), source, None)
    v.update(
        _kv_terms(
            cfg, where, attention, kv_cache, heads, tensor_parallel, layers, linear, linear_why
        )
    )
    if linear:
        v.update(_recurrent_state(cfg, where, source, tensor_parallel, linear, linear_why))
    full_layer = v["layer_params"].value - mixer + full_attention  # an MTP layer's
    return HfModel(
        source,
        str(archs[0]),
        v,
        mlp.moe,
        mla,
        heads,
        kv_heads,
        attention_layers,
        full_layer,
        kv_cache,
        mtp_bytes,
    )


def _hybrid_mixer(
    attention: _Attention, delta_net: float, layers: int, linear: int
) -> tuple[float, str]:
    """A hybrid's mixer a layer and its origin: the mean over its ``layers - linear``
    full-attention layers' mixers (``attention``) and its ``linear`` Gated DeltaNet layers'
    (``delta_net`` parameters each, sim/calibration/hybrid_layers.py)."""
    attention_layers = layers - linear
    mixer = (attention_layers * float(attention.params) + linear * delta_net) / layers
    why = (
        f"the mean of {attention_layers} full-attention layers' ({attention.why}) and {linear} "
        "Gated DeltaNet layers' mixers (in_proj_qkvz hidden x (2 x key + 2 x value heads x "
        "dims), in_proj_ba hidden x 2 x value heads, out_proj value heads x dim x hidden)"
    )
    return mixer, why


def _recurrent_state(
    cfg: dict[str, Any],
    where: str,
    source: str,
    tensor_parallel: int,
    linear: int,
    linear_why: str,
) -> dict[str, Derived]:
    """A hybrid's per-request state: its ``linear`` layers' recurrent state bytes, the
    short convolution's bytes a position and its positions (a rank's;
    sim/calibration/hybrid_layers.py), and ``linear_layers`` itself."""
    state = recurrent_state_bytes(cfg, linear, tensor_parallel, where, source)
    position, positions = conv_state(cfg, linear, tensor_parallel, where, source)
    return {
        "state_bytes_per_request": state,
        "conv_state_bytes_per_position": position,
        "conv_state_positions": positions,
        "linear_layers": Derived(linear, _cite(where, linear_why)),
    }


def _cite(where: str, *fields: str) -> str:
    """An origin: the config's fields ``fields`` at ``where``."""
    return f"{where}: " + ", ".join(fields)


@dataclass(frozen=True, slots=True)
class _Attention:
    """One full-attention layer's mixer (``_attention``): its parameters and their origin,
    the KV cache elements a token keeps a layer and rank, the head dims a query-key pair's
    attention FLOPs run over (qk + v), its checkpoint module names, and whether it is MLA."""

    params: int
    why: str
    kv_per_token_layer: int
    pair_dims: int
    module_names: tuple[str, ...]
    mla: bool


def _attention(
    cfg: dict[str, Any],
    where: str,
    source: str,
    hidden: int,
    heads: int,
    kv_heads: int,
    tensor_parallel: int,
    mla: bool,
) -> _Attention:
    """One full-attention layer's mixer. MLA (DeepSeek-V2/V3): q (through ``q_lora_rank``
    when given) hidden x q_lora + q_lora x heads x (nope + rope), the KV down-projection
    hidden x (kv_lora + rope), its up-projection kv_lora x heads x (nope + v) and the output
    heads x v x hidden; its latent (kv_lora + rope) replicated on every rank. Otherwise
    (GQA) 2 x hidden x heads x head_dim + 2 x hidden x kv_heads x head_dim (q_proj twice as
    wide with ``attn_output_gate``), K and V of ceil(kv_heads / TP) heads a rank."""

    def cite(*fields: str) -> str:
        return _cite(where, *fields)

    if mla:
        kv_lora = config_int(cfg, "kv_lora_rank", source=source)
        q_lora = config_int(cfg, "q_lora_rank", source=source, required=False)
        nope = config_int(cfg, "qk_nope_head_dim", source=source)
        rope = config_int(cfg, "qk_rope_head_dim", source=source)
        v_dim = config_int(cfg, "v_head_dim", source=source)
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
        attn_names = names.MLA_ATTENTION if q_lora else names.MLA_ATTENTION_NO_Q_LORA
        return _Attention(attn, attn_why, kv_per_token_layer, qk + v_dim, attn_names, True)
    head_dim = config_int(cfg, "head_dim", source=source, required=False)
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
    return _Attention(attn, attn_why, kv_per_token_layer, 2 * head_dim, names.GQA_ATTENTION, False)


@dataclass(frozen=True, slots=True)
class _Mlp:
    """A layer's MLP (``_mlp``): whether it is a MoE, its routed experts and one expert's
    parameters, its shared experts' parameters and module names, its first dense layers
    and a dense MLP's parameters; ``values``: the ``[model]`` values it gives."""

    moe: bool
    experts: int
    expert: int
    shared: float
    shared_names: tuple[str, ...]
    dense: int
    dense_mlp: float
    naming: names.Naming
    values: dict[str, Derived]


def _mlp(
    cfg: dict[str, Any], where: str, source: str, hidden: int, mixer: float, attn_why: str
) -> _Mlp:
    """The MLP: dense, 3 x hidden x intermediate_size (gate, up, down); or MoE, routed
    experts of 3 x hidden x moe_intermediate_size each, shared experts
    (``n_shared_experts`` of the routed size, one of ``shared_expert_intermediate_size``,
    or the one an ``IMPLICIT_SHARED_EXPERT`` model type has), a router of hidden x experts,
    and ``first_k_dense_replace`` dense layers first. ``layer_params``: the layer outside
    its routed experts, ``mixer`` (from ``attn_why``) included."""

    def cite(*fields: str) -> str:
        return _cite(where, *fields)

    experts = config_int(
        cfg, "n_routed_experts", "num_experts", "num_local_experts", source=source, required=False
    )
    inter = config_int(
        cfg, "intermediate_size", "ffn_hidden_size", source=source, required=not experts
    )
    moe = bool(experts)
    check_moe_layout(cfg, source, moe=moe)
    naming = names.naming(cfg.get("model_type"))
    v: dict[str, Derived] = {}
    if not moe:
        assert inter is not None
        v["layer_params"] = Derived(
            float(mixer + 3 * hidden * inter),
            f"attention ({attn_why}) + 3 x hidden_size x intermediate_size "
            f"({cite('intermediate_size')})",
        )
        return _Mlp(False, 0, 0, 0.0, naming.shared_experts, 0, 3.0 * hidden * inter, naming, v)
    assert experts is not None
    shared, shared_names, dense_mlp = 0.0, naming.shared_experts, 0.0
    per_tok = config_int(cfg, "num_experts_per_tok", "moe_topk", source=source)
    moe_inter = config_int(cfg, "moe_intermediate_size", source=source, required=False) or inter
    if moe_inter is None:
        raise SpecsimError(
            "missing: the experts' size", source=source, field="moe_intermediate_size"
        )
    expert = 3 * hidden * moe_inter
    shared_why = "no shared expert"
    n_shared = config_int(cfg, "n_shared_experts", source=source, required=False)
    shared_inter = config_int(cfg, "shared_expert_intermediate_size", source=source, required=False)
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
    dense = config_int(cfg, "first_k_dense_replace", source=source, required=False) or 0
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
    return _Mlp(True, experts, expert, shared, shared_names, dense, dense_mlp, naming, v)


def _layer_weights(
    cfg: dict[str, Any],
    raw: dict[str, Any],
    attention: _Attention,
    delta_net: float,
    mlp: _Mlp,
    hidden: int,
    vocab: int,
    layers: int,
    linear: int,
) -> LayerWeights:
    """The model's parameters by part (sim/calibration/weight_bytes.py ``LayerWeights``),
    which the checkpoint's bytes a weight are read against: attention, a hybrid's linear
    attention, the dense MLP, the LM head (vocab x hidden) and, of a MoE, its
    routed experts (all of a layer's), router and shared experts."""
    naming = mlp.naming
    kinds: dict[str, tuple[tuple[str, ...], float]] = {
        "attention": (attention.module_names, float(attention.params)),
        "linear attention": (names.LINEAR_ATTENTION, delta_net),
        "MLP": (naming.mlp, mlp.dense_mlp),
        LM_HEAD: ((), float(vocab * hidden)),
    }
    if mlp.moe:
        kinds[ROUTED] = (naming.experts, float(mlp.experts * mlp.expert))
        kinds[ROUTER] = (naming.router, float(hidden * mlp.experts))
        if mlp.shared:
            kinds["shared experts"] = (mlp.shared_names, mlp.shared)
    hybrid = linear and not attention.mla
    flags = linear_flags(cfg, layers) if hybrid else (False,) * layers
    return LayerWeights(flags, mlp.dense if mlp.moe else layers, kinds, cfg is not raw)


def _kv_terms(
    cfg: dict[str, Any],
    where: str,
    attention: _Attention,
    kv_cache: KvCache,
    heads: int,
    tensor_parallel: int,
    layers: int,
    linear: int,
    linear_why: str,
) -> dict[str, Derived]:
    """``kv_bytes_per_token`` (a rank's): the KV elements a token keeps a layer x the KV
    cache's bytes an element x the layers that keep a KV cache (a hybrid's full-attention
    layers only); ``attention_flops_per_pair``: heads / TP x (qk + v head dims) x 2 FLOPs x
    those layers."""
    attention_layers = layers - linear
    kv_layers = (
        f"{layers} layers"
        if not linear
        else f"{attention_layers} full-attention layers ({_cite(where, linear_why)})"
    )
    size, element = kv_cache.bytes_per_element, bytes_text(kv_cache.bytes_per_element)
    pair_dims = attention.pair_dims
    return {
        "kv_bytes_per_token": Derived(
            float(attention.kv_per_token_layer * size * attention_layers),
            (
                f"MLA latent (kv_lora_rank + qk_rope_head_dim) x {element} x {kv_layers}, on "
                "every rank"
                if attention.mla
                else f"2 (K and V) x head_dim x ceil({kv_heads_named(cfg)} / TP "
                f"{tensor_parallel}) x {element} x {kv_layers}, per rank"
            )
            + f"; KV cache: {kv_cache.origin}",
        ),
        "attention_flops_per_pair": Derived(
            float(heads / tensor_parallel * pair_dims * 2 * attention_layers),
            f"num_attention_heads / TP {tensor_parallel} x (qk + v head dims {pair_dims}) x 2 "
            f"FLOPs x {kv_layers}",
        ),
    }
