"""Loading a scenario: read the TOML, fill ``timing.measured_on``, apply overrides, validate.

Validation errors name the file (or ``--set``) and the dotted field, in one line. What the
values mean (the hardware model among it) is sim/binding/: a problem ``bind`` finds there
(a measured time below its modelled communication + launch floor, a missing model field)
is reported against the file as well, through the scenario's ``origins``.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import tomllib
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sim.errors import SpecsimError
from sim.files import read_bounded_text
from sim.scenario.origins import Origins
from sim.scenario.overrides import (
    LOAD_FIELDS,
    Setting,
    apply_overrides,
    apply_settings,
    cleared_load,
    merge_command_line,
    replace_load,
)
from sim.scenario.schema import HardwareSpec, Scenario, fill_measured_num_steps


def _dotted(loc: Iterable[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


#: A validator's message that names its own field: ``uncertainty.timing.x: message``.
_NAMED_FIELD = re.compile(r"^(uncertainty(?:\.[A-Za-z0-9_\[\]]+)+): (.*)$")
#: A section validator's message naming a field inside its section:
#: ``speculation.num_steps: message`` raised by ``[speculation]``.
_INNER_FIELD = re.compile(r"^([a-z_]+(?:\.[a-z_]+)+): (.*)$")
#: Largest scenario file: the shipped ones are a few KB; 1 MiB is any hand-written file.
MAX_SCENARIO_BYTES = 1024 * 1024
#: Deepest nesting of tables and arrays a scenario may have: the schema's deepest path,
#: ``hardware.interconnects.NAME.protocols[i].FIELD``, is 5 deep; 8 leaves room while a
#: pathological ``[[[[...]]]]`` is refused before it reaches the validator.
MAX_DEPTH = 8


def nesting_depth(node: Any, limit: int = MAX_DEPTH + 1) -> int:
    """Depth of nested tables/arrays (a scalar is 0), counted no deeper than ``limit``."""
    if limit <= 0:
        return 0
    if isinstance(node, Mapping):
        return 1 + max((nesting_depth(v, limit - 1) for v in node.values()), default=0)
    if isinstance(node, list):
        return 1 + max((nesting_depth(v, limit - 1) for v in node), default=0)
    return 0


def check_depth(raw: Any, source: str) -> None:
    if nesting_depth(raw) > MAX_DEPTH:
        raise SpecsimError(f"tables and arrays nested deeper than {MAX_DEPTH}", source=source)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (``X | None``, ``list[X]``, ``Annotated``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _is_dict(annotation: Any) -> bool:
    if typing.get_origin(annotation) is dict:
        return True
    return any(_is_dict(a) for a in typing.get_args(annotation))


def key_suggestions(loc: list[Any], root: type[BaseModel] = Scenario) -> list[str]:
    """Known keys close to the unknown last key of ``loc`` (difflib), best first."""
    model: type[BaseModel] | None = root
    skip_key = False
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        if skip_key:  # a dict key (an inline interconnect's name)
            skip_key = False
            continue
        info = model.model_fields.get(str(part))
        if info is None:
            return []
        skip_key = _is_dict(info.annotation)
        model = _model_of(info.annotation)
    if model is None:
        return []
    return difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=3)


#: What pydantic adds to an error's location besides field names: the union member or
#: validator a value was tried against ("constrained-float", "list[constrained-float]",
#: "function-after[...]"); never a field of the schema.
_SCHEMA_TAG = re.compile(
    r"^(function-|constrained-|tagged-union|union\[|nullable|json-or-python|lax-or-strict|"
    r"chain\[|list\[|dict\[|tuple\[|literal\[)|^(float|int|str|bool|none)$"
)


def _field_path(loc: Sequence[Any]) -> list[Any]:
    """An error location without pydantic's schema tags (``_SCHEMA_TAG``)."""
    return [p for p in loc if not (isinstance(p, str) and _SCHEMA_TAG.match(p))]


def _touches(field: str, key: str) -> bool:
    """Whether the dotted ``field`` of an error and an override ``key`` overlap: one is the
    other or lies inside it (``targets.tok_s[0]`` in ``targets.tok_s``; an unknown table
    ``nosuch`` of ``nosuch.x``)."""
    if not field:
        return False
    return any(a == b or a.startswith((b + ".", b + "[")) for a, b in ((field, key), (key, field)))


