"""Chain or tree? The lowest top-1 rate per (num_steps, topk, num_draft_tokens) that reaches
each tok/s target, the best tree next to the best chain, and the best tree of the same
budget next to SGLang's.

The lever is the top-1 rate at depth 1, x (the role alpha plays for a chain): every top-1
mean rate moves with it in proportion (the scenario's per-depth top-1 profile and its mix
keep their shape) and the lower ranks follow by the residual shares of the scenario's rank
profile (sim/model/tree/rates.py). SGLang's tree is rebuilt at every x (a calibrated
drafter, sim/model/tree/build.py).

Method (closed forms; sim/model/tree/required.py):

1. Each configuration's cycle (sim/model/tree/cost.py: num_steps - 1 drafter passes over
   topk beams, a verify over num_draft_tokens tokens, the draft extend) gives the accept
   length a target needs, E[L] >= target x T / 1000 (renewal-reward).
2. A table over all configurations at once, from one beam run per grid point and topk, at
   the population's mean rates (no per-request spread), interpolated on a grid of x.
3. The best configuration with topk > 1 and the best chain (topk = 1) are refined by
   bisection on E[L] over requests (with the scenario's classes and Beta spread), and the
   best tree of the same budget, depth and width is solved beside the best one.
4. Optionally (``simulate``) both refined answers are solved again by Monte Carlo
   bisection on common random numbers (sim/studies/bisection.py), hinted by the closed
   form: the per-request mean tok/s over the scenario's output_tokens (the last cycle's
   overshoot counts), with a 95% interval from the Monte Carlo noise.

With verify passes that grow little with tokens (dense models at batch 1) a tree buys
accept length for nearly nothing; with a verify that grows with every token (MoE experts
read, ungraphed passes) the extra drafts cost what they add. The answer says which.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim.binding.acceptance_model import acceptance_model, rank_shares
from sim.binding.bound import bind
from sim.binding.decompose import scenario_hardware
from sim.binding.inputs import UncertainInput, draw_inputs
from sim.binding.tree_cost import tree_cost
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import PassMemo
from sim.model.cycle import PassTimes
from sim.model.tree.acceptance import OptimalDraft, TreeAcceptance, TreeDraft
from sim.model.tree.build import candidate_count
from sim.model.tree.required import RankShape, required_scale, required_top1_table
from sim.scenario.overrides import pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.studies.bisection import (
    ALPHA_XTOL,
    Criterion,
    Evaluator,
    Probe,
    SimulateFn,
    solve_root,
)
from sim.uncertainty.interval import INTERVAL_LABEL, SAMPLES, Interval, interval90_of
from sim.uncertainty.tree_required_draws import required_top1_draws
from sim.uncertainty.tree_sampled import sampled_tree

__all__ = ["TreeSearchResult", "search_trees", "tree_configs"]

#: num_draft_tokens tried for trees unless given (SGLang's examples use 4..64).
DRAFT_TOKENS = (4, 6, 8, 10, 12, 16, 24, 32, 48, 64)

Config = tuple[int, int, int]

#: Why a scenario's answers carry no 90% interval from inputs and model (a per-request
#: spread: the draws' E[L] over requests at every trial rate is not done). A mix without
#: a spread gets its intervals (each draw's classes, sim/uncertainty/tree_required_draws.py).
NO_INTERVAL_NOTE = (
    "no 90% interval from inputs and model: acceptance has a per-request spread, whose "
    "E[L] over requests (a Beta quadrature per class) each draw would re-integrate at every "
    "trial top-1 rate (not done: some 30 times the search's cost; `specsim run` gives a "
    "tree's tok/s its interval, `specsim search` without --topk the chain's required rates "
    "theirs)"
)


@dataclass(frozen=True, slots=True)
class SearchDraws:
    """The draws of the uncertain inputs the intervals are re-solved in, (n, F): the
    chain's (``answer_uncertainty``'s, same scenario, seed and count)."""

    inputs: tuple[UncertainInput, ...]
    values: np.ndarray
    seed: int

    def note(self, mix: bool = False) -> str:
        """What the intervals are; ``mix``: acceptance is a workload mix."""
        shape = (
            "the draw's classes, E[L] mixed with their weights" if mix else "the draw's top-1 shape"
        )
        return (
            f"{INTERVAL_LABEL}: {self.values.shape[0]} Sobol draws (seed {self.seed}, the "
            "chain search's); in each the best tree's and best chain's top-1 rate re-solved, "
            "where one reaches the target at the nominal inputs "
            f"(SGLang's tree rebuilt at each trial rate from {shape}, the "
            "cycle from the draw's pass times; secant steps in a bracket from the nominal root)"
        )


def search_draws(base: Scenario, samples: int = SAMPLES) -> SearchDraws:
    """The chain search's draws of ``base``'s inputs (a tree searched as its chain)."""
    chain = base
    if base.speculation.is_tree:
        chain = with_overrides(base, {"speculation.topk": 1}, source="uncertainty")
    inputs = bind(chain).inputs
    seed = chain.simulation.seed
    return SearchDraws(inputs, draw_inputs(chain, inputs, samples, seed), seed)


def tree_configs(
    num_steps: Iterable[int], topks: Iterable[int], draft_tokens: Iterable[int]
) -> list[Config]:
    """Every (num_steps, topk, num_draft_tokens) SGLang builds: topk = 1 only with
    num_steps + 1 tokens; a tree with 2 <= num_draft_tokens <= its candidates + 1."""
    out = []
    for k in sorted(set(topks)):
        for s in sorted(set(num_steps)):
            if k == 1:
                out.append((s, 1, s + 1))
                continue
            out += [
                (s, k, n) for n in sorted(set(draft_tokens)) if 2 <= n <= candidate_count(s, k) + 1
            ]
    return out


@dataclass(frozen=True, slots=True)
class Refined:
    """One configuration solved exactly: ``top1`` by bisection on E[L] over requests (the
    long-run, renewal-reward answer), ``top1_monte_carlo`` by Monte Carlo bisection on
    common random numbers from that hint (per-request mean tok/s over the scenario's
    output_tokens, so the last cycle's overshoot counts), with its 95% interval."""

    num_steps: int
    topk: int
    num_draft_tokens: int
    cycle_ms: float
    required_accept_length: float
    top1: float | None
    optimal_top1: float | None  # the best tree of the same budget, depth and width
    drafts_per_depth: list[int]
    top1_monte_carlo: float | None = None
    top1_ci95: tuple[float | None, float | None] = (None, None)
    evaluations: int = 0
    #: the closed-form ``top1``'s 90% interval from inputs and model (None: not solved)
    top1_interval90: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "topk": self.topk,
            "num_draft_tokens": self.num_draft_tokens,
            "cycle_ms": self.cycle_ms,
            "required_accept_length": self.required_accept_length,
            "top1": self.top1,
            "optimal_tree_top1": self.optimal_top1,
            "drafts_per_depth": self.drafts_per_depth,
            "top1_monte_carlo": self.top1_monte_carlo,
            "top1_ci95": list(self.top1_ci95),
            "evaluations": self.evaluations,
            "top1_interval90": _listed(self.top1_interval90),
            "top1_unreachable_share": (
                None if self.top1_interval90 is None else self.top1_interval90.unreachable
            ),
        }


