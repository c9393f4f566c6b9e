"""Every scenario key with its type, unit, default and bounds, read from the schema itself
(so the list cannot drift from what validation accepts); ``json_schema`` is pydantic's."""

from __future__ import annotations

import re
import typing
from dataclasses import asdict, dataclass
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from sim.scenario.schema import Scenario

#: Units by the key's suffix or name (units are in the names: sim's style rule).
UNITS: tuple[tuple[str, str], ...] = (
    ("_ms_per_extra_token", "ms per token"),
    ("_ms_per_token", "ms per token"),
    ("_us_per_request", "us per running request"),
    ("_bytes_per_token", "bytes per token"),
    ("_bytes_per_request", "bytes per request"),
    ("_bytes_per_position", "bytes per conv window position"),
    ("conv_state_positions", "positions (kernel - 1)"),
    ("bytes_per_logit", "bytes per vocabulary entry"),
    ("bandwidth_fraction", "fraction of the GPU's peak bandwidth"),
    ("expert_overlap", "share of a token's routed experts"),
    ("pair_flop_efficiency", "fraction of the GPU's dense peak"),
    ("_flops_per_pair", "FLOPs per query-key pair"),
    ("rate_per_s", "requests/s"),
    ("_ms", "ms"),
    (".ms", "ms"),
    ("_us", "us"),
    ("_gbps", "GB/s"),
    ("_gib", "GiB"),
    ("tok_s", "tokens/s"),
    ("_bytes", "bytes"),
    ("_params", "parameters"),
    ("bytes_per_param", "bytes/parameter"),
    ("_cv", "coefficient of variation (std/mean)"),
    ("alpha", "probability"),
    ("per_position", "probabilities"),
    ("rank_rates", "probabilities"),
    ("std", "probability (std of a rate)"),
    ("weight", "relative weight"),
    ("output_tokens", "tokens"),
    ("verify_tokens", "tokens"),
    ("num_draft_tokens", "tokens"),
    ("num_steps", "draft tokens"),
    ("tokens", "tokens"),
    ("token_budget", "tokens"),
    ("batch", "requests"),
    ("concurrency", "users"),
    ("first_rate", "probability"),
    ("accept_length", "tokens per cycle"),
    ("experts_per_token", "experts"),
    ("requests", "requests"),
    ("replications", "replications"),
    ("layers", "layers"),
    ("gpus", "GPUs"),
)


@dataclass(frozen=True, slots=True)
class KeyInfo:
    key: str
    type: str
    unit: str
    default: Any
    bounds: str
    required: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _unit(name: str) -> str:
    """The unit of the key ``name`` (its last part; a dotted key is matched with its dot,
    so ``.ms`` is a key named ``ms``), '' when it has none."""
    for suffix, unit in UNITS:
        if name.endswith(suffix) or f".{name}".endswith(suffix):
            return unit
    return ""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(_type_name(a) for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type_name(args[1])}" if len(args) > 1 else "table"
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return getattr(annotation, "__name__", str(annotation))


def _constraints(items: list[Any], kind: str) -> list[str]:
    parts: list[str] = []
    for m in items:
        inner = getattr(m, "metadata", None)
        if isinstance(inner, list):  # a FieldInfo inside Annotated[...]
            parts.extend(_constraints(inner, kind))
            continue
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(m, attr, None)
            if value is not None and isinstance(m, annotated_types.BaseMetadata):
                parts.append(f"{sym} {value:g}" if isinstance(value, float) else f"{sym} {value}")
        what = ("character", "characters") if kind == "str" else ("entry", "entries")
        if isinstance(m, annotated_types.MinLen):
            parts.append(f"at least {m.min_length} {what[m.min_length != 1]}")
        if isinstance(m, annotated_types.MaxLen):
            parts.append(f"at most {m.max_length} {what[m.max_length != 1]}")
    return parts


