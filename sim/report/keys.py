"""Text of ``specsim keys``: the file's sections on one screen, or a key a line (its type,
unit, default and bounds)."""

from __future__ import annotations

from collections.abc import Sequence

from sim.scenario.keys import KeyInfo, SectionInfo

__all__ = ["render_keys", "render_sections"]


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


def render_sections(sections: Sequence[SectionInfo]) -> str:
    """The sections a line (name, key count, what it holds), then how to see their keys."""
    total = sum(s.keys for s in sections)
    width = max(len(s.name) for s in sections)
    lines = [f"A scenario file has {len(sections)} sections and {total} keys:", ""]
    for s in sections:
        lines.append(f"  {s.name:<{width}}  {s.keys:>3}  {s.summary}")
    lines += [
        "",
        "specsim keys SECTION  the keys of a section or a dotted prefix (serving.kv),",
        "                      with type, unit, default and bounds",
        "specsim keys --all    every key;  --json: the JSON Schema of a scenario file",
    ]
    return "\n".join(lines)