def _listed(interval: Interval | None) -> list[float | None] | None:
    return None if interval is None else interval.to_list()


@dataclass(frozen=True, slots=True)
class TreeTarget:
    tok_s: float
    table: dict[Config, float | None]  # interpolated top-1 per configuration
    needs: dict[Config, float]
    cycle_ms: dict[Config, float]
    best_tree: Refined | None
    best_chain: Refined | None

    def best_per_topk(self) -> dict[int, tuple[Config, float]]:
        out: dict[int, tuple[Config, float]] = {}
        for cfg, x in self.table.items():
            if x is None:
                continue
            k = cfg[1]
            if k not in out or (x, cfg) < (out[k][1], out[k][0]):
                out[k] = (cfg, x)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "best_tree": self.best_tree.to_dict() if self.best_tree else None,
            "best_chain": self.best_chain.to_dict() if self.best_chain else None,
            "best_per_topk": [
                {"num_steps": c[0], "topk": c[1], "num_draft_tokens": c[2], "top1": x}
                for _, (c, x) in sorted(self.best_per_topk().items())
            ],
            "configurations": [
                {
                    "num_steps": c[0],
                    "topk": c[1],
                    "num_draft_tokens": c[2],
                    "cycle_ms": self.cycle_ms[c],
                    "required_accept_length": self.needs[c],
                    "top1": x,
                }
                for c, x in self.table.items()
            ],
        }


