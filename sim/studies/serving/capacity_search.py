"""One policy's capacity search: the highest Poisson rate at which a share of requests
meets the TTFT and TPOT limits, and its 95% interval (``CapacitySearch``).

SLO attainment (the share of measured requests whose TTFT and TPOT are within the limits,
sim/studies/serving/paired_metrics.py) falls as the arrival rate rises. Poisson arrivals are unit
exponential gaps scaled by 1 / rate (sim/simulation/serving/processes.py
``poisson_arrivals``), so at one seed every rate sees the same requests, compressed in
time: common random numbers along the rate, as the acceptance search has along alpha.
The capacity is found by the root finder of sim/studies/bisection.py (``passing_bracket``:
bracket outward from a hint with doubling steps, then bisect) on log rate to a relative
tolerance ``rtol`` (by default one step of the draws' ladder, ``DEFAULT_RTOL``), the
crossing then interpolated in log rate inside the last bracket; its 95% interval inverts
the attainment's band (the rates at which the upper and lower 95% bounds of attainment
cross the required share, found and interpolated the same way). Every rate tried lies on
one lattice (``LATTICE``), on which the draws' ladder (``LADDER_STEP``, ``ladder_index``;
sim/studies/serving/capacity_ladder.py) lies too.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.model.policy import FixedK
from sim.parallel import Executor
from sim.simulation.serving.metrics import Ratio, SloSpec
from sim.studies.bisection import Probe, passing_bracket
from sim.studies.serving.capacity_result import PolicyCapacity
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, level
from sim.studies.serving.scenario_plans import BASELINE, PlanBuilder
from sim.studies.serving.sequential import Share

__all__ = [
    "DEFAULT_RTOL",
    "LADDER_LEVEL",
    "LADDER_STEP",
    "LATTICE",
    "SPAN",
    "START_STEP",
    "CapacitySearch",
    "CapacityTask",
    "ladder_index",
    "policy_capacity",
    "search_evaluator",
    "search_points",
    "start_search",
]


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


def ladder_index(log_rate: float, origin: float) -> float:
    """Where ``log_rate`` lies on the draws' ladder of origin ``origin`` (a ladder rate:
    a whole number)."""
    return (log_rate - origin) / LADDER_STEP
