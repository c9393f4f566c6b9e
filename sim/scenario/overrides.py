"""Changing a scenario: dotted ``--set`` overrides of its raw mapping (before validation),
a command's options set on it (``merge_command_line``: ``--set``, then the options), and
a validated scenario changed and validated again (``with_overrides``, ``with_settings``,
``with_load``: its dump overridden, then sim/scenario/validate.py, its provenance kept).

``--set`` values are TOML (``--set acceptance.per_position=[0.8,0.7]``); a bare word is a
string (``--set hardware.interconnect=nvlink4``). Keys that describe the same thing in
different ways replace each other, and derived keys follow the key they derive from. An
overridden value is a what-if, taken as exact: its ``[uncertainty]`` entry is dropped
(set ``uncertainty.SECTION.KEY`` too to give it one).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sim.errors import SpecsimError
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

#: Keys that describe the same thing in different ways: setting one drops the others, so
#: ``--set acceptance.alpha=0.8`` replaces a file's ``per_position`` or ``mix`` instead of
#: clashing (a top-level ``concentration``/``std`` stays: alpha becomes the Beta's mean),
#: and ``serving.rate_per_s`` replaces a file's closed loop or trace as ``serve --rate``
#: does (so ``--grid serving.rate_per_s=...`` sweeps rates on a closed-loop file).
EXCLUSIVE_KEYS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "acceptance.alpha",
            "acceptance.accept_length",
            "acceptance.first_rate",
            "acceptance.per_position",
            "acceptance.mix",
            "acceptance.rank_rates",
            "acceptance.rank_rates_by_depth",
        }
    ),
    frozenset({"acceptance.concentration", "acceptance.std"}),
    frozenset({"acceptance.rank_rates", "acceptance.rank_profile"}),
    frozenset({"speculation.topk", "speculation.tree"}),
    frozenset(
        {
            "speculation.tree.paths",
            "speculation.tree.vllm",
            "speculation.tree.preset",
            "speculation.tree.growmap",
        }
    ),
    frozenset({"serving.concurrency", "serving.rate_per_s", "serving.trace"}),
)
#: Keys derived from another key unless given with it: a chain's ``num_draft_tokens`` follows
#: ``num_steps`` (a tree's is its own setting: it stays); a new ``shape`` drops the old
#: shape's ``decay``.
DERIVED_KEYS: Mapping[str, str] = {
    "speculation.num_steps": "speculation.num_draft_tokens",
    "acceptance.shape": "acceptance.decay",
}
#: Keys that hold a list: one number given for them is a list of one (``targets.tok_s=120``).
LIST_KEYS: frozenset[str] = frozenset({"targets.tok_s", "acceptance.per_position"})
#: Longest ``--set``/``--grid`` text: a value is one TOML scalar or a short array.
MAX_VALUE_CHARS = 10_000
#: Deepest array nesting of one value (a list of per-position lists is 2).
MAX_VALUE_DEPTH = 3


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def parse_value(text: str, param: str = "sets", field: str | None = None) -> Any:
    """A ``--set`` value as ONE TOML value (scalar, array or inline table); a bare word is a
    string (``nvlink4``). A newline, a second key or a table header is refused: an override
    sets one field and nothing else. Errors name ``field``, the key being set."""
    if len(text) > MAX_VALUE_CHARS:
        raise SpecsimError(
            f"value longer than {MAX_VALUE_CHARS} characters (one TOML value)",
            param=param,
            field=field,
        )
    if any(ch in text for ch in "\n\r") or any(not ch.isprintable() for ch in text):
        raise SpecsimError(
            f"value {text!r} spans lines or holds control characters: give one TOML value",
            param=param,
            field=field,
        )
    try:
        parsed = tomllib.loads(f"v = {text}")
    except RecursionError:
        raise SpecsimError(
            f"value nested deeper than {MAX_VALUE_DEPTH} arrays", param=param, field=field
        ) from None
    except tomllib.TOMLDecodeError:
        if text and all(ch.isalnum() or ch in "-_." for ch in text) and not text[0].isdigit():
            return text
        hint = (
            f" (a string other than a bare word of letters, digits, '-', '_' and '.' is "
            f"quoted as in TOML: --set KEY='\"{text}\"')"
            if text and text[0] not in "[{\"'+-0123456789"
            else ""
        )
        raise SpecsimError(
            f"cannot parse value {text!r} as TOML{hint}", param=param, field=field
        ) from None
    if set(parsed) != {"v"}:
        raise SpecsimError(f"value {text!r} is more than one TOML value", param=param, field=field)
    value = parsed["v"]
    if _depth(value) > MAX_VALUE_DEPTH:
        raise SpecsimError(
            f"value nested deeper than {MAX_VALUE_DEPTH} arrays", param=param, field=field
        )
    return value


#: ``tok_s[0]``: the index notation error messages use for list entries (not a key).
LIST_INDEX = re.compile(r"\[-?\d*\]")


def refuse_list_index(key: str, option: str, advice: str, param: str) -> None:
    """SpecsimError (for ``param``) when ``key`` indexes into a list the way error lines
    name its entries (``targets.tok_s[0]``): ``option`` sets a list whole, as ``advice``
    says (``{whole}`` is the list's own key)."""
    indexed = LIST_INDEX.search(key)
    if indexed:
        whole = key[: indexed.start()]
        raise SpecsimError(
            f"{key}: {option} cannot index into a list; {advice.format(whole=whole)}",
            param=param,
        )


def parse_assignment(text: str) -> tuple[str, Any]:
    """``'a.b=value'`` -> ``('a.b', parsed value)``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part.strip() for part in key.split(".")):
        raise SpecsimError(f"expected KEY=VALUE with a dotted key, got {text!r}", param="sets")
    if len(key) > 200 or key.count(".") > 6:
        raise SpecsimError(f"key {key[:40]!r}... is too long for a scenario field", param="sets")
    refuse_list_index(key, "--set", "set the whole list, e.g. {whole}=[...]", "sets")
    parsed = parse_value(value.strip(), field=key)
    if key in LIST_KEYS and isinstance(parsed, int | float) and not isinstance(parsed, bool):
        parsed = [parsed]
    return key, parsed


def _delete(raw: dict[str, Any], dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node: Any = raw
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(leaf, None)


def _drop_correlated(raw: dict[str, Any], dotted: str) -> None:
    """Remove ``dotted`` (and its list entries) from ``[uncertainty.correlation]``; drop
    the table when fewer than two fields are left."""
    corr = (
        raw.get("uncertainty", {}).get("correlation")
        if isinstance(raw.get("uncertainty"), dict)
        else None
    )
    if not isinstance(corr, dict) or not isinstance(corr.get("fields"), list):
        return
    fields, matrix = corr["fields"], corr.get("matrix")
    keep = [i for i, f in enumerate(fields) if not (f == dotted or str(f).startswith(dotted + "["))]
    if len(keep) == len(fields):
        return
    if len(keep) < 2 or not isinstance(matrix, list):
        raw["uncertainty"].pop("correlation", None)
        return
    corr["fields"] = [fields[i] for i in keep]
    corr["matrix"] = [[matrix[i][j] for j in keep] for i in keep]


def _topk(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> Any:
    """The topk the overridden scenario will have (1 when not given)."""
    if "speculation.topk" in overrides:
        return overrides["speculation.topk"]
    spec = raw.get("speculation")
    return spec.get("topk", 1) if isinstance(spec, dict) else 1


def apply_overrides(
    raw: Mapping[str, Any], overrides: Mapping[str, Any], *, fresh: bool = False
) -> dict[str, Any]:
    """A deep copy of ``raw`` with dotted ``overrides`` set, exclusive and derived keys dropped
    (``fresh``: ``raw`` is a dict of the caller's own, e.g. a new ``model_dump``, changed in
    place instead of copied).

    Raises SpecsimError when a dotted path runs through a value that is not a table.
    """
    out = raw if fresh and isinstance(raw, dict) else copy.deepcopy(dict(raw))
    for dotted in overrides:
        dropped = [dotted]  # an overridden value is exact: its stated error goes
        for group in EXCLUSIVE_KEYS:
            if dotted in group:
                dropped += [other for other in group - {dotted} if other not in overrides]
        derived = DERIVED_KEYS.get(dotted)
        chain = dotted != "speculation.num_steps" or _topk(out, overrides) == 1
        if derived and derived not in overrides and chain:
            dropped.append(derived)
        for key in dropped:
            if key != dotted:
                _delete(out, key)
            if not dotted.startswith("uncertainty."):
                _delete(out, f"uncertainty.{key}")
                _drop_correlated(out, key)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = out
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parents[: i + 1])
                raise SpecsimError(f"{where} is not a table", param="sets", field=dotted)
            node = child
        node[leaf] = value
    return out


# --------------------------------------------------------------------------- a command's options

#: A command-line setting: (the option that sets it, the dotted field, its value or None).
Setting = tuple[str, str, Any]

#: The fields of a scenario's load: a setting of one replaces the ``[serving]`` load.
LOAD_FIELDS: tuple[str, ...] = ("serving.concurrency", "serving.rate_per_s", "serving.trace")


def replace_load(
    raw: dict[str, Any],
    *,
    concurrency: int | None = None,
    rate_per_s: float | None = None,
    trace: str | None = None,
) -> list[str]:
    """Replace, in place, ``raw``'s ``[serving]`` load by the one given (a trace keeps its
    format, rate scale and window); the load fields it sets."""
    loads = ("concurrency", "rate_per_s", "trace")
    trace_keys = ("trace_format", "trace_rate_scale", "trace_window_s")
    dropped = loads if trace is not None else (*loads, *trace_keys)
    serving = {k: v for k, v in raw.get("serving", {}).items() if k not in dropped}
    for key, value in zip(loads, (concurrency, rate_per_s, trace), strict=True):
        if value is not None:
            serving[key] = value
    raw["serving"] = serving
    return [f"serving.{k}" for k in loads if k in serving]


def apply_settings(raw: dict[str, Any], settings: Iterable[Setting]) -> dict[str, str]:
    """Apply ``settings`` to ``raw`` in place, the load together first (``replace_load``),
    then the others in their order; every field set, with the option that set it."""
    chosen = [(option, dotted, value) for option, dotted, value in settings if value is not None]
    load = {d.removeprefix("serving."): v for _, d, v in chosen if d in LOAD_FIELDS}
    by_option: dict[str, str] = {}
    if load:
        option = next(o for o, d, _ in chosen if d in LOAD_FIELDS)
        by_option.update(dict.fromkeys(replace_load(raw, **load), option))
    rest = [
        (option, dotted, value) for option, dotted, value in chosen if dotted not in LOAD_FIELDS
    ]
    apply_overrides(raw, {dotted: value for _, dotted, value in rest}, fresh=True)
    by_option.update((dotted, option) for option, dotted, _ in rest)
    return by_option


def cleared_load(by_option: Mapping[str, str]) -> frozenset[str]:
    """The load fields a setting of the load replaced (every one of them), else none."""
    return frozenset(LOAD_FIELDS) if any(k in LOAD_FIELDS for k in by_option) else frozenset()


@dataclass(frozen=True, slots=True)
class CommandLine:
    """A file's raw mapping with a command line's changes merged, in one pass
    (``merge_command_line``): ``raw`` the merged mapping (a copy); ``set_by`` who a problem
    in each changed field names (the file, as ``FILE (--set)``, for a ``--set`` field; the
    option for an option's); ``recorded`` what set each field, as the scenario's provenance
    keeps it (``--set`` or the option; a ``--set`` load field that an option's load
    replaced is not kept); ``changed`` every field set or cleared (none is the file's)."""

    raw: dict[str, Any]
    set_by: Mapping[str, str]
    recorded: Mapping[str, str]
    changed: frozenset[str]


def merge_command_line(
    raw: Mapping[str, Any], sets: Iterable[str], settings: Iterable[Setting], source: str
) -> CommandLine:
    """``raw`` (left unchanged) of the file ``source`` with the ``--set`` strings
    (``'a.b=v'``) applied, then the command's option ``settings`` (``apply_settings``)."""
    overrides = dict(parse_assignment(s) for s in sets)
    merged = apply_overrides(raw, overrides)
    options = apply_settings(merged, settings)
    cleared = cleared_load(options)
    kept = {k: "--set" for k in overrides if k not in cleared}
    return CommandLine(
        merged,
        set_by={**dict.fromkeys(overrides, source), **options},
        recorded={**kept, **options},
        changed=frozenset(overrides) | cleared | frozenset(options),
    )


def with_overrides(
    scenario: Scenario, overrides: Mapping[str, Any], *, source: str = "override"
) -> Scenario:
    """A new scenario with dotted overrides applied and re-validated (used by sweeps/search)."""
    merged = apply_overrides(scenario.model_dump(exclude_none=True), overrides, fresh=True)
    return scenario_from_dict(
        merged,
        source=source,
        overridden=dict.fromkeys(overrides, source),
        given=scenario.origins.given - set(overrides),
        previous_overrides=scenario.origins.overrides,
        file=scenario.origins.file,
    )


def with_settings(scenario: Scenario, settings: Iterable[Setting]) -> Scenario:
    """``scenario`` with each (option, dotted field, value) setting applied and validated
    once, as ``--set`` is, each field set by its option's name (assumptions and errors name
    the option); a None value is skipped. Load settings (``LOAD_FIELDS``) first replace the
    scenario's load together (``replace_load``), named by the first of their options; the
    others follow in their order."""
    raw = scenario.model_dump(exclude_none=True)
    by_option = apply_settings(raw, settings)
    if not by_option:
        return scenario
    cleared = cleared_load(by_option)
    origins = scenario.origins
    return scenario_from_dict(
        raw,
        source=list(by_option.values())[-1],
        overridden=by_option,
        given=origins.given - cleared - set(by_option),
        previous_overrides={k: v for k, v in origins.overrides.items() if k not in cleared},
        file=origins.file,
    )


def sample_settings(
    replications: int | None, requests: int | None, seed: int | None, source: str | None = None
) -> list[Setting]:
    """The Monte Carlo sample's settings: replications, measured requests and seed, each
    set by its option (``--replications``, ``--requests``, ``--seed``) or by ``source``."""
    return [
        (source or "--replications", "simulation.replications", replications),
        (source or "--requests", "workload.requests", requests),
        (source or "--seed", "simulation.seed", seed),
    ]


def with_load(
    scenario: Scenario,
    *,
    concurrency: int | None = None,
    rate_per_s: float | None = None,
    trace: str | None = None,
    source: str = "load",
) -> Scenario:
    """``scenario`` with its ``[serving]`` load replaced by the one given (validated;
    ``replace_load``).

    Provenance is kept: the load keys given are set by ``source``; every other field keeps
    how the scenario got it (given by the file, set by ``--set``, or the default), so the
    assumptions name a default as a default (they said 'set by --rate' of every
    ``[serving]`` default, the host work's included)."""
    raw = scenario.model_dump(exclude_none=True)
    overridden = replace_load(raw, concurrency=concurrency, rate_per_s=rate_per_s, trace=trace)
    return scenario_from_dict(
        raw,
        source=source,
        overridden=dict.fromkeys(overridden, source),
        given=scenario.origins.given - set(LOAD_FIELDS),
        previous_overrides={
            k: v for k, v in scenario.origins.overrides.items() if k not in LOAD_FIELDS
        },
        file=scenario.origins.file,
    )


#: How a report's overrides name ``timing.verify_tokens`` when a study pinned it (the user
#: did not set it).
PINNED_VERIFY_TOKENS = "pinned to the measured verify pass"


def pin_verify_tokens(scenario: Scenario) -> Scenario:
    """Fix ``timing.verify_tokens`` to the measured pass's token count (k + 1 by default,
    num_draft_tokens for a tree).

    The measured ``verify_ms`` belongs to the scenario's own k; without pinning, changing
    ``speculation.num_steps`` would silently move the measurement to another token count.
    With it, other k use the measured pass plus ``verify_ms_per_extra_token`` per extra
    token, as the closed forms do (``pass_times``).
    """
    if scenario.timing.verify_tokens is not None:
        return scenario
    return with_overrides(
        scenario,
        {"timing.verify_tokens": scenario.speculation.draft_tokens},
        source=PINNED_VERIFY_TOKENS,
    )


def field_value(scenario: Scenario, dotted: str) -> Any:
    """The value of a dotted field of a scenario (SpecsimError naming the field if none)."""
    node: Any = scenario.model_dump()
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise SpecsimError("no such scenario field", field=dotted)
        node = node[part]
    return node
