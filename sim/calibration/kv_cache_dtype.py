"""The bytes an element of a server's KV cache: its ``--kv-cache-dtype``, else what the
checkpoint states, else the model's compute dtype (read, never fetched).

Flag values as the engines spell them (vLLM ``--kv-cache-dtype``, SGLang
``--kv-cache-dtype``, TensorRT-LLM's ``kv_cache_config.dtype``): ``auto``, ``bf16`` /
``bfloat16``, ``fp16``, ``fp8``, ``fp8_e4m3``, ``fp8_e5m2``. FP8 stores an element in 1 byte,
bf16 and fp16 in 2.

``auto`` resolves as the engines do: vLLM's ``resolve_kv_cache_dtype_string``
(vllm/utils/torch_utils.py, ``get_kv_cache_quant_algo_string``) and SGLang's
``configure_kv_cache_dtype`` take FP8 when a ModelOpt ``quantization_config`` states
``kv_cache_quant_algo: FP8`` (at its top level or in its nested ``quantization``; vLLM also
reads a ModelOpt ``kv_cache_scheme`` of 8-bit floats), else the model's compute dtype: 2 bytes
(vLLM's ``--dtype auto`` serves an FP32 checkpoint in FP16, so the cache is never 4 bytes). A
compressed-tensors ``kv_cache_scheme`` is read and checked, but neither engine's ``auto``
applies it (its scales are loaded once ``--kv-cache-dtype fp8`` is given): it is said in the
origin, the cache priced at 2 bytes. A ``kv_cache_quant_algo`` the engines do not map to FP8
falls back to the model's dtype, as theirs does (vLLM logs a warning).

An FP8 cache's scales are per tensor: two FP32 scales a layer (vLLM's ``k_scale`` and
``v_scale``, 8 bytes a layer whatever the context), against 1 byte an element of every token;
they are left out (0 bytes a token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.errors import SpecsimError

__all__ = [
    "KV_CACHE_DTYPES",
    "KvCache",
    "bytes_text",
    "drafter_kv_cache",
    "kv_cache_of",
    "reported_kv_cache",
    "stated_kv_cache",
]

#: Bytes an element of each ``--kv-cache-dtype`` value but ``auto``.
KV_ELEMENT_BYTES = {
    "bf16": 2.0,
    "bfloat16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
}
#: The values ``specsim init --kv-cache-dtype`` takes.
KV_CACHE_DTYPES = ("auto", *KV_ELEMENT_BYTES)
#: The bytes an element of an unquantized cache (the model's compute dtype: bf16 or fp16).
UNQUANTIZED_BYTES = 2.0


@dataclass(frozen=True, slots=True)
class KvCache:
    """The bytes an element of the KV cache and where they came from; ``flag``: the
    ``--kv-cache-dtype`` given (None: ``auto``)."""

    bytes_per_element: float
    origin: str
    flag: str | None = None


def bytes_text(size: float) -> str:
    """``1 byte``, ``2 bytes``."""
    return f"{size:g} byte" + ("" if size == 1 else "s")


def _scheme_is_fp8(scheme: Any, source: str, where: str) -> bool:
    """Whether a ``kv_cache_scheme`` mapping states 8-bit floats; SpecsimError naming the
    field when it is no mapping or states another cache (vLLM and SGLang serve FP8 KV
    caches only from a checkpoint)."""
    field = f"quantization_config.{where}"
    if not isinstance(scheme, dict):
        raise SpecsimError(
            f"must be a mapping (num_bits, type, ...), got {scheme!r}", source=source, field=field
        )
    bits, kind = scheme.get("num_bits"), scheme.get("type")
    if bits == 8 and kind == "float":
        return True
    raise SpecsimError(
        f"num_bits {bits!r}, type {kind!r}: specsim init reads an 8-bit float (FP8) KV cache "
        "scheme only; give --kv-cache-dtype",
        source=source,
        field=field,
    )


def stated_kv_cache(raw: dict[str, Any], source: str) -> tuple[str, bool] | None:
    """What ``raw``'s ``quantization_config`` states of the KV cache: (the field and value
    read, whether the engines' ``auto`` serves it in FP8), or None when it states nothing."""
    quant = raw.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    method = str(quant.get("quant_method", "")).lower()
    if method.startswith("modelopt"):  # vLLM's order: a scheme before an algorithm, nested first
        nested = quant.get("quantization")
        bodies = [("quantization.", nested)] if isinstance(nested, dict) else []
        bodies.append(("", quant))
        for prefix, body in bodies:
            if body.get("kv_cache_scheme") is not None:
                _scheme_is_fp8(body["kv_cache_scheme"], source, f"{prefix}kv_cache_scheme")
                return f"quantization_config.{prefix}kv_cache_scheme (8-bit float)", True
        for prefix, body in bodies:
            algo = body.get("kv_cache_quant_algo")
            if algo is not None:
                said = f"quantization_config.{prefix}kv_cache_quant_algo = {algo}"
                return said, str(algo).upper() == "FP8"
        return None
    scheme = quant.get("kv_cache_scheme")
    if scheme is None:
        return None
    _scheme_is_fp8(scheme, source, "kv_cache_scheme")
    return f"quantization_config.kv_cache_scheme (8-bit float, quant_method {method})", False


