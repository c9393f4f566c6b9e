"""Capacity under SLOs: the highest Poisson rate at which a share of requests meets the
TTFT and TPOT limits, with and without speculation, per k.

SLO attainment (the share of measured requests whose TTFT and TPOT are within the limits,
sim/studies/serving/paired_metrics.py) falls as the arrival rate rises. Poisson arrivals are unit
exponential gaps scaled by 1 / rate (sim/simulation/serving/engine.py
``poisson_arrivals``), so at one seed every rate sees the same requests, compressed in
time: common random numbers along the rate, as the acceptance search has along alpha.
The capacity is found by the root finder of sim/studies/bisection.py (``passing_bracket``:
bracket outward from a hint with doubling steps, then bisect) on log rate to a relative
tolerance ``rtol`` (by default one step of the draws' ladder, ``DEFAULT_RTOL``), the
crossing then interpolated in log rate inside the last bracket; its 95% interval inverts
the attainment's band (the rates at which the upper and lower 95% bounds of attainment
cross the required share, found and interpolated the same way). With draws of the
inputs, each draw's capacity is found on a rate ladder of its own (``completed_draws``)
between the capacity and its 95% interval, whose bisections then stop once their bracket
lies inside what the 90% interval already holds (``capacity``).

The hint is the rate one request at a time would sustain (a lone user's output tok/s
over the mean output length), where plain decoding's search starts; each k's starts at
plain decoding's capacity (``CapacitySearch.find``), which speculation on the same
server moves by tens of percent, not by the factor 4-5 between the hint and a capacity.
Each replication measures a finite number of requests: far beyond capacity the queue
grows through the run, so attainment there depends on the run length (the capacity
itself, where attainment is still high, does not much).

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.parallel import Executor, close_executor, drain
from sim.simulation.serving.metrics import Ratio, SloSpec
from sim.simulation.serving.stability import service_bound
from sim.studies.bisection import Probe, passing_bracket
from sim.studies.serving.capacity_ratio import paired_ratio_ci95
from sim.studies.serving.draws import DrawnPoints, interval90, replication_counts
from sim.studies.serving.evaluator import (
    BASELINE,
    PlanBuilder,
    PointEvaluator,
    ScenarioPlans,
    plan_steps,
)
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level, ratio_doc
from sim.studies.serving.sequential import FIRST, PRECISION_SHARE, SETTLED_SE, Share, describe
from sim.uncertainty.model_error import ModelErrorTerm
from sim.uncertainty.perturb import InputDraws

__all__ = ["CapacityResult", "PolicyCapacity", "capacity"]

#: How far the root finder may look on either side of the hint (a factor on the rate).
SPAN = 4096.0
#: The draws' rate ladder (``completed_draws``): rates LADDER_STEP apart in log rate,
#: log(2) / 2^LADDER_LEVEL, on the searches' own lattice (the hint plus dyadic fractions
#: of log 2, where every rate a bisection from the hint tries lies).
LADDER_LEVEL = 4
LADDER_STEP = math.log(2.0) / 2**LADDER_LEVEL
#: The default relative tolerance of a capacity's bisection: one ladder step (4.4%). The
#: capacity is then read as each draw's is, interpolated in log rate between two
#: neighbouring ladder rates (``CapacitySearch.crossing``); docs/studies/speed-capacity-precision.md
#: derives it.
DEFAULT_RTOL = math.expm1(LADDER_STEP)


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
    #: The log rate the search started from (its hint): the origin of the draws' ladder.
    origin_log_rate: float = field(default=0.0, compare=False)
    #: The lowest and highest rates the draws' ladder may run (the search's domain, and
    #: the service bound under a TTFT limit): a draw's capacity beyond them is -inf / inf.
    ladder_ends: tuple[float, float] = field(default=(0.0, math.inf), compare=False)

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


#: The first step of a search started at another policy's capacity (``CapacitySearch.find``):
#: log 2 / 8, two ladder steps (9%), doubling outwards until the share is bracketed.
START_STEP = math.log(2.0) / 8

#: The lattice every rate a search or the ladder tries lies on: the hint plus whole
#: multiples of log(2) / 2^20 (bisections from the hint in steps of log 2 halve brackets
#: on it, far below any tolerance); a rate is known by its place on it, so a rate the
#: ladder and a bisection both reach is simulated once.
LATTICE = math.log(2.0) / 2**20


class CapacitySearch:
    """One policy's capacity search (FixedK(k), k = 0: plain decoding), kept in this
    process between its stages: the capacity (``find``), then its 95% interval
    (``find_ends``), with the draws' ladder between them reading its rates
    (``completed_draws``). Every rate simulated is the evaluator's
    point; ``rates``: lattice place -> the log rate first tried there."""

    def __init__(
        self, evaluator: PointEvaluator, k: int, share: float, hint_per_s: float, rtol: float
    ):
        self.ev, self.k, self.share, self.rtol = evaluator, k, share, rtol
        self.policy: Any = FixedK(k) if k else BASELINE
        found = evaluator.bound(Load("rate", hint_per_s), self.policy)
        assert found is not None  # a rate's bound
        self.bound = found.rate_per_s
        # no steady state above the bound: fails a TTFT limit (module docstring)
        self.skip_above = self.bound if evaluator.slo.ttft_ms is not None else math.inf
        self.origin = math.log(hint_per_s)
        self.lo, self.hi = self.origin - math.log(SPAN), self.origin + math.log(SPAN)
        self.rates: dict[int, float] = {}
        self.value: float | None = None
        self.at_least = False
        self.ends: tuple[float | None, float | None] = (None, None)
        #: Ends whose bisection stopped inside the 90% interval's range: (which, bracket
        #: (low, high) requests/s, range).
        self.stopped: list[tuple[str, tuple[float, float], tuple[float, float]]] = []

    @classmethod
    def of(cls, p: PolicyCapacity, evaluator: PointEvaluator, share: float) -> CapacitySearch:
        """A finished search ``p`` taken up again: its rates and points, capacity and 95%
        interval (the points kept in ``evaluator``'s memo)."""
        s = cls(evaluator, p.num_steps, share, math.exp(p.origin_log_rate), DEFAULT_RTOL)
        for x, pt in zip(p.log_rates.tolist(), p.points, strict=True):
            x = s._tried(x)
            if pt is not None:
                evaluator.memo.setdefault(s.key(x), pt)
        s.value, s.at_least, s.ends = p.rate_per_s, p.at_least, p.ci95
        return s

    def _place(self, x: float) -> int:
        """``x``'s place on the lattice (the key of ``rates``)."""
        return round((x - self.origin) / LATTICE)

    def log_rate(self, x: float) -> float:
        """The log rate tried at ``x``'s place on the lattice (``x`` if none yet)."""
        return self.rates.get(self._place(x), x)

    def _tried(self, x: float) -> float:
        """``x``'s place taken (its log rate, the first tried there)."""
        return self.rates.setdefault(self._place(x), x)

    def ran(self, x: float) -> bool:
        """Whether the search ran a point at ``x``'s place (tried there, at most the
        bound)."""
        return self._place(x) in self.rates and self.known(x) is not None

    def key(self, x: float) -> tuple[Load, Any]:
        return (Load("rate", math.exp(self.log_rate(x))), self.policy)

    def known(self, x: float) -> PolicyPoint | None:
        """The point run at ``x``, None above the bound (fails, not simulated)."""
        x = self.log_rate(x)
        return None if math.exp(x) > self.skip_above else self.ev.memo[self.key(x)]

    def point(self, x: float) -> PolicyPoint | None:
        """The point at ``x``, run if not yet (one bisection step)."""
        x = self._tried(x)
        return None if math.exp(x) > self.skip_above else self.ev(*self.key(x))

    def _root(
        self,
        which: str,
        within: tuple[float, float] | None = None,
        start: float | None = None,
        step: float = math.log(2.0),
    ) -> tuple[float | None, float] | None:
        probe = Probe(self.point, -1, self.lo, self.hi)  # lowering the rate helps
        probe.seen.update({x: self.known(x) for x in self.rates.values()})
        return passing_bracket(
            probe,
            lambda p: _stat(p, which),
            self.share,
            hint=self.origin if start is None else start,
            step=step,
            # half a lattice cell of margin: a bracket of exactly the tolerance (one
            # ladder step at DEFAULT_RTOL, reached by sums of floats) has reached it
            xtol=math.log1p(self.rtol) + LATTICE / 2,
            within=within,
        )

    def crossing(self, got: tuple[float | None, float], which: str) -> float:
        """The log rate where ``which``'s statistic (``_stat``) crosses the share inside
        the bracket ``got`` (failing log rate, passing log rate), linear in log rate
        between its two ends, as a draw's capacity is read on the ladder and the
        jackknife of sim/studies/serving/capacity_ratio.py reads each capacity: x_pass +
        (a_pass - share) / (a_pass - a_fail) (x_fail - x_pass). The passing end where
        there is no failing one (the domain's easy end passes) or it was not simulated
        (above the service bound: its attainment is not measured)."""
        bad, good = got
        if bad is None:
            return good
        fail, ok = self.known(bad), self.known(good)
        if fail is None or ok is None:
            return good
        a_fail, a_ok = _stat(fail, which), _stat(ok, which)
        if not a_ok > a_fail:  # a bracket's ends always differ; guard the division
            return good
        return good + (a_ok - self.share) / (a_ok - a_fail) * (bad - good)

    def find(self, start_per_s: float | None = None) -> None:
        """The capacity: the mean attainment's crossing of the share, bisected to rtol;
        bracketed from the hint in steps of log 2, or (``start_per_s``: plain decoding's
        capacity, for a k: speculation on the same server moves it by tens of percent,
        where the hint, one user's rate, lies a factor 4-5 below) from the ladder rate
        nearest that rate in steps of ``START_STEP``. Either way every rate tried lies on
        the lattice and the answer is the share's crossing, interpolated in log rate
        inside the last bracket (``crossing``), at most rtol wide; only which rates
        bracket it differ."""
        if start_per_s is None:
            got = self._root("mean")
        else:
            j = round(ladder_index(math.log(start_per_s), self.origin))
            start = self.origin + j * LADDER_STEP
            got = self._root("mean", start=start, step=START_STEP)
        self.value = None if got is None else math.exp(self.crossing(got, "mean"))
        top = math.exp(self.hi)  # the highest rate tried: passing there bounds nothing
        self.at_least = self.value is not None and math.isclose(self.value, top, rel_tol=1e-12)

    def find_ends(self, within: tuple[float, float] | None = None) -> None:
        """The 95% interval: where the attainment's lower and upper 95% bounds cross the
        share, bisected to rtol, or (``within``, requests/s) until the bracket lies
        inside that range: then an end is its bracket's outer end (the lower rate for
        the lower end, the higher for the upper), wider than the band inversion gives,
        never narrower."""
        # one replication has no band (its attainment has no interval): no interval,
        # rather than the capacity itself at both ends
        if self.ev.replications <= 1:
            return
        span = None
        if within is not None:
            span = tuple(math.log(w) if w > 0 else -math.inf for w in within)
        ends: list[float | None] = []
        for which in ("lo", "hi"):
            got = self._root(which, span)  # type: ignore[arg-type]
            if got is None:
                ends.append(None)
                continue
            bad, good = got
            if within is not None and bad is not None and bad - good > math.log1p(self.rtol):
                self.stopped.append((which, (math.exp(good), math.exp(bad)), within))
                ends.append(math.exp(good if which == "lo" else bad))
            else:
                ends.append(math.exp(self.crossing(got, which)))
        lo_end, hi_end = ends
        if self.at_least:  # no crossing above: the upper end is unknown
            hi_end = None
        elif self.value is not None and hi_end is None:
            hi_end = self.value
        if self.value is not None:  # each interpolated in its own bracket: hold the value
            lo_end = None if lo_end is None else min(lo_end, self.value)
            hi_end = None if hi_end is None else max(hi_end, self.value)
        self.ends = (lo_end, hi_end)

    def result(self) -> PolicyCapacity:
        """The search's ``PolicyCapacity`` over every rate simulated so far."""
        tried = sorted((x, self.known(x)) for x in self.rates.values())
        curve = _curve(tried)
        unstable = tuple(math.exp(x) for x, p in tried if p is None)
        value = self.value
        capped = (
            value is not None
            and bool(unstable)
            and all(
                _stat(p, "mean") >= self.share
                for x, p in tried
                if p is not None and math.exp(x) > value
            )
        )
        r = self.ev.replications
        # above the bound: fails, not simulated; replications a point did not run
        # (sequential replications stopped it early): NaN
        attainment = np.full((len(tried), r), np.nan)
        for row, (_, p) in enumerate(tried):
            got = np.zeros(r) if p is None else p.values["slo_attainment"]
            attainment[row, : got.size] = got
        return PolicyCapacity(
            self.k,
            value,
            self.ends,
            curve,
            self.at_least,
            self.bound,
            unstable,
            capped,
            np.array([x for x, _ in tried], dtype=float),
            attainment,
            tuple(p for _, p in tried),
            self.origin,
            self.ladder_ends(),
        )

    def ladder_span(self) -> tuple[int, int]:
        """The lowest and highest places j of the draws' ladder (rates origin + j
        LADDER_STEP in log rate): inside the domain, and at most the bound under a TTFT
        limit (``completed_draws``)."""
        top = min(math.log(SPAN), math.log(self.skip_above) - self.origin)
        j_lo = math.ceil(-math.log(SPAN) / LADDER_STEP - 1e-9)
        return j_lo, math.floor(top / LADDER_STEP + 1e-9)

    def ladder_ends(self) -> tuple[float, float]:
        """The lowest and highest rates of the draws' ladder (``ladder_span``)."""
        j_lo, j_hi = self.ladder_span()
        return (
            math.exp(self.log_rate(self.origin + j_lo * LADDER_STEP)),
            math.exp(self.log_rate(self.origin + j_hi * LADDER_STEP)),
        )


def policy_capacity(
    evaluator: PointEvaluator, k: int, share: float, hint_per_s: float, rtol: float
) -> PolicyCapacity:
    """Capacity of FixedK(k) (k = 0: plain decoding) and its 95% interval, each
    bisected to ``rtol`` (``CapacitySearch``)."""
    search = CapacitySearch(evaluator, k, share, hint_per_s, rtol)
    search.find()
    search.find_ends()
    return search.result()


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
    band's two ends), each expanding from its start in doubling steps of at least
    ``START_STEP`` across the domain's log(SPAN^2) (at most ceil(log2(log(SPAN^2) /
    START_STEP)) + 1 steps), then bisecting the last bracket, at most the domain, to log1p(rtol)."""
    width = 2.0 * math.log(SPAN)
    expand = math.ceil(math.log2(width / START_STEP)) + 1
    bisect = math.ceil(math.log2(width / math.log1p(rtol)))
    return 3 * (expand + bisect)


@dataclass(frozen=True, slots=True)
class CapacityTask:
    """One policy's capacity search."""

    builder: PlanBuilder
    replications: int
    seed: int
    slo: SloSpec
    num_steps: int
    share: float
    hint_per_s: float
    rtol: float
    sequential: bool = False
    #: Where the capacity's bracket starts (None: the hint; ``CapacitySearch.find``).
    start_per_s: float | None = None


