"""The best draft length per batch size, as the engine configuration users paste, checked by
simulating it.

1. **Select.** At each closed-loop concurrency C of a grid, every fixed k (0 = plain
   decoding) runs on common random numbers; the best k maximises the objective's mean
   (per-user tok/s, aggregate tok/s, or goodput: requests per second meeting the TTFT and
   TPOT limits). k whose paired difference from the best has a 95% interval containing 0
   are reported as tied.
2. **Engine forms.** In a closed loop without think time the decode batch is about C, so
   the best k at C becomes the k of the batch sizes nearest C. Where the best k changes
   between two grid loads the boundary is the concurrency at which the two k tie (their
   paired gain bisected on common random numbers), otherwise the geometric midpoint: a
   vLLM ``num_speculative_tokens_per_batch_size`` table of ``[start_bs, end_bs, K]`` rows
   (vllm docs/features/speculative_decoding/dynamic_speculative_decoding.md;
   sim/model/policy.py ``KTable``), and an SGLang-style threshold: one k up to a batch
   size, plain decoding above (``DisableAbove``; SGLang PR 13376's
   ``--speculative-batch-size-threshold``, vLLM V0's ``speculative_disable_by_batch_size``).
   The threshold's k is the one whose objective, relative to the best at each load, is
   highest on average over the loads below the threshold. A threshold cannot express
   speculation that only starts paying at high load; then there is none, and the reason
   is given.
3. **Check, out of sample.** The table, the threshold and every fixed k run again at the
   grid loads and at the geometric midpoints between them, at another seed (``seed + 1``):
   at each load the paired difference table - fixed k with its 95% interval. The table
   "beats every fixed k within CI" when no fixed k is significantly better than it at any
   load.

No plotting (sim/report/decision_plots.py), no text (sim/report/best_k.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.model_error import Z90
from sim.model.policy import DisableAbove, FixedK, KTable, SpeculationPolicy
from sim.simulation.serving.metrics import Ratio
from sim.studies.engine_configs import engine_configs
from sim.studies.serving.break_even import cell_loads, find_crossings
from sim.studies.serving.draws import (
    DrawnPoints,
    interval90,
    near,
    replication_counts,
)
from sim.studies.serving.evaluator import (
    PointEvaluator,
    gain_band,
    load_term,
    same_point,
)
from sim.studies.serving.paired_metrics import (
    METRICS,
    Load,
    PolicyPoint,
    difference,
    gain,
    level,
    paired_difference,
    paired_values,
    ratio_doc,
)
from sim.studies.serving.sequential import EARLY, Leader, Pairs, describe, difference_tied
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = [
    "OBJECTIVES",
    "BestKResult",
    "Check",
    "LoadChoice",
    "best_k",
    "best_k_table",
    "check_loads",
    "disable_threshold",
    "table_row_k",
    "table_rows",
]

#: Objectives a best-k table can maximise.
OBJECTIVES: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s", "goodput_req_s")


@dataclass(frozen=True, slots=True)
class LoadChoice:
    """The selection at one concurrency: every k's objective and the best."""

    users: int
    levels: dict[int, Ratio]
    best: int
    tied: tuple[int, ...]
    #: k tied with the best inside the 90% interval from inputs and model of their paired
    #: difference (``input_ties``), and that interval by k (objective's unit, k - best).
    tied_by_inputs: tuple[int, ...] = ()
    interval90: dict[int, list[float] | None] | None = None
    #: The model-error term those intervals include (``ModelErrorTerm.doc``; None: none).
    model_error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "users": self.users,
            "best_num_steps": self.best,
            "tied": list(self.tied),
            "objective": {str(k): ratio_doc(r) for k, r in self.levels.items()},
        }
        if self.interval90 is not None:
            out["tied_within_inputs"] = list(self.tied_by_inputs)
            out["advantage_over_best_interval90"] = {str(k): v for k, v in self.interval90.items()}
        if self.model_error is not None:
            out["model_error"] = self.model_error
        return out


def midpoint_ends(choices: Sequence[LoadChoice]) -> list[int]:
    """The last batch size of each grid load's range: the geometric midpoint (rounded
    down) of neighbouring loads; the last load's own value."""
    ends = [math.floor(math.sqrt(a.users * b.users)) for a, b in itertools.pairwise(choices)]
    return [*ends, choices[-1].users]


