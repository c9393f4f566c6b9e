"""How ``specsim init`` writes a value: into the scenario's raw sections, with its origin
(a flag, a config.json field, a named default) as the comment written above it."""

from __future__ import annotations

from typing import Any


def set_field(
    raw: dict[str, Any], comments: dict[str, str], dotted: str, value: Any, why: str
) -> None:
    """``raw``'s field ``dotted`` (``section.key``) set to ``value``, its comment ``why``."""
    section, key = dotted.split(".", 1)
    raw.setdefault(section, {})[key] = value
    comments[dotted] = why


def set_uncertainty(
    raw: dict[str, Any], comments: dict[str, str], dotted: str, entry: dict[str, Any]
) -> None:
    """``[uncertainty]``'s ``entry`` of field ``dotted`` beside the section's others."""
    section, key = dotted.split(".", 1)
    raw.setdefault("uncertainty", {}).setdefault(section, {})[key] = entry
    comments.setdefault(f"uncertainty.{section}", "")