def search_evaluator(
    builder: PlanBuilder,
    replications: int,
    seed: int,
    slo: SloSpec,
    share: float,
    sequential: bool,
    executor: Executor | None,
) -> PointEvaluator:
    """A search's evaluator; ``sequential``: a rate stops at its first replications
    where its attainment is settled against the share (sim/studies/serving/sequential.py
    ``Share``)."""
    rule = Share("slo_attainment", share) if sequential else None
    return PointEvaluator(
        builder, replications=replications, seed=seed, slo=slo, rule=rule, executor=executor
    )


def start_search(task: CapacityTask, executor: Executor | None = None) -> CapacitySearch:
    """One policy's search with its capacity found: its rates in this process, or each
    rate's replications through ``executor`` (identical results); ``task.sequential``: a
    rate stops at its first replications where its attainment is settled against the
    share (sim/studies/serving/sequential.py ``Share``)."""
    ev = search_evaluator(
        task.builder, task.replications, task.seed, task.slo, task.share, task.sequential, executor
    )
    search = CapacitySearch(ev, task.num_steps, task.share, task.hint_per_s, task.rtol)
    search.find(task.start_per_s)
    return search


T = TypeVar("T")
U = TypeVar("U")


def _together(
    executor: Executor, step: Callable[[T, Executor | None], U], items: Sequence[T]
) -> Iterator[tuple[int, U]]:
    """``step(item, executor)`` of every policy's search, (index, result) as each ends.

    One worker: one after the other in this process (``executor`` None). More: every
    search steps at once, each in a thread of this process that sends its rates'
    replications (in blocks, sim/studies/serving/evaluator.py) through the one
    ``executor``, so the workers always hold the next steps of every policy. A search's
    steps depend only on its own values, each replication carries its own seed: the same
    results either way."""
    if executor.width() <= 1:
        yield from enumerate(step(item, None) for item in items)
        return
    from concurrent.futures import ThreadPoolExecutor

    threads = ThreadPoolExecutor(max_workers=len(items))
    finished = False
    try:
        yield from drain({threads.submit(step, t, executor): i for i, t in enumerate(items)})
        finished = True
    finally:
        if not finished:  # an error or an interrupt: the other searches' next steps fail
            close_executor(executor)
        threads.shutdown(wait=finished, cancel_futures=True)


