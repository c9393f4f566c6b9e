"""The Monte Carlo part of ``specsim run``: JSON keys merged into the closed-form document,
and a text block (percentile table, histogram, target probabilities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sim.model.cycle import PHASES
from sim.report.format import count
from sim.report.screen import wrap
from sim.simulation.results import MonteCarloResult
from sim.simulation.summary import Summary

if TYPE_CHECKING:
    from sim.model.renewal import RequestLaw


def merge_montecarlo(analytic_doc: dict[str, Any], summary: Summary) -> dict[str, Any]:
    """``specsim run --json``: the closed-form document with the Monte Carlo keys.

    ``throughput_tok_s``, ``accept_length`` and ``cycle_ms`` become the simulated ones
    (the closed forms stay under ``analytic``); each target gains ``p_at_least`` and
    ``p_at_least_ci95``; ``engine``, ``seed``, ``replications``, ``requests`` (and
    ``classes`` for a workload mix) are added.
    """
    mc = summary.to_dict()
    doc = dict(analytic_doc)
    for key in ("method", "engine", "fidelity", "seed", "replications", "requests"):
        doc[key] = mc[key]
    doc["throughput_tok_s"] = mc["throughput_tok_s"]
    doc["accept_length"] = mc["accept_length"]
    doc["cycle_ms"] = mc["cycle_ms"]
    by_target = {t["tok_s"]: t for t in mc["targets"]}
    targets = []
    for t in doc.get("targets", []):
        sim_t = by_target.get(float(t["tok_s"]), {})
        targets.append(
            {
                **t,
                "p_at_least": sim_t.get("p_at_least"),
                "p_at_least_ci95": sim_t.get("p_at_least_ci95"),
            }
        )
    doc["targets"] = targets
    if mc["classes"]:
        doc["classes"] = mc["classes"]
    return doc


def text_histogram(
    values: np.ndarray,
    bins: int = 10,
    width: int = 30,
    weights: np.ndarray | None = None,
    counts: bool = False,
) -> list[str]:
    """Lines of a horizontal histogram of ``values`` (1-D) between their 0.5% and 99.5%
    quantiles; values outside are counted in the first and last bars. With ``weights``
    (probabilities of an exact law, or counts when ``counts``, same shape) bars show them."""
    if weights is None:
        lo, hi = np.percentile(values, [0.5, 99.5])
    else:
        order = np.argsort(values)
        cum = np.cumsum(weights[order])
        lo, hi = (float(values[order][np.searchsorted(cum, q * cum[-1])]) for q in (0.005, 0.995))
    total = values.size if weights is None else float(np.sum(weights))
    label = (lambda c: f"{c:.0f}") if weights is None or counts else (lambda c: f"{c:.3f}")
    if hi <= lo:
        return [f"  {lo:8.1f}          | {'#' * width} {label(total)}"]
    edges = np.linspace(lo, hi, bins + 1)
    heights = np.histogram(np.clip(values, lo, hi), bins=edges, weights=weights)[0]
    top = heights.max()
    lines = []
    for i, c in enumerate(heights):
        bar = "#" * (round(width * c / top) if top else 0)
        lines.append(f"  {edges[i]:8.1f} - {edges[i + 1]:8.1f} | {bar:<{width}} {label(c)}")
    return lines


def compact_lines(s: Summary, head: str) -> list[str]:
    """The first screen's sample block: mean with its interval, percentiles, the classes
    and P(tok/s >= target) for every target in a line (the accept length against theory:
    ``--verbose``)."""
    lo, hi = s.tok_s_ci95
    exact = s.method == "exact"
    spread = "exact" if exact else f"95% CI {lo:.2f} - {hi:.2f}"
    lines = [
        "",
        *wrap(head, indent="", more="  "),
        f"  per-request tok/s   mean {s.tok_s_mean:.2f} ({spread}); p5 {s.tok_s_p5:.1f}, "
        f"p50 {s.tok_s_p50:.1f}, p95 {s.tok_s_p95:.1f}",
        *_class_lines(s),
    ]
    if s.targets:
        each = "; ".join(
            f"{t.tok_s:g}: {t.p_at_least:.3f}"
            + ("" if exact else f" [{t.ci95[0]:.3f}, {t.ci95[1]:.3f}]")
            for t in s.targets
        )
        label = "  P(tok/s >= target)" + (" (exact)" if exact else "")  # [95% CI]
        lines += wrap(each, indent=label.ljust(22), more=" " * 22)
    return lines


def render_montecarlo(summary: Summary, result: MonteCarloResult, verbose: bool = True) -> str:
    """The Monte Carlo block printed under the closed-form summary (``verbose``: with the
    pmf of L, the cycle and a histogram)."""
    s = summary
    head = (
        f"Monte Carlo ({s.engine} engine, {s.fidelity} fidelity, "
        f"{count(s.replications, 'replication')} x {count(s.requests, 'request')} of "
        f"{count(result.output_tokens, 'token')}, seed {s.seed})"
    )
    if not verbose:
        fidelity = "" if s.fidelity == "cycle" else f"{s.fidelity} fidelity, "
        head = (
            f"Monte Carlo ({s.engine} engine, {fidelity}{count(s.replications, 'replication')}"
            f" x {count(s.requests, 'request')} of {count(result.output_tokens, 'token')}, "
            f"seed {s.seed}" + ("; streamed)" if result.stream is not None else ")")
        )
        return "\n".join(compact_lines(s, head))
    stream = result.stream
    if stream is None:  # every request's tok/s kept
        assert result.tok_s is not None
        return "\n".join(_summary_lines(s, head) + text_histogram(result.tok_s.ravel()))
    values, counts = stream.histogram.nonzero()
    head += "; streamed: percentiles and histogram within 1e-4 relative"
    bars = text_histogram(values, weights=counts.astype(float), counts=True)
    return "\n".join(_summary_lines(s, head) + bars)


def render_exact(summary: Summary, law: RequestLaw, verbose: bool = True) -> str:
    """The exact-law block printed under the closed-form summary (``run --method exact``)."""
    head = (
        f"Exact per-request law ({summary.fidelity} fidelity, requests of "
        f"{count(law.tokens, 'token')}; "
        "finite-N renewal law of the cycle count, no Monte Carlo)"
    )
    if not verbose:
        fidelity = "" if summary.fidelity == "cycle" else f"{summary.fidelity} fidelity, "
        head = (
            f"Exact per-request law ({fidelity}requests of {count(law.tokens, 'token')}; "
            "finite-N renewal law, no Monte Carlo)"
        )
        return "\n".join(compact_lines(summary, head))
    lines = _summary_lines(summary, head)
    return "\n".join(lines + text_histogram(law.tok_s_values(), weights=law.probs))


def _summary_lines(s: Summary, head: str) -> list[str]:
    lo, hi = s.tok_s_ci95
    spread = "exact" if s.method == "exact" else f"Monte Carlo 95% CI {lo:.2f} - {hi:.2f}"
    lines = [
        "",
        head,
        f"  per-request tok/s   mean {s.tok_s_mean:.2f} ({spread}), std {s.tok_s_std:.2f}",
        f"  percentiles         p5 {s.tok_s_p5:.1f}   p50 {s.tok_s_p50:.1f}   "
        f"p95 {s.tok_s_p95:.1f}",
        f"  accept length       {s.accept_length_mean:.3f} per cycle, pooled "
        f"(theory {s.theory_accept_length:.3f})",
        "  pmf of L (theory)   "
        + "  ".join(
            f"{j + 1}: {p:.3f} ({q:.3f})"
            for j, (p, q) in enumerate(zip(s.accept_pmf, s.theory_pmf, strict=True))
        ),
        f"  cycle               {s.cycle_ms['mean']:.2f} ms = "
        + " + ".join(f"{p} {s.cycle_ms[p]:.2f}" for p in PHASES),
    ]
    return [*lines, *_class_and_target_lines(s), "  per-request tok/s:"]


def _class_lines(s: Summary) -> list[str]:
    """Each class's share of requests at its mean tok/s, in one line."""
    if not s.classes:
        return []
    return wrap(
        "; ".join(f"{c.name} {c.share:.1%} at {c.mean_tok_s:.2f} tok/s" for c in s.classes),
        indent="  by class (share)    ",
        more=" " * 22,
    )


def _class_and_target_lines(s: Summary) -> list[str]:
    """Each class's share and mean, then P(tok/s >= target) with its interval."""
    lines = _class_lines(s)
    for t in s.targets:
        tlo, thi = t.ci95
        band = "exact" if s.method == "exact" else f"95% CI {tlo:.3f} - {thi:.3f}"
        lines.append(f"  P(tok/s >= {t.tok_s:g})".ljust(22) + f"{t.p_at_least:.3f} ({band})")
    return lines
