"""The ``config.json`` layouts ``specsim init`` refuses in one line: models that are not
decoder-only attention-and-MLP stacks (``check_decoder_only``), and MoE layouts it does not
derive (``check_moe_layout``: routed layers interleaved with dense ones, an expert count
under a name it does not read)."""

from __future__ import annotations

from typing import Any

from sim.errors import SpecsimError

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