def table_rows(
    choices: Sequence[LoadChoice], ends: Sequence[int] | None = None
) -> tuple[tuple[int, int, int], ...]:
    """vLLM ``[start_bs, end_bs, K]`` rows from the best k at increasing concurrencies:
    the batch sizes up to ``ends[i]`` (default ``midpoint_ends``) after the previous range
    take load i's k, equal neighbouring rows merged; the last row ends at the last grid
    load (vLLM uses the last K beyond it)."""
    ends = list(ends) if ends is not None else midpoint_ends(choices)
    rows: list[list[int]] = []
    start = 1
    for c, given_end in zip(choices, ends, strict=True):
        end = max(start, given_end)
        if rows and rows[-1][2] == c.best:
            rows[-1][1] = end
        else:
            rows.append([start, end, c.best])
        start = end + 1
    return tuple((a, b, k) for a, b, k in rows)


def disable_threshold(
    choices: Sequence[LoadChoice], rows: Sequence[tuple[int, int, int]]
) -> tuple[DisableAbove | FixedK | None, str]:
    """The SGLang-style form of the selection and what it means in words.

    Speculation on up to the end of the first run of rows with k > 0 and off beyond, if
    the best k stays 0 from there on; FixedK when it never turns off; None (with the
    reason) when plain decoding is best at batch 1 or speculation turns on again.
    """
    if rows[0][2] == 0:
        return None, (
            "plain decoding is best at batch size 1: a disable-above threshold cannot express "
            "speculation that only pays at higher load (use the table)"
        )
    first_off = next((i for i, r in enumerate(rows) if r[2] == 0), None)
    if first_off is not None and any(r[2] > 0 for r in rows[first_off:]):
        return None, (
            "speculation pays again after a plain-decoding range: a single threshold "
            "cannot express it (use the table)"
        )
    limit = rows[first_off - 1][1] if first_off is not None else None
    on = [c for c in choices if limit is None or c.users <= limit]
    ks = sorted({k for c in on for k in c.levels if k > 0})

    def score(k: int) -> float:
        return sum(c.levels[k].mean / c.levels[c.best].mean for c in on) / len(on)

    k_best = max(ks, key=lambda k: (score(k), -k))
    if limit is None:
        return FixedK(k_best), f"speculation pays at every load: k = {k_best} throughout"
    return DisableAbove(k_best, limit), (
        f"k = {k_best} up to batch size {limit}, plain decoding above "
        f"(SGLang --speculative-batch-size-threshold {limit}; vLLM V0 "
        f"speculative_disable_by_batch_size {limit + 1})"
    )


def refined_ends(
    evaluator: PointEvaluator, choices: Sequence[LoadChoice], objective: str
) -> tuple[list[int], list[str]]:
    """``midpoint_ends`` with each boundary between two different best k moved to where
    their paired gain crosses 1 (bisected between the two grid loads on common random
    numbers, sim/studies/serving/break_even.py); a boundary stays at the midpoint when the gain
    does not cross once (noise, or a third k best in between), said in the notes."""
    ends = midpoint_ends(choices)
    notes = []
    # each boundary bisects one grid cell (its estimate), two policies a midpoint: the
    # bisections' bound, for the progress total
    evaluator.expect(
        sum(
            2 * cell_loads(a.users, b.users, 1, integer=True, rtol=0.02)
            for a, b in itertools.pairwise(choices)
            if a.best != b.best
        )
    )
    for i, (a, b) in enumerate(itertools.pairwise(choices)):
        if a.best == b.best:
            continue
        lower, upper = FixedK(a.best), FixedK(b.best)

        def curve(x: float, lower: FixedK = lower, upper: FixedK = upper) -> Ratio:
            load = Load("concurrency", x)
            evaluator.ensure([(load, upper), (load, lower)], step=True)  # a pair: one step
            return gain(evaluator(load, upper), evaluator(load, lower), objective)

        def simulated(lower: FixedK = lower, upper: FixedK = upper) -> list[float]:
            return [
                float(load.value)
                for load, p in evaluator.memo
                if p == upper and load.kind == "concurrency" and (load, lower) in evaluator.memo
            ]

        found = find_crossings(  # the boundary reads the estimate, not its 95% interval
            [float(a.users), float(b.users)], curve, integer=True, seen=simulated, bands=False
        )
        if len(found) == 1:
            ends[i] = max(a.users, math.floor(found[0].at))
        else:
            notes.append(
                f"k {a.best} -> {b.best} between {a.users} and {b.users} users: no single "
                "crossing, boundary at the geometric midpoint"
            )
    return ends, notes


