"""The module names a Hugging Face checkpoint gives a decoder's weights, by architecture: what
a ``quantization_config``'s module patterns (``ignore``, ``exclude_modules``,
``modules_to_not_convert``, ``targets``, ``quantized_layers``) are matched against.

Names as transformers' modelling code spells them: ``model.layers.{i}.`` then, by part,

- attention ``self_attn.{q,k,v,o}_proj``; multi-head latent (DeepSeek-V2/V3, Kimi-K2)
  ``self_attn.{q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj}`` (``q_proj``
  without ``q_lora_rank``); Gated DeltaNet ``linear_attn.{in_proj_qkvz, in_proj_ba, out_proj}``;
- a dense MLP ``mlp.{gate,up,down}_proj``; routed experts ``mlp.experts.{e}.{gate,up,down}_proj``
  (expert 0 stands for every expert); shared experts ``mlp.shared_experts.*`` (DeepSeek) or
  ``mlp.shared_expert.*`` (Qwen2-MoE); the router ``mlp.gate``;
- Mixtral: ``block_sparse_moe.experts.{e}.w{1,2,3}``, router ``block_sparse_moe.gate``;
  gpt-oss: the fused ``mlp.experts.{gate_up_proj, down_proj}``, router ``mlp.router``;
  Llama 4: ``feed_forward.*`` with fused ``feed_forward.experts.{gate_up_proj, down_proj}``,
  ``feed_forward.shared_expert.*``, router ``feed_forward.router``;
- the LM head ``lm_head``.

A language model nested in a multimodal config (``text_config``) is matched under each prefix
its checkpoints use (``model.layers``, ``language_model.model.layers``,
``model.language_model.layers``; ``lm_head``, ``language_model.lm_head``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Naming", "Part", "lm_head_names", "naming", "projection_names"]


@dataclass(frozen=True, slots=True)
class Naming:
    """Module names of a layer's parts, relative to the layer (``model.layers.{i}.``)."""

    mlp: tuple[str, ...] = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
    experts: tuple[str, ...] = (
        "mlp.experts.0.gate_proj",
        "mlp.experts.0.up_proj",
        "mlp.experts.0.down_proj",
    )
    shared_experts: tuple[str, ...] = (
        "mlp.shared_experts.gate_proj",
        "mlp.shared_experts.up_proj",
        "mlp.shared_experts.down_proj",
    )
    shared_expert: tuple[str, ...] = (
        "mlp.shared_expert.gate_proj",
        "mlp.shared_expert.up_proj",
        "mlp.shared_expert.down_proj",
    )
    router: tuple[str, ...] = ("mlp.gate",)


GQA_ATTENTION = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
MLA_ATTENTION = (
    "self_attn.q_a_proj",
    "self_attn.q_b_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_b_proj",
    "self_attn.o_proj",
)
MLA_ATTENTION_NO_Q_LORA = (
    "self_attn.q_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_b_proj",
    "self_attn.o_proj",
)
LINEAR_ATTENTION = ("linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.out_proj")

#: Architectures whose modules are not named as DeepSeek's, Qwen's and Llama's are.
NAMINGS: dict[str, Naming] = {
    "mixtral": Naming(
        experts=(
            "block_sparse_moe.experts.0.w1",
            "block_sparse_moe.experts.0.w2",
            "block_sparse_moe.experts.0.w3",
        ),
        router=("block_sparse_moe.gate",),
    ),
    "gpt_oss": Naming(
        experts=("mlp.experts.gate_up_proj", "mlp.experts.down_proj"),
        router=("mlp.router",),
    ),
    "llama4_text": Naming(
        mlp=("feed_forward.gate_proj", "feed_forward.up_proj", "feed_forward.down_proj"),
        experts=("feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj"),
        shared_expert=(
            "feed_forward.shared_expert.gate_proj",
            "feed_forward.shared_expert.up_proj",
            "feed_forward.shared_expert.down_proj",
        ),
        router=("feed_forward.router",),
    ),
}

#: Layer prefixes of a top-level language model, and of one nested in ``text_config``.
TOP_PREFIXES = ("model.layers.{i}.",)
NESTED_PREFIXES = (
    "model.layers.{i}.",
    "language_model.model.layers.{i}.",
    "model.language_model.layers.{i}.",
)


def naming(model_type: object) -> Naming:
    """The module names of ``model_type``'s layers (DeepSeek's, Qwen's and Llama's unless
    ``NAMINGS`` lists it)."""
    return NAMINGS.get(str(model_type), Naming())


@dataclass(frozen=True, slots=True)
class Part:
    """One kind of weights in one layer (or the LM head): ``kind`` (``attention``, ``MLP``,
    ``routed experts``, ...), its projections (each a tuple of the names it may carry),
    its parameters, whether it is the routed experts."""

    kind: str
    modules: tuple[tuple[str, ...], ...]
    params: float
    routed: bool = False


def projection_names(
    layer: int, relative: tuple[str, ...], nested: bool
) -> tuple[tuple[str, ...], ...]:
    """Each of ``relative``'s projections of layer ``layer`` under every prefix its
    checkpoints use (``nested``: a language model inside a multimodal config)."""
    prefixes = NESTED_PREFIXES if nested else TOP_PREFIXES
    return tuple(tuple(p.format(i=layer) + name for p in prefixes) for name in relative)


def lm_head_names(nested: bool) -> tuple[tuple[str, ...], ...]:
    """The LM head's names (``lm_head``; nested, also ``language_model.lm_head``)."""
    return (("lm_head", "language_model.lm_head"),) if nested else (("lm_head",),)
