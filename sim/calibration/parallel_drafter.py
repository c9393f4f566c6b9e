"""A block-parallel drafter's size from its checkpoint's config.json (DFlash, DSpark):
what ``specsim init --drafter dflash|dspark --draft-config FILE`` writes.

Two layouts are read:

- speculators' (``speculators_model_type`` "dflash", "dflash2" or "dspark"): the decoder
  layers' config is ``transformer_layer_config`` (a Qwen3-style config), the target layers
  whose hidden states feed the drafter ``aux_hidden_state_layer_ids``, the output
  vocabulary ``draft_vocab_size`` (None: the target's), DSpark's Markov head
  ``markov_rank`` (vLLM 0.30 reads the same fields,
  vllm/transformers_utils/configs/speculators/algos.py ``update_dflash``/``update_dspark``);
- a dense checkpoint's (z-lab's DFlash, the DeepSeek DSpark ones): the decoder config at the
  top level, the target layers in ``dflash_config.target_layer_ids``,
  ``dspark_target_layer_ids`` or ``target_layer_ids``.

The weights one drafter pass reads (``model.draft_params``):

    layers x layer_params + fc + head + markov_reads x markov_rank x vocab

- ``layer_params``: each decoder layer by the same formulas as a target's
  (sim/calibration/hf_config.py: q, k, v, o and a gated MLP);
- fc: ``len(target layers) x target hidden x drafter hidden``, the projection of the
  concatenated target hidden states (speculators builds it so,
  src/speculators/models/dflash/core.py);
- head: the target's LM head when the drafter's output vocabulary is the target's (vLLM's
  DFlash and DSpark speculators then share it, vllm/v1/worker/gpu/spec_decode/dspark/
  utils.py ``load_dspark_model``), else ``draft_vocab_size x hidden`` of its own;
- DSpark's Markov head: its ``markov_rank x vocab`` projection, applied once at each of the
  k draft positions in turn by vLLM's sequential sampler
  (vllm/v1/worker/gpu/spec_decode/dspark/speculator.py ``_sample_sequential``, 0.30.0), so
  read k times a pass; its embedding is a lookup (rows only, not counted).

The embedding is shared with the target (a lookup). Norms and biases are left out, as for
a target. The drafter's KV a token is its layers' (``model.draft_kv_bytes_per_token``).
"""

from __future__ import annotations

from typing import Any

from sim.calibration.drafter_size import DrafterSize, drafter_layers, drafter_size
from sim.calibration.hf_config import HfModel
from sim.calibration.hf_fields import read_json
from sim.calibration.kv_cache_dtype import KvCache
from sim.errors import SpecsimError

__all__ = ["PARALLEL_DRAFTERS", "ParallelDrafter", "parallel_drafter"]

#: Draft methods that propose their k tokens in one drafter pass.
PARALLEL_DRAFTERS = ("dflash", "dspark")
#: speculators' model types of a block-parallel drafter.
SPECULATORS_TYPES = ("dflash", "dflash2", "dspark")
#: Where a dense checkpoint names the target layers it reads.
TARGET_LAYER_FIELDS = (
    "dflash_config.target_layer_ids",
    "dspark_target_layer_ids",
    "target_layer_ids",
)


#: A block-parallel drafter's size (the fields every drafter's config gives).
ParallelDrafter = DrafterSize


def _target_layers(raw: dict[str, Any], speculators: bool, source: str) -> tuple[list[Any], str]:
    """The target layers whose hidden states the drafter reads, and the field naming them."""
    fields = ("aux_hidden_state_layer_ids",) if speculators else TARGET_LAYER_FIELDS
    for name in fields:
        value: Any = raw
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            if not isinstance(value, list) or not value:
                raise SpecsimError(
                    "must be a non-empty list of layer ids", source=source, field=name
                )
            return value, name
    raise SpecsimError(
        "missing: the target layers the drafter reads (a DFlash/DSpark checkpoint names them)",
        source=source,
        field=fields[0],
    )


def parallel_drafter(
    path: str,
    target: HfModel,
    method: str,
    num_steps: int,
    *,
    tensor_parallel: int = 1,
    kv: KvCache | None = None,
) -> ParallelDrafter:
    """The drafter of checkpoint config ``path`` for ``target`` (module docstring);
    SpecsimError naming the file and field it cannot read. ``kv``: its KV cache (None: its
    own config's ``auto``)."""
    raw = read_json(path)
    kind = raw.get("speculators_model_type")
    speculators = kind is not None
    if speculators and kind not in SPECULATORS_TYPES:
        raise SpecsimError(
            f"{kind!r} is not a block-parallel drafter (use one of {', '.join(SPECULATORS_TYPES)})",
            source=path,
            field="speculators_model_type",
        )
    draft, _, where = drafter_layers(
        raw, path, target, speculators=speculators, tensor_parallel=tensor_parallel, kv_cache=kv
    )
    layers = int(draft.get("layers"))
    hidden = int(draft.get("hidden_size"))
    aux, aux_field = _target_layers(raw, speculators, path)
    fc = len(aux) * target.get("hidden_size") * hidden
    target_vocab = target.get("lm_head_params") / target.get("hidden_size")
    draft_vocab = raw.get("draft_vocab_size")
    if draft_vocab is None or draft_vocab == target_vocab:
        head, head_why = target.get("lm_head_params"), "the target's LM head (shared)"
        vocab = target_vocab
    else:
        if not isinstance(draft_vocab, int) or draft_vocab < 1:
            raise SpecsimError("must be a positive integer", source=path, field="draft_vocab_size")
        head, head_why = draft_vocab * hidden, "its own head (draft_vocab_size x hidden_size)"
        vocab = draft_vocab
    rank = raw.get("markov_rank") if method == "dspark" else None
    if rank is not None and (not isinstance(rank, int) or rank < 1):
        raise SpecsimError("must be a positive integer", source=path, field="markov_rank")
    markov = num_steps * rank * vocab if rank else 0.0
    params = layers * draft.get("layer_params") + fc + head + markov
    markov_why = (
        f" + the Markov head's markov_rank {rank} x {vocab:,.0f} projection read at each of the "
        f"{num_steps} positions"
        if rank
        else ""
    )
    layer_why = draft.values["layer_params"].origin
    why = (
        f"derived from {path}: {layers} decoder layers ({where}: {layer_why})"
        f" + fc {len(aux)} target layers ({aux_field}) x target hidden x {hidden} + "
        f"{head_why}{markov_why}; block-parallel (DFlash/DSpark)"
    )
    return drafter_size(draft, path, where, params, why)
