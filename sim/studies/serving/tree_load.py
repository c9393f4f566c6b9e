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
from sim.simulation.serving.setup import BASELINE, ServingSetup, serving_setup, with_load
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
    RatioDraws,
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
from sim.uncertainty.perturb import InputDraws, input_draws

__all__ = [
    "DEFAULT_TREE",
    "Crossing",
    "LoadPoint",
    "TreeLoadResult",
    "chain_names",
    "check_chains",
    "draft_name",
    "parse_tree",
    "table_row",
    "tree_load_study",
    "tree_names",
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


def tree_names(drafts: Mapping[str, Draft]) -> tuple[str, ...]:
    """The names of the trees among ``drafts``, in their order."""
    return tuple(n for n, d in drafts.items() if is_tree(d))


def chain_names(drafts: Mapping[str, Draft]) -> tuple[str, ...]:
    """The names of the chains among ``drafts`` (plain decoding, k = 0, is neither)."""
    return tuple(n for n, d in drafts.items() if not is_tree(d) and d != 0)


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
        return tree_names(self.drafts)

    @property
    def chains(self) -> tuple[str, ...]:
        return chain_names(self.drafts)

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


@dataclass(frozen=True, slots=True)
class _Asked:
    """The drafts a study compares (``_drafts_asked``): ``drafts`` by name (``off``, the
    chains, the trees), the scenario they run on (with the default rank profile where it
    gives no rank shape), and what was defaulted: ``defaults`` (a short line each) and
    ``notes`` (where each comes from, for the assumptions)."""

    scenario: Scenario
    drafts: dict[str, Draft]
    defaults: dict[str, str]
    notes: tuple[str, ...]
    trees: tuple[str, ...]
    chains: tuple[str, ...]


def _drafts_asked(
    scenario: Scenario,
    concurrencies: Sequence[int],
    chains: Sequence[int] | None,
    trees: Sequence[TreeDraft | Tree],
    source: str,
) -> _Asked:
    """Stage 1 of ``tree_load_study``: the drafts compared, checked, with their defaults.

    Trees: ``trees``, else the scenario's own tree, else ``DEFAULT_TREE``; chains:
    ``chains``, else the scenario's num_steps (the tree's depth when it drafts one). A
    scenario without a rank shape takes ``DEFAULT_RANK_PROFILE``'s. SpecsimError naming
    the option or field when a chain, a concurrency or the acceptance is missing or out of
    range."""
    own = draft_binding(scenario).draft
    tree_list: list[TreeDraft | Tree] = list(trees) or ([] if isinstance(own, int) else [own])
    defaults: dict[str, str] = {}
    notes: list[str] = []
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
    drafts: dict[str, Draft] = {"off": 0}
    drafts.update({draft_name(k): k for k in chain_list})
    drafts.update({draft_name(t): t for t in tree_list})
    return _Asked(scenario, drafts, defaults, tuple(notes), tree_names(drafts), chain_names(drafts))


@dataclass(frozen=True, slots=True)
class _Runs:
    """How the study's serving runs run: ``tree_load_study``'s options of the same names."""

    workers: int
    executor: Executor | None
    base_dir: Path | None
    source: str
    sequential: bool


def _check_study_size(
    base: Scenario,
    grid: Sequence[int],
    drafts: int,
    policies: Mapping[str, FixedK],
    terms: PassTerms,
    runs: _Runs,
) -> None:
    """Stage 2 of ``tree_load_study``: the size before any run (``check_serving_size``):
    every one of ``drafts`` drafts at every load, each load's requests those of the top one
    (its warm-up the longest), so that the estimate errs long."""
    largest = serving_setup(
        bind(with_load(base, concurrency=grid[-1], source=runs.source), terms.passes),
        base_dir=runs.base_dir,
        source=runs.source,
        policies=policies,
        terms=terms,
    )
    w = largest.plan.workload
    check_serving_size(
        len(grid) * drafts,
        largest.replications,
        w.requests + w.warmup,
        runs.workers,
        what="draft x load simulations",
        grown={
            "concurrencies": (len(grid) / len(DEFAULT_CONCURRENCIES), "loads"),
            # a load's warm-up is as many requests as its users
            "concurrency": (w.warmup / w.requests, "users"),
        },
    )


def _pair_ratios(
    records: Mapping[str, Any], slo: Any, trees: Sequence[str], chains: Sequence[str]
) -> PairArrays:
    """Per replication tree / chain of each metric (R,): ``ratios[tree][chain][metric]``,
    the ratio of the two drafts' replication means (``summarize_serving`` with ``slo``)."""
    summary = summarize_serving(records, slo, baseline=None)
    per = {n: summary.policies[n].per_replication for n in (*trees, *chains)}
    return {t: {ch: {m: per[t][m] / per[ch][m] for m in METRICS} for ch in chains} for t in trees}


def _load_records(
    setup: ServingSetup,
    by: Mapping[str, str],
    asked: _Asked,
    runs: _Runs,
) -> dict[str, list[Any]]:
    """One load's serving records, every draft on the same users: its first ``FIRST``
    replications when ``sequential``, and the rest of the seed's, continuing it, unless
    those settle every comparison the load answers (``load_settled``)."""
    count = FIRST if runs.sequential and setup.replications > FIRST else setup.replications
    records = simulate_serving(
        setup.plan,
        setup.draftings,
        replications=count,
        seed=setup.seed,
        workers=runs.workers,
        executor=runs.executor,
    ).records
    if count < setup.replications and not load_settled(
        summarize_serving(records, setup.slo, baseline=None), by, asked.trees, asked.chains
    ):
        rest = simulate_serving(
            setup.plan,
            setup.draftings,
            replications=setup.replications - count,
            seed=setup.seed,
            workers=runs.workers,
            executor=runs.executor,
            first=count,
        ).records
        records = {n: [*v, *rest[n]] for n, v in records.items()}
    return records


def _load_point(
    c: int, summary: ServingSummary, by: Mapping[str, str], pairs: PairArrays, term: ModelErrorTerm
) -> tuple[LoadPoint, ModelErrorTerm]:
    """One load's ``LoadPoint`` from its summary and its tree / chain ratios ``pairs``
    (each ``Ratio.across`` its replications), and the model-error term at its decode batch:
    the largest policy's mean decode batch (``beyond_measured`` above the highest batch the
    costs are measured at)."""
    per = {n: summary.policies[by[n]] for n in by}
    batch = max(p.mean_batch.mean for p in per.values())
    vs = {
        t: {ch: {m: Ratio.across(v) for m, v in ms.items()} for ch, ms in d.items()}
        for t, d in pairs.items()
    }
    point = LoadPoint(
        concurrency=c,
        per_user_tok_s={n: _ratio_of(per[n].metrics["per_user_tok_s"]) for n in by},
        aggregate_tok_s={n: per[n].aggregate_tok_s for n in by},
        accept_length={n: per[n].accept_length for n in by},
        mean_batch=per["off"].mean_batch,
        vs_chain=vs,
        beyond_measured=batch > term.highest_measured,
        decode_batch=batch,
    )
    return point, term.at(batch)


@dataclass(frozen=True, slots=True)
class _Nominal:
    """The nominal runs over the grid (``_nominal_loads``): a ``LoadPoint`` per load, and
    per load its tree / chain ratios per replication, the model-error term at its decode
    batch and the replications it ran; ``first``: the first load's setup; ``term``: the
    scenario's model-error term at batch 1."""

    points: list[LoadPoint]
    ratios: dict[int, PairArrays]
    terms_at: dict[int, ModelErrorTerm]
    ran: dict[int, int]
    first: ServingSetup
    term: ModelErrorTerm


def _nominal_loads(
    base: Scenario,
    grid: Sequence[int],
    asked: _Asked,
    policies: Mapping[str, FixedK],
    terms: PassTerms,
    runs: _Runs,
    progress: Progress | None,
) -> _Nominal:
    """Stage 3 of ``tree_load_study``: every draft at every load of ``grid`` on the
    scenario's seed (``_load_records``), summarized per load (``_load_point``); the ratios
    of every load taken with the first load's SLO."""
    by = {n: BASELINE if n == "off" else n for n in asked.drafts}
    term = model_error_term(base, 1.0)  # read once; each load takes it at its batch
    points: list[LoadPoint] = []
    pairs: dict[int, PairArrays] = {}
    terms_at: dict[int, ModelErrorTerm] = {}
    ran: dict[int, int] = {}
    setups: list[ServingSetup] = []
    for i, c in enumerate(grid):
        sc = with_load(base, concurrency=c, source=runs.source)
        setup = serving_setup(
            bind(sc, terms.passes),
            base_dir=runs.base_dir,
            source=runs.source,
            policies=policies,
            terms=terms,
        )
        setups.append(setup)
        records = _load_records(setup, by, asked, runs)
        ran[c] = len(next(iter(records.values())))
        summary = summarize_serving(records, setup.slo, baseline=None)
        pairs[c] = _pair_ratios(records, setups[0].slo, asked.trees, asked.chains)
        point, terms_at[c] = _load_point(c, summary, by, pairs[c], term)
        points.append(point)
        if progress:
            progress(i + 1, len(grid))
    return _Nominal(points, pairs, terms_at, ran, setups[0], term)


def _with_intervals(
    points: Sequence[LoadPoint], drawn: RatioDraws, terms_at: Mapping[int, ModelErrorTerm]
) -> list[LoadPoint]:
    """Stage 4 of ``tree_load_study``: every point with ``vs_chain_interval90``: each
    ratio's 90% interval from the draws' ratios joined with its Monte Carlo 95% interval
    (draw_intervals.py ``ratio_interval``), widened by the model-error term at the load's
    decode batch (``ModelErrorTerm.gain``)."""
    return [
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


def _crossings(
    grid: Sequence[int],
    points: Sequence[LoadPoint],
    drawn: RatioDraws,
    terms_at: dict[int, ModelErrorTerm],
    asked: _Asked,
) -> tuple[Crossing, ...]:
    """Stage 5 of ``tree_load_study``: per tree, chain and metric the crossing of the
    nominal ratios (``_crossing``) with its 90% interval: the draws' crossings
    (tree_load_draws.py ``crossing_interval``) joined, where it crosses, with the loads
    where the model-error band holds 1 (``model_band``)."""
    crossings = []
    for t in asked.trees:
        for ch in asked.chains:
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
    return tuple(crossings)


def _intervals_doc(
    sampled: InputDraws,
    replications: int,
    drawn: RatioDraws,
    policies: int,
    nominal: _Nominal,
    points: Sequence[LoadPoint],
) -> dict[str, Any]:
    """What the intervals took (``TreeLoadResult.intervals``): the draws' doc with
    ``replications`` a draw, what the intervals hold where fewer than two draws ran
    (draw_intervals.py ``IntervalSources``), the replications the draws ran (``policies``
    runs a replication), the widest model-error term and the note of loads beyond the
    highest measured batch."""
    top = nominal.term.highest_measured
    beyond = [p for p in points if p.beyond_measured]
    included = any(x.active for x in nominal.terms_at.values())
    note = beyond_measured_note(top, beyond[0].mean_batch.mean, included) if beyond else None
    held = sources90(drawn.run, (), bool(sampled.inputs))
    return {
        **sampled.doc(replications),
        "label": held.label,
        "draws_run": drawn.run,
        **({"sources": held.value} if held is not IntervalSources.INPUTS else {}),
        # per load, the replications every draw ran there; the loads where the probe
        # draws (the first ``probe_draws``) ran a second replication and the others
        # kept one (tree_load_draws.py ``drawn_ratios``); the serving replications the
        # draws ran in all
        "replications_per_draw_at": {str(c): min(n) for c, n in drawn.replications.items()},
        **(
            {"probes_ran_two_at": probed, "probe_draws": len(probe_draws(len(sampled.overrides)))}
            if (probed := [c for c, n in drawn.replications.items() if len(set(n)) > 1])
            else {}
        ),
        "draw_replications_run": policies * sum(sum(n) for n in drawn.replications.values()),
        "highest_measured_batch": top,
        "model_error": max(nominal.terms_at.values(), key=lambda x: x.gain_sigma).doc(),
        **({"note": note} if note else {}),
    }


def _assumptions(asked: _Asked, nominal: _Nominal) -> tuple[str, ...]:
    """The study's assumption lines: what was defaulted, the sequential replications where
    a load stopped early (``describe``), the serving setup's, and the common draws with
    every draft's verify tokens per request."""
    replications = asked.scenario.simulation.replications
    stopped = any(n < replications for n in nominal.ran.values())
    drafts = asked.drafts
    return (
        *asked.notes,
        *((describe(FIRST, replications),) if stopped else ()),
        *nominal.first.assumptions,
        "common draws: drafts compared on the same users and acceptance draws at every "
        "load; the verify "
        f"covers {', '.join(f'{n}: {verify_tokens(d)}' for n, d in drafts.items())} "
        "tokens per request",
    )


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

    In five stages: the drafts asked and their defaults (``_drafts_asked``); the size
    check (``_check_study_size``); the nominal runs at every load (``_nominal_loads``);
    the draws' runs (tree_load_draws.py ``drawn_ratios``), hence every ratio's 90%
    interval (``_with_intervals``); and the crossings with theirs (``_crossings``).
    """
    asked = _drafts_asked(scenario, concurrencies, chains, trees, source)
    base = asked.scenario
    drafts = asked.drafts
    grid = tuple(sorted(set(int(c) for c in concurrencies)))
    policies = {name: FixedK(d) for name, d in drafts.items() if name != "off"}
    terms = PassTerms()  # the plans at every load share their passes' terms
    runs = _Runs(workers, executor, base_dir, source, sequential)
    _check_study_size(base, grid, len(drafts), policies, terms, runs)
    nominal = _nominal_loads(base, grid, asked, policies, terms, runs, progress)
    first = nominal.first
    sampled = input_draws(bind(base), first.seed, draws)  # found once: drawn, described
    r = min(DRAW_REPLICATIONS, first.replications)

    def ratios(records: Mapping[str, Any]) -> PairArrays:
        return _pair_ratios(records, first.slo, asked.trees, asked.chains)

    drawn = drawn_ratios(
        base,
        grid,
        sampled.overrides,
        policies,
        nominal.ratios,
        ratios,
        replications=r,
        workers=workers,
        executor=executor,
        base_dir=base_dir,
        source=source,
        sequential=sequential,
    )
    points = _with_intervals(nominal.points, drawn, nominal.terms_at)
    return TreeLoadResult(
        scenario=base.name,
        concurrencies=grid,
        drafts=drafts,
        points=tuple(points),
        replications=base.simulation.replications,
        requests=base.workload.requests,
        seed=base.simulation.seed,
        assumptions=_assumptions(asked, nominal),
        crossings=_crossings(grid, points, drawn, nominal.terms_at, asked),
        defaults=asked.defaults,
        replications_run={c: n * len(drafts) for c, n in nominal.ran.items()},
        intervals=_intervals_doc(sampled, r, drawn, len(policies), nominal, points),
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