def kv_cache_of(
    raw: dict[str, Any], source: str, flag: str | None, flag_source: str | None = None
) -> KvCache:
    """The KV cache of a server of checkpoint ``raw`` (its config.json, named ``source``)
    run with ``--kv-cache-dtype`` ``flag`` (None or ``auto``: the engines' ``auto``), which
    ``flag_source`` names when a measurement file stated it rather than the flag;
    SpecsimError naming the flag or field for a value not read."""
    if flag is not None and flag != "auto":
        if flag not in KV_ELEMENT_BYTES:
            raise SpecsimError(
                f"unknown KV cache dtype {flag!r}; use one of {', '.join(KV_CACHE_DTYPES)}",
                source="--kv-cache-dtype",
            )
        size = KV_ELEMENT_BYTES[flag]
        said = flag_source or f"--kv-cache-dtype {flag}"
        return KvCache(size, f"{bytes_text(size)} an element ({said})", flag)
    stated = stated_kv_cache(raw, source)
    engines = "vLLM's and SGLang's --kv-cache-dtype auto"
    if stated is None:
        return KvCache(
            UNQUANTIZED_BYTES,
            f"2 bytes an element (default: the model's compute dtype, {engines}; the "
            "checkpoint states no KV cache quantization)",
        )
    said, fp8 = stated
    if fp8:
        return KvCache(1.0, f"1 byte an element (config.json: {said}; {engines} serves it FP8)")
    return KvCache(
        UNQUANTIZED_BYTES,
        f"2 bytes an element (default: the model's compute dtype; config.json: {said}, which "
        f"{engines} does not apply: give --kv-cache-dtype fp8 if the server runs it)",
    )


#: A ``trtllm-bench --report_json`` report's ``engine.kv_cache_dtype`` (the KV cache's
#: ``QuantAlgo`` as the run resolved it, ``kv_cache_quant_algo``; null: unquantized) as the
#: ``--kv-cache-dtype`` it amounts to: only FP8 is priced (1 byte an element).
REPORTED_KV_DTYPES = {"FP8": "fp8"}


def reported_kv_cache(
    stated: tuple[tuple[str, str], ...], flag: str | None
) -> tuple[str | None, str | None]:
    """(``--kv-cache-dtype``, the file and field stating it; None: the flag's own) of a
    server given ``flag`` (None: ``auto``) whose measurement files state its KV cache dtype
    (``stated``: (value, source naming the file and field)). ``auto`` takes the files'
    (the run's resolved dtype, as the engine's ``auto`` read the checkpoint); a flag must
    agree with them in bytes an element. SpecsimError for a dtype specsim does not price,
    for two files that disagree, or for a flag the files contradict."""
    if not stated:
        return flag, None
    value, source = stated[0]
    if value.upper() not in REPORTED_KV_DTYPES:
        raise SpecsimError(
            f"{value}: a KV cache dtype specsim does not price (FP8: 1 byte an element; "
            "unquantized, null: 2 bytes): figures of a server specsim cannot describe",
            source=source,
        )
    dtype = REPORTED_KV_DTYPES[value.upper()]
    for other, where in stated[1:]:
        if other.upper() != value.upper():
            raise SpecsimError(
                f"{other}, but {source} is {value}: the figures come from two servers",
                source=where,
            )
    if flag is None or flag == "auto":
        return dtype, source
    if KV_ELEMENT_BYTES[flag] != KV_ELEMENT_BYTES[dtype]:
        raise SpecsimError(
            f"{flag}, but {source} is {value} ({bytes_text(KV_ELEMENT_BYTES[dtype])} an "
            f"element): give --kv-cache-dtype {dtype} (or auto) if the figures are this "
            "server's",
            source="--kv-cache-dtype",
        )
    return flag, None


def drafter_kv_cache(server: KvCache, engine: str, draft: dict[str, Any], path: str) -> KvCache:
    """The KV cache of a drafter with its own checkpoint (``draft``, read from ``path``) on
    a server whose cache is ``server``, run by ``engine``: the server's under vLLM (one
    ``cache_config`` for the target's and the drafter's attention layers) and under any
    engine given ``--kv-cache-dtype`` (SGLang's draft worker reads the same
    ``server_args``); under SGLang's ``auto`` the draft worker resolves it from its own
    checkpoint (``configure_kv_cache_dtype`` with the draft model's ``quant_config``)."""
    if server.flag is not None or engine != "sglang":
        return server
    own = kv_cache_of(draft, path, None)
    return KvCache(own.bytes_per_element, f"{own.origin}, SGLang's draft worker: {path}")
