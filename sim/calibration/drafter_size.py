"""What a drafter's own config.json gives ``specsim init``: its size (``DrafterSize``) and
its decoder layers read as a model (``drafter_layers``), for the EAGLE-3
(sim/calibration/eagle3_drafter.py) and block-parallel (sim/calibration/parallel_drafter.py)
layouts alike: speculators' nests the layers' config in ``transformer_layer_config`` (its
dtype or quantization may sit beside it), the others keep it at the top level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.calibration.hf_config import HfModel, hf_model_of
from sim.calibration.hf_fields import Derived
from sim.calibration.kv_cache_dtype import KvCache
from sim.errors import SpecsimError

__all__ = [
    "UNSTATED_DTYPE",
    "DrafterSize",
    "drafter_bytes",
    "drafter_layers",
    "drafter_size",
    "unstated_bytes",
]


#: How a drafter's weight bytes say that its config states no dtype of its own.
UNSTATED_DTYPE = " states no torch_dtype nor quantization_config"


@dataclass(frozen=True, slots=True)
class DrafterSize:
    """A drafter's weights read a pass, decoder layers and KV bytes a token (per
    tensor-parallel rank), each with where it came from; the bytes a weight and where
    they came from (``drafter_bytes``)."""

    params: float
    params_why: str
    layers: int
    layers_why: str
    kv_bytes_per_token: float
    kv_why: str
    bytes_per_param: float
    bytes_why: str


def drafter_layers(
    raw: dict[str, Any],
    path: str,
    target: HfModel,
    *,
    speculators: bool,
    tensor_parallel: int = 1,
    kv_cache: KvCache | None = None,
) -> tuple[HfModel, dict[str, Any], str]:
    """(the drafter's decoder layers as a model, their config, where it sits) of config
    ``raw`` (read from ``path``); its weights at its own dtype (``quantization_config``,
    ``torch_dtype``), else at the ``target``'s bytes a weight, said so; SpecsimError naming
    the file and field when the layers' config is missing or mixture-of-experts (give
    ``--draft-params``); its KV a token at ``kv_cache`` (None: its own config's ``auto``)."""
    layer_cfg = raw.get("transformer_layer_config") if speculators else raw
    where = "transformer_layer_config" if speculators else "config.json"
    if not isinstance(layer_cfg, dict):
        raise SpecsimError("missing: the decoder layers' config", source=path, field=where)
    if speculators:  # the dtype (or the quantization) may sit beside it
        beside = ("torch_dtype", "dtype", "quantization_config")
        inherited: dict[str, Any] = {k: raw[k] for k in beside if k in raw and k not in layer_cfg}
        layer_cfg = {**layer_cfg, **inherited}
    draft = hf_model_of(
        layer_cfg,
        path,
        tensor_parallel=tensor_parallel,
        unstated_bytes=unstated_bytes(target, path),
        kv_cache=kv_cache,
    )
    if draft.is_moe:
        raise SpecsimError(
            "a mixture-of-experts drafter: give --draft-params", source=path, field=where
        )
    return draft, layer_cfg, where


def drafter_size(
    draft: HfModel, path: str, where: str, params: float, params_why: str
) -> DrafterSize:
    """The size of drafter ``draft`` (its layers read from ``path`` at ``where``) reading
    ``params`` weights a pass: its layers, KV a token and weight bytes from its config."""
    bytes_per_param, bytes_why = drafter_bytes(draft, path)
    return DrafterSize(
        params=float(params),
        params_why=params_why,
        layers=int(draft.get("layers")),
        layers_why=f"{path}: {where}: num_hidden_layers",
        kv_bytes_per_token=float(draft.get("kv_bytes_per_token")),
        kv_why=f"{path}: {draft.values['kv_bytes_per_token'].origin}",
        bytes_per_param=bytes_per_param,
        bytes_why=bytes_why,
    )


def unstated_bytes(target: HfModel, path: str) -> Derived:
    """The bytes a weight of a drafter whose config (``path``) states neither a
    quantization nor a dtype: the ``target``'s, said so (``UNSTATED_DTYPE``)."""
    target_bytes = target.values["weight_bytes_per_param"]
    return Derived(
        target_bytes.value, f"{path}{UNSTATED_DTYPE}: the target's ({target_bytes.origin})"
    )


def drafter_bytes(draft: HfModel, path: str) -> tuple[float, str]:
    """(bytes a weight, where from) of drafter ``draft`` read from ``path``: its own
    dtype, the file named, or the target's (``unstated_bytes``)."""
    found = draft.values["weight_bytes_per_param"]
    stated = UNSTATED_DTYPE not in found.origin
    # (a quantized drafter's origin says derived already: the caller's label says it once)
    own = found.origin.removeprefix("derived: ").removeprefix("config.json: ")
    why = f"{path}: {own}" if stated else found.origin
    return float(found.value), why