def table_row_k(table: Sequence[tuple[int, int, int]], users: int) -> int | None:
    """The k a vLLM table's row ``[lo, hi, k]`` gives a batch of ``users`` (None: none)."""
    return next((k for lo, hi, k in table if lo <= users <= hi), None)


def check_loads(users: Sequence[int]) -> list[int]:
    """The grid and the geometric midpoints between neighbouring grid loads (integers)."""
    out = set(users)
    for a, b in itertools.pairwise(users):
        mid = round(math.sqrt(a * b))
        if a < mid < b:
            out.add(mid)
    return sorted(out)


@dataclass(frozen=True, slots=True)
class Check:
    """One policy at one load of the check: its objective and its paired advantage over
    each fixed k (> 0: the policy is better)."""

    users: int
    objective: Ratio
    advantage: dict[int, Ratio]

    def worse_than(self) -> list[int]:
        """Fixed k significantly better than the policy here (interval below 0)."""
        return [k for k, r in self.advantage.items() if r.ci95 is not None and r.ci95[1] < 0.0]

    def better_than(self) -> list[int]:
        return [k for k, r in self.advantage.items() if r.ci95 is not None and r.ci95[0] > 0.0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "users": self.users,
            "objective": ratio_doc(self.objective),
            "advantage_over": {str(k): ratio_doc(r) for k, r in self.advantage.items()},
            "significantly_worse_than": self.worse_than(),
            "significantly_better_than": self.better_than(),
        }


@dataclass(frozen=True, slots=True)
class BestKResult:
    scenario: str
    objective: str
    num_steps: tuple[int, ...]
    choices: tuple[LoadChoice, ...]
    table: tuple[tuple[int, int, int], ...]
    threshold: DisableAbove | FixedK | None
    threshold_note: str
    check_seed: int
    checks: dict[str, tuple[Check, ...]]
    fixed: dict[int, tuple[Ratio, ...]]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    #: The scenario's draft method (acceptance.method), named in the engine configs.
    draft_method: str | None = None

    @property
    def beats_every_fixed_k(self) -> bool:
        """No fixed k is significantly better than the table at any load of the check."""
        return not any(c.worse_than() for c in self.checks["table"])

    def verdict(self, name: str = "table") -> dict[str, Any]:
        checks = self.checks[name]
        ks = sorted(checks[0].advantage)
        shortfalls = [
            (-c.advantage[k].mean / self.fixed[k][i].mean, k, c.users)
            for i, c in enumerate(checks)
            for k in c.worse_than()
            if self.fixed[k][i].mean
        ]
        worst = max(shortfalls, default=None)
        own = (
            {
                str(k): [
                    c.users
                    for c in checks
                    if k in c.worse_than() and table_row_k(self.table, c.users) == k
                ]
                for k in ks
            }
            if name == "table"
            else {}
        )
        return {
            "beats_every_fixed_k_within_ci": not any(c.worse_than() for c in checks),
            "worst_shortfall": (
                None
                if worst is None
                else {"relative": worst[0], "num_steps": worst[1], "users": worst[2]}
            ),
            "significantly_better_at": {
                str(k): [c.users for c in checks if k in c.better_than()] for k in ks
            },
            "significantly_worse_at": {
                str(k): [c.users for c in checks if k in c.worse_than()] for k in ks
            },
            # loads where the fixed k that beats the table is the table's own k there (the
            # table's server pays for having speculation configured; no boundary to move)
            "worse_where_the_table_runs_that_k": {k: u for k, u in own.items() if u},
        }

    def to_dict(self) -> dict[str, Any]:
        spec = METRICS[self.objective]
        t = self.threshold
        return {
            "scenario": self.scenario,
            "objective": self.objective,
            "objective_label": spec.label,
            "objective_unit": spec.unit,
            "num_steps": list(self.num_steps),
            **self.settings,
            "selection": [c.to_dict() for c in self.choices],
            "vllm_table": [list(r) for r in self.table],
            "vllm_speculative_config": {
                "num_speculative_tokens": max(r[2] for r in self.table),
                "num_speculative_tokens_per_batch_size": [list(r) for r in self.table],
            },
            "sglang_threshold": (
                None
                if t is None
                else {
                    "num_steps": t.k,
                    "disable_above_batch": getattr(t, "max_batch", None),
                }
            ),
            "sglang_threshold_note": self.threshold_note,
            "engine_configs": engine_configs(self.table, self.draft_method),
            "check": {
                "seed": self.check_seed,
                "users": [c.users for c in self.checks["table"]],
                "fixed": {
                    str(k): [ratio_doc(r) for r in rs] for k, rs in sorted(self.fixed.items())
                },
                "policies": {
                    name: {"points": [c.to_dict() for c in cs], **self.verdict(name)}
                    for name, cs in self.checks.items()
                },
            },
            "runs": self.runs,
            "assumptions": list(self.assumptions),
        }


