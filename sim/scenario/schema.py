"""The scenario file format: the whole file (``Scenario``), frozen and validated; each
section's model is in sim/scenario/sections/ (one module a section, their bounds in
``bounds``).

A scenario describes one server and drafter as the user measured them. Every section
forbids unknown keys and is strict about types (TOML ``"2"`` is not an integer), so a
typo is an error that names the file and the dotted field instead of a silent default.
Loading is sim/scenario/load.py, validation sim/scenario/validate.py, ``--set`` and the
other overrides sim/scenario/overrides.py; what the values mean is sim/binding/ (bound.py).
"""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Any, Self

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from sim.errors import UnknownNameError
from sim.hardware.interconnects import resolve_interconnect
from sim.scenario.origins import FieldOrigin, FieldOrigins, Origins, given_prefixes
from sim.scenario.sections.acceptance import AcceptanceSpec
from sim.scenario.sections.hardware import HardwareSpec
from sim.scenario.sections.model import ModelSpec
from sim.scenario.sections.section import Section
from sim.scenario.sections.server import ServerSpec
from sim.scenario.sections.serving import ServingSpec
from sim.scenario.sections.simulation import SimulationSpec
from sim.scenario.sections.speculation import SpeculationSpec
from sim.scenario.sections.targets import TargetsSpec
from sim.scenario.sections.timing import TimingSpec
from sim.scenario.sections.uncertainty import UncertaintySpec
from sim.scenario.sections.workload import WorkloadSpec

__all__ = ["Scenario", "fill_measured_num_steps"]


