"""Each draw's capacity on a rate ladder of its own (``completed_draws``), for the 90%
intervals from inputs and model of ``capacity`` (sim/studies/serving/capacity.py).

A draw's capacity is its crossing of the share between two neighbouring rates of the
ladder (``LADDER_STEP`` apart in log rate, on the searches' lattice,
sim/studies/serving/capacity_search.py), read on its attainment there: the nominal's
moved by the draw's paired shift (``capped_shift``) where the nominal search ran, its
own replications' mean where it did not. Its rates are picked one a round from the
nominal curve moved by the draw's shift (``_probes``), its bracket read afresh each round
(``_bracket``, ``_narrowed``), its first rate from a predicted move of its capacity
(``capacity_moves``, ``bound_moves``); where the nominal stopped a rate at its first
replications, the rate grows while a draw's side of the share there is open
(``side_open``, ``capacity_move``, ``completion_tolerances``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from sim.errors import SpecsimError
from sim.simulation.serving.stability import service_bound
from sim.studies.serving.capacity_result import PolicyCapacity
from sim.studies.serving.capacity_search import (
    LADDER_STEP,
    CapacitySearch,
    ladder_index,
    search_evaluator,
)
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.paired_metrics import Load
from sim.studies.serving.scenario_plans import ScenarioPlans, plan_steps
from sim.studies.serving.sequential import PRECISION_SHARE, SETTLED_SE
from sim.uncertainty.model_error import ModelErrorTerm
from sim.uncertainty.perturb import InputDraws

__all__ = [
    "COMPLETION_STEP",
    "OUTWARD",
    "bound_moves",
    "capacity_move",
    "capacity_moves",
    "capped_shift",
    "completed_draws",
    "completion_tolerances",
    "drawn_capacities",
    "nominal_fall",
    "side_open",
]


def drawn_capacities(
    draws: DrawnPoints, p: PolicyCapacity, share: float, sequential: bool = False
) -> np.ndarray:
    """Each draw's capacity of policy ``p`` (D,), on the draws' own rate ladder
    (``completed_draws``); -inf below the ladder's rates, inf above, NaN for a draw the
    scenario rejects or a policy without a crossing."""
    return completed_draws(draws, p, share, sequential)[0]


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
    capacity: the policy's drawn before it in the same draw, ``capacity_moves``) at the ladder rate
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


def capacity_moves(
    caps: Sequence[np.ndarray], searches: Sequence[CapacitySearch]
) -> np.ndarray | None:
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


def bound_moves(draws: DrawnPoints, search: CapacitySearch) -> np.ndarray | None:
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