#: The k a best-k selection draws besides the best: the runner-up and every k whose
#: objective is within this share of the best's (a k further behind is not near a tie).
CONTENDER_SHARE = 0.05


def _select(
    evaluator: PointEvaluator,
    users: Sequence[int],
    ks: Sequence[int],
    objective: str,
    draws: DrawnPoints | None = None,
) -> list[LoadChoice]:
    loads = [Load("concurrency", c) for c in users]
    evaluator.ensure([(load, FixedK(k)) for load in loads for k in ks])
    if draws is not None:
        # every load's first draw batch at once (what ``input_ties`` asks first at each:
        # the selection's points at one load change only where its draws read them), so
        # each draw's points run as one unit (``DrawnPoints.ensure``)
        first: list[tuple[Load, Any]] = []
        for load in loads:
            points = {k: evaluator(load, FixedK(k)) for k in ks}
            choice = _choice(load, points, objective)
            term = load_term(draws.evaluator.builder, points)
            first += [(load, FixedK(k)) for k in _drawn_ks(choice, term)]
        stages = draw_stages(draws)
        draws.ensure(first, stages[0])
        # then each next stage of draws, in one batch, where the draws run so far give an
        # interval reaching beyond the band (``input_ties`` decides again on the values
        # it reads)
        for stage in stages[1:]:
            rest = []
            for load in loads:
                points = {k: evaluator(load, FixedK(k)) for k in ks}
                choice = _choice(load, points, objective)
                term = load_term(draws.evaluator.builder, points)
                rest += _beyond_band(draws, load, choice, points, objective, term)
            if not rest:
                break
            draws.ensure(list(dict.fromkeys(rest)), stage)
    out = []
    for load in loads:
        while True:  # again when the draws ran a point's other replications
            points = {k: evaluator(load, FixedK(k)) for k in ks}
            choice = _choice(load, points, objective)
            if draws is not None:
                term = load_term(draws.evaluator.builder, points)
                choice = input_ties(draws, load, choice, points, objective, term)
            if all(evaluator(load, FixedK(k)) is p for k, p in points.items()):
                break
        out.append(choice)
    return out


def _choice(load: Load, points: dict[int, PolicyPoint], objective: str) -> LoadChoice:
    """The best k at ``load`` and the k tied with it (their difference's 95% interval
    reaches 0)."""
    ks = sorted(points)
    levels = {k: level(p, objective) for k, p in points.items()}
    best = max(ks, key=lambda k: (levels[k].mean, -k))
    tied = tuple(
        k
        for k in ks
        if k != best
        and (r := difference(points[k], points[best], objective)).ci95 is not None
        and r.ci95[1] >= 0.0
    )
    return LoadChoice(int(load.value), levels, best, tied)


def _drawn_ks(choice: LoadChoice, term: ModelErrorTerm | None) -> list[int]:
    """The k whose draws ``input_ties`` reads at a load: the best, then its contenders
    (the runner-up and every k within ``CONTENDER_SHARE`` of the best, widened by the
    model-error band of ``term``), in increasing k."""
    best, levels = choice.best, choice.levels
    ranked = sorted((k for k in levels if k != best), key=lambda k: -levels[k].mean)
    top = abs(levels[best].mean)
    band = 0.0 if term is None else Z90 * term.gain_sigma
    share = 1.0 - (1.0 - CONTENDER_SHARE) * math.exp(-band)
    close = [k for k in ranked if levels[best].mean - levels[k].mean <= share * top]
    return [best, *sorted(set(ranked[:1]) | set(close))]


