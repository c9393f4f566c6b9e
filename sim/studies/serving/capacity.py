"""Capacity under SLOs: the highest Poisson rate at which a share of requests meets the
TTFT and TPOT limits, with and without speculation, per k.

SLO attainment (the share of measured requests whose TTFT and TPOT are within the limits,
sim/studies/serving/paired_metrics.py) falls as the arrival rate rises. Poisson arrivals are unit
exponential gaps scaled by 1 / rate (sim/simulation/serving/engine.py
``poisson_arrivals``), so at one seed every rate sees the same requests, compressed in
time: common random numbers along the rate, as the acceptance search has along alpha.
The capacity is found by the root finder of sim/studies/bisection.py (``first_passing``:
bracket outward from a hint with doubling steps, then bisect) on log rate to a relative
tolerance ``rtol``; its 95% interval inverts the attainment's band (the rates at which the
upper and lower 95% bounds of attainment cross the required share).

The hint is the rate one request at a time would sustain (a lone user's output tok/s
over the mean output length), which brackets quickly for both plain decoding and
speculation. Each replication measures a finite number of requests: far beyond capacity
the queue grows through the run, so attainment there depends on the run length (the
capacity itself, where attainment is still high, does not much).

Above the most requests a second a policy can answer (``service_bound``,
sim/simulation/serving/stability.py, an upper bound from the cost model) a load has no
steady state: its queue, and so every request's TTFT, grows without end, and the share
meeting a TTFT limit falls to 0 as the run grows. With a TTFT limit, a rate above the
bound therefore fails the SLO and is not simulated (it would only measure how the first
requests of a growing queue fare, slowly). With a TPOT limit alone it is simulated, since
a request's decoding speed stays finite while it waits.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.parallel import Executor, close_executor, drain
from sim.simulation.serving.metrics import Ratio, SloSpec
from sim.studies.bisection import Probe, first_passing
from sim.studies.serving.capacity_ratio import paired_ratio_ci95
from sim.studies.serving.draws import DrawnPoints, interval90, near, replication_counts, shifted
from sim.studies.serving.evaluator import (
    BASELINE,
    PlanBuilder,
    PointEvaluator,
    ScenarioPlans,
    run_point,
)
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level, ratio_doc
from sim.studies.serving.sequential import FIRST, Share, describe, merge
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = ["CapacityResult", "PolicyCapacity", "capacity"]

#: How far the root finder may look on either side of the hint (a factor on the rate).
SPAN = 4096.0


@dataclass(frozen=True, slots=True)
class PolicyCapacity:
    """One policy's capacity (None: the share is not met even at the lowest rate tried)
    with its 95% interval, and every rate simulated with its attainment. ``at_least``:
    the share is met even at the highest rate tried (``rate_per_s``), so the capacity is
    that rate or more, not a crossing. ``log_rates`` (P,): every rate the search tried,
    increasing, and ``attainment`` (P, R) each replication's SLO attainment there (0 at a
    rate above the service bound, not simulated), for the paired interval of a ratio of
    capacities (sim/studies/serving/capacity_ratio.py)."""

    num_steps: int
    rate_per_s: float | None
    ci95: tuple[float | None, float | None]
    curve: tuple[tuple[float, Ratio, Ratio], ...]  # (rate, attainment, aggregate tok/s)
    at_least: bool = False
    service_bound_per_s: float = math.inf
    unstable_rates: tuple[float, ...] = ()  # rates above the bound, failing unsimulated
    capped: bool = False  # every simulated rate above the capacity passed: the bound set it
    log_rates: np.ndarray = field(default_factory=lambda: np.zeros(0), compare=False)
    attainment: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), compare=False)
    #: (P,) the point simulated at each of ``log_rates`` (None: above the bound), for the
    #: draws that complete a rate stopped early (``drawn_capacities``).
    points: tuple[PolicyPoint | None, ...] = field(default=(), compare=False)

    @property
    def crossing(self) -> bool:
        """The capacity is a crossing of the share (not unmet, not a lower bound)."""
        return self.rate_per_s is not None and not self.at_least

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "rate_per_s": self.rate_per_s,
            "at_least": self.at_least,
            "ci95": list(self.ci95),
            "curve": [
                {"rate_per_s": r, "attainment": ratio_doc(a), "aggregate_tok_s": ratio_doc(t)}
                for r, a, t in self.curve
            ],
            "service_bound_per_s": self.service_bound_per_s,
            "unstable_rates": list(self.unstable_rates),
            "capped_by_service_bound": self.capped,
        }


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """Every policy's capacity, plain decoding first; ``gain_ci95[i]``: the paired 95%
    interval of policy i's capacity over plain decoding's (None where that ratio has none:
    no gain, one replication, or a leave-one-out capacity without a crossing)."""

    scenario: str
    share: float
    policies: tuple[PolicyCapacity, ...]
    runs: int
    settings: dict[str, Any]
    assumptions: tuple[str, ...]
    gain_ci95: tuple[tuple[float, float] | None, ...]
    #: Per policy, the capacity's and its gain's 90% intervals from inputs and model
    #: (``capacity_intervals``; None: not drawn or no crossing).
    interval90: tuple[dict[str, list[float | None] | None], ...] = ()
    #: The model-error term those intervals include, at the largest decode batch of a
    #: capacity (``ModelErrorTerm.doc``; None: no draws).
    model_error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        base = self.policies[0]
        drawn = self.interval90 or tuple({} for _ in self.policies)
        return {
            "scenario": self.scenario,
            "share": self.share,
            **self.settings,
            "policies": [
                {
                    **p.to_dict(),
                    "capacity_gain": _gain(p, base),
                    "capacity_gain_ci95": None if ci is None else list(ci),
                    **iv,
                }
                for p, ci, iv in zip(self.policies, self.gain_ci95, drawn, strict=True)
            ],
            "runs": self.runs,
            "assumptions": list(self.assumptions),
            **({"model_error": self.model_error} if self.model_error is not None else {}),
        }


def _gain(p: PolicyCapacity, base: PolicyCapacity) -> float | None:
    """Capacity over plain decoding's; None unless both are crossings (a lower bound
    over a lower bound is no ratio)."""
    if not (p.crossing and base.crossing and base.rate_per_s):
        return None
    return p.rate_per_s / base.rate_per_s  # type: ignore[operator]


def gain_ci95(p: PolicyCapacity, base: PolicyCapacity, share: float) -> tuple[float, float] | None:
    """The paired 95% interval of ``_gain(p, base)`` (sim/studies/serving/capacity_ratio.py)."""
    gain = _gain(p, base)
    if gain is None:
        return None
    top, bottom = (p.log_rates, p.attainment), (base.log_rates, base.attainment)
    return paired_ratio_ci95(gain, top, bottom, share)


def _stat(point: PolicyPoint | None, which: str) -> float:
    if point is None:  # above the service bound: no share meets a TTFT limit for long
        return 0.0
    r = level(point, "slo_attainment")
    if which == "mean":
        return r.mean
    if r.ci95 is None:
        return r.mean
    return r.ci95[0] if which == "lo" else r.ci95[1]


def policy_capacity(
    evaluator: PointEvaluator, k: int, share: float, hint_per_s: float, rtol: float
) -> PolicyCapacity:
    """Capacity of FixedK(k) (k = 0: plain decoding)."""
    policy = FixedK(k) if k else BASELINE
    found = evaluator.bound(Load("rate", hint_per_s), policy)
    assert found is not None  # a rate's bound
    bound = found.rate_per_s
    skip_above = bound if evaluator.slo.ttft_ms is not None else math.inf

    def at(log_rate: float) -> PolicyPoint | None:
        rate = math.exp(log_rate)
        if rate > skip_above:  # no steady state: fails a TTFT limit (module docstring)
            return None
        return evaluator(Load("rate", rate), policy)

    lo, hi = math.log(hint_per_s / SPAN), math.log(hint_per_s * SPAN)
    probe = Probe(at, -1, lo, hi)  # lowering the rate helps
    kw = {"hint": math.log(hint_per_s), "step": math.log(2.0), "xtol": math.log1p(rtol)}

    def root(which: str) -> float | None:
        x = first_passing(probe, lambda p: _stat(p, which), share, **kw)
        return None if x is None else math.exp(x)

    value = root("mean")
    top = math.exp(hi)  # the highest rate tried: passing there bounds nothing
    at_least = value is not None and math.isclose(value, top, rel_tol=1e-12)
    ends: tuple[float | None, float | None] = (None, None)
    # one replication has no band (its attainment has no interval): no interval, rather
    # than the capacity itself at both ends
    if evaluator.replications > 1:
        ends = (root("lo"), root("hi"))
        if at_least:  # no crossing above: the upper end is unknown
            ends = (ends[0], None)
        elif value is not None and ends[1] is None:
            ends = (ends[0], value)
    curve = _curve(sorted(probe.seen.items()))
    unstable = tuple(math.exp(x) for x, p in sorted(probe.seen.items()) if p is None)
    capped = (
        value is not None
        and bool(unstable)
        and all(_stat(p, "mean") >= share for r, p in _simulated(probe) if r > value)
    )
    tried = sorted(probe.seen.items())
    # above the bound: fails, not simulated; replications a point did not run (sequential
    # replications stopped it early): NaN
    attainment = np.full((len(tried), evaluator.replications), np.nan)
    for row, (_, p) in enumerate(tried):
        got = np.zeros(evaluator.replications) if p is None else p.values["slo_attainment"]
        attainment[row, : got.size] = got
    log_rates = np.array([x for x, _ in tried], dtype=float)
    points = tuple(p for _, p in tried)
    return PolicyCapacity(
        k, value, ends, curve, at_least, bound, unstable, capped, log_rates, attainment, points
    )


def _curve(
    tried: Sequence[tuple[float, PolicyPoint | None]],
) -> tuple[tuple[float, Ratio, Ratio], ...]:
    """(rate, attainment, aggregate tok/s) at each simulated log rate of ``tried``."""
    return tuple(
        (math.exp(x), level(p, "slo_attainment"), level(p, "aggregate_tok_s"))
        for x, p in tried
        if p is not None
    )


def search_points(rtol: float) -> int:
    """The most rates one policy's search simulates: three roots (the estimate and its
    band's two ends), each expanding from the hint in doubling steps of log 2 across the
    domain's log(SPAN^2) (at most ceil(log2(log(SPAN^2) / log 2)) + 1 steps), then
    bisecting the last bracket, at most the domain, to log1p(rtol)."""
    width = 2.0 * math.log(SPAN)
    expand = math.ceil(math.log2(width / math.log(2.0))) + 1
    bisect = math.ceil(math.log2(width / math.log1p(rtol)))
    return 3 * (expand + bisect)


def _simulated(probe: Probe) -> list[tuple[float, PolicyPoint]]:
    return [(math.exp(x), p) for x, p in sorted(probe.seen.items()) if p is not None]


@dataclass(frozen=True, slots=True)
class CapacityTask:
    """One policy's capacity search, for a worker process (picklable)."""

    builder: PlanBuilder
    replications: int
    seed: int
    slo: SloSpec
    num_steps: int
    share: float
    hint_per_s: float
    rtol: float
    sequential: bool = False


