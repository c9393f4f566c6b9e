"""Figure builders: plain result dicts and arrays in, matplotlib Figures out (Agg, no pyplot).

Every figure is meant to read on its own in a slide: a title, axis labels with units, a
legend, and a footnote saying where the numbers come from (scenario, engine, sample
size). Builders never compute results and never touch files; the CLI saves them
(sim/cli/plot.py). Figures are created with ``matplotlib.figure.Figure`` directly, so no
global pyplot state is involved and any backend-free process can render them to PNG/SVG.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from sim.model.cycle import PHASES
from sim.report.plain_text import log_x_axis

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


def _figure(width: float = 8.0, height: float = 5.0) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    return fig, fig.add_subplot()


def _footnote(fig: Figure, text: str | None) -> None:
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


def _title(fig: Figure, ax: Axes | None, text: str, fontsize: float = 11.0) -> None:
    """The figure's title, centred on the figure (not on an axes that long tick labels
    push aside) and wrapped to its width, so it never runs off the canvas."""
    chars = int(0.9 * fig.get_figwidth() * 72 / (fontsize * 0.62))  # ~0.62 em a character
    lines = [textwrap.fill(part, width=max(20, chars)) for part in text.split("\n")]
    fig.suptitle("\n".join(lines), fontsize=fontsize)


def _legend(fig: Figure, ax: Axes, entries: int, **kwargs: Any) -> None:
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


def _targets(ax: Axes, targets: Sequence[float], *, vertical: bool = False) -> None:
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


# --------------------------------------------------------------------------- tok/s vs alpha


def throughput_vs_acceptance(
    rows: Sequence[Row],
    *,
    x: str = "acceptance.alpha",
    targets: Sequence[float] = (),
    group_by: Sequence[str] = (),
    baseline_tok_s: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Mean tok/s against the acceptance rate, one curve per k, shaded 95% CI of the mean.

    ``rows`` are sweep rows with ``x``, ``num_steps``, ``tok_s_mean``, ``tok_s_ci95_lo`` and
    ``tok_s_ci95_hi``; ``group_by`` names further varied fields: each combination of their
    values gets its own panel (small multiples on shared axes), so no two curves of
    different settings lie on top of each other.
    """
    others = sorted({tuple(fmt_value(r.get(g)) for g in group_by) for r in rows})
    if len(others) > 1:
        return _throughput_panels(
            rows, others, x=x, targets=targets, group_by=group_by,
            baseline_tok_s=baseline_tok_s, title=title, footnote=footnote,
        )  # fmt: skip
    fig, ax = _figure()
    ks = sorted({int(r["num_steps"]) for r in rows})
    colors = _colors(len(ks))
    styles = ["-", "--", "-.", ":"]
    for ci, k in enumerate(ks):
        for si, combo in enumerate(others):
            pts = sorted(
                (
                    r
                    for r in rows
                    if int(r["num_steps"]) == k
                    and tuple(fmt_value(r.get(g)) for g in group_by) == combo
                ),
                key=lambda r: float(r[x]),
            )
            if not pts:
                continue
            xs = np.array([float(r[x]) for r in pts])
            mean = np.array([float(r["tok_s_mean"]) for r in pts])
            label = f"k = {k}" + (
                " (" + ", ".join(in_words(g, v) for g, v in zip(group_by, combo, strict=True)) + ")"
                if group_by
                else ""
            )
            ax.plot(
                xs,
                mean,
                styles[si % len(styles)],
                color=colors[ci],
                marker="o",
                markersize=3,
                label=label,
            )
            if "tok_s_ci95_lo" in pts[0] and pts[0]["tok_s_ci95_lo"] is not None:
                lo = np.array([float(r["tok_s_ci95_lo"]) for r in pts])
                hi = np.array([float(r["tok_s_ci95_hi"]) for r in pts])
                # a band a few pixels wide vanishes under the line: error bars with caps
                # stay visible at any width, the band shows its shape where it is wide
                ax.fill_between(xs, lo, hi, color=colors[ci], alpha=0.3, linewidth=0)
                ax.errorbar(
                    xs, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor=colors[ci],
                    elinewidth=1.0, capsize=2.5,
                )  # fmt: skip
    if baseline_tok_s is not None:
        ax.axhline(
            baseline_tok_s, **BASELINE_STYLE, label=f"no speculation ({baseline_tok_s:.0f} tok/s)"
        )
    _targets(ax, targets)
    ax.set_xlabel(field_label(x))
    ax.set_ylabel("mean per-request throughput (tok/s)")
    _title(fig, ax, title or "Throughput against acceptance rate, per draft length k")
    ax.grid(True, alpha=0.3)
    _legend(
        fig,
        ax,
        len(ks) * len(others) + 2,
        fontsize=8,
        loc="upper left",
        title="bars and shading: 95% CI of the mean",
        title_fontsize=7.5,
    )
    _footnote(fig, footnote)
    return fig