#: Draws the first stage of ``draw_stages`` runs (a scrambled Sobol sequence's first two
#: points: a balanced net of the inputs of their own, one in each half of every input).
FIRST_DRAWS = 2


def draw_stages(draws: DrawnPoints) -> list[range]:
    """The draws ``input_ties`` runs in turn at its contenders: with sequential draws the
    first ``FIRST_DRAWS``, then doubling (2, 4, 8 of 8: each stage's end a scrambled Sobol
    sequence's first 2^m points, a balanced net of their own), the next stage only where
    the draws run so far give an interval reaching beyond the model-error band
    (``inside_band``); otherwise every draw at once."""
    n = len(draws.draws)
    if not draws.sequential or n <= FIRST_DRAWS:
        return [range(n)]
    ends = [FIRST_DRAWS]
    while ends[-1] * 2 < n:
        ends.append(ends[-1] * 2)
    ends.append(n)
    return [range(lo, hi) for lo, hi in zip([0, *ends[:-1]], ends, strict=True)]


def _next_stage(draws: DrawnPoints, keys: Sequence[tuple[Load, Any]]) -> range | None:
    """The first stage of ``draw_stages`` with a draw (one the scenario has not rejected)
    that has not run one of ``keys``; None: every draw has run them."""
    for stage in draw_stages(draws):
        got = [draws.points[i] for i in stage]
        if any(g is not None and any(k not in g for k in keys) for g in got):
            return stage
    return None


def inside_band(
    values: Sequence[float],
    ends: list[float] | None,
    nominal: float,
    term: ModelErrorTerm | None,
    top: float,
) -> bool:
    """Whether a difference's 90% interval from the draws run, ``ends`` (``interval90`` of
    their answers ``values`` and the nominal's Monte Carlo 95%), lies inside the
    difference's model-error band around ``nominal`` (``ModelErrorTerm.difference`` of
    the best's level ``top``): the answer's interval is then the band whatever more draws
    give, since the band is the least it holds, and it holds the interval of the draws
    run, itself a 90% interval (their normal prediction interval takes Student's t on
    their own count: 2 draws, t(0.95, 1) = 6.31 standard deviations x sqrt(1 + 1/2); 4,
    2.35 x sqrt(1 + 1/4); against 1.89 x sqrt(1 + 1/8) on 8). False without a band, an
    interval, or two finite answers (no standard deviation)."""
    if term is None or not term.gain_sigma > 0 or ends is None or len(values) < 2:
        return False
    band = term.difference(nominal, [nominal, nominal], top)
    return band is not None and band[0] <= ends[0] and ends[1] <= band[1]


def _beyond_band(
    draws: DrawnPoints,
    load: Load,
    choice: LoadChoice,
    points: dict[int, PolicyPoint],
    objective: str,
    term: ModelErrorTerm | None,
) -> list[tuple[Load, Any]]:
    """The keys at ``load`` (each contender's and the best's) whose draws run so far
    give an interval reaching beyond the band (``inside_band``): those whose next stage
    ``input_ties`` runs, asked before it in one batch for every load (``_select``)."""
    best, levels = choice.best, choice.levels
    top = abs(levels[best].mean)
    higher = METRICS[objective].higher_is_better

    def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return paired_difference(a, b, higher)

    out: list[tuple[Load, Any]] = []
    for k in _drawn_ks(choice, term)[1:]:
        keys = [(load, FixedK(k)), (load, FixedK(best))]
        if _next_stage(draws, keys) is None:
            continue  # every draw has run both
        nominal = difference(points[k], points[best], objective)
        own = paired_difference(*paired_values(points[k], points[best], objective), higher)
        drawn = draws.shifts(keys, objective, pair, nominal.mean, own)
        values = [float(v) for v in drawn if not np.isnan(v)]
        if not inside_band(values, interval90(values, nominal.ci95), nominal.mean, term, top):
            out += keys
    return out


