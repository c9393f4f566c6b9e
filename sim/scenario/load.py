"""Loading a scenario file: read the TOML, fill what the file's own values fix
(``timing.measured_on``), merge the command line's ``--set`` and options, validate once.

Validation errors name the file (or ``--set``) and the dotted field, in one line
(sim/scenario/validate.py). Changing a loaded scenario is sim/scenario/overrides.py's.
What the values mean (the hardware model among it) is sim/binding/: a problem ``bind``
finds there (a measured time below its modelled communication + launch floor, a missing
model field) is reported against the file as well, through the scenario's ``origins``.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sim.errors import SpecsimError
from sim.files import read_bounded_text
from sim.scenario.overrides import Setting, merge_command_line
from sim.scenario.schema import Scenario, fill_measured_num_steps
from sim.scenario.sections.hardware import HardwareSpec
from sim.scenario.validate import leaf_fields, scenario_from_dict

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


def read_scenario_file(path: str | Path, text: str | None = None) -> dict[str, Any]:
    """The raw TOML mapping of a scenario file with what its own values fix
    (``fill_from_file``); SpecsimError if missing or not TOML. ``text``: the file's text
    when the caller has already read it (then the file is not read again)."""
    if text is None:
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
    path: str | Path,
    sets: Iterable[str] = (),
    settings: Iterable[Setting] = (),
    text: str | None = None,
) -> Scenario:
    """Read a scenario file, override it (``--set`` strings ``'a.b=v'``, then a command's
    option ``settings`` as ``with_settings`` applies them) and validate it once: every
    value the command line gives, in one straight pass (read, merge, validate). A problem
    names the file, ``FILE (--set)`` when a ``--set`` field is involved, or
    ``OPTION (--set)`` for an option's field; a problem the file alone has names the file
    whatever the command line set. ``text``: the file's text, when the caller reads it
    for something else as well (``calibrate`` keeps its comments), so it is read once."""
    source = str(path)
    raw = read_scenario_file(path, text)
    line = merge_command_line(raw, sets, settings, source)
    merged = read_growmap(line.raw, Path(path).parent, source)
    return scenario_from_dict(
        merged,
        source=source,
        overridden=line.set_by,
        given=leaf_fields(raw) - line.changed,
        file=source,
        recorded=line.recorded,
        # the file alone, read only when a problem touches a field the command line set:
        # one the file has as well is the file's
        unchanged=lambda: read_growmap(copy.deepcopy(raw), Path(path).parent, source),
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
