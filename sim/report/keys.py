"""Text of ``specsim keys``: every scenario key a line, its type, unit, default and bounds."""

from __future__ import annotations

from collections.abc import Sequence

from sim.scenario.keys import KeyInfo

__all__ = ["render_keys"]


def render_keys(keys: Sequence[KeyInfo]) -> str:
    """One line a key, the keys in one column: ``key  type [unit]; default D  (bounds)``."""
    width = max(len(k.key) for k in keys)
    lines = []
    for k in keys:
        default = "required" if k.required else ("-" if k.default is None else repr(k.default))
        unit = f" [{k.unit}]" if k.unit else ""
        bounds = f"  ({k.bounds})" if k.bounds else ""
        lines.append(f"{k.key:<{width}}  {k.type}{unit}; default {default}{bounds}")
    return "\n".join(lines)
