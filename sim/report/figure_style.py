"""What every figure shares: a figure made without pyplot (``new_figure``: Agg,
constrained layout), its title, legend, footnote and target lines, the phase colours
and line styles, and the words of a swept field and its values.

Every figure is meant to read on its own in a slide: a title, axis labels with units, a
legend, and a footnote saying where the numbers come from (scenario, engine, sample
size). Builders (``sweep_plots``, ``search_plots``, ``run_plots``, ``compare_plots``,
``serving_plots``, ``decision_plots``, ``tree_load``) never compute results and never
touch files; the CLI saves them (sim/cli/plot.py). Figures are created with
``matplotlib.figure.Figure`` directly, so no global pyplot state is involved and any
backend-free process can render them to PNG/SVG.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

__all__ = [
    "BASELINE_STYLE",
    "PHASE_COLORS",
    "PHASE_LABELS",
    "TARGET_STYLE",
    "Row",
    "add_footnote",
    "add_legend",
    "add_targets",
    "add_title",
    "curve_colors",
    "field_label",
    "fmt_value",
    "in_words",
    "new_figure",
]

Row = Mapping[str, Any]

#: Legend labels of the cycle phases (drawn in ``PHASES`` order).
PHASE_LABELS = {
    "draft": "draft steps",
    "verify": "target verify",
    "extend": "draft extend",
    "overhead": "overhead",
}
PHASE_COLORS = ("#4C72B0", "#C44E52", "#55A868", "#8172B2")
TARGET_STYLE: dict[str, Any] = {"color": "black", "linestyle": "--", "linewidth": 1.0}
BASELINE_STYLE: dict[str, Any] = {"color": "0.45", "linestyle": ":", "linewidth": 1.5}


def new_figure(width: float = 8.0, height: float = 5.0) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    return fig, fig.add_subplot()


def add_footnote(fig: Figure, text: str | None) -> None:
    """Source line under the plot; the layout keeps a strip free for it."""
    if text:
        wrapped = textwrap.fill(text, width=int(fig.get_figwidth() * 17))
        lines = wrapped.count("\n") + 1
        strip = (0.16 + 0.12 * lines) / fig.get_figheight()
        layout = fig.get_layout_engine()
        if not isinstance(layout, ConstrainedLayoutEngine):
            raise TypeError("a footnote keeps its strip free in a constrained layout")
        layout.set(rect=(0.0, strip, 1.0, 1.0 - strip))
        fig.text(0.01, 0.01, wrapped, fontsize=7.5, color="0.35", ha="left", va="bottom")


def add_title(fig: Figure, ax: Axes | None, text: str, fontsize: float = 11.0) -> None:
    """The figure's title, centred on the figure (not on an axes that long tick labels
    push aside) and wrapped to its width, so it never runs off the canvas."""
    chars = int(0.9 * fig.get_figwidth() * 72 / (fontsize * 0.62))  # ~0.62 em a character
    lines = [textwrap.fill(part, width=max(20, chars)) for part in text.split("\n")]
    fig.suptitle("\n".join(lines), fontsize=fontsize)


def add_legend(fig: Figure, ax: Axes, entries: int, **kwargs: Any) -> None:
    """Legend inside the axes when short, outside on the right when long."""
    if entries > 6:
        kwargs.pop("loc", None)
        kwargs.pop("ncols", None)
        fig.set_figwidth(fig.get_figwidth() + (2.5 if entries <= 18 else 5.0))
        fig.legend(loc="outside right upper", ncols=1 if entries <= 18 else 2, **kwargs)
    else:
        ax.legend(**kwargs)


def field_label(field: str) -> str:
    """Axis label for a dotted scenario field, with its unit when the name carries one."""
    leaf = field.rsplit(".", 1)[-1]
    names = {
        "alpha": "conditional acceptance rate alpha",
        "num_steps": "draft length k (num_steps)",
        "interconnect": "interconnect",
        "gpus": "GPUs (tensor parallel)",
        "output_tokens": "output tokens per request",
    }
    if leaf in names:
        return names[leaf]
    for suffix, unit in (("_ms", "ms"), ("_gbps", "GB/s"), ("_tok_s", "tok/s")):
        if leaf.endswith(suffix):
            return f"{leaf[: -len(suffix)].replace('_', ' ')} ({unit})"
    return leaf.replace("_", " ")


def in_words(field: str, value: Any) -> str:
    """A legend entry for a swept field's value: ``interconnect nvlink4``, ``GPUs 8``,
    ``verify graphed``, ``k = 4``; a yes/no field reads as words, never a Python literal."""
    leaf = field.rsplit(".", 1)[-1]
    flag = _flag(value)
    if leaf == "verify_cuda_graph" and flag is not None:
        return "verify graphed" if flag else "verify ungraphed"
    if leaf == "num_steps":
        return f"k = {fmt_value(value)}"
    if flag is not None:
        return f"{field_label(field)}: {'yes' if flag else 'no'}"
    return f"{field_label(field)} {fmt_value(value)}"


def _flag(value: Any) -> bool | None:
    """A boolean value (or its CSV text ``true``/``false``), else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "[" + ",".join(fmt_value(v) for v in value) + "]"
    return str(value)


def add_targets(ax: Axes, targets: Sequence[float], *, vertical: bool = False) -> None:
    for i, t in enumerate(targets):
        label = "target" + ("s" if len(targets) > 1 else "") if i == 0 else None
        if vertical:
            ax.axvline(t, **TARGET_STYLE, label=label)
        else:
            ax.axhline(t, **TARGET_STYLE, label=label)
            ax.annotate(
                f"{t:g} tok/s",
                xy=(1.0, t),
                xycoords=("axes fraction", "data"),
                xytext=(-4, 3),
                textcoords="offset points",
                ha="right",
                fontsize=8,
            )


def curve_colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(0.9 * i / max(1, n - 1)) for i in range(n)]