class Scenario(Section):
    """One validated scenario file (after overrides): plain, frozen data.

    ``origins`` says where each value comes from (sim/scenario/origins.py): set by the
    loader beside the values, never read from a file, left out of dumps, of the JSON
    Schema and of equality (which compares the values only). What the values mean for the
    model is sim/binding/ (``bind(scenario) -> Bound``).
    """

    origins: SkipJsonSchema[Origins] = Field(default_factory=Origins, exclude=True, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        mine, theirs = dict(self.__dict__), dict(other.__dict__)
        mine.pop("origins", None)
        theirs.pop("origins", None)
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]  # lists inside: not hashable

    def given_origin(self, dotted: str) -> tuple[str, str]:
        """(origin, reason) of a field by how the scenario got it (no derivation): set
        afterwards, described under ``[uncertainty]``, given by the file, or the default."""
        found = self.field_origins()[dotted]
        return found.origin, found.reason

    def field_origins(self) -> FieldOrigins:
        """Every field's origin at once, as ``given_origin`` reads one: set afterwards
        (``override``), described under ``[uncertainty]`` (its origin, reason, stderr and
        range), given by the file (``measured``), else the default."""
        known = dict.fromkeys(
            given_prefixes(self.origins.given), FieldOrigin("measured", "given in the scenario")
        )
        for dotted, entry in self.uncertainty.entries().items():
            span = (entry.range[0], entry.range[1]) if entry.range is not None else None
            known[dotted] = FieldOrigin(entry.resolved_origin, entry.reason, entry.stderr, span)
        for dotted, via in self.origins.overrides.items():
            known[dotted] = FieldOrigin("override", f"set by {via}")
        return FieldOrigins(known)

    name: Annotated[str, Field(max_length=200)]
    description: Annotated[str, Field(max_length=10_000)] = ""
    model: ModelSpec = ModelSpec()
    server: ServerSpec = ServerSpec()
    hardware: HardwareSpec = HardwareSpec()
    timing: TimingSpec = TimingSpec()
    speculation: SpeculationSpec
    acceptance: AcceptanceSpec | None = None
    workload: WorkloadSpec = WorkloadSpec()
    serving: ServingSpec | None = None
    simulation: SimulationSpec = SimulationSpec()
    targets: TargetsSpec | None = None
    uncertainty: UncertaintySpec = UncertaintySpec()

    @model_validator(mode="before")
    @classmethod
    def _fill_measured_num_steps(cls, data: Any) -> Any:
        """An alpha or accept length was measured at the scenario's num_steps unless it
        says otherwise (files are filled at load, before ``--set``, see load.py)."""
        if isinstance(data, dict):
            fill_measured_num_steps(data)
        return data

    @model_validator(mode="after")
    def _uncertain_fields_are_numbers(self) -> Self:
        entries = self.uncertainty.entries()
        for dotted, entry in entries.items():
            where = f"uncertainty.{dotted}"
            section, key = dotted.split(".", 1)
            value = getattr(getattr(self, section), key, None) if hasattr(self, section) else None
            model_fields = type(getattr(self, section)).model_fields
            if key not in model_fields:
                raise _field_error(where, f"{section} has no field {key!r}")
            if isinstance(value, list):
                if not all(isinstance(v, int | float) for v in value):
                    raise _field_error(where, "not a numeric field")
                if entry.range is not None:
                    raise _field_error(where, "a list field takes a stderr (one or per entry)")
                if isinstance(entry.stderr, list) and len(entry.stderr) != len(value):
                    raise _field_error(
                        where,
                        f"{len(entry.stderr)} stderr{'s' * (len(entry.stderr) != 1)} for "
                        f"{len(value)} entr{'ies' if len(value) != 1 else 'y'}",
                    )
                continue
            if value is None:
                raise _field_error(where, f"{dotted} has no value here to be uncertain about")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _field_error(where, f"not a numeric field (value {value!r})")
            if isinstance(entry.stderr, list):
                raise _field_error(where, "a single value takes a single stderr")
            if entry.range is not None and not entry.range[0] <= value <= entry.range[1]:
                raise _field_error(
                    where,
                    f"range [{entry.range[0]:g}, {entry.range[1]:g}] does not contain the "
                    f"value {value:g}",
                )
        corr = self.uncertainty.correlation
        if corr is not None:
            for name in corr.fields:
                base = name.split("[", 1)[0]
                stated = entries.get(base)
                if stated is None or stated.stderr is None:
                    raise _field_error(
                        "uncertainty.correlation.fields",
                        f"{name} has no stderr in [uncertainty] to correlate",
                    )
        return self

    @model_validator(mode="after")
    def _acceptance_when_speculating(self) -> Self:
        if self.acceptance is None and self.speculation.num_steps > 0:
            raise ValueError("[acceptance] is required when speculation.num_steps > 0")
        timing = self.timing
        if timing.draft_extend_ms is not None and timing.draft_extend_ms_per_token > 0:
            tokens = timing.draft_extend_tokens or self.num_steps + 1
            at_one = timing.draft_extend_ms - (tokens - 1) * timing.draft_extend_ms_per_token
            if at_one < 0:
                raise ValueError(
                    "timing.draft_extend_ms_per_token is too large for timing.draft_extend_ms: "
                    f"the draft extend over 1 token would take {at_one:.3g} ms"
                )
        if timing.verify_ms is None:
            return self
        measured_tokens = timing.verify_tokens or self.speculation.draft_tokens
        at_one = timing.verify_ms - (measured_tokens - 1) * (
            timing.verify_ms_per_extra_token or 0.0
        )
        if at_one <= 0:
            raise ValueError(
                "timing.verify_ms_per_extra_token is too large for timing.verify_ms: the verify "
                f"pass over 1 token would take {at_one:.3g} ms"
            )
        return self

    @model_validator(mode="after")
    def _gpus_in_one_domain(self) -> Self:
        """Tensor parallelism within one domain of the link: no more GPUs than it holds
        (``Interconnect.max_gpus``), for the hardware asked about and the measured one."""
        checks = [("hardware.gpus", self.hardware.interconnect, self.hardware.gpus)]
        ref = self.timing.measured_on
        if ref is not None:
            checks.append(("timing.measured_on.gpus", ref.interconnect, ref.gpus))
        for where, name, gpus in checks:
            try:
                beyond = resolve_interconnect(name, self.hardware.interconnects).domain_error(gpus)
            except (UnknownNameError, ValueError):
                continue  # an unknown name is the interconnect field's own error
            if beyond is not None:
                raise _field_error(where, beyond)
        return self

    @property
    def num_steps(self) -> int:
        return self.speculation.num_steps

    @property
    def target_tok_s(self) -> tuple[float, ...]:
        return tuple(self.targets.tok_s) if self.targets else ()


def _field_error(field: str, message: str) -> ValueError:
    """A validation error naming a dotted field inside its message (validate.py reports it)."""
    return ValueError(f"{field}: {message}")


def fill_measured_num_steps(raw: dict[str, Any]) -> None:
    """Set ``acceptance.measured_num_steps`` from ``speculation.num_steps`` in place when
    the acceptance is an alpha, an accept length or a mix and does not say it."""
    acc, spec = raw.get("acceptance"), raw.get("speculation")
    if not isinstance(acc, dict) or not isinstance(spec, dict):
        return
    k = spec.get("num_steps")
    if "measured_num_steps" in acc or not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return
    if any(key in acc for key in ("alpha", "accept_length", "mix")):
        acc["measured_num_steps"] = k