@dataclass(frozen=True, slots=True)
class TreeSearchResult:
    scenario: str
    rank_shape: str
    shares: tuple[float, ...]
    depth_scale: tuple[float, ...]
    targets: tuple[TreeTarget, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "lever": "top-1 rate at depth 1 (every top-1 mean scaled by one factor; ranks 2.. "
            "by residual shares; SGLang's tree rebuilt at each rate)",
            "rank_shape": self.rank_shape,
            "residual_shares": list(self.shares),
            "top1_depth_scale": list(self.depth_scale),
            "notes": list(self.notes),
            "targets": [t.to_dict() for t in self.targets],
        }


def _passes_for(hw: PassModel, max_tokens: int) -> PassTimes:
    """The pass times of the base's hardware model ``hw`` with the verify table long enough
    for ``max_tokens`` (a table-based verify, e.g. MoE experts growth, is tabulated by the
    hardware model, not extended linearly)."""
    passes = hw.passes
    table = passes.verify_table_ms
    if table is not None and len(table) < max_tokens:
        passes = replace(passes, verify_table_ms=hw.verify_table_ms(max_tokens))
    return passes


def _shape(base: Scenario, max_topk: int, max_steps: int) -> tuple[RankShape, str]:
    spec = base.acceptance
    assert spec is not None
    if spec.rank_shape() is None:
        raise SpecsimError(
            "the tree search needs a rank profile for ranks 2..topk: give "
            "acceptance.rank_rates or acceptance.rank_profile (e.g. --set "
            "acceptance.rank_profile=sequoia-jf68m-llama2-7b)",
            field="acceptance.rank_rates",
        )
    if spec.rank_rates_by_depth is not None:
        raise SpecsimError(
            "the tree search moves one rank profile for every depth; give acceptance."
            "rank_rates or rank_profile (rank_rates_by_depth drives run, serve and tree-load)",
            field="acceptance.rank_rates_by_depth",
        )
    by_all = rank_shares(spec, max_topk) if max_topk > 1 else ()
    shares = tuple(float(h) for h in by_all if isinstance(h, float))
    if len(shares) + 1 < max_topk:
        raise SpecsimError(
            f"the rank profile gives {len(shares) + 1} ranks, the search asks for topk "
            f'{max_topk}: give more rates or acceptance.rank_extend = "geometric"',
            field=spec.rank_shape_field(),
        )
    top1 = acceptance_model(spec, max_steps).mean_rates()
    scale = tuple(float(v) for v in top1 / top1[0]) if top1[0] > 0 else ()
    name = spec.rank_profile or f"rank_rates {list(spec.rank_rates or [])}"
    return RankShape(shares, scale), name


def _refine(
    base: Scenario,
    cfg: Config,
    target: float,
    need: float,
    cycle_ms: float,
    shares: tuple[float, ...],
    simulate_fn: SimulateFn | None,
    draws: SearchDraws | None = None,
    memo: PassMemo | None = None,
) -> Refined:
    """``cfg`` refined: its required top-1 rate, with ``draws`` its 90% interval and with
    ``simulate_fn`` solved by Monte Carlo bisection, both on the configuration's scenario
    bound once (``memo``: the search's hardware answers, sim/hardware/passes.py)."""
    s, k, n = cfg
    top1 = acceptance_model(base.acceptance, s)
    model = TreeAcceptance(top1, shares[: k - 1], TreeDraft(s, k, n))
    best = TreeAcceptance(top1, shares[: k - 1], OptimalDraft(n - 1, s, k))
    f = required_scale(model, need)
    f_opt = required_scale(best, need)
    x0 = float(top1.mean_rates()[0])

    def x(factor: float | None) -> float | None:
        return None if factor is None else min(1.0, factor * x0)

    at = model.scaled(f) if f is not None else model
    refined = Refined(
        s, k, n, cycle_ms, need, x(f), x(f_opt), [int(c) for c in at.tree.nodes_per_depth()[1:]]
    )
    over: dict[str, Any] = {"speculation.num_steps": s, "speculation.topk": k}
    if k > 1:
        over["speculation.num_draft_tokens"] = n
    scenario = with_overrides(base, over, source="search")
    if draws is None and simulate_fn is None:
        return refined
    bound = bind(scenario, memo)
    if draws is not None:
        sampled = sampled_tree(bound, draws.values, inputs=draws.inputs)
        u = None if f is None else f * x0
        roots = required_top1_draws(sampled, draws.values, target, cycle_ms, u)
        refined = replace(refined, top1_interval90=interval90_of(roots.top1))
    if simulate_fn is None:
        return refined
    evaluator = Evaluator(simulate_fn, [target])
    f_max = 1.0 / x0 if x0 > 0 else 1.0
    probe = Probe(lambda g: evaluator(bound, f"{cfg};f={g!r}", model.scaled(g)), +1, 0.0, f_max)
    root = solve_root(
        probe,
        Criterion(target),
        hint=f_max if f is None else f,
        step=0.01 * f_max,
        xtol=ALPHA_XTOL / max(x0, 1e-9),
    )
    return replace(
        refined,
        top1_monte_carlo=x(root.value),
        top1_ci95=(x(root.ci95[0]), x(root.ci95[1])),
        evaluations=evaluator.evaluations,
    )


