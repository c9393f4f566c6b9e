"""The model's geometry (layers, hidden size, kernels and all-reduces a layer) and the
weights a target or drafter pass reads, from the pass model's plain dimensions
(``ModelDims``); each a SpecsimError naming the first scenario field missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.errors import SpecsimError
from sim.hardware.pass_inputs import ModelDims
from sim.hardware.passes import Geometry

if TYPE_CHECKING:
    from sim.hardware.roofline import Weights

# The roofline (sim/hardware/roofline.py) is imported where a pass is derived from the
# weights: a configuration whose passes are all measured never needs it (start-up).


def geometry(model: ModelDims) -> Geometry:
    """The model geometry; SpecsimError naming the first missing field."""
    for name in ("layers", "hidden_size"):
        if getattr(model, name) is None:
            raise SpecsimError("needed by the hardware model", field=f"model.{name}")
    assert model.layers is not None and model.hidden_size is not None
    return Geometry(
        layers=model.layers,
        draft_layers=model.draft_layers,
        hidden_size=model.hidden_size,
        kernels_per_layer=model.kernels_per_layer,
        allreduces_per_layer=model.allreduces_per_layer,
        activation_bytes=model.activation_bytes,
        moe=model.experts is not None,
    )


def target_weights(model: ModelDims) -> Weights:
    """The target model's weights; SpecsimError naming the first missing field."""
    if model.layers is None:
        raise SpecsimError("needed to derive compute", field="model.layers")
    if model.layer_params is None:
        raise SpecsimError("needed to derive compute from the model", field="model.layer_params")
    from sim.hardware.roofline import Weights  # lazy: derived passes only (start-up)

    return Weights(
        layers=model.layers,
        layer_params=model.layer_params,
        lm_head_params=model.lm_head_params,
        weight_bytes_per_param=model.weight_bytes_per_param,
        dense_layers=model.dense_layers,
        dense_layer_params=model.dense_layer_params,
        experts=model.experts,
        experts_per_token=model.experts_per_token,
        expert_params=model.expert_params,
        expert_bytes_per_param=model.expert_bytes_per_param,
    )


def draft_weights(model: ModelDims) -> Weights:
    """The drafter's weights (one layer of ``draft_params``) at its own bytes a weight
    (``draft_bytes_per_param``, else the target's); SpecsimError if not given."""
    if model.draft_params is None:
        raise SpecsimError("needed to derive drafter compute", field="model.draft_params")
    from sim.hardware.roofline import Weights  # lazy: derived passes only (start-up)

    return Weights(
        layers=1,
        layer_params=model.draft_params,
        weight_bytes_per_param=draft_bytes_per_param(model),
    )


def draft_bytes_per_param(model: ModelDims) -> float:
    """Bytes a drafter weight: its own (``model.draft_bytes_per_param``), else the
    target's (``model.weight_bytes_per_param``)."""
    own = model.draft_bytes_per_param
    return model.weight_bytes_per_param if own is None else own
