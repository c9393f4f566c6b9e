"""Turn analyses into the JSON document and the text summary that ``specsim run`` prints."""

from __future__ import annotations

import re
from typing import Any

from sim.binding.acceptance_shape import AcceptanceShape
from sim.model.closed_forms import TargetAnswer
from sim.model.cycle import CycleCost
from sim.report.format import count, fmt_alpha
from sim.report.screen import answer_lines, fit_width, wrap
from sim.report.uncertainty import (
    LISTED_ORIGINS,
    answer_line,
    assumption_lines,
    assumptions_doc,
    depends_on_lines,
    fmt_interval,
    header_lines,
    off_centre_text,
)
from sim.studies.analysis import Analysis
from sim.uncertainty.answers import TargetUncertainty
from sim.uncertainty.interval import INTERVAL_LABEL

ALPHA_MEANING = "alpha = the equal conditional per-position acceptance rate (Leviathan's alpha)"
RATES_MEANING = (
    "first = the conditional rate needed at position 1 under the shape, mean = over the "
    "chain, flat = the equal rate (Leviathan's alpha) at its own best k"
)


def shape_text(shape: AcceptanceShape | None) -> str:
    """How the rates vary by position, in one phrase."""
    if shape is None:
        return "no acceptance"
    if shape.shape in ("flat", "repeat") or shape.decay == 1.0:
        what = "flat (equal rates)" if shape.shape != "repeat" else "the last listed rate repeats"
    else:
        what = f"{shape.shape}, decay {shape.decay:.3f}"
    return f"{what}; {shape.reason}"


