"""A Hugging Face ``config.json`` read (bounded, never fetched) and its fields checked: the
language model's part of a multimodal config, the part stating the quantization, an integer
field in range, the first of several names set, a dtype specsim reads (``DTYPE_BYTES``),
and one value with where it came from (``Derived``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.errors import SpecsimError
from sim.files import json_depth, read_bounded_text

#: Bytes per parameter by ``torch_dtype``.
DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "float8_e4m3fn": 1.0}
#: What a config.json without a dtype init reads is told: the ones it reads.
NO_DTYPE_HINT = f": specsim init reads {', '.join(DTYPE_BYTES)} (the checkpoint's own)"


@dataclass(frozen=True, slots=True)
class Derived:
    """One value with where it came from (``config.json: num_hidden_layers``)."""

    value: Any
    origin: str


#: Deepest nesting of a config.json read (a real one nests two or three levels).
MAX_CONFIG_DEPTH = 32

#: The largest count or dimension a config.json field read here can hold (the largest
#: published are vocabularies of some 260k and FFN widths of some 100k): a value above it
#: is not a model's, and would overflow the parameter counts.
MAX_CONFIG_INT = 2**24

#: Fields a model cannot have zero of (the head count divides the hidden size).
POSITIVE_FIELDS = frozenset(
    {"num_hidden_layers", "n_layer", "num_layers", "hidden_size", "n_embd", "d_model",
     "num_attention_heads", "n_head", "vocab_size"}
)  # fmt: skip


def config_int(cfg: dict[str, Any], *names: str, source: str, required: bool = True) -> int | None:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise SpecsimError(
                    f"must be a non-negative integer, got {value!r}", source=source, field=name
                )
            if value > MAX_CONFIG_INT or (value == 0 and name in POSITIVE_FIELDS):
                low = 1 if name in POSITIVE_FIELDS else 0
                got = (
                    value if value.bit_length() < 64 else f"an integer of {len(str(value))} digits"
                )
                raise SpecsimError(
                    f"must be an integer from {low} to {MAX_CONFIG_INT:,}, got {got}",
                    source=source,
                    field=name,
                )
            return value
    if required:
        raise SpecsimError(
            "missing: specsim init cannot derive the model without it",
            source=source,
            field=names[0],
        )
    return None


def first_set(cfg: dict[str, Any], *names: str) -> str | None:
    return next((n for n in names if cfg.get(n) is not None), None)


def config_dtype(
    cfg: dict[str, Any], names: tuple[str, ...], source: str, hint: str
) -> tuple[str, str]:
    """(the first of ``names`` the config sets, its dtype); SpecsimError naming the field
    when none is set or the dtype is not one of ``DTYPE_BYTES`` (``hint`` ends the line)."""
    name = first_set(cfg, *names)
    if name is None:
        raise SpecsimError(
            f"missing {names[0]} (or {', '.join(names[1:])}){hint}",
            source=source,
            field=names[0],
        )
    dtype = str(cfg[name])
    if dtype not in DTYPE_BYTES:
        raise SpecsimError(f"unknown dtype {dtype!r}{hint}", source=source, field=name)
    return name, dtype


def read_json(path: str | Path) -> dict[str, Any]:
    """A config.json as a mapping; SpecsimError naming the file if it is not one."""
    source = str(path)
    text = read_bounded_text(path)  # a regular file of bounded size (SpecsimError)
    if json_depth(text) > MAX_CONFIG_DEPTH:
        raise SpecsimError(
            f"not a config.json: nested deeper than {MAX_CONFIG_DEPTH}", source=source
        )
    try:
        raw = json.loads(text)
    except ValueError as exc:  # not JSON, or an integer of more digits than Python reads
        raise SpecsimError(f"not JSON: {str(exc)[:200]}", source=source) from None
    if not isinstance(raw, dict):
        raise SpecsimError("not a config.json object", source=source)
    return raw


def language_config(raw: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The language model's part of a config.json (``text_config`` when present) and how an
    origin names it (``config.json`` or ``config.json: text_config``)."""
    if isinstance(raw.get("text_config"), dict):
        return raw["text_config"], "config.json: text_config"
    return raw, "config.json"


def quantized_part(raw: dict[str, Any]) -> dict[str, Any]:
    """The part of a config.json holding its ``quantization_config``: the top level when it
    has one, else the language model's (``language_config``)."""
    return raw if "quantization_config" in raw else language_config(raw)[0]


def read_raw(path: str | Path) -> dict[str, Any]:
    """The language model's part of a config.json (``language_config``)."""
    return language_config(read_json(path))[0]