def input_ties(
    draws: DrawnPoints,
    load: Load,
    choice: LoadChoice,
    points: dict[int, PolicyPoint],
    objective: str,
    term: ModelErrorTerm | None = None,
) -> LoadChoice:
    """``choice`` with the k tied with the best inside the 90% interval from inputs and
    model (sim/studies/serving/draws.py) of their paired difference k - best: the
    contenders (``CONTENDER_SHARE``) and the best in every draw, each draw's difference
    the nominal one moved by the paired shift, 5-95% over the draws joined with the
    difference's 95% interval; a k whose interval reaches 0 is a tie. ``term``: the
    intervals also hold the model's error of the ratio k / best at the load's decode
    batch (sim/uncertainty/model_error.py, the gains' term: two policies on one
    server), and a k within that band of the best is a contender too. Sequential draws
    run in stages (``draw_stages``): the first 2, then 4, then all 8, each next stage
    only for a difference whose interval from the draws run reaches beyond that band
    (``inside_band``)."""
    best, levels = choice.best, choice.levels
    top = abs(levels[best].mean)
    contenders = _drawn_ks(choice, term)[1:]
    draws.ensure([(load, FixedK(k)) for k in [best, *contenders]], draw_stages(draws)[0])
    higher = METRICS[objective].higher_is_better

    def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return paired_difference(a, b, higher)

    intervals: dict[int, list[float] | None] = {}
    for k in contenders:
        keys = [(load, FixedK(k)), (load, FixedK(best))]
        a_pt, b_pt = points[k], points[best]
        while True:  # the nominal points in full where a draw or an end is near 0
            nominal = difference(a_pt, b_pt, objective)
            own = paired_difference(*paired_values(a_pt, b_pt, objective), higher)
            drawn = draws.shifts(keys, objective, pair, nominal.mean, own)

            def joined(ends: list[float] | None, mean: float = nominal.mean) -> list[float] | None:
                return ends if term is None else term.difference(mean, ends, top)

            if draws.settle(keys, None, drawn, own, nominal.ci95, objective, pair, joined):
                continue  # sequential draws: their other replications ran
            values = [float(v) for v in drawn if not np.isnan(v)]
            ends = interval90(values, nominal.ci95)
            stage = _next_stage(draws, keys)
            if stage is not None and not inside_band(values, ends, nominal.mean, term, top):
                draws.ensure(keys, stage)  # the next draws: those run so far are not enough
                continue
            reached = np.array([*values, *(ends or ())])  # the draws and the interval's ends
            sigma = 0.0 if term is None else term.gain_sigma * top  # the band, in the units
            if not (near(reached, own, 0.0, sigma) and draws.evaluator.complete(keys)):
                break
            a_pt, b_pt = (draws.evaluator(*key) for key in keys)
        intervals[k] = ends if term is None else term.difference(nominal.mean, ends, top)
    tied_inputs = tuple(k for k, iv in intervals.items() if iv is not None and iv[1] >= 0.0)
    return replace(
        choice,
        tied_by_inputs=tied_inputs,
        interval90=intervals,
        model_error=None if term is None else term.doc(),
    )


def _first_draws_note(draws: DrawnPoints | None, choices: Sequence[LoadChoice]) -> tuple[str, ...]:
    """The assumption for the selection's differences whose interval stopped at an early
    stage of the draws (``draw_stages``, ``inside_band``); none: nothing."""
    stages = None if draws is None else draw_stages(draws)
    if draws is None or stages is None or len(stages) < 2:
        return ()
    accepted = sum(1 for got in draws.points if got is not None)
    stopped: dict[int, list[str]] = {}
    for c in choices:
        for k in c.interval90 or {}:
            key = (Load("concurrency", c.users), FixedK(k))
            ran = sum(1 for got in draws.points if got is not None and key in got)
            if 0 < ran < accepted:
                stopped.setdefault(ran, []).append(
                    f"k = {k} at {c.users} user{'' if c.users == 1 else 's'}"
                )
    if not stopped:
        return ()
    ends = ", ".join(str(stage.stop) for stage in stages)
    return (
        f"draws: each difference's interval from inputs and model runs the draws in "
        f"stages ({ends} of the {len(draws.draws)}: each a balanced net of the inputs of "
        f"its own) and the next stage only where the draws run so far give a 90% interval "
        f"(their 5-95% and normal prediction interval, Student's t on their count, joined "
        f"with the nominal's Monte Carlo 95%) reaching beyond the difference's model-error "
        f"band; elsewhere the interval is the band, which holds theirs, and more draws "
        f"cannot narrow it: "
        + "; ".join(f"on {n} draws: {', '.join(names)}" for n, names in sorted(stopped.items())),
    )


