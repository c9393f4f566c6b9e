"""Chain against tree as concurrency grows: where a draft tree stops beating the chain.

At each concurrency C of a grid (a closed loop of C users) the serving simulation runs
plain decoding, every chain and every tree asked for on the same users, arrivals, lengths
and per-request acceptance draws (common random numbers, sim/simulation/serving/simulate.py;
one seed for every C, so neighbouring loads share their users too). Per policy: per-user
and aggregate tok/s with 95% intervals across replications; per (tree, chain) pair: the
paired ratio tree / chain of replication means. A tree beats a chain at C when that ratio
is above 1.

The crossover of a pair: the first grid concurrency at which the ratio's mean falls below 1
after being above it (``first_loss``), the last one above it before (``last_win``), and the
concurrency at which the ratio interpolated linearly against log C crosses 1 (``at``). The
interval is the grid's: the ratio is smooth in C and a finer grid narrows it. A tree that
loses already at the smallest C, or wins at every C on the grid, has no crossover there
(``never_wins`` / ``always_wins``). The ratio need not be monotone (on an MoE the tree's
extra verify tokens read extra experts only until the batch reads nearly all of them), so
loads beyond the first loss where the tree wins again are listed (``wins_again``).

The best draft per load: at each C the policy with the largest mean per-user tok/s, and
from those a ``serving.draft_table`` (``[start_bs, end_bs, num_steps, topk,
num_draft_tokens]`` rows, boundaries at the geometric midpoints between grid loads): the
decode batch of a closed loop of C users is about C (less while prompts prefill), so the
table keys the winner of load C to batch sizes around C. It is a recommendation from this
grid, not a simulated policy; ``specsim serve --set serving.draft_table=...`` runs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from sim.binding.bound import bind
from sim.binding.draft_binding import draft_binding
from sim.errors import SpecsimError
from sim.hardware.pass_terms import PassTerms
from sim.model.drafts import Draft, acceptance_depth, describe_draft, is_tree, verify_tokens
from sim.model.policy import FixedK
from sim.model.tree import Tree
from sim.model.tree.acceptance import TreeDraft
from sim.model.tree.presets import DEFAULT_RANK_PROFILE
from sim.parallel import Executor
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.sections.bounds import MAX_NUM_STEPS
from sim.scenario.sections.speculation import SpeculationSpec
from sim.simulation.budget import check_serving_size
from sim.simulation.serving.metrics import Estimate, Ratio, ServingSummary, summarize_serving
from sim.simulation.serving.setup import BASELINE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.draw_intervals import (
    DRAW_REPLICATIONS,
    IntervalSources,
    probe_draws,
    ratio_interval,
    sources90,
)
from sim.studies.serving.sequential import FIRST, describe, settled
from sim.studies.serving.tree_load_draws import (
    PairArrays,
    crossing_interval,
    drawn_ratios,
)
from sim.uncertainty.model_error import (
    ModelErrorTerm,
    beyond_measured_note,
    crossing_band,
    join_ends,
    model_error_term,
)
from sim.uncertainty.perturb import input_draws

__all__ = [
    "DEFAULT_TREE",
    "Crossing",
    "LoadPoint",
    "TreeLoadResult",
    "check_chains",
    "draft_name",
    "parse_tree",
    "table_row",
    "tree_load_study",
]

#: Closed-loop concurrencies when none are given (the command's default).
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)

#: The tree compared when neither the scenario nor ``--tree`` gives one: SGLang's default
#: EAGLE tree, num_steps 5, topk 4, num_draft_tokens 8: what SGLang sets when none of
#: ``--speculative-num-steps``, ``--speculative-eagle-topk``,
#: ``--speculative-num-draft-tokens`` is given, for Llama and every architecture it does not
#: list (sgl-project/sglang python/sglang/srt/server_args.py ``auto_choose_speculative_params``;
#: for DeepSeek-V2/V3 architectures recent versions choose the chain 3/1/4 instead).
DEFAULT_TREE = TreeDraft(5, 4, 8)

#: The metrics compared, per-user first.
METRICS: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s")

Progress = Callable[[int, int], None]


def parse_tree(text: str) -> TreeDraft:
    """``num_steps/topk/num_draft_tokens`` (e.g. ``5/4/8``) as SGLang's tree, validated as
    ``[speculation]`` is (SpecsimError naming ``--tree`` otherwise)."""
    parts = text.replace(",", "/").split("/")
    try:
        steps, topk, n = (int(p) for p in parts)
    except ValueError:
        raise SpecsimError(
            f"{text!r}: a tree is num_steps/topk/num_draft_tokens, e.g. 5/4/8", param="trees"
        ) from None
    if topk < 2:
        raise SpecsimError(f"{text!r}: topk 1 is a chain (give it as a chain)", param="trees")
    try:
        SpeculationSpec(num_steps=steps, topk=topk, num_draft_tokens=n)
    except ValidationError as exc:
        msg = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise SpecsimError(f"{text!r}: {msg}", param="trees") from None
    return TreeDraft(steps, topk, n)


def check_chains(chains: Sequence[int]) -> None:
    """SpecsimError naming ``--chain`` unless there is a chain and every length is within
    the bound on ``speculation.num_steps`` (1 to ``MAX_NUM_STEPS``)."""
    if not chains:
        raise SpecsimError("give at least one chain length", param="chains")
    for k in chains:
        if not 1 <= k <= MAX_NUM_STEPS:
            raise SpecsimError(
                f"{k} is not in the range 1<=x<={MAX_NUM_STEPS} (the bound on "
                "speculation.num_steps)",
                param="chains",
            )


def draft_name(draft: Draft) -> str:
    """A short policy name: ``off``, ``chain 3``, ``tree 5/4/8``."""
    if isinstance(draft, int):
        return "off" if draft == 0 else f"chain {draft}"
    return describe_draft(draft)


def table_row(start: int, end: int, draft: Draft) -> list[int]:
    """A ``serving.draft_table`` row for ``draft`` (a chain or an SGLang tree)."""
    if isinstance(draft, int):
        return [start, end, draft, 1, draft + 1]
    if isinstance(draft, TreeDraft):
        return [start, end, draft.num_steps, draft.topk, draft.num_draft_tokens]
    raise ValueError("a static tree has no draft_table row")


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One concurrency: per policy (by name) the mean per-user and aggregate tok/s and
    accept length with their intervals, the mean decode batch, and per (tree, chain) pair
    the paired ratios ``vs_chain[tree][chain][metric]``."""

    concurrency: int
    per_user_tok_s: dict[str, Ratio]
    aggregate_tok_s: dict[str, Ratio]
    accept_length: dict[str, Ratio]
    mean_batch: Ratio
    vs_chain: dict[str, dict[str, dict[str, Ratio]]]
    #: ``vs_chain``'s 90% intervals from inputs and model (sim/studies/serving/tree_load_draws.py;
    #: without draws: the Monte Carlo 95% interval), same keys.
    vs_chain_interval90: dict[str, dict[str, dict[str, list[float] | None]]] = field(
        default_factory=dict
    )
    #: The largest policy's mean decode batch is above the largest batch the scenario's
    #: costs are measured at (sim/uncertainty/model_error.py ``beyond_measured_note``).
    beyond_measured: bool = False
    #: The largest policy's mean decode batch: where ``vs_chain_interval90`` takes the
    #: model-error term (sim/uncertainty/model_error.py).
    decode_batch: float = 1.0

    @property
    def best(self) -> str:
        """The policy with the largest mean per-user tok/s here."""
        return max(self.per_user_tok_s, key=lambda n: self.per_user_tok_s[n].mean)


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where ``tree`` stops beating ``chain`` on ``metric`` (see the module docstring)."""

    tree: str
    chain: str
    metric: str
    last_win: int | None
    first_loss: int | None
    at: float | None
    wins_again: tuple[int, ...] = ()
    #: The crossing's 90% interval from inputs and model (sim/studies/serving/tree_load_draws.py
    #: ``crossing_interval``; an end None: off the grid); None: not computed.
    interval90: tuple[float | None, float | None] | None = None

    @property
    def never_wins(self) -> bool:
        return self.last_win is None

    @property
    def always_wins(self) -> bool:
        return self.last_win is not None and self.first_loss is None


@dataclass(frozen=True, slots=True)
class TreeLoadResult:
    """The study over a grid of concurrencies (see the module docstring)."""

    scenario: str
    concurrencies: tuple[int, ...]
    drafts: dict[str, Draft]
    points: tuple[LoadPoint, ...]
    replications: int
    requests: int
    seed: int
    assumptions: tuple[str, ...]
    crossings: tuple[Crossing, ...] = field(default=())
    #: What the intervals took (sim/uncertainty/perturb.py ``InputDraws.doc``: label, draws,
    #: replications a draw, the inputs drawn) with ``draws_run``, and the note of loads
    #: beyond the highest measured batch.
    intervals: dict[str, Any] = field(default_factory=dict)
    #: What the study took as a named default because neither the scenario nor the options
    #: gave it (``tree``, ``acceptance.rank_profile``), each with a short line saying what
    #: it is (its source is among the ``assumptions``); empty when nothing was defaulted.
    defaults: dict[str, str] = field(default_factory=dict)
    #: Per load, the replications its drafts ran together (each draft's one serving run of
    #: the requests a replication): ``replications`` x drafts, or ``FIRST`` x drafts where
    #: sequential replications stopped it (``load_settled``).
    replications_run: dict[int, int] = field(default_factory=dict)

    @property
    def trees(self) -> tuple[str, ...]:
        return tuple(n for n, d in self.drafts.items() if is_tree(d))

    @property
    def chains(self) -> tuple[str, ...]:
        return tuple(n for n, d in self.drafts.items() if not is_tree(d) and d != 0)

    def best_table(self) -> list[list[int]] | None:
        """``serving.draft_table`` rows of the best policy per load (static trees and ties
        merged; see the module docstring); None when a static tree (``[speculation.tree]``)
        is best at some load: a table row names SGLang's trees and chains only."""
        rows: list[list[int]] = []
        grid = self.concurrencies
        if any(isinstance(self.drafts[p.best], Tree) for p in self.points):
            return None
        for i, point in enumerate(self.points):
            draft = self.drafts[point.best]
            start = 1 if i == 0 else rows[-1][1] + 1
            end = 1024 if i == len(grid) - 1 else max(start, int(math.sqrt(grid[i] * grid[i + 1])))
            if rows and table_row(0, 0, draft)[2:] == rows[-1][2:]:
                rows[-1][1] = end
            else:
                rows.append(table_row(start, end, draft))
        return rows