def _first_error(exc: ValidationError) -> tuple[str, str]:
    """The first error's dotted field and message; the others counted once per field (a
    value tried against each member of a union fails once a member, one problem)."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    if err["type"] == "missing":  # a misspelt key is both missing and unknown: name the typo
        err = next((e for e in errors if e["type"] == "extra_forbidden"), err)
    loc = _field_path(err["loc"])
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    named = _NAMED_FIELD.match(msg)
    if named and not loc:
        loc, msg = named.group(1).split("."), named.group(2)
    inner = _INNER_FIELD.match(msg)
    if inner and loc and inner.group(1).startswith(_dotted(loc) + "."):
        loc, msg = inner.group(1).split("."), inner.group(2)
    if err["type"] == "extra_forbidden":
        close = key_suggestions(loc)
        msg = "unknown key" + (
            f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        )
    elif err["type"] == "finite_number":
        msg = "must be a finite number (inf and nan are not allowed)"
    elif err["type"] == "missing":
        msg = "required key is missing"
    extra = len({tuple(_field_path(e["loc"])) for e in errors}) - 1
    if extra:
        msg += f" (and {extra} more error{'s' if extra > 1 else ''})"
    return _dotted(loc), msg


def leaf_fields(raw: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Dotted paths of every non-table value in a raw mapping (lists of tables by index)."""
    out: set[str] = set()
    for key, value in raw.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out |= leaf_fields(value, path + ".")
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                out |= leaf_fields(item, f"{path}[{i}].")
        else:
            out.add(path)
    return out


def scenario_from_dict(
    raw: Mapping[str, Any],
    *,
    source: str,
    overridden: Mapping[str, str] | None = None,
    given: Iterable[str] | None = None,
    previous_overrides: Mapping[str, str] | None = None,
    file: str | None = None,
    recorded: Mapping[str, str] | None = None,
) -> Scenario:
    """Validate a raw mapping; errors name ``source``, or ``WHO (--set)`` for a problem in an
    overridden field (``overridden`` maps each to WHO set it).

    Provenance: ``given`` (default: every value in ``raw``) are the fields the user gave;
    ``overridden`` are set on top (added to ``previous_overrides``, each by its setter, or
    as ``recorded`` says when given: a loaded file's ``--set`` fields are recorded as set by
    ``--set``); ``file`` the file the values were read from (sim/scenario/origins.py).
    """
    set_by = dict(overridden or {})

    def blamed(touched: typing.Callable[[str], bool]) -> str:
        # the last setter of a field the problem touches, else the source itself
        who = [w for k, w in set_by.items() if touched(k)]
        return f"{who[-1]} (--set)" if who else source

    try:
        scenario = Scenario.model_validate(dict(raw))
    except ValidationError as exc:
        field, msg = _first_error(exc)
        where = blamed(lambda k: _touches(field, k))
        raise SpecsimError(msg, source=where, field=field or None) from None
    missing = underivable_pass_time(scenario)
    if missing is not None:
        field, needs = missing
        raise SpecsimError(
            f"required key is missing (or give {', '.join(needs)} to derive it)",
            source=blamed(lambda k: field == k or k.startswith(("model.", "hardware."))),
            field=field,
        )
    problem = tree_rank_problem(scenario)
    if problem is not None:
        field, msg = problem
        where = blamed(lambda k: k.startswith(("acceptance.", "speculation.")))
        raise SpecsimError(msg, source=where, field=field)
    return scenario.model_copy(
        update={
            "origins": Origins(
                given=frozenset(leaf_fields(raw) if given is None else given),
                overrides={
                    **(previous_overrides or {}),
                    **(set_by if recorded is None else recorded),
                },
                file=file,
                source=source,
                changed=frozenset(set_by),
            )
        }
    )