def _check(
    evaluator: PointEvaluator,
    users: Sequence[int],
    ks: Sequence[int],
    objective: str,
    policies: dict[str, SpeculationPolicy],
) -> tuple[dict[str, tuple[Check, ...]], dict[int, tuple[Ratio, ...]]]:
    loads = [Load("concurrency", c) for c in users]
    all_policies = [*policies.values(), *(FixedK(k) for k in ks)]
    evaluator.ensure([(load, p) for load in loads for p in all_policies])
    checks = {}
    for name, policy in policies.items():
        rows = []
        for load in loads:
            mine = evaluator(load, policy)
            rows.append(
                Check(
                    int(load.value),
                    level(mine, objective),
                    {k: difference(mine, evaluator(load, FixedK(k)), objective) for k in ks},
                )
            )
        checks[name] = tuple(rows)
    fixed = {k: tuple(level(evaluator(load, FixedK(k)), objective) for load in loads) for k in ks}
    return checks, fixed


def _tie_note(
    checker: PointEvaluator,
    users: Sequence[int],
    policies: dict[str, SpeculationPolicy],
    ks: Sequence[int],
    objective: str,
) -> tuple[str, ...]:
    """The assumption for the check's pairs that stopped on an exact tie (sequential.py
    ``exact_tie``: the form and the fixed k agree on every replication run, and one of
    the two stopped before all of them); none: nothing."""
    ties = []
    for c in users:
        load = Load("concurrency", c)
        for name, policy in policies.items():
            for k in ks:
                a, b = checker(load, policy), checker(load, FixedK(k))
                short = min(a.replications, b.replications)
                if a is not b and short < checker.replications and difference_tied(a, b, objective):
                    ties.append(f"{name} and k = {k} at {c} user{'' if c == 1 else 's'} ({short})")
    if not ties:
        return ()
    return (
        "the check at seed + 1: a form and a fixed k that agree exactly on every "
        "replication run, from the first look on (the same decisions on the same random "
        "numbers: the form drafts that k at every batch the load reached), are taken as "
        "tied and stop there (assumed: a replication not run would agree too); "
        "replications run: " + "; ".join(ties),
    )


def _early_note(looked: dict[str, PointEvaluator]) -> tuple[str, ...]:
    """The assumption for the parts of the study (by name) whose evaluator asked its rule
    early (``PointEvaluator(early=...)``); none: nothing."""
    early = {name: ev for name, ev in looked.items() if ev.sequential and ev.early}
    if not early:
        return ()
    ev = next(iter(early.values()))
    return (f"early looks: {' and '.join(early)}, {describe(ev.first, ev.replications, ev.early)}",)


def best_k_table(
    evaluator: PointEvaluator,
    users: Sequence[int],
    num_steps: Sequence[int],
    objective: str = "per_user_tok_s",
    refine: bool = True,
    draws: DrawnPoints | None = None,
    early: Sequence[int] = (),
) -> tuple[tuple[tuple[int, int, int], ...], list[LoadChoice], list[str]]:
    """Steps 1 and 2 without the check: (table rows, selection, notes); ``draws``: ties
    within the 90% interval from inputs and model too (``input_ties``); ``early``: the
    boundaries' bisections ask the evaluator's rule at these counts first
    (``PointEvaluator(early=...)``: nothing but their sides reads those points)."""
    ks = sorted({0, *num_steps})
    choices = _select(evaluator, sorted(set(users)), ks, objective, draws)
    if not refine:
        return table_rows(choices), choices, []
    evaluator.early = tuple(n for n in early if n < evaluator.first)
    ends, notes = refined_ends(evaluator, choices, objective)
    return table_rows(choices, ends), choices, notes