def _ends(
    item: tuple[CapacitySearch, tuple[float, float] | None], executor: Executor | None
) -> None:
    search, within = item
    search.find_ends(within)


def capacity(
    evaluator: PointEvaluator,
    num_steps: Sequence[int],
    *,
    share: float = 0.9,
    rtol: float = DEFAULT_RTOL,
    hint_per_s: float | None = None,
    scenario: str = "scenario",
    settings: dict[str, Any] | None = None,
    assumptions: Sequence[str] = (),
    draws: DrawnPoints | None = None,
    sequential: bool = True,
) -> CapacityResult:
    """Capacity of plain decoding and of each k in ``num_steps`` (the evaluator's SLO,
    seed and replications); the policies' searches step together through the evaluator's
    executor (``_together``; results do not depend on it). In three stages: every
    policy's capacity; ``draws``: each draw's capacity on its rate ladder
    (``completed_draws``), hence the capacity's and gain's 90% intervals from inputs and
    model (``capacity_intervals``); then the 95% interval of every capacity, whose ends'
    bisections stop once their bracket lies inside the range the 90% interval already
    holds (the draws' 5-95% and the model-error band, ``_settled_range``: wherever in
    the bracket the end lies, the 90% interval is the same). ``sequential``: a rate
    stops at its first replications where its attainment is settled against the share;
    where the nominal's other replications at such a rate could still move a draw's
    shifted attainment across the share, the rate runs more of them, two at a time,
    before the draws are read (``completed_draws``)."""
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
    steps = 2 * len(tasks)
    # plain decoding's capacity first; each k's bracket then starts at it (``find``)
    plain = start_search(tasks[0], evaluator.executor if evaluator.executor.width() > 1 else None)
    if evaluator.progress:
        evaluator.progress(1, steps)
    start = plain.value if plain.value is not None and not plain.at_least else None
    rest = [replace(t, start_per_s=start) for t in tasks[1:]]
    found: dict[int, CapacitySearch] = {0: plain}
    for done, (i, search) in enumerate(_together(evaluator.executor, start_search, rest), 2):
        found[i + 1] = search
        if evaluator.progress:
            evaluator.progress(done, steps)
    searches = [found[i] for i in range(len(tasks))]
    caps: list[np.ndarray] = []
    terms: list[ModelErrorTerm | None] = []
    within: list[tuple[float, float] | None] = [None] * len(searches)
    tolerances: list[float] = []
    if draws is not None:  # first: the draws may complete rates stopped early
        # the terms at the capacities' decode batches (the searches' rates alone)
        tolerances = completion_tolerances(_terms(draws, [s.result() for s in searches]))
        for s, tol in zip(searches, tolerances, strict=True):
            # each k's draws start where the draw moved the capacity of the policy before
            # it (the next smaller k, or plain decoding), plain decoding's from the move
            # of its service bound in the draw
            moves = _moves(caps, searches) if caps else _bound_moves(draws, s)
            got = completed_draws(draws, s.result(), share, search=s, tolerance=tol, moves=moves)
            caps.append(got[0])
        terms = _terms(draws, [s.result() for s in searches])
        within = [
            _settled_range(s.value, c, t) if s.value is not None and not s.at_least else None
            for s, c, t in zip(searches, caps, terms, strict=True)
        ]
    items = list(zip(searches, within, strict=True))
    for done, _ in enumerate(_together(evaluator.executor, _ends, items), 1):
        if evaluator.progress:
            evaluator.progress(len(tasks) + done, steps)
    policies = tuple(s.result() for s in searches)
    gains = tuple(gain_ci95(p, policies[0], share) for p in policies)
    intervals = () if draws is None else capacity_intervals(policies, caps, gains, terms)
    counts = replication_counts(evaluator, draws)
    counts["replications_run"] += sum(s.ev.replications_run for s in searches)
    stops = sequential and evaluator.replications > FIRST
    notes: tuple[str, ...] = (_resolution_note(rtol),)
    notes = (*notes, describe(FIRST, evaluator.replications)) if stops else notes
    if draws is not None and draws.draws:
        notes = (*notes, LADDER_NOTE, *_completion_note(tolerances), *_stopped_notes(searches))
    return CapacityResult(
        scenario=scenario,
        share=share,
        policies=policies,
        runs=evaluator.runs + sum(s.ev.runs for s in searches),
        settings={**dict(settings or {}), "hint_per_s": hint_per_s, "rtol": rtol, **counts},
        assumptions=(*assumptions, *notes),
        gain_ci95=gains,
        interval90=intervals,
        model_error=_widest(terms),
    )