def tree_rank_problem(scenario: Scenario) -> tuple[str, str] | None:
    """(field, message) when a tree (topk > 1) lacks rank rates for its ranks, else None.

    A tree needs ranks 1..topk: ``acceptance.rank_rates`` or ``acceptance.rank_profile``
    at least topk long, or ``acceptance.rank_extend = "geometric"`` with a shape of at
    least three ranks whose shares fall (sim/model/tree/rates.py).
    """
    sp = scenario.speculation
    spec, topk = scenario.acceptance, sp.rank_width
    if spec is None or topk == 1:
        return None
    shape = spec.rank_shape()
    what = "speculation.topk = " if sp.tree is None else "speculation.tree uses ranks up to "
    if shape is None:
        return (
            "acceptance.rank_rates",
            f"{what}{topk} drafts a tree: give the rank-wise rates "
            f"(acceptance.rank_rates = [q_1, ..., q_{topk}]) or acceptance.rank_profile",
        )
    field = spec.rank_shape_field()
    if len(shape) >= topk:
        return None
    if spec.rank_extend == "none":
        return (
            field,
            f"gives {len(shape)} rank{'s' if len(shape) > 1 else ''} but "
            f"{what.removesuffix(' = ').removesuffix(' ')} {topk}"
            f': give {topk} rates or acceptance.rank_extend = "geometric"',
        )
    if len(shape) < 3:
        return (field, f"cannot extend {shape} geometrically: it needs at least three rates")
    # lazy: only a tree's ranks need it (start-up)
    from sim.model.tree.rates import extend_shares, residual_shares

    try:
        extend_shares(residual_shares(shape), topk)
    except ValueError as exc:
        return field, f"cannot extend {shape} to {topk} ranks: {exc}"
    return None


def underivable_pass_time(scenario: Scenario) -> tuple[str, list[str]] | None:
    """The first missing pass time the hardware model cannot derive, with what it needs.

    A missing verify is derived from a measured decode, the model's weights and
    ``hardware.gpu`` (the extra weight reads of more tokens); any other
    missing pass from the model's weights (drafter: ``draft_params``) and ``hardware.gpu``
    (sim/hardware/pass_model.py).
    """
    timing, model = scenario.timing, scenario.model
    geometry = [f"model.{n}" for n in ("layers", "hidden_size") if getattr(model, n) is None]
    weights = ["model.layer_params"] if model.layer_params is None else []
    gpu = ["hardware.gpu"] if scenario.hardware.gpu is None else []
    checks = [("decode_ms", geometry + weights + gpu)]
    checks.append(("verify_ms", geometry + weights + gpu))
    if timing.verify_growth == "experts" and geometry + weights + gpu:
        return "timing.verify_growth", geometry + weights + gpu
    if scenario.num_steps > 0:
        drafter = ["model.draft_params"] if model.draft_params is None else []
        checks += [(n, geometry + drafter + gpu) for n in ("draft_step_ms", "draft_extend_ms")]
    for name, needs in checks:
        if getattr(timing, name) is None and needs:
            return f"timing.{name}", needs
    return None


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """The raw TOML mapping of a scenario file with what its own values fix
    (``fill_from_file``); SpecsimError if missing or not TOML."""
    text = read_bounded_text(Path(path), limit=MAX_SCENARIO_BYTES)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecsimError(f"invalid TOML: {exc}", source=str(path)) from None
    except RecursionError:
        raise SpecsimError(
            f"invalid TOML: tables and arrays nested deeper than {MAX_DEPTH}", source=str(path)
        ) from None
    check_depth(raw, str(path))
    return fill_from_file(raw)