def _crossing(
    tree: str, chain: str, metric: str, grid: Sequence[int], ratios: Sequence[float]
) -> Crossing:
    last_win: int | None = None
    for i, (c, r) in enumerate(zip(grid, ratios, strict=True)):
        if r > 1.0:
            last_win = c
            continue
        again = tuple(g for g, x in zip(grid[i + 1 :], ratios[i + 1 :], strict=True) if x > 1.0)
        if last_win is None:
            return Crossing(tree, chain, metric, None, c, None, again)
        a, b = math.log(grid[i - 1]), math.log(c)
        ra = ratios[i - 1]
        at = math.exp(a + (ra - 1.0) / (ra - r) * (b - a)) if ra != r else float(c)
        return Crossing(tree, chain, metric, last_win, c, at, again)
    return Crossing(tree, chain, metric, last_win, None, None)


def tree_load_study(
    scenario: Scenario,
    concurrencies: Sequence[int],
    *,
    chains: Sequence[int] | None = None,
    trees: Sequence[TreeDraft | Tree] = (),
    workers: int = 1,
    executor: Executor | None = None,
    base_dir: Path | None = None,
    source: str = "scenario",
    progress: Progress | None = None,
    draws: int = 0,
    sequential: bool = True,
) -> TreeLoadResult:
    """Chains and trees of ``scenario`` against concurrency (see the module docstring).

    ``chains``: chain lengths (default: the scenario's num_steps, or the tree's when the
    scenario drafts one); ``trees``: SGLang trees (default: the scenario's own, when it
    drafts one, else ``DEFAULT_TREE``, SGLang's default). The scenario's acceptance is every
    draft's; a tree's ranks below the top-1 take the scenario's rank shape
    (``acceptance.rank_profile`` or ``rank_rates``), or ``DEFAULT_RANK_PROFILE``'s when it
    gives none. What was defaulted is in the result's ``defaults``. ``draws``:
    Sobol draws of the uncertain inputs for the 90% intervals from inputs and model of
    every ratio and crossing (sim/studies/serving/tree_load_draws.py; 0: Monte Carlo only).
    ``sequential``: a load runs its first ``FIRST`` replications, and the rest only where
    a comparison it answers is not settled (``load_settled``).
    """
    own = draft_binding(scenario).draft
    tree_list: list[TreeDraft | Tree] = list(trees) or ([] if isinstance(own, int) else [own])
    defaults: dict[str, str] = {}  # what was defaulted: a short line each
    notes: list[str] = []  # and where it comes from, for the assumptions
    if not tree_list:
        tree_list = [DEFAULT_TREE]
        defaults["tree"] = f"{draft_name(DEFAULT_TREE)}, SGLang's default EAGLE tree"
        notes.append(
            f"default tree: {draft_name(DEFAULT_TREE)} (the scenario drafts a chain and no "
            "--tree was given) is what SGLang sets when no speculative num_steps, topk or "
            "num_draft_tokens is given (python/sglang/srt/server_args.py "
            "auto_choose_speculative_params, Llama and unlisted architectures)"
        )
    steps = scenario.num_steps if isinstance(own, int) else acceptance_depth(own)
    chain_list = list(chains) if chains is not None else [steps]
    check_chains(chain_list)
    if not concurrencies or any(c < 1 for c in concurrencies):
        raise SpecsimError("give concurrencies >= 1", param="concurrencies")
    if scenario.acceptance is None:
        raise SpecsimError("needed to draft", source=source, field="acceptance")
    if scenario.acceptance.rank_shape() is None:
        scenario = with_overrides(
            scenario, {"acceptance.rank_profile": DEFAULT_RANK_PROFILE}, source=source
        )
        defaults["acceptance.rank_profile"] = (
            f"ranks below the top-1 from the {DEFAULT_RANK_PROFILE} prior, top-1 rates the chain's"
        )
        notes.append(
            "default rank profile: a tree's acceptance is derived from the chain's (the "
            "scenario gives no rank shape): its top-1 rate at each depth is the scenario's, "
            f"the ranks below share the top-1's misses as {DEFAULT_RANK_PROFILE} does (a small "
            "drafter's profile, not this drafter's; --set acceptance.rank_profile or "
            "rank_rates replaces it)"
        )
    grid = tuple(sorted(set(int(c) for c in concurrencies)))
    drafts: dict[str, Draft] = {"off": 0}
    drafts.update({draft_name(k): k for k in chain_list})
    drafts.update({draft_name(t): t for t in tree_list})
    policies = {name: FixedK(d) for name, d in drafts.items() if name != "off"}
    by = {n: BASELINE if n == "off" else n for n in drafts}
    tree_names = [n for n, d in drafts.items() if is_tree(d)]
    chain_names = [n for n, d in drafts.items() if not is_tree(d) and d != 0]
    base = scenario
    # the size before any run: every draft at every load, each load's requests those of
    # the top one (its warm-up the longest), so that the estimate errs long
    terms = PassTerms()  # the plans at every load share their passes' terms
    largest = serving_setup(
        bind(with_load(base, concurrency=grid[-1], source=source), terms.passes),
        base_dir=base_dir,
        source=source,
        policies=policies,
        terms=terms,
    )
    w = largest.plan.workload
    check_serving_size(
        len(grid) * len(drafts),
        largest.replications,
        w.requests + w.warmup,
        workers,
        what="draft x load simulations",
        grown={
            "concurrencies": (len(grid) / len(DEFAULT_CONCURRENCIES), "loads"),
            # a load's warm-up is as many requests as its users
            "concurrency": (w.warmup / w.requests, "users"),
        },
    )
    setups: list[Any] = []
    nominal: dict[int, PairArrays] = {}
    term = model_error_term(base, 1.0)  # read once; each load takes it at its batch
    top = term.highest_measured

    def ratios(records: Any) -> PairArrays:
        """Per replication tree / chain of each metric (R,)."""
        summary = summarize_serving(records, setups[0].slo, baseline=None)
        per = {n: summary.policies[n].per_replication for n in (*tree_names, *chain_names)}
        return {
            t: {ch: {m: per[t][m] / per[ch][m] for m in METRICS} for ch in chain_names}
            for t in tree_names
        }

    points = []
    terms_at: dict[int, ModelErrorTerm] = {}  # the model-error term at each load
    ran: dict[int, int] = {}  # the replications each load ran
    for i, c in enumerate(grid):
        sc = with_load(base, concurrency=c, source=source)
        setup = serving_setup(
            bind(sc, terms.passes),
            base_dir=base_dir,
            source=source,
            policies=policies,
            terms=terms,
        )
        setups.append(setup)
        count = FIRST if sequential and setup.replications > FIRST else setup.replications
        records = simulate_serving(
            setup.plan,
            setup.draftings,
            replications=count,
            seed=setup.seed,
            workers=workers,
            executor=executor,
        ).records
        if count < setup.replications and not load_settled(
            summarize_serving(records, setup.slo, baseline=None), by, tree_names, chain_names
        ):  # the rest of the seed's replications, continuing it
            rest = simulate_serving(
                setup.plan,
                setup.draftings,
                replications=setup.replications - count,
                seed=setup.seed,
                workers=workers,
                executor=executor,
                first=count,
            ).records
            records = {n: [*v, *rest[n]] for n, v in records.items()}
        ran[c] = len(next(iter(records.values())))
        summary = summarize_serving(records, setup.slo, baseline=None)
        per = {n: summary.policies[by[n]] for n in drafts}
        nominal[c] = ratios(records)
        batch = max(p.mean_batch.mean for p in per.values())
        terms_at[c] = term.at(batch)
        vs = {
            t: {ch: {m: Ratio.across(v) for m, v in ms.items()} for ch, ms in d.items()}
            for t, d in nominal[c].items()
        }
        points.append(
            LoadPoint(
                concurrency=c,
                per_user_tok_s={n: _ratio_of(per[n].metrics["per_user_tok_s"]) for n in drafts},
                aggregate_tok_s={n: per[n].aggregate_tok_s for n in drafts},
                accept_length={n: per[n].accept_length for n in drafts},
                mean_batch=per["off"].mean_batch,
                vs_chain=vs,
                beyond_measured=batch > top,
                decode_batch=batch,
            )
        )
        if progress:
            progress(i + 1, len(grid))
    sampled = input_draws(bind(base), setups[0].seed, draws)  # found once: drawn, described
    overrides = sampled.overrides
    r = min(DRAW_REPLICATIONS, setups[0].replications)
    drawn = drawn_ratios(
        base,
        grid,
        overrides,
        policies,
        nominal,
        ratios,
        replications=r,
        workers=workers,
        executor=executor,
        base_dir=base_dir,
        source=source,
        sequential=sequential,
    )
    points = [
        replace(
            p,
            vs_chain_interval90={
                t: {
                    ch: {
                        m: terms_at[p.concurrency].gain(
                            x.mean, ratio_interval(drawn.at[p.concurrency][t][ch][m], x.ci95)
                        )
                        for m, x in ms.items()
                    }
                    for ch, ms in d.items()
                }
                for t, d in p.vs_chain.items()
            },
        )
        for p in points
    ]
    crossings = []
    for t in tree_names:
        for ch in chain_names:
            for m in METRICS:
                nominal_cross = _crossing(
                    t, ch, m, grid, [p.vs_chain[t][ch][m].mean for p in points]
                )
                table = np.array([drawn.at[c][t][ch][m] for c in grid])  # (loads, D)

                def at(values: Sequence[float], t: str = t, ch: str = ch, m: str = m) -> Any:
                    x = _crossing(t, ch, m, grid, values)
                    return x.last_win, x.at

                ends = crossing_interval(
                    table, (nominal_cross.last_win, nominal_cross.first_loss), at
                )
                joined = (ends[0], ends[1])
                if nominal_cross.at is not None:  # and the loads where the term's band holds 1
                    band = model_band(
                        grid,
                        [p.vs_chain[t][ch][m].mean for p in points],
                        terms_at,
                        nominal_cross.at,
                    )
                    joined = join_ends(joined, band, integer=False)
                crossings.append(replace(nominal_cross, interval90=joined))
    stopped = any(n < base.simulation.replications for n in ran.values())
    beyond = [p for p in points if p.beyond_measured]
    included = any(x.active for x in terms_at.values())
    note = beyond_measured_note(top, beyond[0].mean_batch.mean, included) if beyond else None
    # what the intervals hold where fewer than two draws ran (every ratio and crossing
    # has its Monte Carlo interval): draw_intervals.py ``IntervalSources``
    held = sources90(drawn.run, (), bool(sampled.inputs))
    return TreeLoadResult(
        scenario=scenario.name,
        concurrencies=grid,
        drafts=drafts,
        points=tuple(points),
        replications=base.simulation.replications,
        requests=base.workload.requests,
        seed=base.simulation.seed,
        assumptions=(
            *notes,
            *((describe(FIRST, base.simulation.replications),) if stopped else ()),
            *setups[0].assumptions,
            "common draws: drafts compared on the same users and acceptance draws at every "
            "load; the verify "
            f"covers {', '.join(f'{n}: {verify_tokens(d)}' for n, d in drafts.items())} "
            "tokens per request",
        ),
        crossings=tuple(crossings),
        defaults=defaults,
        replications_run={c: n * len(drafts) for c, n in ran.items()},
        intervals={
            **sampled.doc(r),
            "label": held.label,
            "draws_run": drawn.run,
            **({"sources": held.value} if held is not IntervalSources.INPUTS else {}),
            # per load, the replications every draw ran there; the loads where the probe
            # draws (the first ``probe_draws``) ran a second replication and the others
            # kept one (tree_load_draws.py ``drawn_ratios``); the serving replications the
            # draws ran in all
            "replications_per_draw_at": {str(c): min(n) for c, n in drawn.replications.items()},
            **(
                {"probes_ran_two_at": probed, "probe_draws": len(probe_draws(len(overrides)))}
                if (probed := [c for c, n in drawn.replications.items() if len(set(n)) > 1])
                else {}
            ),
            "draw_replications_run": len(policies)
            * sum(sum(n) for n in drawn.replications.values()),
            "highest_measured_batch": top,
            "model_error": max(terms_at.values(), key=lambda x: x.gain_sigma).doc(),
            **({"note": note} if note else {}),
        },
    )