def run_capacity(
    task: CapacityTask, executor: Executor | None = None
) -> tuple[PolicyCapacity, int, int]:
    """(capacity, simulations run, their replications) of one policy: its rates in this
    process, or each rate's replications through ``executor`` (identical results);
    ``task.sequential``: a rate stops at its first replications where its attainment is
    settled against the share (sim/studies/serving/sequential.py ``Share``)."""
    rule = Share("slo_attainment", task.share) if task.sequential else None
    ev = PointEvaluator(
        task.builder,
        replications=task.replications,
        seed=task.seed,
        slo=task.slo,
        rule=rule,
        executor=executor,
    )
    out = policy_capacity(ev, task.num_steps, task.share, task.hint_per_s, task.rtol)
    return out, ev.runs, ev.replications_run


def _searches(
    executor: Executor, tasks: Sequence[CapacityTask]
) -> Iterator[tuple[int, tuple[PolicyCapacity, int, int]]]:
    """Every policy's search (``run_capacity``), (index, result) as each ends.

    One worker: one search after the other in this process. More: every search steps
    at once, each in a thread of this process that sends its rates' replications
    (in blocks, sim/studies/serving/evaluator.py) through the one ``executor``, so the
    workers always hold the next steps of every policy (one search a process left a
    worker idle once the shorter searches had ended). A search's steps depend only on
    its own values, each replication carries its own seed: the same results either way.
    """
    if executor.width() <= 1:
        yield from enumerate(map(run_capacity, tasks))
        return
    from concurrent.futures import ThreadPoolExecutor

    threads = ThreadPoolExecutor(max_workers=len(tasks))
    finished = False
    try:
        yield from drain(
            {threads.submit(run_capacity, t, executor): i for i, t in enumerate(tasks)}
        )
        finished = True
    finally:
        if not finished:  # an error or an interrupt: the other searches' next steps fail
            close_executor(executor)
        threads.shutdown(wait=finished, cancel_futures=True)


