"""Text for trees: SGLang's tree and the best tree side by side (``specsim run``)."""

from __future__ import annotations

from sim.binding.tree_analysis import TreeAnalysis, nodes_per_depth_text
from sim.report.format import fmt_alpha
from sim.report.uncertainty import fmt_interval
from sim.uncertainty.answers import UncertaintyResult
from sim.uncertainty.interval import INTERVAL_LABEL

TOP1_MEANING = (
    "top-1 = P(the target's token is the drafter's first guess | parent accepted) at depth 1; "
    "other ranks and depths keep the scenario's shape"
)


def render_tree(tree: TreeAnalysis, unc: UncertaintyResult | None = None) -> list[str]:
    """Lines of the tree section: rank rates, both trees, their E[L] and tok/s (the best
    tree's with its 90% interval from ``unc``; SGLang's is the speculative line's), targets."""
    q = tree.sglang.mean_rank_rates()[0]
    if tree.static_source is None:
        head = (
            f"Tree (SGLang num_steps {tree.num_steps}, topk {tree.topk}, num_draft_tokens "
            f"{tree.num_draft_tokens}; drafter scores taken as the rank rates)"
        )
        own = "SGLang's tree"
    else:
        head = (
            f"Static tree ({tree.static_source}: {tree.num_draft_tokens - 1} drafts, depth "
            f"{tree.num_steps}, width {tree.topk}; verified over {tree.num_draft_tokens} "
            "tokens)"
        )
        own = "given tree"
    lines = [
        "",
        head,
        "  rank rates at depth 1: " + ", ".join(f"q{r + 1} {v:.3f}" for r, v in enumerate(q)),
    ]
    for which, label in (("sglang", own), ("optimal", "best tree")):
        t = getattr(tree, which).tree
        lines.append(
            f"  {label:<13}  {t.drafts:>3} draft{'s' if t.drafts != 1 else ' '}, depth "
            f"{t.max_depth} (per depth {nodes_per_depth_text(t)}): accept length "
            f"{tree.accept_length(which):.3f}, {tree.tok_s(which):.1f} tok/s"
        )
    if (
        unc is not None
        and unc.best_tree_tok_s_interval90 is not None
        and unc.best_tree_accept_length_interval90 is not None
    ):
        lo, hi = unc.best_tree_tok_s_interval90.to_list()
        assert lo is not None and hi is not None  # a tok/s interval has no unreachable end
        lines.append(
            f"{'':<17}{INTERVAL_LABEL}: {lo:.1f} - {hi:.1f} tok/s, accept length "
            f"{fmt_interval(unc.best_tree_accept_length_interval90, '.2f')}"
        )
    if tree.targets:
        lines.append(f"  {TOP1_MEANING}")
        col = "top-1 SGLang" if tree.static_source is None else "top-1 given"
        lines.append(f"  {'target':>12}  {'AL needed':>9}  {col:>12}  {'top-1 best':>10}")
        for t in tree.targets:
            lines.append(
                f"  {t.tok_s:>6.0f} tok/s  {t.required_accept_length:>9.2f}  "
                f"{fmt_alpha(t.top1_sglang):>12}  {fmt_alpha(t.top1_optimal):>10}"
            )
    return lines