def _bounds(metadata: list[Any], annotation: Any) -> str:
    """The constraints of a field: its own, those inside ``X | None``, and each item's."""
    kind = _type_name(annotation)
    parts = _constraints(list(metadata), kind)
    stack = [annotation]
    while stack:
        ann = stack.pop()
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            parts.extend(_constraints(list(ann.__metadata__), kind))
            stack.append(typing.get_args(ann)[0])
        elif origin is list:
            (item,) = typing.get_args(ann) or (None,)
            if typing.get_origin(item) is typing.Annotated:
                each = _constraints(list(item.__metadata__), "")
                if each:
                    parts.append("each " + " and ".join(each))
        elif origin is not None and origin is not dict:
            stack.extend(typing.get_args(ann))
    return ", ".join(dict.fromkeys(parts))


def _model_inside(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """(model, how) for a section, list of tables (``[[...]]``) or table of tables."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, "table"
    for arg in typing.get_args(annotation):
        model, how = _model_inside(arg)
        if model is not None:
            if origin is list:
                return model, "list"
            if origin is dict:
                return model, "dict"
            return model, how
    return None, ""


def scenario_keys(model: type[BaseModel] = Scenario, prefix: str = "") -> list[KeyInfo]:
    """Every key of the scenario schema, depth first in file order."""
    out: list[KeyInfo] = []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue  # not a key of the file (``Scenario.origins``: where values came from)
        key = f"{prefix}{name}"
        inner, how = _model_inside(info.annotation)
        if inner is not None and name != "measured_on":
            sub = {"table": f"{key}.", "list": f"{key}[].", "dict": f"{key}.NAME."}[how]
            if how != "table":
                out.append(KeyInfo(key, _type_name(info.annotation), "", None, "", False))
            out.extend(scenario_keys(inner, sub))
            continue
        if name == "measured_on":
            continue  # filled by the loader from [hardware] (sim/scenario/load.py)
        default = None if info.default is PydanticUndefined else info.default
        if info.default_factory is not None:  # the factories here take no data
            default = info.get_default(call_default_factory=True)
        out.append(
            KeyInfo(
                key,
                _type_name(info.annotation),
                _unit(name),
                default,
                _bounds(info.metadata, info.annotation),
                info.is_required(),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """One section of a scenario file: its name, what it holds, how many keys."""

    name: str
    summary: str
    keys: int


def _summary(model: type[BaseModel]) -> str:
    """The first sentence of a section's docstring, without its ``[name]``: prefix, its
    parentheses and what follows a colon or a semicolon."""
    doc = " ".join((model.__doc__ or "").split("\n\n")[0].split())
    doc = re.sub(r"^``\[[a-z_.]+\]``:\s*", "", doc)
    doc = re.sub(r"\s*\([^()]*\)", "", doc.split(". ")[0]).split(":")[0].split(";")[0]
    doc = doc.rstrip(".")
    return doc[:1].upper() + doc[1:] + "."


def scenario_sections(keys: list[KeyInfo] | None = None) -> list[SectionInfo]:
    """The file's sections in file order, each with its summary and key count; the
    top-level scalars (``name``, ``description``) are the section ``top``."""
    keys = scenario_keys() if keys is None else keys
    out: list[SectionInfo] = []
    top = [k for k in keys if "." not in k.key]
    out.append(SectionInfo("top", "The scenario's name and description.", len(top)))
    for name, info in Scenario.model_fields.items():
        inner, how = _model_inside(info.annotation)
        if inner is None or info.exclude or how != "table":
            continue
        count = sum(1 for k in keys if k.key.startswith(f"{name}."))
        out.append(SectionInfo(name, _summary(inner), count))
    return out


def keys_in(keys: list[KeyInfo], section: str) -> list[KeyInfo]:
    """The keys of one section (``top``: the top-level scalars) or under a dotted prefix
    (``serving.kv``), in file order; empty when nothing matches."""
    if section == "top":
        return [k for k in keys if "." not in k.key]
    return [
        k
        for k in keys
        if k.key == section or k.key.startswith((f"{section}.", f"{section}_", f"{section}["))
    ]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file, from the pydantic models."""
    return Scenario.model_json_schema()
