"""An EAGLE-3 drafter's size from its own config.json: what ``specsim init --drafter eagle3
--draft-config FILE`` writes.

Two layouts are read:

- EAGLE's and SpecForge's (``architectures`` naming an ``...Eagle3`` class, e.g.
  ``LlamaForCausalLMEagle3``: yuhuili/EAGLE3-*, lmsys/sglang-EAGLE3-*): the decoder layer's
  fields at the top level, ``draft_vocab_size`` and, when the drafter's width is not the
  target's, ``target_hidden_size``;
- speculators' (``speculators_model_type = "eagle3"``, ``architectures`` Eagle3Speculator:
  RedHatAI/*-speculator.eagle3): the layer in ``transformer_layer_config``, the rest at the
  top level (vLLM reads the same fields, vllm/transformers_utils/configs/speculators/
  algos.py ``update_eagle3``).

The weights one drafter step reads (``model.draft_params``), with H the drafter's hidden
size, T the target's, heads x head_dim the query width and kv the KV heads:

    first layer:  q, k, v over the 2 x H input (the token's embedding beside the fused
                  hidden state): 2H x (heads + 2 kv) x head_dim, o: heads x head_dim x H,
                  gated MLP 3 x H x intermediate_size
    later layers: as a target's layer (sim/calibration/hf_config.py ``layer_params``)
    fc:           aux x T x H, the projection of the aux target layers' hidden states
                  (``eagle_aux_hidden_state_layer_ids``, else EAGLE-3's three)
    LM head:      draft_vocab_size x H (the drafter's own, over its draft vocabulary;
                  without draft_vocab_size, vocab_size x H)

The embedding is the target's (a lookup, not read a pass); norms are left out, as for a
target. The bytes read are the parameters times the drafter's own dtype (``torch_dtype``).
A drafter of another target is refused: its fc reads T-wide hidden states and its
embedding the target's vocabulary, so T and ``vocab_size`` must be the target's.
"""

from __future__ import annotations

from typing import Any

from sim.calibration.drafter_size import DrafterSize, drafter_layers, drafter_size
from sim.calibration.hf_config import HfModel
from sim.calibration.hf_fields import read_json
from sim.calibration.kv_cache_dtype import KvCache
from sim.errors import SpecsimError

__all__ = ["eagle3_drafter", "is_eagle3_drafter"]

#: EAGLE-3 reads three target layers' hidden states unless the config names them.
DEFAULT_AUX_LAYERS = 3


def is_eagle3_drafter(raw: dict[str, Any]) -> bool:
    """Whether a config.json is an EAGLE-3 drafter's: speculators' model type ``eagle3``, or
    an ``architectures`` entry naming Eagle3 (LlamaForCausalLMEagle3, Eagle3Speculator)."""
    if raw.get("speculators_model_type") == "eagle3":
        return True
    archs = raw.get("architectures")
    return isinstance(archs, list) and any("eagle3" in str(a).lower() for a in archs)


def _positive_int(raw: dict[str, Any], name: str, source: str) -> int | None:
    value = raw.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecsimError(f"must be a positive integer, got {value!r}", source=source, field=name)
    return value


def eagle3_drafter(
    path: str, target: HfModel, *, tensor_parallel: int = 1, kv: KvCache | None = None
) -> DrafterSize:
    """The EAGLE-3 drafter of config ``path`` for ``target`` (module docstring);
    SpecsimError naming the file and field when it is not an EAGLE-3 drafter's, not this
    target's, or cannot be read. ``kv``: its KV cache (None: its own config's ``auto``)."""
    raw = read_json(path)
    if not is_eagle3_drafter(raw):
        kind = raw.get("speculators_model_type")
        said = (
            f"speculators_model_type {kind!r}"
            if kind is not None
            else f"architectures {raw.get('architectures')!r}"
        )
        raise SpecsimError(
            f"not an EAGLE-3 drafter's config.json ({said}; a drafter's names Eagle3 in "
            "architectures or sets speculators_model_type = 'eagle3')",
            source=path,
            field="speculators_model_type" if kind is not None else "architectures",
        )
    speculators = raw.get("speculators_model_type") == "eagle3"
    draft, layer_cfg, where = drafter_layers(
        raw, path, target, speculators=speculators, tensor_parallel=tensor_parallel, kv_cache=kv
    )
    hidden = int(draft.get("hidden_size"))
    target_hidden = int(target.get("hidden_size"))
    named = _positive_int(raw, "target_hidden_size", path)
    if named is None and speculators:
        named = _positive_int(layer_cfg, "target_hidden_size", path)
    fc_in = named or hidden
    if fc_in != target_hidden:
        own = "transformer_layer_config.hidden_size" if speculators else "hidden_size"
        raise SpecsimError(
            f"{fc_in}, the target's is {target_hidden} ({target.source}): the drafter of "
            "another model",
            source=path,
            field="target_hidden_size" if named else own,
        )
    target_vocab = round(target.get("lm_head_params") / target_hidden)
    vocab = _positive_int(layer_cfg, "vocab_size", path)
    if vocab is not None and vocab != target_vocab:
        raise SpecsimError(
            f"{vocab}, the target's is {target_vocab} ({target.source}): the drafter of "
            "another model",
            source=path,
            field="vocab_size",
        )
    layers = int(draft.get("layers"))
    heads, kv_heads = draft.heads, draft.kv_heads
    head_dim = _positive_int(layer_cfg, "head_dim", path) or hidden // heads
    widened = hidden * (heads + 2 * kv_heads) * head_dim  # q, k, v over H more inputs
    aux_ids = raw.get("eagle_aux_hidden_state_layer_ids")
    if aux_ids is not None and (not isinstance(aux_ids, list) or not aux_ids):
        raise SpecsimError(
            "must be a non-empty list of layer ids",
            source=path,
            field="eagle_aux_hidden_state_layer_ids",
        )
    aux = len(aux_ids) if aux_ids else DEFAULT_AUX_LAYERS
    aux_why = "eagle_aux_hidden_state_layer_ids" if aux_ids else "EAGLE-3's three, none named"
    draft_vocab = _positive_int(raw, "draft_vocab_size", path)
    head_vocab = draft_vocab or vocab or target_vocab
    head_why = "draft_vocab_size" if draft_vocab else "vocab_size (no draft_vocab_size)"
    params = layers * draft.get("layer_params") + widened + aux * fc_in * hidden
    params += head_vocab * hidden
    bpp = float(draft.get("weight_bytes_per_param"))
    bpp_origin = draft.values["weight_bytes_per_param"].origin
    why = (
        f"derived from {path}: {layers} decoder layer(s) ({where}), the first's q, k, v over "
        f"2 x hidden {hidden}, fc {aux} target layers ({aux_why}) x {fc_in} x {hidden}, LM "
        f"head {head_vocab:,} ({head_why}) x {hidden}; {params / 1e6:.1f}M params, "
        f"{params * bpp / 1e9:.3g} GB at {bpp:g} B ({bpp_origin})"
    )
    return drafter_size(draft, path, where, params, why)