def best_k(
    evaluator: PointEvaluator,
    users: Sequence[int],
    num_steps: Sequence[int],
    *,
    objective: str = "per_user_tok_s",
    refine: bool = True,
    check: PointEvaluator | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    draft_method: str | None = None,
    sequential: bool = True,
) -> BestKResult:
    """Select the best k (0 and ``num_steps``) at each of ``users``, build the engine forms
    and check them at another seed (``check``: an evaluator of the same plans at that
    seed; default ``evaluator``'s builder at ``evaluator.seed + 1``). ``refine``: move each
    boundary between two best k to where they tie (``refined_ends``); otherwise
    boundaries sit at the geometric midpoints of the grid. ``draws``: each selection's
    ties within the 90% interval from inputs and model (``input_ties``). ``sequential``:
    a point stops at its first replications where its comparisons are settled
    (sim/studies/serving/sequential.py: at a selection load each k against the leader,
    ``Leader``; in the check each engine form against every fixed k, ``Pairs``, asked
    first at ``EARLY`` replications: nothing but the check's own verdicts reads its
    points, no draw and no crossing)."""
    if objective not in OBJECTIVES:
        raise SpecsimError(
            f"unknown objective {objective!r} (one of {', '.join(OBJECTIVES)})", param="objective"
        )
    if (
        METRICS[objective].needs_slo
        and evaluator.slo.ttft_ms is None
        and (evaluator.slo.tpot_ms is None)
    ):
        raise SpecsimError(
            "goodput needs a TTFT or TPOT limit (serving.ttft_slo_ms / tpot_slo_ms)",
            param="objective",
        )
    grid = sorted(set(int(u) for u in users))
    if len(grid) < 1 or grid[0] < 1:
        raise SpecsimError("concurrencies must be >= 1", param="concurrency")
    ks = sorted({0, *num_steps})
    if len(ks) < 2 or ks[0] < 0:
        raise SpecsimError("give draft lengths >= 1 to choose from", param="num_steps")
    # with draws the selection's 90% intervals hold the gains' model-error band: a
    # comparison precise against it stops too (sim/studies/serving/sequential.py)
    band = gain_band(evaluator.builder) if draws is not None else None
    if sequential:
        evaluator.rule = Leader(objective, order=lambda p: -p.max_k, band=band)  # ties: shorter k
    rows, choices, notes = best_k_table(
        evaluator, grid, ks, objective, refine, draws, (EARLY,) if sequential else ()
    )
    threshold, note = disable_threshold(choices, rows)
    policies: dict[str, SpeculationPolicy] = {"table": KTable(rows)}
    same = len(rows) == 1 and threshold == FixedK(rows[0][2])
    if threshold is not None and not same:  # a one-row table is its own threshold
        policies["threshold"] = threshold
    checker = check or PointEvaluator(
        evaluator.builder,
        replications=evaluator.replications,
        seed=evaluator.seed + 1,
        slo=evaluator.slo,
        executor=evaluator.executor,
        progress=evaluator.progress,
        same=same_point,
        early=(EARLY,) if sequential else (),
    )
    if sequential:
        pairs = tuple((p, FixedK(k)) for p in policies.values() for k in ks)
        checker.rule = Pairs(objective, pairs)
    checks, fixed = _check(checker, check_loads(grid), ks, objective, policies)
    counts = replication_counts(evaluator, draws)
    counts["replications_run"] += checker.replications_run
    early_note = _early_note(
        {"the boundaries' bisections": evaluator, "the check at seed + 1": checker}
    )
    if checker.sequential:
        early_note = (*early_note, *_tie_note(checker, check_loads(grid), policies, ks, objective))
    return BestKResult(
        scenario=scenario,
        objective=objective,
        num_steps=tuple(ks),
        choices=tuple(choices),
        table=rows,
        threshold=threshold,
        threshold_note=note,
        check_seed=checker.seed,
        checks=checks,
        fixed=fixed,
        runs=evaluator.runs + checker.runs,
        settings={**dict(settings or {}), **counts},
        assumptions=(
            *assumptions,
            *notes,
            *(
                (describe(evaluator.first, evaluator.replications, band=band is not None),)
                if evaluator.sequential
                else ()
            ),
            *early_note,
            *(note for note in [None if draws is None else draws.describe()] if note),
            *_first_draws_note(draws, choices),
        ),
        draft_method=draft_method,
    )