def _moves(caps: Sequence[np.ndarray], searches: Sequence[CapacitySearch]) -> np.ndarray | None:
    """Each draw's move of the log capacity of the last policy drawn before this one
    with a crossing (``caps`` (D,) per policy drawn so far, plain decoding first, in the
    order of ``searches``: the next smaller k, else plain decoding), ln(cap_d / nominal)
    (D,; NaN where the draw has none: beyond the ladder or rejected), to start this
    policy's draws (``completed_draws``). The inputs a draw moves (the server's costs,
    the acceptance) move every policy's capacity of that server, by tens of percent, and
    more alike the nearer the two policies' k: on the shipped serving scenario a draw
    moves k's log capacity by that of k - 1 within 0.0-1.7 ladder steps, against up to
    3.5 for plain decoding's move and k = 4. None without such a policy."""
    for c, s in zip(reversed(caps), reversed(searches[: len(caps)]), strict=True):
        if s.value is not None and not s.at_least:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.log(c) - math.log(s.value)
    return None


def _bound_moves(draws: DrawnPoints, search: CapacitySearch) -> np.ndarray | None:
    """Each draw's move of the policy's service bound (sim/simulation/serving/stability.py
    ``service_bound``: the most requests a second its server answers, from the cost
    model, nothing simulated), ln(bound_d / bound) (D,; NaN for a draw the scenario
    rejects), to start plain decoding's draws (``completed_draws``' ``moves``), which no
    other policy's draws precede: a draw that makes the server slower or faster moves its
    capacity the same way. A prediction only (it picks a draw's first ladder rate;
    the capacity under the SLOs moves further than the bound on the shipped serving
    scenario, about twice): where it misses, the ladder's probes take over, as from the
    nominal capacity's rate. None for plans without a scenario or a bound that is not
    finite."""
    plans = draws.evaluator.builder
    if not isinstance(plans, ScenarioPlans) or not 0.0 < search.bound < math.inf:
        return None
    load = Load("rate", math.exp(search.origin))
    out = np.full(len(draws.draws), np.nan)
    for d, drawn in enumerate(draws.draws):
        builder = replace(plans, drawn=drawn, sampled=InputDraws())
        try:
            plan = builder(load, plan_steps(search.policy, builder))
        except SpecsimError:  # a draw outside what the scenario allows
            continue
        bound = service_bound(plan, plan.drafting(search.policy)).rate_per_s
        out[d] = math.log(bound / search.bound)
    return out


def _completion_note(tolerances: Sequence[float]) -> list[str]:
    """The assumption line of the completion's tolerance (none where it is 0)."""
    if not tolerances or not all(t > 0 for t in tolerances):
        return []
    got = ", ".join(f"{100 * t:.1f}%" for t in tolerances)
    return [
        "draws: a ladder rate's nominal stopped early grows until the move its other "
        "replications could still make to a draw's capacity has a standard deviation of "
        "at most a quarter of the model-error term's sigma (the capacity's, and the "
        f"gain's over sqrt(2)), in log rate {got} (plain decoding, then each k): at 90% "
        "at most a quarter of the 90% interval's half-width (docs/study-speed.md)"
    ]


def _resolution_note(rtol: float) -> str:
    """The assumption line of a capacity's resolution (its bisection's ``rtol``)."""
    return (
        f"capacity: the mean attainment's crossing of the share, interpolated in log rate "
        f"between the last passing and the first failing rate of a bisection to "
        f"{100 * rtol:.1f}% (--rtol; by default one step of the draws' ladder, as each "
        f"draw's capacity is read: docs/studies/speed-capacity-precision.md)"
    )


LADDER_NOTE = (
    f"draws: each draw's capacity is its crossing of the share between two neighbouring "
    f"rates of its own ladder, {100 * math.expm1(LADDER_STEP):.1f}% apart (log 2 / "
    f"{2**LADDER_LEVEL}), interpolated in log rate on its attainment there (the nominal "
    f"mean moved by the draw's paired shift on the same seeds where the nominal search ran, "
    f"its own replications' mean at the ladder rates it did not, where the nominal does "
    f"not run): within one ladder step of where its attainment crosses the share, wherever "
    f"the nominal search's rates lie; the shift is scaled by min(1, the draw's "
    f"replications' standard deviation over the nominal's), so a draw far below its own "
    f"capacity (its replications near 1) keeps its own attainment (docs/study-speed.md)"
)