def capacity(
    evaluator: PointEvaluator,
    num_steps: Sequence[int],
    *,
    share: float = 0.9,
    rtol: float = 0.02,
    hint_per_s: float | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    sequential: bool = True,
) -> CapacityResult:
    """Capacity of plain decoding and of each k in ``num_steps`` (the evaluator's SLO,
    seed and replications); the policies' searches step together through the evaluator's
    executor (``_searches``; results do not depend on it). ``draws``: each capacity's and
    gain's 90% interval from inputs and model (``capacity_intervals``). ``sequential``:
    each rate's point stops at its first replications where its
    attainment is settled against the share (``run_capacity``); where a draw's shifted
    attainment at such a rate lands near the share, the rate runs its other
    replications before the draws are read (``completed_draws``)."""
    if not 0.0 < share < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {share}", param="share")
    if evaluator.slo.ttft_ms is None and evaluator.slo.tpot_ms is None:
        raise SpecsimError(
            "capacity needs a TTFT or TPOT limit (serving.ttft_slo_ms / tpot_slo_ms)",
            param="ttft_slo_ms",
        )
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    if hint_per_s is None:
        alone = evaluator(Load("concurrency", 1), BASELINE)  # output tok/s of one user
        tok_s = float(alone.values["aggregate_tok_s"].mean())
        hint_per_s = tok_s / max(1.0, _mean_output(evaluator))
    tasks = [
        CapacityTask(
            evaluator.builder,
            evaluator.replications,
            evaluator.seed,
            evaluator.slo,
            k,
            share,
            hint_per_s,
            rtol,
            sequential,
        )
        for k in [0, *ks]
    ]
    found: dict[int, tuple[PolicyCapacity, int, int]] = {}
    for done, (i, out) in enumerate(_searches(evaluator.executor, tasks), 1):
        found[i] = out
        if evaluator.progress:
            evaluator.progress(done, len(tasks))
    policies = tuple(found[i][0] for i in range(len(tasks)))
    caps: list[np.ndarray] = []
    completed = 0
    if draws is not None:  # first: the draws may complete rates stopped early
        drawn = [completed_draws(draws, p, share) for p in policies]
        caps = [c for c, _, _ in drawn]
        policies = tuple(p for _, p, _ in drawn)
        completed = sum(n for _, _, n in drawn)
    gains = tuple(gain_ci95(p, policies[0], share) for p in policies)
    terms = _terms(draws, policies) if draws is not None else []
    intervals = () if draws is None else capacity_intervals(policies, caps, gains, terms)
    counts = replication_counts(evaluator, draws)
    counts["replications_run"] += sum(n for _, _, n in found.values()) + completed
    stops = sequential and evaluator.replications > FIRST
    notes = (describe(FIRST, evaluator.replications),) if stops else ()
    return CapacityResult(
        scenario=scenario,
        share=share,
        policies=policies,
        runs=evaluator.runs + sum(n for _, n, _ in found.values()),
        settings={**dict(settings or {}), "hint_per_s": hint_per_s, "rtol": rtol, **counts},
        assumptions=(*assumptions, *notes),
        gain_ci95=gains,
        interval90=intervals,
        model_error=_widest(terms),
    )


