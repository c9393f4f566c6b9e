"""``specsim convert``: one acceptance metric in every other vocabulary."""

from __future__ import annotations

import click

from sim.cli.options import echo_document, json_option
from sim.errors import SpecsimError
from sim.report.format import count


def _floats(text: str, source: str) -> list[float]:
    from sim.studies.grid import split_list  # lazy: start-up

    try:
        values = [float(x) + 0.0 for x in split_list(text, source=source)]  # -0 reads as 0
    except ValueError:
        raise SpecsimError(
            f"expected comma-separated numbers, got {text[:80]!r}", source=source
        ) from None
    if not values:
        raise SpecsimError("expected comma-separated numbers, got none", source=source)
    if len(values) > 64:
        raise SpecsimError(f"{count(len(values), 'position')} (at most 64)", source=source)
    return values


@click.command()
@click.option("--alpha", type=float, help="One conditional rate for every position.")
@click.option("--accept-length", type=float, help="Mean tokens per cycle, bonus included.")
@click.option("--draft-acceptance-rate", type=float, help="vLLM: accepted / drafted tokens.")
@click.option("--sglang-accept-rate", type=float, help="SGLang: accept length / (k + 1).")
@click.option("--cumulative", help="vLLM per-position rates c1,c2,... (P(1..i accepted)).")
@click.option("--per-position", help="Conditional per-position rates a1,a2,...")
@click.option(
    "--num-steps",
    type=click.IntRange(1, 64),
    help="Draft length k, at most 64 as in scenarios (a list's own length, which it must "
    "match when given).",
)
@click.option(
    "--topk",
    type=click.IntRange(1, 64),
    default=1,
    help="SGLang topk: > 1 reads --accept-length as a tree's.",
)
@click.option(
    "--num-draft-tokens",
    type=click.IntRange(1, 4096),
    help="SGLang num_draft_tokens of the tree (topk > 1).",
)
@click.option("--rank-rates", help="Rank profile p1,p2,... shaping ranks 2..topk of a tree.")
@click.option("--rank-profile", help="A published rank profile (sim/model/tree/presets.py).")
@json_option
def convert(
    alpha: float | None,
    accept_length: float | None,
    draft_acceptance_rate: float | None,
    sglang_accept_rate: float | None,
    cumulative: str | None,
    per_position: str | None,
    num_steps: int | None,
    topk: int,
    num_draft_tokens: int | None,
    rank_rates: str | None,
    rank_profile: str | None,
    as_json: bool,
) -> None:
    """Convert one acceptance metric into all the others (a tree's accept length into its
    top-1 and rank rates with --topk, --num-draft-tokens and a rank profile)."""
    if topk > 1:
        _convert_tree(
            accept_length, num_steps, topk, num_draft_tokens, rank_rates, rank_profile, as_json
        )
        return
    # lazy: the model is imported when the command runs, not for --help (start-up)
    from sim.model import metrics

    scalars = {
        "--alpha": alpha,
        "--accept-length": accept_length,
        "--draft-acceptance-rate": draft_acceptance_rate,
        "--sglang-accept-rate": sglang_accept_rate,
    }
    lists = {"--cumulative": cumulative, "--per-position": per_position}
    given: dict[str, float | str | None] = {**scalars, **lists}
    named = [k for k, v in given.items() if v is not None]
    if len(named) != 1:
        raise SpecsimError("give exactly one of " + ", ".join(given), source="convert")
    source = named[0]
    listed = lists.get(source)
    if listed is not None:
        values = _floats(listed, source)
        # a list is one rate per draft position: its length is k, padded or cut by nothing
        if num_steps is not None and num_steps != len(values):
            raise SpecsimError(
                f"lists {count(len(values), 'position')} but --num-steps is {num_steps} "
                "(a list gives k: list every position, or leave --num-steps out)",
                source=source,
            )
        if source == "--cumulative":
            forms = metrics.from_cumulative(values)
        else:
            forms = metrics.from_conditional(values)
    else:
        if num_steps is None:
            raise SpecsimError(f"{source} needs --num-steps", source="convert")
        make = {
            "--alpha": metrics.from_alpha,
            "--accept-length": metrics.from_accept_length,
            "--draft-acceptance-rate": metrics.from_draft_acceptance_rate,
            "--sglang-accept-rate": metrics.from_sglang_accept_rate,
        }[source]
        value = scalars[source]
        assert value is not None  # the one given
        forms = make(value + 0.0, num_steps)  # -0 reads as 0, not '-0.0000'
    if as_json:
        echo_document("convert", forms.as_dict())
        return
    fmt = ", ".join
    _echo_rows(
        ("num_steps (k)", str(forms.num_steps)),
        ("conditional per-position", fmt(f"{a:.4f}" for a in forms.per_position)),
        ("vLLM cumulative", fmt(f"{c:.4f}" for c in forms.cumulative)),
        ("vLLM draft accept. rate", f"{forms.draft_acceptance_rate:.4f}"),
        ("SGLang accept rate", f"{forms.sglang_accept_rate:.4f}"),
        ("accept length", f"{forms.accept_length:.4f}"),
        ("equal-rate alpha", f"{forms.alpha:.4f}"),
    )
    if forms.assumption:
        click.echo(f"assumption: {forms.assumption}")


#: Width of the label column of convert's text: every value starts in the same column.
LABEL_WIDTH = 25


def _echo_rows(*rows: tuple[str, str]) -> None:
    """Print (label, value) rows with the values in one column (labels are at most
    ``LABEL_WIDTH`` - 1 characters)."""
    for label, value in rows:
        click.echo(f"{label:<{LABEL_WIDTH}}{value}")


def _convert_tree(
    accept_length: float | None,
    num_steps: int | None,
    topk: int,
    num_draft_tokens: int | None,
    rank_rates: str | None,
    rank_profile: str | None,
    as_json: bool,
) -> None:
    # lazy: the model is imported when the command runs, not for --help (start-up)
    from sim.model.tree.metrics import from_tree_accept_length
    from sim.model.tree.presets import rank_profile as preset
    from sim.model.tree.rates import residual_shares

    if accept_length is None:
        raise SpecsimError("--topk > 1 converts an --accept-length", source="--accept-length")
    if num_steps is None or num_draft_tokens is None:
        raise SpecsimError("a tree needs --num-steps and --num-draft-tokens", source="--topk")
    if (rank_rates is None) == (rank_profile is None):
        raise SpecsimError("give one of --rank-rates or --rank-profile", source="--topk")
    if rank_profile is not None:
        try:
            profile = list(preset(rank_profile).rates)
        except KeyError as exc:
            raise SpecsimError(str(exc.args[0]), source="--rank-profile") from None
        name = rank_profile
    else:
        assert rank_rates is not None
        profile, name = _floats(rank_rates, "--rank-rates"), f"rank rates {rank_rates}"
    try:
        shares = tuple(float(h) for h in residual_shares(profile))
    except ValueError as exc:
        raise SpecsimError(str(exc), source="--rank-rates") from None
    if len(shares) + 1 < topk:
        raise SpecsimError(
            f"the profile gives {len(shares) + 1} ranks, --topk is {topk}", source="--rank-rates"
        )
    forms = from_tree_accept_length(accept_length, num_steps, topk, num_draft_tokens, shares, name)
    if as_json:
        echo_document("convert", forms.as_dict())
        return
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
    _echo_rows(*rows)
    click.echo(f"assumption: {forms.assumption}")