def _settled_range(
    value: float, caps: np.ndarray, term: ModelErrorTerm | None
) -> tuple[float, float] | None:
    """The range (requests/s) the capacity's 90% interval holds whatever its 95% ends
    are: the draws' capacities' 5-95% (``caps`` (D,), inf beyond the rates run) joined
    with the model-error band around ``value`` (``capacity_intervals``); None without a
    finite draw."""
    v = caps[~np.isnan(caps)]
    if not v.size:
        return None
    lo, hi = (float(q) for q in np.quantile(v, [0.05, 0.95], method="inverted_cdf"))
    if term is not None:
        band = term.level(value, [value, value])
        assert band is not None
        lo, hi = min(lo, band[0]), max(hi, band[1])
    return max(lo, 0.0), hi


def _stopped_notes(searches: Sequence[CapacitySearch]) -> list[str]:
    """One line for the 95% ends whose bisection stopped inside the 90% interval's
    range (none: no line)."""
    ends = []
    for s in searches:
        name = f"k = {s.k}" if s.k else "plain decoding"
        for which, (a, b), (lo, hi) in s.stopped:
            end = "lower" if which == "lo" else "upper"
            ends.append(f"{name} {end} [{a:.4g}, {b:.4g}] in [{lo:.4g}, {hi:.4g}]")
    if not ends:
        return []
    return [
        "95% ends: a bisection stopped once its bracket lay inside the range the 90% "
        "interval holds from the draws and the model-error band, and the end is its "
        "bracket's outer end (wider than the band inversion, never narrower; the 90% "
        "interval the one a full bisection gives), requests/s: " + "; ".join(ends)
    ]


def drawn_capacities(
    draws: DrawnPoints, p: PolicyCapacity, share: float, sequential: bool = False
) -> np.ndarray:
    """Each draw's capacity of policy ``p`` (D,), on the draws' own rate ladder
    (``completed_draws``); -inf below the ladder's rates, inf above, NaN for a draw the
    scenario rejects or a policy without a crossing."""
    return completed_draws(draws, p, share, sequential)[0]


def ladder_index(log_rate: float, origin: float) -> float:
    """Where ``log_rate`` lies on the draws' ladder of origin ``origin`` (a ladder rate:
    a whole number)."""
    return (log_rate - origin) / LADDER_STEP


