"""The exceptions of specsim: bad input the user can fix, and unknown preset names.

Library functions name their own parameters (``param="replications"``); the CLI maps a
parameter to the flag that sets it in one place (``sim.cli.options.PARAM_FLAGS``), so the
library never speaks in command-line flags.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class SpecsimError(Exception):
    """Bad input: a file, a field or a value the user can fix.

    ``source`` names where the problem is (a file path, ``--set``, an option), ``field`` the
    dotted field inside it, and ``param`` the library parameter it came through (mapped to
    a flag by the CLI); ``str()`` gives the one line the CLI prints.
    """

    def __init__(
        self,
        message: str,
        source: str | None = None,
        field: str | None = None,
        param: str | None = None,
    ):
        # every part in ``args``: an error rebuilt as ``type(e)(*e.args)`` (pickled to or
        # from a worker; re-raised by SimPy from a failed process) keeps its file and field
        super().__init__(message, source, field, param)
        self.message = message
        self.source = source
        self.field = field
        self.param = param

    def __str__(self) -> str:
        where = self.source if self.source else self.param
        parts = [p for p in (where, self.field) if p]
        return ": ".join([*parts, self.message])


class UnknownNameError(LookupError):
    """A preset (GPU, interconnect, engine, ...) that does not exist; carries the known names.

    ``str()`` is one sentence: the unknown name, the closest known ones, and every known
    name. Callers that know the field (``hardware.gpu``) turn it into a ``SpecsimError``.
    """

    def __init__(self, kind: str, name: str, known: Sequence[str]):
        super().__init__(kind, name, tuple(known))
        self.kind = kind
        self.name = name
        self.known = tuple(known)

    @property
    def suggestions(self) -> list[str]:
        """Known names close to the unknown one (difflib ratio >= 0.6, any case), best first."""
        by_lower = {k.lower(): k for k in self.known}
        close = difflib.get_close_matches(str(self.name).lower(), list(by_lower), n=3)
        return [by_lower[c] for c in close]

    def __str__(self) -> str:
        close = self.suggestions
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return f"unknown {self.kind} {self.name!r}{hint} (known: {', '.join(self.known)})"
