"""Text report of ``specsim search --topk``: chain or tree, from its JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sim.report.format import count, fmt_alpha
from sim.report.screen import fit_width
from sim.report.uncertainty import fmt_interval
from sim.uncertainty.interval import INTERVAL_LABEL


def _a(x: float | None) -> str:
    return fmt_alpha(x, missing="-")


def _cfg(row: Mapping[str, Any]) -> str:
    if row["topk"] == 1:
        return f"chain k={row['num_steps']}"
    return f"tree {row['num_steps']}/{row['topk']}/{row['num_draft_tokens']}"


def per_depth(counts: list[int]) -> str:
    """Drafts per depth, runs collapsed: [4, 8, 8, 1, 1] -> '4, 8 x2, 1 x2'."""
    out: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        out.append(f"{counts[i]}" if j - i == 1 else f"{counts[i]} x{j - i}")
        i = j
    return ", ".join(out)


def _refined(label: str, row: Mapping[str, Any] | None) -> list[str]:
    if row is None:
        return [f"  {label}: out of reach in the searched range"]
    lo, hi = row["top1_ci95"]
    mc = ""
    if row["evaluations"] and row["top1_monte_carlo"] is None:
        mc = f"; Monte Carlo: out of reach ({count(row['evaluations'], 'run')})"
    elif row["evaluations"]:
        mc = (
            f"; Monte Carlo {_a(row['top1_monte_carlo'])} (95% CI [{_a(lo)}, {_a(hi)}], "
            f"{count(row['evaluations'], 'run')})"
        )
    out = [
        f"  {label}: {_cfg(row)}: top-1 {_a(row['top1'])} (closed form){mc}",
        f"    cycle {row['cycle_ms']:.2f} ms, accept length needed "
        f"{row['required_accept_length']:.2f}, drafts per depth "
        + per_depth(row["drafts_per_depth"]),
    ]
    if row.get("top1_interval90"):
        share = row.get("top1_unreachable_share") or 0.0
        beyond = f", out of reach in {share:.0%} of draws" if share > 0 else ""
        out.append(f"    {INTERVAL_LABEL}: top-1 {fmt_interval(row['top1_interval90'])}{beyond}")
    if row["topk"] > 1:
        out.append(
            f"    the best tree of the same budget, depth and width needs top-1 "
            f"{_a(row['optimal_tree_top1'])}"
        )
    return out


def render_tree_search(doc: Mapping[str, Any], verbose: bool = True) -> str:
    """The text report of ``specsim search --topk`` (from ``TreeSearchResult.to_dict()``);
    not ``verbose``: the notes on method in a line, every line within ``WIDTH``."""
    lines = [
        f"search: {doc['scenario']}: chain or tree? lowest top-1 rate for mean tok/s >= target",
        f"  lever: {doc['lever']}",
        f"  rank shape: {doc['rank_shape']}; residual shares "
        + ", ".join(f"{h:.3f}" for h in doc["residual_shares"]),
    ]
    if verbose:
        lines += [f"  note: {n}" for n in doc["notes"]]
    elif doc["notes"]:
        lines.append(
            "  (--verbose: how the table, the best tree and chain and the 90% interval are made)"
        )
    for t in doc["targets"]:
        lines += ["", f"target {t['tok_s']:g} tok/s"]
        lines += _refined("best tree ", t["best_tree"])
        lines += _refined("best chain", t["best_chain"])
        tree, chain = t["best_tree"], t["best_chain"]
        if tree and chain and tree["top1"] is not None and chain["top1"] is not None:
            gain = chain["top1"] - tree["top1"]
            if gain > 5e-4:
                verdict = f"the tree: it needs a top-1 rate {gain:.4f} lower than the chain"
            elif gain >= 0:
                verdict = f"either: the tree needs a top-1 rate only {gain:.4f} lower"
            else:
                verdict = f"the chain: the best tree needs a top-1 rate {-gain:.4f} higher"
            lines.append(f"  answer: {verdict}")
        per_topk = ", ".join(
            f"topk {r['topk']}: {_cfg(r)} {_a(r['top1'])}" for r in t["best_per_topk"]
        )
        lines.append(
            "  best per topk (closed form): "
            + (per_topk or "none reaches the target at any searched configuration")
        )
    return "\n".join(lines if verbose else fit_width(lines))
