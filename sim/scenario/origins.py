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