def drawn_capacities(draws: DrawnPoints, p: PolicyCapacity, share: float) -> np.ndarray:
    """Each draw's capacity of policy ``p`` (D,): its SLO attainment (the nominal moved by
    the paired shift) at the simulated rate just below the nominal capacity, then at the
    rates the search tried, bracketing the two neighbouring ones between which it crosses
    ``share`` (``_probes``, ``_narrowed``), the crossing interpolated linearly in log rate
    between them; -inf below the rates tried, inf above, NaN for a draw the scenario
    rejects or a policy without a crossing (``completed_draws``, whose rates stopped early
    are already complete where a draw needs them). Where the draw's attainment falls with
    the rate it is the pair a walk rate by rate outwards from the capacity ends on, on
    fewer rates; where it does not (Monte Carlo noise between rates 2% apart) the bracket
    may end on another of its crossings."""
    return completed_draws(draws, p, share)[0]


def completed_draws(
    draws: DrawnPoints, p: PolicyCapacity, share: float
) -> tuple[np.ndarray, PolicyCapacity, int]:
    """``drawn_capacities``, and ``p`` with the rates it stopped early (sequential
    replications) that a draw needs run in full, and how many replications that took.

    A draw's attainment at a rate is the nominal mean moved by the paired shift, so where
    it lands within ``SETTLED_SE`` nominal standard errors of the share
    (sim/studies/serving/draws.py ``near``) the nominal mean's own noise decides whether
    the draw passes there: a rate stopped at its first replications then runs the rest
    (as crossover's and best-k's draws do) and every draw is read again on the full
    mean; ``p``'s attainment, points and curve hold them (its capacity and 95% interval
    are the search's)."""
    out = np.full(len(draws.draws), np.nan)
    if not p.crossing:
        return out, p, 0
    policy = FixedK(p.num_steps) if p.num_steps else BASELINE
    unstable = set(p.unstable_rates)
    rows = [j for j, x in enumerate(p.log_rates) if math.exp(x) not in unstable]
    logs = [float(p.log_rates[j]) for j in rows]
    if len(logs) < 2:
        return out, p, 0
    ev = draws.evaluator
    r = draws.replications
    attainment = p.attainment.copy()
    points = list(p.points)
    extra = 0
    cache: dict[int, np.ndarray] = {}

    def complete(i: int) -> bool:
        """Run the replications rate ``i`` stopped before (False: it ran them all)."""
        nonlocal extra
        point = points[rows[i]] if points else None
        if point is None or point.replications >= ev.replications:
            return False
        have = point.replications
        task = ev.rest_task(Load("rate", math.exp(logs[i])), policy, have)
        full = merge(point, run_point(task, ev.executor))
        points[rows[i]] = full
        attainment[rows[i]] = full.values["slo_attainment"]
        extra += ev.replications - have
        return True

    def att(i: int, which: list[int]) -> np.ndarray:
        load = Load("rate", math.exp(logs[i]))
        draws.ensure([(load, policy)], which)
        got = cache.setdefault(i, np.full(len(draws.draws), np.nan))

        def read(ds: list[int]) -> None:
            nominal = attainment[rows[i]]
            for d in ds:
                pts = draws.points[d]
                if pts is not None and (load, policy) in pts:
                    drawn = pts[(load, policy)].values["slo_attainment"]
                    got[d] = shifted(float(np.nanmean(nominal)), drawn, nominal[:r])

        read(which)
        nominal = attainment[rows[i]]
        if near(got[which], nominal[np.isfinite(nominal)], share) and complete(i):
            read(which)
        return got

    x0 = math.log(p.rate_per_s)  # type: ignore[arg-type]
    i = max(0, min(len(logs) - 2, max((j for j, x in enumerate(logs) if x <= x0), default=0)))
    everyone = list(range(len(draws.draws)))
    att(i, everyone)
    # each draw's bracket (P, F): passes at index P, fails at F (-1 and len(logs): the
    # virtual ends beyond the rates tried), searched until F = P + 1 (``_probes``,
    # ``_narrowed``)
    brackets: dict[int, tuple[int, int]] = {}
    for d in everyone:
        a = cache[i][d]
        if not np.isfinite(a):
            continue  # a draw the scenario rejects
        brackets[d] = (i, len(logs)) if a >= share else (-1, i)
    means = [float(np.nanmean(attainment[j])) for j in rows]
    while True:
        probes: dict[int, list[int]] = {}
        for d, (lo, hi) in brackets.items():
            if hi - lo > 1:
                for j in _probes(lo, hi, logs, means, cache, d, share):
                    probes.setdefault(j, []).append(d)
        if not probes:
            break
        for j in sorted(probes):
            att(j, probes[j])
        ran: dict[int, list[int]] = {}
        for j, ds in probes.items():
            for d in ds:
                ran.setdefault(d, []).append(j)
        for d, js in ran.items():
            if not all(np.isfinite(cache[j][d]) for j in js):
                del brackets[d]  # a draw the scenario rejects
                continue
            brackets[d] = _narrowed(*brackets[d], [(j, cache[j][d] >= share) for j in js])
    for d, (lo, hi) in brackets.items():
        if lo < 0:
            out[d] = -math.inf
        elif hi >= len(logs):
            out[d] = math.inf
        else:
            a_lo, a_hi = cache[lo][d], cache[hi][d]
            t = (a_lo - share) / (a_lo - a_hi)
            out[d] = math.exp(logs[lo] + t * (logs[hi] - logs[lo]))
    if extra:
        tried = list(zip(p.log_rates.tolist(), points, strict=True))
        p = replace(p, attainment=attainment, points=tuple(points), curve=_curve(tried))
    return out, p, extra


