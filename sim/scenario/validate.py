"""A scenario's raw mapping validated into a ``Scenario``, with its provenance.

``scenario_from_dict`` is the one place a mapping becomes a ``Scenario``: the file's
(sim/scenario/load.py), and every scenario changed after loading (sim/scenario/overrides.py
``with_overrides``, ``with_settings``, ``with_load``). Errors name the file (or ``--set``)
and the dotted field, in one line; the fields given, overridden and by whom are kept in
the scenario's ``origins`` (sim/scenario/origins.py).
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from sim.errors import SpecsimError
from sim.scenario.origins import Origins
from sim.scenario.schema import Scenario

__all__ = [
    "key_suggestions",
    "leaf_fields",
    "scenario_from_dict",
    "tree_rank_problem",
    "underivable_pass_time",
]


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


def _first_error(exc: ValidationError) -> tuple[str, str, str]:
    """The first error's dotted field and message, and the others counted once per field
    as text (a value tried against each member of a union fails once a member, one
    problem)."""
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
    more = f" (and {extra} more error{'s' if extra > 1 else ''})" if extra else ""
    return _dotted(loc), msg, more


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


@dataclass(frozen=True, slots=True)
class _Problem:
    """The first problem of a raw mapping: the dotted ``field`` (a section for a check
    across its fields), the ``message``, ``more`` (how many other fields fail, as text) and
    ``touches``: whether a changed field may have caused it."""

    field: str
    message: str
    more: str
    touches: Callable[[str], bool]


def _first_problem(raw: Mapping[str, Any]) -> Scenario | _Problem:
    """``raw`` validated, or its first problem: the schema's, a pass time the hardware model
    cannot derive, a tree without rank rates for its ranks."""
    try:
        scenario = Scenario.model_validate(dict(raw))
    except ValidationError as exc:
        field, msg, more = _first_error(exc)
        return _Problem(field, msg, more, lambda k: _touches(field, k))
    missing = underivable_pass_time(scenario)
    if missing is not None:
        field, needs = missing
        return _Problem(
            field,
            f"required key is missing (or give {', '.join(needs)} to derive it)",
            "",
            lambda k: field == k or k.startswith(("model.", "hardware.")),
        )
    problem = tree_rank_problem(scenario)
    if problem is not None:
        field, msg = problem
        return _Problem(field, msg, "", lambda k: k.startswith(("acceptance.", "speculation.")))
    return scenario


def scenario_from_dict(
    raw: Mapping[str, Any],
    *,
    source: str,
    overridden: Mapping[str, str] | None = None,
    given: Iterable[str] | None = None,
    previous_overrides: Mapping[str, str] | None = None,
    file: str | None = None,
    recorded: Mapping[str, str] | None = None,
    unchanged: Callable[[], Mapping[str, Any]] | None = None,
) -> Scenario:
    """Validate a raw mapping; errors name ``source``, or ``WHO (--set)`` for a problem in an
    overridden field (``overridden`` maps each to WHO set it) unless ``unchanged`` (the
    mapping before the overrides, e.g. the file alone) has the same problem: then it is
    ``source``'s. A check across a section's fields fails on the whole section, which any
    override inside it touches: ``serve --requests 20`` on a file whose ``[workload]`` fails
    its own check names the file, not ``--requests``.

    Provenance: ``given`` (default: every value in ``raw``) are the fields the user gave;
    ``overridden`` are set on top (added to ``previous_overrides``, each by its setter, or
    as ``recorded`` says when given: a loaded file's ``--set`` fields are recorded as set by
    ``--set``); ``file`` the file the values were read from (sim/scenario/origins.py).
    """
    set_by = dict(overridden or {})
    checked = _first_problem(raw)
    if isinstance(checked, _Problem):
        # the last setter of a field the problem touches, else the source itself
        who = [w for k, w in set_by.items() if checked.touches(k)]
        where = f"{who[-1]} (--set)" if who else source
        if who and unchanged is not None and _has(unchanged, checked):
            where = source
        raise SpecsimError(
            checked.message + checked.more, source=where, field=checked.field or None
        )
    return checked.model_copy(
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


def _has(unchanged: Callable[[], Mapping[str, Any]], problem: _Problem) -> bool:
    """Whether the mapping ``unchanged`` gives has ``problem`` too (same field, same
    message); a mapping that cannot be built (SpecsimError) has not."""
    try:
        before = _first_problem(unchanged())
    except SpecsimError:
        return False
    return isinstance(before, _Problem) and (before.field, before.message) == (
        problem.field,
        problem.message,
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