def _curves(ax: Axes, rows: Sequence[Row], x: str, ks: Sequence[int], colors: list[Any]) -> None:
    """One curve per k with its 95% CI (band and error bars) on ``ax``."""
    for k, color in zip(ks, colors, strict=True):
        pts = sorted((r for r in rows if int(r["num_steps"]) == k), key=lambda r: float(r[x]))
        if not pts:
            continue
        xs = np.array([float(r[x]) for r in pts])
        mean = np.array([float(r["tok_s_mean"]) for r in pts])
        ax.plot(xs, mean, "-", color=color, marker="o", markersize=3, label=f"k = {k}")
        if pts[0].get("tok_s_ci95_lo") is not None:
            lo = np.array([float(r["tok_s_ci95_lo"]) for r in pts])
            hi = np.array([float(r["tok_s_ci95_hi"]) for r in pts])
            ax.fill_between(xs, lo, hi, color=color, alpha=0.3, linewidth=0)
            ax.errorbar(
                xs, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor=color,
                elinewidth=1.0, capsize=2.5,
            )  # fmt: skip


def _throughput_panels(
    rows: Sequence[Row],
    others: Sequence[tuple[str, ...]],
    *,
    x: str,
    targets: Sequence[float],
    group_by: Sequence[str],
    baseline_tok_s: float | None,
    title: str | None,
    footnote: str | None,
) -> Figure:
    """``throughput_vs_acceptance`` as small multiples: a panel per combination of the
    ``group_by`` fields (named in words), one colour per k in every panel."""
    n = len(others)
    ncols = 2 if n <= 4 else 3
    nrows = -(-n // ncols)
    fig = Figure(figsize=(4.0 * ncols + 1.6, 3.0 * nrows + 1.4), dpi=110, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    ks = sorted({int(r["num_steps"]) for r in rows})
    colors = _colors(len(ks))
    for i, combo in enumerate(others):
        ax = axes[i // ncols][i % ncols]
        sel = [r for r in rows if tuple(fmt_value(r.get(g)) for g in group_by) == combo]
        _curves(ax, sel, x, ks, colors)
        if baseline_tok_s is not None:
            label = f"no speculation ({baseline_tok_s:.0f} tok/s)"
            ax.axhline(baseline_tok_s, **BASELINE_STYLE, label=label)
        _targets(ax, targets)
        words = [in_words(g, v) for g, v in zip(group_by, combo, strict=True)]
        ax.set_title(", ".join(words), fontsize=9.5)
        ax.grid(True, alpha=0.3)
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel(field_label(x), fontsize=9)
    for row in axes:
        row[0].set_ylabel("mean tok/s per request", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside right upper", fontsize=8,
        title="bands, bars: 95% CI", title_fontsize=7.5,
    )  # fmt: skip
    _title(fig, None, title or "Throughput against acceptance rate, per draft length k")
    _footnote(fig, footnote)
    return fig


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(0.9 * i / max(1, n - 1)) for i in range(n)]


# --------------------------------------------------------------------------- required alpha


def required_alpha_vs_target(
    search: Mapping[str, Any],
    *,
    title: str | None = None,
    footnote: str | None = None,
    max_curves: int = 8,
) -> Figure:
    """Required acceptance rate against target tok/s, one curve per k.

    ``search`` is ``SearchResult.to_dict()``: its closed-form curves (``closed_form_curves``)
    are drawn as lines, the Monte Carlo answers at the searched targets as points with
    95% intervals. At most ``max_curves`` draft lengths: each target's best k, then k
    spread evenly over the searched range.
    """
    fig, ax = _figure()
    curves = search.get("closed_form_curves", {})
    per_k: dict[int, list[tuple[float, float, float | None, float | None]]] = {}
    for t in search["targets"]:
        for r in t["per_num_steps"]:
            if r["reachable"]:
                lo, hi = r["alpha_ci95"]
                per_k.setdefault(int(r["num_steps"]), []).append((t["tok_s"], r["alpha"], lo, hi))
    ks = sorted(set(per_k) | {int(k) for k in curves if curves[k]["tok_s"]})
    chosen = {int(t["best_num_steps"]) for t in search["targets"] if t.get("best_num_steps")}
    for i in np.linspace(0, len(ks) - 1, max(2, max_curves)).round().astype(int) if ks else []:
        if len(chosen) >= max_curves:
            break
        chosen.add(ks[i])
    shown = sorted(chosen & set(ks))
    colors = _colors(len(shown))
    lowest = 1.0
    for color, k in zip(colors, shown, strict=True):
        curve = curves.get(str(k)) or curves.get(k)
        if curve and curve["alpha"]:
            ax.plot(
                curve["tok_s"], curve["alpha"], "-", color=color, linewidth=1.4, label=f"k = {k}"
            )
            lowest = min(lowest, *curve["alpha"])
        pts = per_k.get(k, [])
        if pts:
            xs = np.array([p[0] for p in pts])
            ys = np.array([p[1] for p in pts])
            lo = np.array([p[2] if p[2] is not None else p[1] for p in pts])
            hi = np.array([p[3] if p[3] is not None else 1.0 for p in pts])
            ax.errorbar(
                xs,
                ys,
                yerr=[ys - lo, hi - ys],
                fmt="o",
                color=color,
                capsize=3,
                markersize=4,
                label=None if curve and curve["alpha"] else f"k = {k}",
            )
            lowest = min(lowest, float(lo.min()))
    for t in search["targets"]:
        ax.axvline(t["tok_s"], color="0.6", linewidth=0.8, linestyle=":")
    ax.set_ylim(max(0.0, lowest - 0.03), 1.01)
    ax.set_xlabel("target throughput (tok/s per request)")
    q = search.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    ax.set_ylabel("required conditional acceptance rate alpha")
    now = search.get("current")
    if now and now.get("alpha") is not None and now.get("closed_form_tok_s"):
        ax.plot(
            [now["closed_form_tok_s"]], [now["alpha"]], marker="*", markersize=14,
            color="#C44E52", markeredgecolor="black", linestyle="none",
            label=f"now: k = {now['num_steps']}, alpha {now['alpha']:.3f}, "
            f"{now['closed_form_tok_s']:.0f} tok/s",
        )  # fmt: skip
        lowest = min(lowest, float(now["alpha"]))
        ax.set_ylim(max(0.0, lowest - 0.03), 1.01)
    _title(fig, ax, title or f"Acceptance rate needed for a target ({what}), per draft length k")
    ax.grid(True, alpha=0.3)
    fig.set_figwidth(fig.get_figwidth() + 1.5)
    fig.legend(
        loc="outside right upper",
        fontsize=8,
        title="lines: closed form\npoints: Monte Carlo\n(95% CI)",
        title_fontsize=7.5,
    )
    _footnote(fig, footnote)
    return fig


# --------------------------------------------------------------------------- distribution


def request_distribution(
    tok_s: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    what: str = "requests",
    targets: Sequence[float] = (),
    mean_ci95: tuple[float, float] | None = None,
    baseline_tok_s: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Histogram of per-request tok/s (any shape; flattened) with the targets marked.

    ``weights`` (same shape as ``tok_s``; default one each): how many requests, or what
    probability, each value stands for: a streamed run's log-histogram bins (middle, count)
    or the exact law's support and probabilities. ``what`` names the y axis and the legend
    entry ("requests", or "share of requests" for probabilities).
    Each target is labelled with the share of requests reaching it. Targets far outside
    the distribution (more than its width away) are listed in a box instead of drawn, so
    the histogram keeps its resolution.
    """
    values = np.asarray(tok_s, dtype=float).ravel()
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float).ravel()
    total = float(w.sum())

    def share_at_least(t: float) -> float:
        return float(w[values >= t].sum()) / total

    fig, ax = _figure()
    vmin, vmax = float(values.min()), float(values.max())
    width = max(vmax - vmin, 1e-9 + 0.05 * abs(vmax))
    lo_x, hi_x = vmin - width, vmax + width
    distinct, where = np.unique(np.round(values, 9), return_inverse=True)
    counts = np.bincount(where.ravel(), weights=w, minlength=distinct.size)
    count = f"{total:.0f} {what}" if what == "requests" else what
    if distinct.size <= 120:
        # tok/s on a lattice (a request of N tokens in n cycles of fixed time takes one of
        # few values): one bar per value, not bins that straddle the lattice (combs)
        step = float(np.diff(distinct).min()) if distinct.size > 1 else max(width, 1.0)
        ax.bar(distinct, counts, width=0.8 * step, color="#4C72B0", alpha=0.85,
               label=f"{count} ({distinct.size} distinct tok/s values, one bar each)")  # fmt: skip
    else:
        n = total if what == "requests" else float(distinct.size)
        bins = min(60, max(10, int(np.sqrt(n))))
        ax.hist(values, bins=bins, weights=w, color="#4C72B0", alpha=0.85, label=count)
    mean = float(w @ values) / total
    ax.axvline(mean, color="#C44E52", linewidth=1.5, label=f"mean {mean:.1f} tok/s")
    if mean_ci95 is not None:
        ax.axvspan(*mean_ci95, color="#C44E52", alpha=0.2, label="95% CI of the mean")
    shown = [t for t in targets if lo_x <= t <= hi_x]
    if baseline_tok_s is not None and lo_x <= baseline_tok_s <= hi_x:
        ax.axvline(
            baseline_tok_s, **BASELINE_STYLE, label=f"no speculation ({baseline_tok_s:.1f} tok/s)"
        )
        shown_x = [*shown, baseline_tok_s]
    else:
        shown_x = list(shown)
    for i, t in enumerate(shown):
        ax.axvline(t, **TARGET_STYLE, label="targets" if i == 0 else None)
        ax.annotate(
            f"{t:g} tok/s\n{share_at_least(t):.0%} reach it",
            xy=(t, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -4),
            textcoords="offset points",
            va="top",
            fontsize=8,
        )
    off = [t for t in targets if t not in shown]
    if off:
        text = "\n".join(f"target {t:g} tok/s: {share_at_least(t):.1%} reach it" for t in off)
        if baseline_tok_s is not None and baseline_tok_s not in shown_x:
            text += f"\nno speculation: {baseline_tok_s:.1f} tok/s"
        ax.text(
            0.98,
            0.97,
            text,
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.6"},
        )
    ax.set_xlim(
        min([vmin - 0.05 * width, *shown_x]) - 0.02 * width,
        max([vmax + 0.05 * width, *shown_x]) + 0.15 * width,
    )
    ax.set_xlabel("per-request throughput (tok/s)")
    ax.set_ylabel(what)
    _title(fig, ax, title or "Per-request throughput distribution")
    ax.grid(True, alpha=0.3, axis="y")
    fig.set_figwidth(fig.get_figwidth() + 2.0)
    fig.legend(loc="outside right upper", fontsize=8)
    _footnote(fig, footnote)
    return fig


# --------------------------------------------------------------------------- cycle breakdown


def cycle_breakdown(
    bars: Sequence[tuple[str, Mapping[str, float]]],
    *,
    baseline_ms: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
    ylabel: str = "configuration",
) -> Figure:
    """Stacked horizontal bars of one cycle's time by phase (ms), one bar per entry.

    ``bars`` holds (label, {draft, verify, extend, overhead}) in ms; ``baseline_ms`` draws
    the plain-decoding step for comparison.
    """
    fig, ax = _figure(8.0, max(2.6, 1.0 + 0.45 * len(bars)))
    labels = [b[0] for b in bars]
    y = np.arange(len(bars))
    left = np.zeros(len(bars))
    for phase, color in zip(PHASES, PHASE_COLORS, strict=True):
        name = PHASE_LABELS[phase]
        widths = np.array([float(b[1].get(phase, 0.0) or 0.0) for b in bars])
        ax.barh(y, widths, left=left, color=color, label=name, height=0.6)
        left += widths
    for yi, total in zip(y, left, strict=True):
        ax.annotate(
            f"{total:.1f} ms",
            xy=(total, yi),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    if baseline_ms is not None:
        ax.axvline(
            baseline_ms, **BASELINE_STYLE, label=f"one plain decode step ({baseline_ms:.1f} ms)"
        )
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, float(left.max()) * 1.15 if len(bars) else 1)
    ax.set_xlabel("time per draft/verify cycle (ms)")
    ax.set_ylabel(ylabel)
    _title(fig, ax, title or "Where a speculative-decoding cycle spends its time")
    ax.grid(True, alpha=0.3, axis="x")
    fig.legend(loc="outside right upper", fontsize=8)
    _footnote(fig, footnote)
    return fig


# --------------------------------------------------------------------------- heatmap


def heatmap(
    rows: Sequence[Row],
    *,
    x: str,
    y: str,
    value: str = "tok_s_mean",
    targets: Sequence[float] = (),
    title: str | None = None,
    subtitle: str | None = None,
    footnote: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """``value`` (mean tok/s by default) over two swept fields, with the target contours.

    ``vmin``/``vmax`` fix the colour scale: panels of one sweep that are compared share it.

    ``subtitle`` names what is held fixed in this panel (the other swept fields).

    Rows sharing an (x, y) cell (other varied fields) are averaged; the caller filters
    rows first when that is not wanted. Axes are categorical in sweep order, so strings
    (interconnect names) work as well as numbers.
    """
    xs = _ordered({fmt_value(r[x]): r[x] for r in rows})
    ys = _ordered({fmt_value(r[y]): r[y] for r in rows})
    grid = np.full((len(ys), len(xs)), np.nan)
    counts = np.zeros_like(grid)
    for r in rows:
        i, j = ys.index(fmt_value(r[y])), xs.index(fmt_value(r[x]))
        v = r.get(value)
        if v is None:
            continue
        grid[i, j] = float(v) if counts[i, j] == 0 else grid[i, j] + float(v)
        counts[i, j] += 1
    grid = np.where(counts > 0, grid / np.maximum(counts, 1), np.nan)
    fig, ax = _figure(8.0, 5.5)
    mesh = ax.imshow(
        grid, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest",
        vmin=vmin, vmax=vmax,
    )  # fmt: skip
    cbar = fig.colorbar(mesh, ax=ax)
    cbar.set_label("mean throughput (tok/s)" if value == "tok_s_mean" else value)
    finite = grid[np.isfinite(grid)]
    levels = [t for t in sorted(targets) if finite.size and finite.min() < t < finite.max()]
    if levels and min(grid.shape) >= 2:
        cs = ax.contour(
            np.arange(len(xs)),
            np.arange(len(ys)),
            grid,
            levels=levels,
            colors="white",
            linewidths=1.5,
            linestyles="--",
        )
        ax.clabel(cs, fmt=lambda v: f"{v:g} tok/s", fontsize=8)
    if grid.size <= 120:
        shade = np.asarray(mesh.norm(grid))  # each cell's place on the colour scale
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if np.isfinite(grid[i, j]):
                    ax.text(
                        j,
                        i,
                        f"{grid[i, j]:.0f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if shade[i, j] < 0.5 else "black",
                    )
    ax.set_xticks(range(len(xs)), xs, rotation=45 if len(xs) > 8 else 0, fontsize=8)
    ax.set_yticks(range(len(ys)), ys, fontsize=8)
    ax.set_xlabel(field_label(x))
    ax.set_ylabel(field_label(y))
    missing = [t for t in targets if t not in levels]
    second = [subtitle] if subtitle else []
    if levels:
        second.append("dashed: target contours")
    if missing:
        second.append(f"targets outside the range: {', '.join(f'{t:g}' for t in missing)} tok/s")
    head = title or f"Mean tok/s by {field_label(x)} and {field_label(y)}"
    sub = textwrap.fill("; ".join(second), width=int(fig.get_figwidth() * 11))
    _title(fig, ax, head + ("\n" + sub if second else ""), fontsize=10)
    _footnote(fig, footnote)
    return fig


def _ordered(by_label: Mapping[str, Any]) -> list[str]:
    """Labels sorted numerically when every value is a number, else in first-seen order."""
    values = list(by_label.values())
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return [lab for lab, _ in sorted(by_label.items(), key=lambda kv: kv[1])]
    return list(by_label)


# --------------------------------------------------------------------------- more builders


def throughput_bars(
    labels: Sequence[str],
    means: Sequence[float],
    ci95: Sequence[tuple[float, float]],
    *,
    baselines: Sequence[float] | None = None,
    targets: Sequence[float] = (),
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Mean tok/s per scenario with 95% CI error bars, plain decoding beside it."""
    fig, ax = _figure(8.0, max(3.0, 1.2 + 0.55 * len(labels)))
    y = np.arange(len(labels))
    m = np.asarray(means, dtype=float)
    lo = np.array([c[0] for c in ci95])
    hi = np.array([c[1] for c in ci95])
    h = 0.38 if baselines is not None else 0.6
    ax.barh(
        y - (h / 2 if baselines is not None else 0),
        m,
        height=h,
        color="#4C72B0",
        xerr=[m - lo, hi - m],
        capsize=3,
        label="speculative (mean, 95% CI)",
    )
    if baselines is not None:
        ax.barh(y + h / 2, baselines, height=h, color="0.7", label="no speculation")
    for yi, v in zip(y, m, strict=True):
        ax.annotate(
            f"{v:.1f}",
            xy=(v, yi - (h / 2 if baselines is not None else 0)),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    _targets(ax, targets, vertical=True)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("mean per-request throughput (tok/s)")
    ax.set_ylabel("scenario")
    _title(fig, ax, title or "Throughput by scenario")
    ax.grid(True, alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    _footnote(fig, footnote)
    return fig


def lever_curve(
    doc: Mapping[str, Any], *, title: str | None = None, footnote: str | None = None
) -> Figure:
    """``specsim search --solve FIELD`` output: simulated tok/s at every evaluated value."""
    rows = [{**p, "num_steps": 0, doc["field"]: p["value"]} for p in doc.get("points", [])]
    fig, ax = _figure()
    pts = sorted(rows, key=lambda r: r["value"])
    xs = np.array([p["value"] for p in pts])
    ax.plot(
        xs,
        [p["tok_s_mean"] for p in pts],
        "o-",
        color="#4C72B0",
        markersize=3,
        label="Monte Carlo mean",
    )
    ax.fill_between(
        xs,
        [p["tok_s_ci95_lo"] for p in pts],
        [p["tok_s_ci95_hi"] for p in pts],
        color="#4C72B0",
        alpha=0.25,
        linewidth=0,
        label="95% CI of the mean",
    )
    ax.axvline(doc["current"], **BASELINE_STYLE, label=f"current value {doc['current']:g}")
    for t in doc["targets"]:
        if t["value"] is not None:
            ax.plot([t["value"]], [t["tok_s"]], "D", color="#C44E52", markersize=6)
            ax.annotate(
                f"{t['value']:.3g}",
                xy=(t["value"], t["tok_s"]),
                xytext=(5, -12),
                textcoords="offset points",
                fontsize=8,
                color="#C44E52",
            )
    _targets(ax, [t["tok_s"] for t in doc["targets"]])
    if xs.size and xs.min() > 0 and xs.max() / xs.min() > 50:
        log_x_axis(ax)
    ax.set_xlabel(field_label(doc["field"]))
    ax.set_ylabel("mean per-request throughput (tok/s)")
    _title(fig, ax, title or f"Throughput against {field_label(doc['field'])}; diamonds: solutions")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    _footnote(fig, footnote)
    return fig