def _narrowed(lo: int, hi: int, seen: Sequence[tuple[int, bool]]) -> tuple[int, int]:
    """A draw's bracket (passes at ``lo``, fails at ``hi``) narrowed by what it gave at
    the rates ``seen`` inside it ((index, passes), any order): from ``lo`` upwards, the
    first that fails and the one before it."""
    for j, passes in sorted(seen):
        if not passes:
            return lo, j
        lo = j
    return lo, hi


def _probes(
    lo: int,
    hi: int,
    logs: Sequence[float],
    means: Sequence[float],
    cache: Mapping[int, np.ndarray],
    d: int,
    share: float,
) -> list[int]:
    """The rates (indices) draw ``d`` runs next inside its bracket (``lo``, ``hi``): its
    attainment predicted at each rate between as the nominal mean ``means`` there moved
    by the draw's shift at the bracket's ends (interpolated in log rate between two
    simulated ends; at a virtual end, -1 or len(logs), the other's), the first rate
    predicted to fail and the one below it. A prediction only picks the rates: the
    crossing is read on the draw's own attainment, and where that attainment falls with
    the rate the bracket ends on the pair of neighbouring rates a rate-by-rate walk ends
    on (``_narrowed``)."""
    ends = [j for j in (lo, hi) if 0 <= j < len(logs)]
    shift = {j: float(cache[j][d]) - means[j] for j in ends}

    def shift_at(j: int) -> float:
        if len(ends) == 1:
            return shift[ends[0]]
        t = (logs[j] - logs[lo]) / (logs[hi] - logs[lo])
        return shift[lo] + t * (shift[hi] - shift[lo])

    first_fail = next((j for j in range(lo + 1, hi) if means[j] + shift_at(j) < share), hi)
    return [j for j in (first_fail - 1, first_fail) if lo < j < hi]