def completed_draws(
    draws: DrawnPoints,
    p: PolicyCapacity,
    share: float,
    sequential: bool = False,
    search: CapacitySearch | None = None,
    tolerance: float = 0.0,
    moves: np.ndarray | None = None,
) -> tuple[np.ndarray, PolicyCapacity, int]:
    """Each draw's capacity of policy ``p`` (D,), ``p`` with every nominal rate the
    draws ran (its curve, attainment and points; its capacity and 95% interval are the
    search's), and the nominal replications that took.

    **The ladder.** A draw's capacity is its crossing of ``share`` between two neighbouring
    rates of the ladder ``origin + j LADDER_STEP`` in log rate (j whole, ``origin`` the
    search's hint, ``p.origin_log_rate``), interpolated linearly in log rate on the draw's
    own attainment there. The ladder lies on the searches' own lattice (the hint plus
    dyadic fractions of log 2): at a ladder rate the search tried, the draw's attainment is
    its mean moved by the nominal's correction on the same seeds, the paired shift capped
    where the draw's replications vary less than the nominal's (``capped_shift``: a
    control variate, exact in expectation); at a ladder rate the search did not try, the
    mean of the draw's own replications (exact in expectation too, without the control
    variate's narrowing: the nominal does not run there;
    docs/studies/speed-capacity-own-attainment.md). ``search``: the policy's search
    (taken up again from ``p`` when None: a new evaluator on the draws' one, with the
    search's sequential rule when ``sequential``). A draw's bracket starts at the ladder rate at or
    below the nominal capacity, or (``moves`` (D,), a draw's predicted move of its log
    capacity: the policy's drawn before it in the same draw, ``_moves``) at the ladder rate
    nearest the nominal capacity so moved (a NaN or infinite move: at the first); then
    (``_probes``) its attainment is predicted at each ladder rate inside the bracket as
    the nominal mean (linear in log rate between the nominal rates run) moved by the
    draw's shift at the bracket's ends, and it runs the ladder rate nearest the predicted
    crossing, one a round, until the bracket is two neighbouring ladder rates
    (``_narrowed``). The prediction only picks
    rates: where the draw's attainment falls with the rate the bracket is the one pair of
    neighbouring ladder rates around its crossing, whatever rates the nominal search tried,
    and the capacity lies within one ladder step of that crossing. Ladder rates outside the
    search's domain, or above the service bound under a TTFT limit (failing unsimulated for
    the nominal), are not run: a draw that passes at the highest ladder rate run has
    capacity inf (above), one that fails at the lowest -inf.

    **Completion.** Where a rate the nominal search ran stopped at its first replications
    (the share's rule), a draw read there whose side of the share the nominal's other
    replications could still change (``side_open``: within ``SETTLED_SE`` x beta s sqrt(1/n
    - 1/R) of it) has it decided by the nominal mean's own noise: the rate runs
    ``COMPLETION_STEP`` more replications at a time, the draws read again on the larger mean
    after each, until no draw's side is open (at all R at the latest) or (``tolerance`` > 0,
    ``completion_tolerances``) the move the other replications could still make to an open
    draw's capacity has a standard deviation of at most ``tolerance`` in log rate
    (``capacity_move``, on the nominal's fall across its capacity, ``nominal_fall``).

    **Current values.** A draw's attainment at a rate the search ran is always
    ``capped_shift(nominal, drawn)`` on the nominal's replications there now: when a rate
    grows, every draw that ran there is read again, those of earlier rounds as well as
    the round's (a draw read on the first n keeps a value whose nominal mean the other
    replications have since moved by m_n' - m_n, times beta), and the completion runs
    while any of them is undecided. Each round every draw's bracket is taken afresh from
    its values at every rate it ran (``_bracket``): the bracket the round-by-round search
    gives while no value changes side, moved where one does."""
    out = np.full(len(draws.draws), np.nan)
    if not p.crossing or not p.points:
        return out, p, 0
    ev = draws.evaluator
    if search is None:
        nominal = search_evaluator(
            ev.builder, ev.replications, ev.seed, ev.slo, share, sequential, ev.executor
        )
        search = CapacitySearch.of(p, nominal, share)
    before = search.ev.replications_run
    origin = search.origin
    j_lo, j_hi = search.ladder_span()

    def log_rate(j: int) -> float:
        return search.log_rate(origin + j * LADDER_STEP)

    def ran(j: int) -> bool:
        """Whether the nominal search ran ladder place ``j`` (the draws read it there)."""
        return search.ran(origin + j * LADDER_STEP)

    def nominal_at(j: int) -> np.ndarray:
        got = search.known(log_rate(j))
        assert got is not None  # a ladder rate at most the bound
        return got.values["slo_attainment"]

    cache: dict[int, np.ndarray] = {}  # ladder place -> every draw's attainment there
    readers: dict[int, list[int]] = {}  # ladder place -> the draws that ran there

    def read(j: int) -> None:
        """Every draw that ran at ``j`` read on the nominal's replications there now (on
        its own where the search did not run there)."""
        got = cache.setdefault(j, np.full(len(draws.draws), np.nan))
        mine = nominal_at(j) if ran(j) else None
        key = search.key(log_rate(j))
        for d in readers[j]:
            pts = draws.points[d]
            if pts is not None and key in pts:
                drawn = pts[key].values["slo_attainment"]
                got[d] = float(np.mean(drawn)) if mine is None else capped_shift(mine, drawn)

    assert p.rate_per_s is not None  # a crossing (above) has a capacity
    cap = math.log(p.rate_per_s)
    fall = nominal_fall(search, cap)

    def open_at(j: int, d: int, mine: np.ndarray, drawn: np.ndarray) -> bool:
        """Draw ``d``'s side at ``j`` could still change (``side_open``) by a move of its
        capacity larger than ``tolerance`` (``capacity_move``)."""
        r = search.ev.replications
        if not side_open(cache[j][d], mine, drawn, share, r):
            return False
        return not (tolerance > 0 and capacity_move(mine, drawn, r, fall) <= tolerance)

    def undecided(j: int) -> bool:
        """Whether the nominal's other replications at ``j`` could still move a draw that
        ran there across the share by more than the tolerance (``open_at``)."""
        if not ran(j):  # a draw's own attainment: no nominal replications to add
            return False
        mine, key = nominal_at(j), search.key(log_rate(j))
        return any(
            open_at(j, d, mine, pts[key].values["slo_attainment"])
            for d in readers[j]
            if (pts := draws.points[d]) is not None and key in pts
        )

    def run(probes: Mapping[int, Sequence[int]]) -> None:
        """Every draw at its rates of ``probes`` (one batch), then each rate read, the
        nominal there (a rate the search ran) completed while a draw that ran there, in
        this round or an earlier one, is undecided."""
        keys = {j: search.key(log_rate(j)) for j in sorted(probes)}
        draws.ensure_pairs([(d, [keys[j]]) for j in keys for d in probes[j]])  # one batch
        for j, key in keys.items():
            ds = list(probes[j])
            readers[j] = sorted({*readers.get(j, ()), *ds})
            read(j)
            while undecided(j):
                have = nominal_at(j).size
                if not search.ev.complete([key], upto=have + COMPLETION_STEP):
                    break
                read(j)

    def bracket(d: int) -> tuple[int, int] | None:
        """Draw ``d``'s bracket (``_bracket``) from its attainment now at every ladder
        rate it ran (None: a draw the scenario rejects)."""
        seen = {j: float(cache[j][d]) for j, ds in readers.items() if d in ds}
        if not all(np.isfinite(a) for a in seen.values()):
            return None
        return _bracket(seen, share, j_lo, j_hi)

    def place(x: float) -> int:
        return max(j_lo, min(j_hi, math.floor(ladder_index(x, origin) + 1e-9)))

    j0 = place(cap)
    everyone = list(range(len(draws.draws)))
    first: dict[int, list[int]] = {}
    for d in everyone:
        m = math.nan if moves is None else float(moves[d])
        if math.isfinite(m):  # the ladder rate nearest the predicted crossing
            j = max(j_lo, min(j_hi, round(ladder_index(cap + m, origin))))
            first.setdefault(j, []).append(d)
        else:
            first.setdefault(j0, []).append(d)
    run(first)
    # each draw's bracket (P, F): passes at ladder rate P, fails at F (j_lo - 1 and
    # j_hi + 1: the virtual ends beyond the rates run), searched until F = P + 1; every
    # round, each from the draw's attainment at the rates it ran, as they read now
    brackets: dict[int, tuple[int, int]] = {}
    live = everyone
    while True:
        got = {d: bracket(d) for d in live}
        brackets = {d: b for d, b in got.items() if b is not None}  # else rejected
        live = list(brackets)
        curve = _nominal_curve(search)
        probes: dict[int, list[int]] = {}
        for d, (lo, hi) in brackets.items():
            if hi - lo > 1:
                seen = {j: float(cache[j][d]) for j in (lo, hi) if j in cache}
                for j in _probes(lo, hi, origin, curve, seen, share):
                    probes.setdefault(j, []).append(d)
        if not probes:
            break
        run(probes)
    for d, (lo, hi) in brackets.items():
        if lo < j_lo:
            out[d] = -math.inf
        elif hi > j_hi:
            out[d] = math.inf
        else:
            a_lo, a_hi = cache[lo][d], cache[hi][d]
            t = (a_lo - share) / (a_lo - a_hi)
            out[d] = math.exp(log_rate(lo) + t * (log_rate(hi) - log_rate(lo)))
    return out, search.result(), search.ev.replications_run - before


def capped_shift(nominal: np.ndarray, drawn: np.ndarray) -> float:
    """A draw's attainment at a rate from its replications ``drawn`` (r,) and the
    nominal's ``nominal`` (n,) on the same seeds (the first r): mean(drawn) + beta
    (mean(nominal) - mean(nominal[:r])), the control variate of common random numbers,
    with beta = min(1, s_drawn / s_nominal) (sample standard deviations). The variance
    of such an estimate is least at beta = rho s_drawn / s_nominal, rho the correlation
    of the two runs' replications; rho <= 1 bounds it. beta = 1 is the paired shift
    (``shifted``), right where the draw's replications vary as the nominal's; a draw far
    below its own capacity meets the SLO in nearly every replication while the
    nominal's vary, and the full shift would carry the nominal's own noise into it (on
    the shipped serving scenario two draws read 0.87 where their replications gave 1.0,
    1.0). A nominal that does not vary: the plain shift."""
    r = drawn.size
    beta = _beta(nominal, drawn)
    return float(np.mean(drawn) + beta * (np.mean(nominal) - np.mean(nominal[:r])))


