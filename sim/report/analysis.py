"""Turn analyses into the JSON document and the text summary that ``specsim run`` prints."""

from __future__ import annotations

from typing import Any

from sim.model.closed_forms import TargetAnswer
from sim.model.cycle import CycleCost
from sim.report.format import fmt_alpha
from sim.report.tree import render_tree
from sim.studies.analysis import Analysis

ALPHA_MEANING = "alpha = the equal conditional per-position acceptance rate (Leviathan's alpha)"


def target_to_dict(answer: TargetAnswer) -> dict[str, Any]:
    """One target's closed-form answer; null where not applicable."""
    at_k = answer.at_num_steps
    best = answer.best
    return {
        "tok_s": answer.tok_s,
        "reachable": answer.reachable,
        "required_accept_length": at_k.required_accept_length,
        "alpha_at_num_steps": at_k.alpha if at_k.num_steps > 0 else None,
        "best_num_steps": best.num_steps if best else None,
        "alpha_at_best": best.alpha if best else None,
        "required_accept_length_at_best": best.required_accept_length if best else None,
        "ceiling_tok_s": at_k.ceiling_tok_s,
        "max_ceiling_tok_s": answer.max_ceiling.ceiling_tok_s,
        "max_ceiling_num_steps": answer.max_ceiling.num_steps,
        "reason": answer.reason,
    }


def analysis_to_dict(analysis: Analysis) -> dict[str, Any]:
    """The closed-form part of ``specsim run --json``."""
    cost = analysis.cost
    cycle = {
        "mean": cost.total_ms,
        **cost.as_dict(),
        "draft_overhead": cost.draft_overhead_ms,
        "extend_per_token": cost.extend_per_token_ms,
        "extend_at_accept_length": cost.extend_tokens,
    }
    return {
        "scenario": analysis.scenario.name,
        "num_steps": analysis.num_steps,
        "baseline_tok_s": analysis.baseline_tok_s,
        "analytic": {
            "throughput_tok_s": analysis.throughput_tok_s,
            "accept_length": analysis.accept_length,
            "accept_length_pmf": analysis.pmf.tolist(),
            "cycle_ms": cost.total_ms,
            "speedup": analysis.speedup,
            "ceiling_tok_s": analysis.ceiling_tok_s,
            "break_even_accept_length": analysis.break_even_accept_length,
            "per_position": analysis.rates.tolist(),
        },
        "throughput_tok_s": {"mean": analysis.throughput_tok_s},
        "accept_length": {"mean": analysis.accept_length},
        "cycle_ms": cycle,
        "alpha_meaning": ALPHA_MEANING,
        "targets": [target_to_dict(t) for t in analysis.targets],
        "adjustments": list(analysis.scenario.speculation.adjustments),
        **({"tree": analysis.tree.to_dict()} if analysis.tree is not None else {}),
    }


def cycle_detail_lines(cost: CycleCost) -> list[str]:
    """What the cycle's draft and extend phases are made of, when they depend on more than
    one pass (a per-step drafter overhead; an extend that grows with L)."""
    out = []
    steps = cost.num_steps - 1
    if cost.draft_overhead_ms > 0 and steps > 0:
        out.append(
            f"    draft = {steps} x ({(cost.draft_ms - cost.draft_overhead_ms) / steps:.3f} ms "
            f"drafter pass + {cost.draft_overhead_ms / steps:.3f} ms per-step overhead)"
        )
    if cost.extend_per_token_ms > 0:
        out.append(
            f"    extend at E[L] = {cost.extend_tokens:.2f} tokens: "
            f"{cost.extend_at_ms(1):.3f} ms at L = 1 + {cost.extend_per_token_ms:.3f} ms per "
            "further accepted token"
        )
    return out


def render_analysis(analysis: Analysis) -> str:
    """A readable summary of the closed-form analysis."""
    sc = analysis.scenario
    k = analysis.num_steps
    cost = analysis.cost
    lines = [f"{sc.name}" + (f": {sc.description}" if sc.description else "")]
    lines.append(
        f"  plain decoding       {analysis.baseline_tok_s:7.1f} tok/s  "
        f"({analysis.passes.decode_ms:.2f} ms a token)"
    )
    lines += [f"  note: {note}" for note in sc.speculation.adjustments]
    tree = analysis.tree
    if k > 0:
        alpha_note = (
            f"alpha {analysis.rates[0]:.3f}"
            if (analysis.rates == analysis.rates[0]).all()
            else "per-position " + ", ".join(f"{a:.2f}" for a in analysis.rates)
        )
        if sc.acceptance is not None and sc.acceptance.heterogeneous:
            alpha_note = f"expected over requests: effective {alpha_note}"
        if tree is not None:
            alpha_note = "tree's law as a chain: " + alpha_note
        label = f"k={k}" if tree is None else f"tree {k}/{tree.topk}/{tree.num_draft_tokens}"
        cap = k + 1 if tree is None else tree.tree.max_depth + 1
        lines += [
            f"  {'speculative (' + label + ')':<20} {analysis.throughput_tok_s:7.1f} tok/s  "
            f"accept length {analysis.accept_length:.2f} ({alpha_note}), "
            f"speedup {analysis.speedup:.2f}x",
            f"  cycle {cost.total_ms:.2f} ms = draft {cost.draft_ms:.2f} + verify "
            f"{cost.verify_ms:.2f} + extend {cost.extend_ms:.2f} + overhead {cost.overhead_ms:.2f}",
            *cycle_detail_lines(cost),
            f"  break-even accept length {analysis.break_even_accept_length:.2f} "
            f"({label} caps it at {cap}); ceiling {analysis.ceiling_tok_s:.1f} tok/s "
            "with every draft accepted",
        ]
    if tree is not None:
        lines += render_tree(tree)
    if analysis.targets:
        title = "What acceptance reaches each target? (closed form)"
        if tree is not None:
            title = "What acceptance would a chain (topk 1) need? (closed form)"
        lines += ["", title, f"  {ALPHA_MEANING}"]
        head = f"  {'target':>12}  {'AL needed':>9}  {'alpha@k=' + str(k):>11}  "
        head += f"{'best k':>6}  {'alpha@best':>10}  {'AL@best':>7}"
        lines.append(head)
        for t in analysis.targets:
            best = t.best
            alpha_best = fmt_alpha(best.alpha if best else None)
            lines.append(
                f"  {t.tok_s:>6.0f} tok/s  {t.at_num_steps.required_accept_length:>9.2f}  "
                f"{fmt_alpha(t.at_num_steps.alpha) if k > 0 else '-':>11}  "
                f"{best.num_steps if best else '-':>6}  {alpha_best:>10}  "
                + (f"{best.required_accept_length:>7.2f}" if best else f"{'-':>7}")
            )
        for t in analysis.targets:
            if t.reason:
                lines.append(f"  {t.tok_s:g} tok/s: {t.reason}")
    return "\n".join(lines)