def capacity_intervals(
    policies: Sequence[PolicyCapacity],
    caps: Sequence[np.ndarray],
    gains: Sequence[tuple[float, float] | None],
    terms: Sequence[ModelErrorTerm | None] = (),
) -> tuple[dict[str, list[float | None] | None], ...]:
    """Per policy: ``capacity_interval90`` (the draws' capacities ``caps`` (D,) each,
    5-95%, joined with the capacity's 95% interval; an end None lies beyond the rates
    tried) and ``capacity_gain_interval90`` (each draw's capacity over plain decoding's
    in the same draw, joined with the gain's paired 95% interval). ``terms``: per policy
    the model-error term at its capacity's decode batch (sim/uncertainty/model_error.py):
    the capacity's interval takes the levels' term, the gain's the gains' term at the
    larger batch of the policy and plain decoding."""
    out = []
    terms = list(terms) or [None] * len(policies)
    for p, cap, gain_ci, term in zip(policies, caps, gains, terms, strict=True):
        row: dict[str, list[float | None] | None] = {}
        if p.crossing:
            ends = _open_interval(cap, p.ci95)
            if term is not None and p.rate_per_s is not None:
                ends = _open_widened(p.rate_per_s, ends, term.level)
            row["capacity_interval90"] = ends
        base = caps[0]
        g = _gain(p, policies[0])
        if g is not None and p is not policies[0]:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = cap / base
            # a draw whose capacity lies beyond the rates tried (inf) while plain
            # decoding's does not has a gain above every finite one: it stays in the
            # quantile, and the upper end is open when it reaches the 95% quantile; NaN
            # (neither found) is left out
            known = ratio[~np.isnan(ratio)]
            top = float(np.quantile(known, 0.95, method="inverted_cdf")) if known.size else 0.0
            got = interval90(ratio[np.isfinite(ratio)].tolist(), gain_ci, positive=True)
            pair = [t for t in (term, terms[0]) if t is not None]
            if got is not None and pair:
                widest = max(pair, key=lambda t: t.gain_sigma)
                got = widest.gain(g, got)
            row["capacity_gain_interval90"] = (
                None if got is None else [got[0], None if math.isinf(top) else max(got[1], top)]
            )
        out.append(row)
    return tuple(out)


