"""A hybrid target's linear-attention (Gated DeltaNet) layers from its ``config.json``:
which layers they are, their heads, their parameters, and the recurrent and conv states a
request keeps per rank (sim/calibration/hf_config.py's docstring, hybrid targets)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sim.calibration.hf_fields import DTYPE_BYTES, Derived, config_dtype, config_int
from sim.errors import SpecsimError

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
    interval = config_int(cfg, "full_attention_interval", source=source, required=False)
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
        value = config_int(cfg, name, source=source)
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
    name, dtype = config_dtype(cfg, ("mamba_ssm_dtype", "torch_dtype", "dtype"), source, "")
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
    kernel = config_int(cfg, "linear_conv_kernel_dim", source=source)
    assert kernel is not None
    if kernel < 2:
        raise SpecsimError(
            f"must be at least 2 (a causal convolution keeps kernel - 1 positions), got {kernel}",
            source=source,
            field="linear_conv_kernel_dim",
        )
    name, dtype = config_dtype(cfg, ("torch_dtype", "dtype"), source, "")
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
