"""Figures of a ``serve`` document: per-user throughput and latency distributions, speculation
on and off, and where the decode batch sizes spent their time. Builders only: documents in,
matplotlib Figures out (sim/report/plots.py conventions: titles, labels with units, legends
in words, a footnote with the setting)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from sim.report.figure_style import BASELINE_STYLE, TARGET_STYLE, add_footnote, new_figure
from sim.report.format import count
from sim.report.plain_text import plain_text

__all__ = ["serve_figures"]

SPECULATIVE_STYLE = {"color": "#C44E52", "linewidth": 2.0}
LABELS = {
    "per_user_tok_s": "per-user throughput (tok/s)",
    "ttft_ms": "time to first token (ms)",
    "tpot_ms": "time per output token (ms)",
    "e2e_ms": "end-to-end latency (ms)",
}


def _footnote_text(doc: Mapping[str, Any]) -> str:
    return (
        f"{doc['scenario']}: {doc['load']}; {count(doc['replications'], 'replication')} x "
        f"{count(doc['requests'], 'request')}, seed {doc['seed']}; "
        "the same arrivals with and without speculation"
    )


def _series(doc: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    if "speculative" in doc:
        out.append(
            ("speculative", f"speculation ({doc['policies']['speculative']})", SPECULATIVE_STYLE)
        )
    out.append(("baseline", "no speculation", {**BASELINE_STYLE, "linewidth": 2.0}))
    return out


def _cdf(ax: Any, doc: Mapping[str, Any], metric: str) -> None:
    levels = np.linspace(0.0, 1.0, 101)
    for name, label, style in _series(doc):
        q = doc[name]["distributions"][metric]
        if q:
            ax.plot(q, levels, label=label, **style)
    ax.set_xlabel(LABELS[metric])
    ax.set_ylabel("share of requests at or below")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)


def per_user_figure(doc: Mapping[str, Any]) -> Figure:
    fig, ax = new_figure()
    _cdf(ax, doc, "per_user_tok_s")
    for i, t in enumerate(doc.get("slo", {}).get("tok_s", [])):
        ax.axvline(t, **TARGET_STYLE, label="targets" if i == 0 else None)
    ax.set_ylabel("share of requests at or below")
    ax.set_title("Per-user decoding speed, with and without speculation")
    ax.legend(loc="lower right", fontsize=8)
    add_footnote(fig, _footnote_text(doc))
    return fig


def latency_figure(doc: Mapping[str, Any]) -> Figure:
    fig = Figure(figsize=(11.0, 4.8), dpi=110, layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, metric in zip(axes, ("ttft_ms", "tpot_ms"), strict=True):
        _cdf(ax, doc, metric)
        limit = doc.get("slo", {}).get(metric)
        if limit:
            ax.axvline(limit, **TARGET_STYLE, label="SLO")
    axes[0].set_title("Time to first token")
    axes[1].set_title("Time per output token")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle("Latency distributions, with and without speculation")
    add_footnote(fig, _footnote_text(doc))
    return fig


def batch_figure(doc: Mapping[str, Any]) -> Figure:
    fig, ax = new_figure()
    for name, label, style in _series(doc):
        share = np.asarray(doc[name]["decode_batch_time_share"])
        sizes = np.flatnonzero(share > 0)
        if sizes.size:
            lo, hi = int(sizes.min()), int(sizes.max())
            x = np.arange(lo, hi + 1)
            ax.step(x, share[lo : hi + 1], where="mid", label=label, **style)
    ax.set_xlabel("requests decoding in the iteration")
    ax.set_ylabel("share of decode time")
    ax.set_title("Where the decode time went, by batch size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    add_footnote(fig, _footnote_text(doc))
    return fig


@plain_text
def serve_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """(file stem, Figure) pairs of a ``serve`` document."""
    return [
        ("serve-per-user-tok-s", per_user_figure(doc)),
        ("serve-latency", latency_figure(doc)),
        ("serve-batch-sizes", batch_figure(doc)),
    ]


@plain_text
def serving_sweep_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """A serving sweep: per-user and aggregate tok/s against the swept load (the first
    numeric ``serving.*`` field), speculation against no speculation, 95% bands; other
    swept fields (e.g. ``speculation.num_steps``) as one speculative curve each."""
    rows = doc["rows"]
    varied = list(doc.get("varied", []))
    load = next((f for f in varied if f.startswith("serving.")), None)
    if not rows or load is None or not all(isinstance(r.get(load), int | float) for r in rows):
        return []
    others = [f for f in varied if f != load]
    fig = Figure(figsize=(11.0, 4.8), dpi=110, layout="constrained")
    axes = fig.subplots(1, 2)
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(f) for f in others), []).append(r)
    colors = ["#C44E52", "#4C72B0", "#55A868", "#8172B2", "#CCB974", "#64B5CD"]
    for ax, metric, title in (
        (axes[0], "per_user_tok_s", "Per-user decoding speed"),
        (axes[1], "aggregate_tok_s", "Aggregate output throughput"),
    ):
        drawn_baseline = False
        for i, (combo, sel) in enumerate(groups.items()):
            # points above a service bound were not simulated (sim/studies/sweep.py)
            sel = sorted((r for r in sel if r.get("stable") is not False), key=lambda r: r[load])
            x = [r[load] for r in sel]
            label = ", ".join(
                f"{f.rsplit('.', 1)[-1]} {v}" for f, v in zip(others, combo, strict=True)
            )
            for name, style, text in (
                (
                    "speculative",
                    {"color": colors[i % len(colors)], "linewidth": 2.0},
                    "speculation",
                ),
                ("baseline", {**BASELINE_STYLE, "linewidth": 2.0}, "no speculation"),
            ):
                key = f"{name}_{metric}_mean"
                if not all(r.get(key) is not None for r in sel):
                    continue
                if name == "baseline" and drawn_baseline:
                    continue
                y = [r[key] for r in sel]
                ax.plot(
                    x,
                    y,
                    marker="o",
                    label=text + (f" ({label})" if label and name != "baseline" else ""),
                    **style,
                )
                lo = [r.get(f"{name}_{metric}_ci95_lo") for r in sel]
                hi = [r.get(f"{name}_{metric}_ci95_hi") for r in sel]
                if all(v is not None for v in lo + hi):
                    ax.fill_between(x, lo, hi, color=style["color"], alpha=0.15)
                drawn_baseline |= name == "baseline"
        ax.set_xlabel(
            load.split(".", 1)[1]
            .replace("_", " ")
            .replace("rate per s", "arrival rate (requests/s)")
        )
        ax.set_ylabel("tok/s")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle("Speculation under load")
    add_footnote(
        fig,
        f"{doc.get('scenario', '')}: {count(doc.get('replications'), 'replication')} x "
        f"{count(doc.get('requests'), 'request')} per point, seed {doc.get('seed')}; the same "
        "arrivals "
        "with and without speculation; bands: 95% CI of the mean",
    )
    return [("serving-throughput", fig)]