def _open_widened(nominal: float, ends: list[float | None], widen: Any) -> list[float | None]:
    """An interval whose ends may be open (None) widened by a term's ``level`` or
    ``gain`` (an open end stays open)."""
    lo, hi = ends
    got = widen(nominal, [nominal if lo is None else lo, nominal if hi is None else hi])
    return [None if lo is None else got[0], None if hi is None else got[1]]


def _widest(terms: Sequence[ModelErrorTerm | None]) -> dict[str, Any] | None:
    """The document of the widest term (None: none)."""
    got = [t for t in terms if t is not None]
    return max(got, key=lambda t: t.level_sigma).doc() if got else None


def _terms(draws: DrawnPoints, policies: Sequence[PolicyCapacity]) -> list[ModelErrorTerm | None]:
    """Per policy, the model-error term at the decode batch of its simulated rate
    nearest its capacity (None: no capacity, or plans built without a scenario)."""
    plans = draws.evaluator.builder
    if not isinstance(plans, ScenarioPlans):
        return [None] * len(policies)
    out: list[ModelErrorTerm | None] = []
    for p in policies:
        close = [
            (abs(lr - math.log(p.rate_per_s)), float(pt.mean_batch.mean()))
            for lr, pt in zip(p.log_rates.tolist(), p.points, strict=False)
            if pt is not None and p.rate_per_s is not None
        ]
        out.append(plans.model_error.at(min(close)[1]) if close else None)
    return out


def _open_interval(
    values: np.ndarray, ci95: tuple[float | None, float | None]
) -> list[float | None]:
    """5-95% of ``values`` (inf: beyond the rates tried) joined with ``ci95``; an end
    beyond is None."""
    v = values[~np.isnan(values)]
    ends: list[float] = []
    if v.size:
        ends += [float(q) for q in np.quantile(v, [0.05, 0.95], method="inverted_cdf")]
    lo_mc, hi_mc = ci95
    ends += [-math.inf if lo_mc is None else lo_mc, math.inf if hi_mc is None else hi_mc]
    lo, hi = min(ends), max(ends)
    return [lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None]


def _mean_output(evaluator: PointEvaluator) -> float:
    plan = evaluator.builder(Load("concurrency", 1), evaluator.builder.default_steps)
    return float(plan.workload.output_tokens.mean)
