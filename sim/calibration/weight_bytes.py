"""``model.weight_bytes_per_param`` and ``model.expert_bytes_per_param`` of a quantized
checkpoint whose modules are stored at different widths (sim/calibration/quant_layout.py):

- ``weight_bytes_per_param``: the parameter-weighted mean width of what every pass reads
  whatever its tokens (attention or Gated DeltaNet mixers, dense MLPs, shared experts,
  routers, the LM head), layer by layer: ``sum(params_i x bytes_i) / sum(params_i)``, so
  that the hardware model's non-expert bytes (``layer_params``, ``dense_layer_params`` and
  ``lm_head_params`` at this width) are the checkpoint's exactly. The input embedding, which
  a decode does not read, is stored at this mean in the KV capacity's weight bytes.
- ``expert_bytes_per_param`` (MoE only): the routed experts' width (the mean over the MoE
  layers when they differ), which the expert reads (sim/hardware/expert_reads.py) price.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sim.calibration.checkpoint_modules import Part, lm_head_names, projection_names
from sim.calibration.quant_layout import LM_HEAD, ROUTED, ROUTER, Layout, Width

__all__ = ["LayerWeights", "layout_bytes", "mtp_module_bytes", "parts_of"]


@dataclass(frozen=True, slots=True)
class LayerWeights:
    """A model's parameters by part as ``hf_model_of`` derives them: ``kinds`` maps a part's
    kind (``attention``, ``linear attention``, ``MLP``, ``routed experts``, ``shared
    experts``, ``router``, ``LM head``) to its module names relative to the layer
    (sim/calibration/checkpoint_modules.py) and its parameters a layer (the routed experts':
    all of a layer's); ``linear[i]``: layer i is a Gated DeltaNet layer; the first
    ``dense_layers`` layers have a dense MLP, the others the MoE parts (a dense model:
    ``dense_layers`` = every layer); ``nested``: a language model inside a multimodal
    config."""

    linear: tuple[bool, ...]
    dense_layers: int
    kinds: dict[str, tuple[tuple[str, ...], float]]
    nested: bool


#: A MoE layer's parts beside its mixer.
MOE_KINDS = (ROUTED, "shared experts", ROUTER)


def parts_of(w: LayerWeights) -> list[Part]:
    """Every layer's parts and the LM head."""
    parts: list[Part] = []
    for i, linear in enumerate(w.linear):
        mixer = "linear attention" if linear else "attention"
        for kind in (mixer, "MLP") if i < w.dense_layers else (mixer, *MOE_KINDS):
            if kind in w.kinds:
                relative, params = w.kinds[kind]
                names = projection_names(i, relative, w.nested)
                parts.append(Part(kind, names, params, routed=kind == ROUTED))
    parts.append(Part(LM_HEAD, lm_head_names(w.nested), w.kinds[LM_HEAD][1]))
    return parts


def _mean(pairs: list[tuple[Part, Width]]) -> float:
    params = sum(p.params for p, _ in pairs)
    return sum(p.params * width.bytes_per_param for p, width in pairs) / params


def _kinds(pairs: list[tuple[Part, Width]]) -> str:
    """The kinds stored at each width (a kind split over widths: its share of parameters)."""
    by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for part, width in pairs:
        by[part.kind][f"{width.bytes_per_param:.6g} B a weight ({width.label})"] += part.params
    at: dict[str, list[str]] = defaultdict(list)
    for kind, stored in by.items():
        total = sum(stored.values())
        for said, params in stored.items():
            share = "" if len(stored) == 1 else f" ({100 * params / total:.3g}% of them)"
            at[said].append(kind + share)
    return "; ".join(f"{', '.join(kinds)} at {said}" for said, kinds in at.items())


def layout_bytes(
    w: LayerWeights, layout: Layout, where: str, source: str
) -> tuple[tuple[float, str], tuple[float, str] | None]:
    """((weight_bytes_per_param, origin), (expert_bytes_per_param, origin) or None for a
    dense model) of a model stored in ``layout`` (read from ``where``, file ``source``)."""
    parts = parts_of(w)
    pairs = [(p, layout.width(p, source)) for p in parts]
    read = f"{where}: quantization_config ({layout.method}: {layout.fields})"
    unmatched = layout.unmatched(parts)
    extra = (
        f"; matching no module of this language model, not read: {', '.join(unmatched)}"
        if unmatched
        else ""
    )
    dense = [(p, width) for p, width in pairs if not p.routed]
    weight = (
        _mean(dense),
        f"derived: {read}: the parameter-weighted mean over what every pass reads: "
        f"{_kinds(dense)}{extra}",
    )
    routed = [(p, width) for p, width in pairs if p.routed]
    if not routed:
        return weight, None
    split = "the mean over the MoE layers: " if len({wd for _, wd in routed}) > 1 else ""
    return weight, (_mean(routed), f"derived: {read}: {split}{_kinds(routed)}")


def mtp_module_bytes(
    w: LayerWeights, layout: Layout, dense: Width, active: float, eh_proj: float, source: str
) -> tuple[float, str]:
    """(bytes a weight, the widths by kind) of one DeepSeek-style MTP module a pass reads,
    stored in ``layout`` (``dense``: the model's unquantized width): a full-attention layer
    named as the checkpoint names it, after the decoder layers (``model.layers.{L}``), with
    its shared experts, router and the ``active`` parameters of its routed experts (a dense
    model: its MLP); ``eh_proj`` (2 x hidden x hidden) at ``dense`` (vLLM's deepseek_mtp.py
    builds it as a plain ``nn.Linear``, which no quantization config reaches); the shared LM
    head at its width."""
    index = len(w.linear)
    kinds = ("attention", *MOE_KINDS) if ROUTED in w.kinds else ("attention", "MLP")
    pairs: list[tuple[Part, Width]] = []
    for kind in kinds:
        if kind in w.kinds:
            relative, params = w.kinds[kind]
            names = projection_names(index, relative, w.nested)
            part = Part(kind, names, active if kind == ROUTED else params, kind == ROUTED)
            pairs.append((part, layout.width(part, source)))
    head = Part(LM_HEAD, lm_head_names(w.nested), w.kinds[LM_HEAD][1])
    pairs.append((head, layout.width(head, source)))
    pairs.append((Part("eh_proj", (), eh_proj), dense))
    return _mean(pairs), _kinds(pairs)