def load_settled(
    summary: ServingSummary, by: Mapping[str, str], trees: Sequence[str], chains: Sequence[str]
) -> bool:
    """Whether a load's first replications settle every comparison it answers
    (sim/studies/serving/sequential.py ``settled``: the mean more than ``SETTLED_SE``
    standard errors from its reference): each tree / chain ratio of every metric against
    1, and the best draft by per-user tok/s (``LoadPoint.best``) against each other draft,
    their paired difference against 0. ``summary``: the load's
    ``summarize_serving``; ``by``: draft name -> its name there."""
    per = {n: summary.policies[by[n]].per_replication for n in by}
    for t in trees:
        for ch in chains:
            if not all(settled(per[t][m] / per[ch][m], 1.0) for m in METRICS):
                return False
    speed = {n: per[n]["per_user_tok_s"] for n in by}
    best = max(speed, key=lambda n: float(np.mean(speed[n])))
    return all(settled(speed[best] - speed[n], 0.0) for n in speed if n != best)


def model_band(
    grid: Sequence[int],
    ratios: Sequence[float],
    terms_at: dict[int, ModelErrorTerm],
    at: float,
) -> tuple[float | None, float | None]:
    """The loads around a crossing at ``at`` where the model-error band of the tree /
    chain ratio (the gains' term at each load's decode batch) holds 1
    (sim/uncertainty/model_error.py ``crossing_band``; an open end: the grid's edge)."""
    if len(grid) < 2 or min(ratios) <= 0:
        return (at, at)
    return crossing_band(grid, ratios, [terms_at[c].gain_sigma for c in grid], at)


def _ratio_of(e: Estimate) -> Ratio:
    """An estimate's mean and interval."""
    return Ratio(e.mean, e.ci95)