def _spread(scenario: Scenario) -> bool:
    """Whether a class's rates vary from request to request (a Beta spread)."""
    model = acceptance_model(scenario.acceptance, max(scenario.num_steps, 1))
    return any(c.varies for c in model.classes)


def _best(rows: list[Config], table: dict[Config, float | None]) -> Config | None:
    """The configuration needing the lowest top-1 rate (ties: fewer tokens, narrower,
    shorter)."""
    ok = [(x, c[2], c[1], c[0]) for c in rows if (x := table[c]) is not None]
    if not ok:
        return None
    _, n, k, s = min(ok)
    return (s, k, n)


def search_trees(
    scenario: Scenario,
    targets: Sequence[float],
    num_steps: Iterable[int],
    topks: Iterable[int],
    draft_tokens: Iterable[int] = DRAFT_TOKENS,
    *,
    simulate: SimulateFn | None = None,
    uncertainty: bool = True,
    memo: PassMemo | None = None,
) -> TreeSearchResult:
    """The required top-1 rate of every configuration for each target, the best tree and
    the best chain refined, and with ``simulate`` (e.g. ``MonteCarloStats("fast")``) solved
    again by Monte Carlo bisection; see the module docstring. ``uncertainty``: the refined
    answers' 90% intervals from inputs and model (sim/uncertainty/tree_required_draws.py).
    ``memo``: the hardware answers (sim/hardware/passes.py ``PassMemo``) of what bound the
    scenario already; the search's binding keeps them (None: its own)."""
    if not targets or any(not t > 0 for t in targets):
        raise SpecsimError(f"targets must be positive tok/s, got {list(targets)}", param="targets")
    configs = tree_configs(num_steps, topks, draft_tokens)
    if not configs:
        raise SpecsimError("no (num_steps, topk, num_draft_tokens) to search", param="topk")
    base = pin_verify_tokens(scenario)
    max_k = max(c[1] for c in configs)
    max_s = max(c[0] for c in configs)
    shape, shape_name = _shape(base, max_k, max_s)
    hw = scenario_hardware(base, memo)
    passes = _passes_for(hw, max(c[2] for c in configs))
    cycle = {c: tree_cost(base, c[0], c[1], c[2], passes, hw).total_ms for c in configs}
    notes = [
        "table: closed forms at the population's mean rates (per-request spread left out), "
        "interpolated; best tree and best chain: bisection on E[L] over requests"
    ]
    draws = None
    if uncertainty and not _spread(base):
        draws = search_draws(base)
        notes.append(
            draws.note(mix=base.acceptance is not None and base.acceptance.mix is not None)
        )
    elif uncertainty:
        notes.append(NO_INTERVAL_NOTE)
    if base.timing.draft_ms_per_extra_token == 0 and base.model.layers is None:
        notes.append(
            "the drafter pass over topk beams is taken as flat (no model geometry for the "
            "hardware model; timing.draft_ms_per_extra_token = 0)"
        )
    out = []
    for t in targets:
        needs = {c: t * cycle[c] / 1000.0 for c in configs}
        table = required_top1_table(needs, shape)

        tree_cfg = _best([c for c in configs if c[1] > 1], table)
        chain_cfg = _best([c for c in configs if c[1] == 1], table)
        refined = [
            None
            if c is None
            else _refine(base, c, t, needs[c], cycle[c], shape.shares, simulate, draws, hw.memo)
            for c in (tree_cfg, chain_cfg)
        ]
        out.append(TreeTarget(t, table, needs, cycle, refined[0], refined[1]))
    return TreeSearchResult(
        base.name, shape_name, shape.shares, shape.depth_scale, tuple(out), tuple(notes)
    )