def fill_measured_on(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with ``timing.measured_on`` completed from the file's own hardware values.

    Keys the file gives in ``[timing.measured_on]`` stay; missing ones come from
    ``[hardware]`` / ``timing.verify_cuda_graph`` (or their defaults). Values that are not
    of the right type are left for validation to report.
    """
    out = copy.deepcopy(dict(raw))
    timing = out.get("timing")
    hardware = out.get("hardware", {})
    if not isinstance(timing, dict) or not isinstance(hardware, dict):
        return out
    measured = timing.setdefault("measured_on", {})
    if not isinstance(measured, dict):
        return out
    hw_fields = HardwareSpec.model_fields
    measured.setdefault(
        "interconnect", hardware.get("interconnect", hw_fields["interconnect"].default)
    )
    measured.setdefault("gpus", hardware.get("gpus", hw_fields["gpus"].default))
    if hardware.get("gpu") is not None:
        measured.setdefault("gpu", hardware["gpu"])
    measured.setdefault("verify_cuda_graph", timing.get("verify_cuda_graph", False))
    measured.setdefault("allreduce", hardware.get("allreduce", hw_fields["allreduce"].default))
    return out


def fill_from_file(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a file's own values fix before ``--set`` applies: ``timing.measured_on`` (the
    hardware the timings were measured on) and ``acceptance.measured_num_steps`` (the
    num_steps its alpha or accept length was measured at)."""
    out = fill_measured_on(raw)
    fill_measured_num_steps(out)
    return out


def load_scenario(
    path: str | Path, sets: Iterable[str] = (), settings: Iterable[Setting] = ()
) -> Scenario:
    """Read a scenario file, override it (``--set`` strings ``'a.b=v'``, then a command's
    option ``settings`` as ``with_settings`` applies them) and validate it once: every
    value the command line gives, in one straight pass (read, merge, validate). A problem
    names the file, ``FILE (--set)`` when a ``--set`` field is involved, or
    ``OPTION (--set)`` for an option's field."""
    source = str(path)
    raw = read_scenario_file(path)
    line = merge_command_line(raw, sets, settings, source)
    merged = read_growmap(line.raw, Path(path).parent, source)
    return scenario_from_dict(
        merged,
        source=source,
        overridden=line.set_by,
        given=leaf_fields(raw) - line.changed,
        file=source,
        recorded=line.recorded,
    )


def read_growmap(raw: dict[str, Any], base_dir: Path, source: str) -> dict[str, Any]:
    """``raw`` with ``speculation.tree.growmap`` (a Sequoia growmap saved as JSON, relative
    to ``base_dir``) read into ``speculation.tree.paths``, ``source`` saying which file
    (sim/model/tree/inputs.py ``growmap_paths``); SpecsimError naming the field otherwise."""
    spec = raw.get("speculation")
    tree = spec.get("tree") if isinstance(spec, dict) else None
    name = tree.get("growmap") if isinstance(tree, dict) else None
    if not isinstance(name, str) or not isinstance(tree, dict):
        return raw
    from sim.model.tree.inputs import growmap_paths  # lazy: static trees only

    field = "speculation.tree.growmap"
    file = base_dir / name
    try:
        data = json.loads(read_bounded_text(file, limit=MAX_SCENARIO_BYTES))
    except SpecsimError as exc:
        raise SpecsimError(f"{name}: {exc.message}", source=source, field=field) from None
    except (ValueError, RecursionError) as exc:  # ValueError: also a 5,000-digit integer
        raise SpecsimError(
            f"{name} is not JSON: {str(exc)[:200]}", source=source, field=field
        ) from None
    if not isinstance(data, dict):
        raise SpecsimError(f"{name}: a growmap is a JSON object", source=source, field=field)
    try:
        paths = growmap_paths(data)
    except ValueError as exc:
        raise SpecsimError(f"{name}: {exc}", source=source, field=field) from None
    del tree["growmap"]
    tree["paths"] = [list(p) for p in paths]
    tree.setdefault("source", f"Sequoia growmap {name}")
    return raw


def in_its_file(exc: SpecsimError, scenario: Scenario) -> SpecsimError:
    """``exc`` naming the scenario's file when it names a field of it but no file (found
    after loading, e.g. by the layer-level pass model)."""
    file = scenario.origins.file
    if exc.field is None or exc.source is not None or file is None:
        return exc
    return SpecsimError(exc.message, source=file, field=exc.field, param=exc.param)


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
    return with_overrides(scenario, {"timing.verify_tokens": scenario.speculation.draft_tokens})


def field_value(scenario: Scenario, dotted: str) -> Any:
    """The value of a dotted field of a scenario (SpecsimError naming the field if none)."""
    node: Any = scenario.model_dump()
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise SpecsimError("no such scenario field", field=dotted)
        node = node[part]
    return node