def _beta(nominal: np.ndarray, drawn: np.ndarray) -> float:
    """``capped_shift``'s beta = min(1, s_drawn / s_nominal) (1 where the nominal does not
    vary)."""
    s_n = float(np.std(nominal, ddof=1)) if nominal.size > 1 else 0.0
    s_d = float(np.std(drawn, ddof=1)) if drawn.size > 1 else 0.0
    return 1.0 if s_n == 0.0 else min(1.0, s_d / s_n)


#: Nominal replications a ladder rate adds at a time while a draw's side of the share
#: there is still open (``side_open``): the two workers' width.
COMPLETION_STEP = 2


def side_open(
    estimate: float, nominal: np.ndarray, drawn: np.ndarray, share: float, replications: int
) -> bool:
    """Whether the nominal's replications not yet run at a ladder rate could still move a
    draw's attainment there (``estimate``, ``capped_shift`` of the ``nominal``'s n
    replications and the draw's ``drawn``) to the other side of ``share``: the draw's
    bracket reads only that side (``_narrowed``).

    Only the nominal mean changes as it grows: with all R (``replications``) the
    estimate moves by beta (m_R - m_n), m_n the mean of the first n, whose variance is
    s^2 (1/n - 1/R) (m_R - m_n = (R - n) / R (m_new - m_n), m_new the mean of the other
    R - n: ((R - n) / R)^2 s^2 (1 / (R - n) + 1 / n)), s the nominal's per-replication
    standard deviation, estimated on its n. The side is open while |estimate - share| <=
    ``SETTLED_SE`` x beta s sqrt(1/n - 1/R), the sequential rule's margin (t(0.975, 3) =
    3.18 < 4 at n = 4); at n = R it is closed. A non-finite estimate (a draw the scenario
    rejects) is closed: nothing reads it; fewer than two nominal replications are open."""
    n = nominal.size
    if not math.isfinite(estimate) or n >= replications:
        return False
    if n < 2:
        return True
    s = float(np.std(nominal, ddof=1))
    margin = SETTLED_SE * _beta(nominal, drawn) * s * math.sqrt(1.0 / n - 1.0 / replications)
    return abs(estimate - share) <= margin


def capacity_move(nominal: np.ndarray, drawn: np.ndarray, replications: int, fall: float) -> float:
    """The standard deviation, in log rate, of the move the nominal's replications not yet
    run at a ladder rate could still make to a draw's capacity read there: the move of
    its attainment, beta s sqrt(1/n - 1/R) (``side_open``), over ``fall``, the
    attainment's fall per unit log rate where it crosses the share (a draw's crossing
    interpolated between two ladder rates moves by the move of a value there over that
    fall, whichever side the value lands on). inf with fewer than two nominal
    replications or no fall; 0 with all R."""
    n = nominal.size
    if n >= replications:
        return 0.0
    if n < 2 or not fall > 0:
        return math.inf
    s = float(np.std(nominal, ddof=1))
    return _beta(nominal, drawn) * s * math.sqrt(1.0 / n - 1.0 / replications) / fall


def nominal_fall(search: CapacitySearch, log_capacity: float) -> float:
    """The nominal mean attainment's fall per unit log rate across one ladder step
    centred on its capacity (``log_capacity``): linear between the rates run, on the
    curve made to fall with the rate (``_probes``'s); where the draws' curves are the
    nominal's moved along the rate, each draw's fall where it crosses the share."""
    xs, means = _nominal_curve(search)
    if xs.size < 2:
        return 0.0
    falling = np.minimum.accumulate(means)
    h = LADDER_STEP / 2
    a_lo, a_hi = np.interp([log_capacity - h, log_capacity + h], xs, falling)
    return float(a_lo - a_hi) / LADDER_STEP


def completion_tolerances(terms: Sequence[ModelErrorTerm | None]) -> list[float]:
    """Per policy (plain decoding first), the standard deviation in log rate up to which
    the nominal's missing replications at a ladder rate may still move a draw's capacity
    (``completed_draws``): ``PRECISION_SHARE`` (a quarter, the sequential rule's
    ``precise``) of the model-error term's sigma of every answer the
    draw enters, its capacity (the levels' sigma) and its gains (the gains' sigma of the
    pair, the wider of the two terms, as ``capacity_intervals`` takes it, over sqrt(2):
    a gain's draw is the ratio of two capacities each read so). The term's band, z sigma
    either side, is part of every 90% interval (``widen``), so the move is at most a
    quarter of that interval's half-width at 90%. 0 (complete as ``side_open`` says)
    without a term for every policy."""
    if not terms or any(t is None for t in terms):
        return [0.0] * len(terms)
    ts = [t for t in terms if t is not None]
    gains = [max(t.gain_sigma, ts[0].gain_sigma) for t in ts[1:]]
    out = []
    for i, t in enumerate(ts):
        gain = min(gains) if i == 0 else gains[i - 1]
        out.append(PRECISION_SHARE * min(t.level_sigma, gain / math.sqrt(2.0)) if gains else 0.0)
    return out


def _nominal_curve(search: CapacitySearch) -> tuple[np.ndarray, np.ndarray]:
    """(log rates (P,), increasing; mean attainment there (P,)) of every rate ``search``
    has run (0 above the bound: fails, not simulated)."""
    at: dict[float, float] = {}
    for x in search.rates.values():
        if math.exp(x) > search.skip_above:
            at[x] = 0.0
        elif search.key(x) in search.ev.memo:
            at[x] = float(np.mean(search.ev.memo[search.key(x)].values["slo_attainment"]))
    xs = sorted(at)
    return np.array(xs), np.array([at[x] for x in xs])


def _bracket(seen: Mapping[int, float], share: float, j_lo: int, j_hi: int) -> tuple[int, int]:
    """A draw's bracket on the ladder from its attainment at the places it ran (``seen``,
    place -> attainment): F the lowest place where it fails (< ``share``), P the highest
    below F where it passes (j_hi + 1 and j_lo - 1, the virtual ends, where none).

    This is the bracket the round-by-round search narrows to (``_narrowed`` from (j_lo -
    1, j_hi + 1), each round's places inside the bracket of the round before): by
    induction F stays the lowest failing place read and P the highest passing one below
    it, since a round's places lie strictly between them. Read from scratch it also
    holds when a value moves, as the nominal's replications at a place grow after the
    draw read it: a value that changes side there (possible only past ``side_open``'s
    margin of the count it was read at, so rare) moves the bracket accordingly, and the
    draw searches on inside it (no place it ran lies strictly inside, so a probe is a new
    one)."""
    return _narrowed(j_lo - 1, j_hi + 1, [(j, a >= share) for j, a in seen.items()])