def target_to_dict(
    answer: TargetAnswer, uncertainty: TargetUncertainty | None = None
) -> dict[str, Any]:
    """One target's closed-form answer; null where not applicable."""
    at_k = answer.at_num_steps
    best = answer.best
    flat = answer.best_flat
    return {
        "tok_s": answer.tok_s,
        # under the scenario's shape with a first-position rate of at most 1 (as search)
        "reachable": answer.reachable,
        "reachable_flat": answer.reachable_flat,
        "needs_rates_falling_less": bool(best is not None and best.over_cap),
        "required_accept_length": at_k.required_accept_length,
        "alpha_at_num_steps": at_k.alpha if at_k.num_steps > 0 else None,
        "first_rate_at_num_steps": at_k.first_rate if at_k.num_steps > 0 else None,
        "best_num_steps": best.num_steps if best else None,
        "first_rate_at_best": best.first_rate if best else None,
        "mean_rate_at_best": best.mean_rate if best else None,
        "alpha_at_best": best.alpha if best else None,
        "flat_best_num_steps": flat.num_steps if flat else None,
        "flat_alpha_at_best": flat.alpha if flat else None,
        "required_accept_length_at_best": best.required_accept_length if best else None,
        "ceiling_tok_s": at_k.ceiling_tok_s,
        "max_ceiling_tok_s": answer.max_ceiling.ceiling_tok_s,
        "max_ceiling_num_steps": answer.max_ceiling.num_steps,
        "reason": answer.reason,
        "uncertainty": uncertainty.to_dict() if uncertainty else None,
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
    unc = analysis.uncertainty
    by_target = {t.tok_s: t for t in unc.targets} if unc else {}
    return {
        "scenario": analysis.scenario.name,
        "hardware": analysis.hardware,
        "overrides": analysis.overrides,
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
        "rates_meaning": RATES_MEANING,
        "acceptance_shape": (
            {
                "shape": analysis.shape.shape,
                "decay": analysis.shape.decay,
                "origin": analysis.shape.origin,
                "reason": analysis.shape.reason,
            }
            if analysis.shape
            else None
        ),
        "targets": [target_to_dict(t, by_target.get(float(t.tok_s))) for t in analysis.targets],
        "assumptions": assumptions_doc(analysis.assumptions),
        "uncertainty": unc.to_dict() if unc else None,
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


def shape_phrase(shape: AcceptanceShape | None) -> str:
    """The shape a target's answer is under, in a few words."""
    if shape is not None and shape.origin == "derived":
        return "the default decay shape"
    return "the scenario's shape by position"


def is_shaped(shape: AcceptanceShape | None) -> bool:
    return shape is not None and shape.shape not in ("flat", "repeat") and shape.decay != 1.0


def render_analysis(analysis: Analysis, doc: dict[str, Any], verbose: bool = False) -> str:
    """The closed-form part of ``specsim run``'s text: the answer in about 25 lines of at
    most 100 characters, or (``verbose``) every table; ``doc`` is the analysis as its
    document (``analysis_to_dict``), made once by the caller for the JSON and the text."""
    if verbose:
        return render_analysis_verbose(analysis)
    sc = analysis.scenario
    k = analysis.num_steps
    full = render_analysis_verbose(analysis).splitlines()
    # the head: name, hardware, plain and speculative tok/s, interval, cycle, break-even
    end = full.index("") if "" in full else len(full)
    head = [ln for ln in full[1:end] if not ln.lstrip().startswith("rates by position")]
    title = f"{sc.name}" + (f": {sc.description}" if sc.description else "")
    lines = wrap(title, indent="", more="  ")
    off = analysis.uncertainty.off_centre_inputs if analysis.uncertainty else ()
    for ln in head:
        if ln.startswith("  overrides: "):  # --target's are the targets answered below
            asked = [o for o in analysis.overrides if o["via"] != "--target"]
            if not asked:
                continue
            ln = header_lines(analysis.hardware, asked)[-1]
        if "90% interval from inputs and model:" in ln:
            ln = "    " + ln.strip()
        if " lies outside it: " in ln:  # the inputs that put it there: --verbose
            ln = (
                f"    {ln.strip().split(' lies')[0]} lies outside it: {count(len(off), 'input')} "
                "set outside the 5-95% of their ranges (--verbose: which)"
            )
        # a mix's effective rates by position are an average over requests: --verbose
        ln = re.sub(r"\(expected over requests: effective [^)]*\)", "(over the mix)", ln)
        lines.append(ln)
    if analysis.targets:
        shaped = is_shaped(analysis.shape)
        what = "closed form"
        if shaped and analysis.shape is not None:
            what += f"; rates fall with position: {analysis.shape.shape}, "
            what += f"decay {analysis.shape.decay:.3f}"
        phrase = shape_phrase(analysis.shape)
        lines += answer_lines(doc, k, shaped, phrase, what, LISTED_ORIGINS)
    return "\n".join(fit_width(lines))


def render_analysis_verbose(analysis: Analysis) -> str:
    """A readable summary of the closed-form analysis, every table."""
    sc = analysis.scenario
    k = analysis.num_steps
    cost = analysis.cost
    lines = [f"{sc.name}" + (f": {sc.description}" if sc.description else "")]
    lines += header_lines(analysis.hardware, analysis.overrides)
    tree = analysis.tree
    label = f"k={k}" if tree is None else f"tree {k}/{tree.topk}/{tree.num_draft_tokens}"
    if tree is not None and tree.static_source is not None:
        label = f"static tree, {tree.num_draft_tokens - 1} drafts, depth {k}"
    if sc.speculation.parallel_draft:
        label += ", one drafter pass"
    spec = f"speculative ({label})"
    width = max(20, len(spec)) if k > 0 else 20  # a tree's label is longer than a chain's
    lines.append(
        f"  {'plain decoding':<{width}} {analysis.baseline_tok_s:7.1f} tok/s  "
        f"({analysis.passes.decode_ms:.2f} ms a token)"
    )
    lines += [f"  note: {note}" for note in sc.speculation.adjustments]
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
        cap = k + 1 if tree is None else tree.tree.max_depth + 1
        lines += [
            f"  {spec:<{width}} {analysis.throughput_tok_s:7.1f} tok/s  "
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
        from sim.report.tree import render_tree  # lazy: a tree scenario only (start-up)

        lines += render_tree(tree, analysis.uncertainty)
    unc = analysis.uncertainty
    if (
        k > 0
        and unc is not None
        and unc.tok_s_interval90 is not None
        and unc.accept_length_interval90 is not None
    ):
        lo, hi = unc.tok_s_interval90.to_list()
        at = next(i for i, ln in enumerate(lines) if ln.startswith("  speculative")) + 1
        lines.insert(
            at,
            f"                         {INTERVAL_LABEL}: {lo:.1f} - {hi:.1f} tok/s, "
            f"accept length {fmt_interval(unc.accept_length_interval90, '.2f')}",
        )
        tok_s = analysis.throughput_tok_s
        off = unc.off_centre_inputs
        if off and lo is not None and hi is not None and not lo <= tok_s <= hi:
            lines.insert(
                at + 1,
                f"                         {tok_s:.1f} lies outside it: inputs specified outside "
                f"the 5-95% of their ranges: {off_centre_text(o.to_dict() for o in off)}",
            )
    if analysis.targets:
        title = "What acceptance reaches each target? (closed form)"
        if tree is not None:
            title = "What acceptance would a chain (topk 1) need? (closed form)"
        lines += [
            "",
            title,
            f"  rates by position: {shape_text(analysis.shape)}",
            f"  {RATES_MEANING}",
        ]
        by_target = {t.tok_s: t for t in unc.targets} if unc else {}
        head = f"  {'target':>12}  {'AL needed':>9}  {'first@k=' + str(k):>11}  "
        head += f"{'best k':>6}  {'first':>6}  {'90% interval':<16}  {'mean':>6}  {'flat (k)':>12}"
        lines.append(head)
        for t in analysis.targets:
            best, flat = t.best, t.best_flat
            u = by_target.get(float(t.tok_s))
            interval = fmt_interval(u.interval90) if u else "-"
            flat_text = f"{fmt_alpha(flat.alpha)} ({flat.num_steps})" if flat else "unreachable"
            lines.append(
                f"  {t.tok_s:>6.0f} tok/s  {t.at_num_steps.required_accept_length:>9.2f}  "
                f"{fmt_alpha(t.at_num_steps.first_rate) if k > 0 else '-':>11}  "
                f"{best.num_steps if best else '-':>6}  "
                f"{fmt_alpha(best.first_rate if best else None, '-'):>6}  {interval:<16}  "
                f"{fmt_alpha(best.mean_rate if best else None, '-'):>6}  {flat_text:>12}"
            )
        for t in analysis.targets:
            if t.reason:
                lines.append(f"  {t.tok_s:g} tok/s: {t.reason}")
        for t in analysis.targets:
            u = by_target.get(float(t.tok_s))
            if u is not None:
                lines += ["", answer_line(u), *depends_on_lines(u, indent="    ")]
    if analysis.assumptions:
        lines += ["", *assumption_lines(analysis.assumptions)]
    return "\n".join(lines)
