"""Text of ``convert``: an acceptance metric in every vocabulary, one (label, value) row a
line with the values in one column, and the assumption the conversion rests on."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the tree's forms import scipy: a chain's conversion does not (start-up)
    from sim.model.metrics import AcceptanceForms
    from sim.model.tree.metrics import TreeForms

__all__ = ["LABEL_WIDTH", "render_forms", "render_tree_forms"]

#: Width of the label column of convert's text: every value starts in the same column.
LABEL_WIDTH = 25


def _rows(rows: list[tuple[str, str]]) -> list[str]:
    """(label, value) rows with the values in one column (labels are at most
    ``LABEL_WIDTH`` - 1 characters)."""
    return [f"{label:<{LABEL_WIDTH}}{value}" for label, value in rows]


def render_forms(forms: AcceptanceForms) -> str:
    """A chain's forms: k, the conditional and cumulative rates, vLLM's and SGLang's rates,
    the accept length and the equal-rate alpha; the assumption when one was made."""
    fmt = ", ".join
    lines = _rows(
        [
            ("num_steps (k)", str(forms.num_steps)),
            ("conditional per-position", fmt(f"{a:.4f}" for a in forms.per_position)),
            ("vLLM cumulative", fmt(f"{c:.4f}" for c in forms.cumulative)),
            ("vLLM draft accept. rate", f"{forms.draft_acceptance_rate:.4f}"),
            ("SGLang accept rate", f"{forms.sglang_accept_rate:.4f}"),
            ("accept length", f"{forms.accept_length:.4f}"),
            ("equal-rate alpha", f"{forms.alpha:.4f}"),
        ]
    )
    if forms.assumption:
        lines.append(f"assumption: {forms.assumption}")
    return "\n".join(lines)


def render_tree_forms(forms: TreeForms) -> str:
    """A tree's forms: its shape, accept length, top-1 and rank rates, drafts per depth, the
    chain-equivalent rates and, where one exists, the alpha a chain of the same k would need;
    then the assumption."""
    fmt = ", ".join
    rows = [
        (
            "tree",
            f"num_steps {forms.num_steps}, topk {forms.topk}, "
            f"num_draft_tokens {forms.num_draft_tokens}",
        ),
        ("accept length", f"{forms.accept_length:.4f}"),
        ("top-1 rate", f"{forms.top1:.4f}"),
        ("rank rates (depth 1)", fmt(f"{q:.4f}" for q in forms.rank_rates)),
        ("drafts per depth", str(forms.drafts_per_depth)),
        ("chain-equivalent rates", fmt(f"{a:.4f}" for a in forms.chain_equivalent)),
    ]
    if forms.chain_alpha is not None:
        rows.append(
            (
                f"read as a chain (k={forms.num_steps})",
                f"alpha {forms.chain_alpha:.4f}: "
                f"{forms.chain_alpha - forms.top1:+.4f} against the tree's top-1 rate",
            )
        )
    return "\n".join([*_rows(rows), f"assumption: {forms.assumption}"])