def _narrowed(lo: int, hi: int, seen: Sequence[tuple[int, bool]]) -> tuple[int, int]:
    """A draw's bracket (passes at ``lo``, fails at ``hi``) narrowed by what it gave at
    the rates ``seen`` inside it ((index, passes), any order): from ``lo`` upwards, the
    first that fails and the one before it."""
    for j, passes in sorted(seen):
        if not passes:
            return lo, j
        lo = j
    return lo, hi


#: Ladder steps a draw's bracket moves out from its one simulated end when the draw's
#: attainment there says nothing of where it crosses (at or beyond the nominal curve's
#: highest or lowest mean).
OUTWARD = 4


def _probes(
    lo: int,
    hi: int,
    origin: float,
    curve: tuple[np.ndarray, np.ndarray],
    seen: Mapping[int, float],
    share: float,
) -> list[int]:
    """The ladder places a draw runs next inside its bracket (``lo``, ``hi``; ``seen``:
    its attainment at the ends simulated, place -> attainment).

    Predicted as the nominal mean ``curve`` ((log rates, means), made to fall with the
    rate) moved along the rate: at each end simulated, the draw's attainment a is the
    nominal's at log rate x_nom(a), so the draw's curve is the nominal's moved by x -
    x_nom(a) (the mean of the ends' moves), and its crossing of the share is predicted at
    x_nom(share) plus that move; the draw runs the one ladder rate nearest it (inside the
    bracket: where that is an end already run, its neighbour inside). One rate a round:
    the next round predicts again from the draw's value there, near the share where the
    curve falls fastest, and a prediction a step or more off costs one rate, not a pair
    both on the same side (docs/studies/speed-capacity-one-rate.md). Where no end
    tells (its attainment at or beyond the nominal's
    highest or lowest mean) or the prediction lies outside the bracket, the bracket's
    midpoint, or ``OUTWARD`` steps beyond its one simulated end. A prediction only picks
    the rates: the crossing is read on the draw's own attainment, and where that
    attainment falls with the rate the bracket ends on the pair of neighbouring ladder
    rates around it (``_narrowed``)."""
    xs, means = curve
    falling = np.minimum.accumulate(means)
    up_x, up_a = xs[::-1], falling[::-1]  # attainment increasing, for np.interp

    def x_nom(a: float) -> float:
        return float(np.interp(a, up_a, up_x))

    moves = [
        origin + j * LADDER_STEP - x_nom(a) for j, a in seen.items() if falling[-1] < a < falling[0]
    ]
    want: list[int] = []
    if moves:
        at = ladder_index(x_nom(share) + sum(moves) / len(moves), origin)
        if lo <= math.floor(at) < hi:  # else the prediction contradicts the draw's own ends
            want = [round(at)]  # an end already run: its neighbour inside (below)
    if not want and lo in seen and hi in seen:
        want = [(lo + hi) // 2]
    elif not want:
        want = [lo + OUTWARD] if lo in seen else [hi - OUTWARD]
    got = sorted({min(max(j, lo + 1), hi - 1) for j in want})
    return [j for j in got if lo < j < hi]


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
        g = _gain(p, policies[0])
        if g is not None and p is not policies[0]:
            low, point, high = gain_draws(cap, caps[0], p.ladder_ends, policies[0].ladder_ends)
            got = interval90(point[np.isfinite(point)].tolist(), gain_ci, positive=True)
            pair = [t for t in (term, terms[0]) if t is not None]
            if got is not None and pair:
                widest = max(pair, key=lambda t: t.gain_sigma)
                got = widest.gain(g, got)
            row["capacity_gain_interval90"] = (
                None if got is None else _censored_ends(got, low, high)
            )
        out.append(row)
    return tuple(out)


def gain_draws(
    cap: np.ndarray,
    base: np.ndarray,
    ends: tuple[float, float],
    base_ends: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each draw's capacity gain ``cap`` / ``base`` (D,) as (the lowest it can be, a
    value, the highest it can be). A capacity beyond the ladder's rates run (inf: passes
    at the highest, ``ends[1]``; -inf: fails at the lowest, ``ends[0]``) bounds the gain
    on one side: a policy's capacity above its highest rate gives a gain at least
    that rate over plain decoding's capacity (no upper bound), below its lowest at most
    that rate over it (no lower bound), and plain decoding's the other way round; the
    value is then that bound. Both beyond: NaN (no bound of the ratio), left out."""
    lo_p, hi_p = ends
    lo_0, hi_0 = base_ends
    num_lo = np.where(cap == np.inf, hi_p, np.where(cap == -np.inf, 0.0, cap))
    num_hi = np.where(cap == np.inf, np.inf, np.where(cap == -np.inf, lo_p, cap))
    den_lo = np.where(base == np.inf, hi_0, np.where(base == -np.inf, 0.0, base))
    den_hi = np.where(base == np.inf, np.inf, np.where(base == -np.inf, lo_0, base))
    with np.errstate(invalid="ignore", divide="ignore"):
        low = num_lo / den_hi
        high = num_hi / den_lo
    both = ~np.isfinite(cap) & ~np.isfinite(base)
    low[both | np.isnan(cap) | np.isnan(base)] = np.nan
    high[np.isnan(low)] = np.nan
    return low, np.where(np.isinf(high), low, high), high


def _censored_ends(got: Sequence[float], low: np.ndarray, high: np.ndarray) -> list[float | None]:
    """``got`` (a 90% interval from the draws' values and the Monte Carlo 95%) joined with
    the 5% quantile of the draws' lowest gains ``low`` and the 95% of their highest
    ``high`` (D,; NaN left out): a draw known only from one side lies there at its bound
    for the other side's end, which is then conservative, and where the quantile lands
    on a draw unbounded on its side (a lowest gain of 0, a highest of inf) that end is
    open (None)."""
    lo_v, hi_v = low[~np.isnan(low)], high[~np.isnan(high)]
    lo, hi = float(got[0]), float(got[1])
    if lo_v.size:
        q = float(np.quantile(lo_v, 0.05, method="inverted_cdf"))
        lo = min(lo, q) if q > 0 else math.nan
    if hi_v.size:
        q = float(np.quantile(hi_v, 0.95, method="inverted_cdf"))
        hi = max(hi, q) if math.isfinite(q) else math.nan
    return [None if math.isnan(lo) else lo, None if math.isnan(hi) else hi]


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
