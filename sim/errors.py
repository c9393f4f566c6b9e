"""The one exception type the CLI turns into a one-line message and exit status 2."""

from __future__ import annotations


class SpecsimError(Exception):
    """Bad input: a file, a field or a value the user can fix.

    ``source`` names where the problem is (a file path, ``--set``, an option) and ``field``
    the dotted field inside it; ``str()`` gives the one line the CLI prints.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.field = field

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.field) if p]
        return ": ".join([*parts, self.message])
