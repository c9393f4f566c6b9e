"""Figures of the serving decision documents (crossover, best_k, capacity, controllers).

Builders only: documents in, matplotlib Figures out (sim/report/plots.py conventions:
titles that fit, axis labels with units, legends in words, a footnote with the setting).
Every draft length has one colour in every figure (``k_color``: the same discrete scale
everywhere, plain decoding always grey and dotted), panels that are compared share their
axes, and heatmaps share one colour scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from sim.report.crossover import lengths_text
from sim.report.figure_style import BASELINE_STYLE, add_footnote
from sim.report.format import count
from sim.report.plain_text import log_x_axis, plain_text

__all__ = [
    "best_k_figures",
    "capacity_figures",
    "controllers_figures",
    "crossover_figures",
    "k_color",
]

#: One colour per draft length 1, 2, ... (matplotlib's tab10 without its grey; larger k
#: reuse the last colour); plain decoding is grey.
K_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
BASE_COLOR = "0.45"


def k_color(k: int) -> Any:
    """The colour of draft length k in every figure (plain decoding: grey)."""
    if k == 0:
        return BASE_COLOR
    return K_COLORS[min(k, len(K_COLORS)) - 1]


def _k_label(k: int) -> str:
    return "no speculation" if k == 0 else f"speculation, k = {k}"


def _load_axis(ax: Axes, kind: str) -> None:
    if kind == "concurrency":
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("concurrent users (closed loop)")
    else:
        log_x_axis(ax)
        ax.set_xlabel("arrival rate (requests/s, Poisson)")
    ax.grid(True, alpha=0.3, which="both")


def _band(ax: Axes, xs: Sequence[float], rs: Sequence[Mapping[str, Any]], **style: Any) -> None:
    """A line of means with its 95% band (points without a mean are skipped)."""
    pts = [(x, r) for x, r in zip(xs, rs, strict=True) if r["mean"] is not None]
    if not pts:
        return
    x = np.array([p[0] for p in pts])
    y = np.array([p[1]["mean"] for p in pts])
    ax.plot(x, y, marker="o", markersize=3, **style)
    ci = [p[1]["ci95"] for p in pts]
    if all(c is not None and None not in c for c in ci):
        lo = np.array([c[0] for c in ci])
        hi = np.array([c[1] for c in ci])
        ax.fill_between(x, lo, hi, color=style.get("color"), alpha=0.18, linewidth=0)


def _footnote_text(doc: Mapping[str, Any], extra: str = "") -> str:
    return (
        f"{doc['scenario']}: {count(doc.get('replications'), 'replication')} x "
        f"{count(doc.get('requests'), 'request')}, seed {doc.get('seed')}; {lengths_text(doc)}; "
        "the same arrivals for every "
        "policy; bands: 95% intervals over replications" + (f"; {extra}" if extra else "")
    )


def _crossing_note(c: Mapping[str, Any], unit: str) -> str:
    if unit == "users":  # a whole number: the fewest users past the crossing
        return f"{c['direction']} from {c['bracket'][1]:.0f} users"
    return f"{c['direction']} at {c['at']:.3g} {unit}"


# --------------------------------------------------------------------------- crossover


def _throughput_figure(doc: Mapping[str, Any]) -> Figure:
    kind = doc["load_kind"]
    unit = "users" if kind == "concurrency" else "req/s"
    metrics = [m for m in ("per_user_tok_s", "aggregate_tok_s") if m in doc["metrics"]]
    fig = Figure(figsize=(6.0 * len(metrics), 5.0), dpi=110, layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        curves = [c for c in doc["curves"] if c["metric"] == metric]
        first = curves[0]
        xs = [p["load"] for p in first["points"]]
        _band(
            ax,
            xs,
            [p["baseline"] for p in first["points"]],
            label=_k_label(0),
            **{**BASELINE_STYLE, "color": BASE_COLOR},
        )
        for c in curves:
            k = c["num_steps"]
            pts = c["points"]
            _band(
                ax,
                [p["load"] for p in pts],
                [p["speculative"] for p in pts],
                color=k_color(k),
                label=_k_label(k),
            )
            for x in c["crossings"]:
                ax.axvline(x["at"], color=k_color(k), linestyle="--", linewidth=1.0)
                ax.annotate(
                    f"k = {k} {_crossing_note(x, unit)}",
                    (x["at"], 0.02),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    fontsize=7.5,
                    color=k_color(k),
                    va="bottom",
                    ha="right",
                )
        _load_axis(ax, kind)
        ax.set_ylabel(f"{doc['metrics'][metric]['label']} (tok/s)")
        ax.set_title(doc["metrics"][metric]["label"].capitalize(), fontsize=11)
        ax.legend(fontsize=8)
    fig.suptitle("Throughput with and without speculation as load grows", fontsize=12)
    add_footnote(fig, _footnote_text(doc, "dashed verticals: where a k's gain crosses 1"))
    return fig


def _gain_figure(doc: Mapping[str, Any]) -> Figure:
    kind = doc["load_kind"]
    unit = "users" if kind == "concurrency" else "req/s"
    metrics = list(doc["metrics"])
    cols = 2 if len(metrics) > 1 else 1
    rows = (len(metrics) + cols - 1) // cols
    fig = Figure(figsize=(6.0 * cols, 4.2 * rows), dpi=110, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True).ravel()
    for ax, metric in zip(axes, metrics, strict=False):
        for c in (c for c in doc["curves"] if c["metric"] == metric):
            k = c["num_steps"]
            pts = c["points"]
            _band(
                ax,
                [p["load"] for p in pts],
                [p["gain"] for p in pts],
                color=k_color(k),
                label=_k_label(k),
            )
            for x in c["crossings"]:
                ax.plot([x["at"]], [1.0], marker="X", markersize=9, color=k_color(k))
                lo, hi = x["ci95"]
                if lo is not None and hi is not None:
                    ax.plot([lo, hi], [1.0, 1.0], color=k_color(k), linewidth=4, alpha=0.5)
        ax.axhline(1.0, color="black", linewidth=1.0)
        _load_axis(ax, kind)
        meta = doc["metrics"][metric]
        ax.set_title(meta["label"].capitalize(), fontsize=10)
        ax.set_ylabel("gain over no speculation (x)")
        ax.legend(fontsize=7.5)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(
        f"Speculation's gain by load (> 1 pays; X: crossing, bar: its 95% interval, {unit})",
        fontsize=11,
    )
    add_footnote(fig, _footnote_text(doc, "latency gains are baseline / speculative"))
    return fig


def _cdf_figure(doc: Mapping[str, Any]) -> Figure | None:
    dists = doc.get("distributions") or []
    if not dists:
        return None
    picks = [dists[0], dists[len(dists) // 2], dists[-1]] if len(dists) > 2 else dists
    picks = list({d["load"]: d for d in picks}.values())
    levels = np.array(doc["distribution_levels"])
    names = (("ttft_ms", "time to first token (ms)"), ("tpot_ms", "time per output token (ms)"))
    fig = Figure(figsize=(4.6 * len(picks), 7.5), dpi=110, layout="constrained")
    axes = fig.subplots(2, len(picks), squeeze=False, sharey=True)

    def where(x: float) -> str:
        if doc["load_kind"] != "concurrency":
            return f"at {x:g} requests/s"
        return f"at {x:g} user{'s' if x != 1 else ''}"

    for row, (metric, label) in enumerate(names):
        for col, d in enumerate(picks):
            ax = axes[row][col]
            for k_text, q in sorted(d["by_num_steps"].items(), key=lambda kv: int(kv[0])):
                values = q.get(metric) or []
                if not values:
                    continue
                k = int(k_text)
                dash = BASELINE_STYLE["linestyle"] if k == 0 else "-"
                ax.plot(
                    values,
                    levels,
                    label=_k_label(k),
                    color=k_color(k),
                    linewidth=1.8,
                    linestyle=dash,
                )
            ax.set_xlabel(label)
            ax.set_title(where(d["load"]), fontsize=10)
            ax.grid(True, alpha=0.3)
            if col == 0:
                ax.set_ylabel("share of requests at or below")
        axes[row][0].legend(fontsize=7.5, loc="lower right")
        xmax = max((ax.get_xlim()[1] for ax in axes[row]), default=1.0)
        for ax in axes[row]:
            ax.set_xlim(0, xmax)
    fig.suptitle("Latency distributions with and without speculation", fontsize=12)
    add_footnote(fig, _footnote_text(doc, "pooled requests of every replication"))
    return fig


@plain_text
def crossover_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    out = [("crossover-gain", _gain_figure(doc))]
    if any(m in doc["metrics"] for m in ("per_user_tok_s", "aggregate_tok_s")):
        out.insert(0, ("crossover-throughput", _throughput_figure(doc)))
    cdf = _cdf_figure(doc)
    if cdf is not None:
        out.append(("latency-cdf", cdf))
    return out


# --------------------------------------------------------------------------- best k


@plain_text
def best_k_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    ks = doc["num_steps"]
    sel = doc["selection"]
    users = [c["users"] for c in sel]
    rel = np.full((len(ks), len(users)), np.nan)
    for j, c in enumerate(sel):
        best = c["objective"][str(c["best_num_steps"])]["mean"]
        for i, k in enumerate(ks):
            v = c["objective"][str(k)]["mean"]
            if v is not None and best:
                rel[i, j] = v / best
    fig = Figure(
        figsize=(1.1 * len(users) + 3.5, 0.6 * len(ks) + 3.0), dpi=110, layout="constrained"
    )
    ax = fig.add_subplot()
    im = ax.imshow(rel, origin="lower", aspect="auto", cmap="magma", vmin=0.5, vmax=1.0)
    for j, c in enumerate(sel):
        i = ks.index(c["best_num_steps"])
        ax.plot(j - 0.36, i, marker="*", markersize=13, color="white", markeredgecolor="black")
        for i2 in range(len(ks)):
            if not np.isnan(rel[i2, j]):
                ax.text(
                    j,
                    i2,
                    f"{rel[i2, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if rel[i2, j] > 0.8 else "white",
                )
    ax.set_xticks(range(len(users)), [str(u) for u in users])
    ax.set_yticks(range(len(ks)), ["off" if k == 0 else str(k) for k in ks])
    ax.set_xlabel("concurrent users = decode batch size (closed loop)")
    ax.set_ylabel("draft length k")
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label("share of the best k's objective at this load")
    table = ", ".join(f"{a}-{b}: {k}" for a, b, k in doc["vllm_table"])
    ax.set_title(
        f"Best k by batch size (star): {doc['objective_label']}; table {table}",
        fontsize=10,
        wrap=True,
    )
    add_footnote(fig, _footnote_text(doc))
    out = [("best-k-map", fig)]
    check = doc["check"]
    fig2 = Figure(figsize=(8.0, 5.0), dpi=110, layout="constrained")
    ax2 = fig2.add_subplot()
    xs = check["users"]
    for k_text, rs in check["fixed"].items():
        k = int(k_text)
        style = {**BASELINE_STYLE, "color": BASE_COLOR} if k == 0 else {"color": k_color(k)}
        _band(ax2, xs, rs, label=_k_label(k), **style)
    for name, pol in check["policies"].items():
        style = (
            {"color": "black", "linewidth": 2.5}
            if name == "table"
            else {"color": "#C44E52", "linewidth": 2.0, "linestyle": "--"}
        )
        label = "the best-k table" if name == "table" else "the disable threshold"
        _band(ax2, xs, [p["objective"] for p in pol["points"]], label=label, **style)
    _load_axis(ax2, "concurrency")
    unit = f" ({doc['objective_unit']})" if doc["objective_unit"] else ""
    ax2.set_ylabel(f"{doc['objective_label']}{unit}")
    ax2.set_title("The table against every fixed k, at another seed", fontsize=11)
    ax2.legend(fontsize=8)
    add_footnote(fig2, _footnote_text(doc, f"check seed {check['seed']}"))
    out.append(("best-k-check", fig2))
    return out


# --------------------------------------------------------------------------- capacity


@plain_text
def capacity_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    fig = Figure(figsize=(8.0, 5.0), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    for p in doc["policies"]:
        k = p["num_steps"]
        style = {**BASELINE_STYLE, "color": BASE_COLOR} if k == 0 else {"color": k_color(k)}
        curve = p["curve"]
        _band(
            ax,
            [c["rate_per_s"] for c in curve],
            [c["attainment"] for c in curve],
            label=_k_label(k),
            **style,
        )
        if p["rate_per_s"] is not None:
            ax.axvline(p["rate_per_s"], color=style["color"], linestyle="--", linewidth=1.0)
    ax.axhline(
        doc["share"], color="black", linewidth=1.0, label=f"required share {doc['share']:.0%}"
    )
    log_x_axis(ax)
    ax.set_xlabel("arrival rate (requests/s, Poisson)")
    ax.set_ylabel("share of requests meeting the SLO")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3, which="both")
    slo = doc.get("slo") or {}
    limits = " and ".join(
        f"{name.split('_')[0].upper()} <= {v:g} ms" for name, v in slo.items() if v is not None
    )
    ax.set_title(f"SLO attainment against load ({limits}); dashed: capacity", fontsize=10)
    ax.legend(fontsize=8)
    add_footnote(fig, _footnote_text(doc))
    return [("slo-attainment", fig)]


# --------------------------------------------------------------------------- controllers


@plain_text
def controllers_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    ref = doc["reference"]
    names = [n for n in doc["policies"] if n != ref]
    metrics = [m for m in ("per_user_tok_s", "tpot_p99_ms") if m in doc["metrics"]]
    phases = doc["phases"]
    fig = Figure(
        figsize=(max(8.0, 1.6 * len(phases) * len(metrics)), 5.5), dpi=110, layout="constrained"
    )
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    palette = colormaps["tab10"]
    width = 0.8 / max(1, len(names))
    for ax, metric in zip(axes, metrics, strict=True):
        for i, name in enumerate(names):
            adv = doc["policies"][name]["advantage_over_reference"][metric]
            means = np.array([a["mean"] for a in adv], dtype=float)
            err = np.array(
                [
                    [m - a["ci95"][0], a["ci95"][1] - m] if a["ci95"] else [0, 0]
                    for m, a in zip(means, adv, strict=True)
                ]
            ).T
            x = np.arange(len(phases)) + (i - (len(names) - 1) / 2) * width
            ax.bar(x, means, width, yerr=err, label=name, color=palette(i % 10), capsize=2)
        ax.axhline(0.0, color="black", linewidth=1.0)
        ax.set_xticks(range(len(phases)), [f"phase {i + 1}" for i in range(len(phases))])
        meta = doc["metrics"][metric]
        ax.set_ylabel(f"better than the {ref} by ({meta['unit']})")
        ax.set_title(meta["label"].capitalize(), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7.5)
    fig.suptitle(f"Adaptive controllers and fixed k against the static {ref}", fontsize=12)
    labels = "; ".join(f"phase {i + 1}: {p['label']}" for i, p in enumerate(phases))
    add_footnote(
        fig,
        f"{doc['scenario']}: {count(doc['replications'], 'replication')}, seed {doc['seed']}; "
        f"{labels}",
    )
    return [("controllers-phases", fig)]
