"""Where a scenario's values come from: what the file gave, what was set afterwards and by
what, and the file itself (kept by the loader beside the values, never read from a file)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Origins:
    """The provenance of a ``Scenario``'s values, as the loader made it.

    ``given``: the dotted fields the file (or mapping) gave; ``overrides``: the fields set
    afterwards (by ``--set``, ``--grid`` or a study) with what set them; ``file``: the file
    it was read from (kept by its overridden copies), so that a problem found later names
    it. ``source`` and ``changed``: the last step that made the scenario (the file, or the
    study that set ``changed``), so that a problem found when binding it is reported as the
    loader reports one (``source (--set)`` when ``changed`` touches the field's section).
    ``overrides`` is never changed after construction.
    """

    given: frozenset[str] = frozenset()
    overrides: Mapping[str, str] = field(default_factory=dict)
    file: str | None = None
    source: str | None = None
    changed: frozenset[str] = frozenset()

    def where(self, touches: Iterable[str]) -> str | None:
        """The source to name for a problem in fields under ``touches`` (dotted prefixes):
        ``source (--set)`` when the last step set one of them; else the file (or the
        source), ``(--set)`` when ``--set`` set one of them; None when nothing is known."""
        prefixes = tuple(touches)

        def under(dotted: str) -> bool:
            return any(dotted == p or dotted.startswith(p) for p in prefixes)

        if self.source is not None and any(under(k) for k in self.changed):
            return f"{self.source} (--set)"
        named = self.file or self.source
        if named is None:
            return None
        if any(under(k) and via == "--set" for k, via in self.overrides.items()):
            return f"{named} (--set)"
        return named


@dataclass(frozen=True, slots=True)
class FieldOrigin:
    """Where one dotted field's value comes from, by how the scenario got it (no
    derivation): ``origin`` (override | measured | assumed | calibrated | default), the
    reason, and the ``[uncertainty]`` entry's ``stderr`` and ``range`` when it has one."""

    origin: str
    reason: str
    stderr: float | list[float] | None = None
    range: tuple[float, float] | None = None


#: A field neither set afterwards, described under ``[uncertainty]`` nor given.
DEFAULT_ORIGIN = FieldOrigin("default", "not given: the default")


@dataclass(frozen=True, slots=True)
class FieldOrigins:
    """Every field's ``FieldOrigin``, read once from a scenario (``Scenario.field_origins``):
    ``known`` holds the fields set afterwards, described under ``[uncertainty]`` or given
    (a table or list of tables under each of its given entries' prefixes); any other field
    is ``DEFAULT_ORIGIN``."""

    known: Mapping[str, FieldOrigin]

    def __getitem__(self, dotted: str) -> FieldOrigin:
        return self.known.get(dotted, DEFAULT_ORIGIN)


def given_prefixes(given: Iterable[str]) -> set[str]:
    """Every given dotted field and each table holding one (``a.b[0].c`` gives ``a``,
    ``a.b`` and ``a.b[0]``): the fields the file gave, itself or by its entries."""
    out: set[str] = set()
    for dotted in given:
        out.add(dotted)
        out.update(dotted[:i] for i, ch in enumerate(dotted) if ch in ".[")
    return out
