"""Each draw's capacity on a rate ladder of its own (``completed_draws``), for the 90%
intervals from inputs and model of ``capacity`` (sim/studies/serving/capacity.py).

A draw's capacity is its crossing of the share between two neighbouring rates of the
ladder (``LADDER_STEP`` apart in log rate, on the searches' lattice,
sim/studies/serving/capacity_search.py), read on its attainment there: the nominal's
moved by the draw's paired shift (``capped_shift``) where the nominal search ran, its
own replications' mean where it did not. Its rates are picked one a round from the
nominal curve moved by the draw's shift (``_probes``), its bracket read afresh each round
(``_bracket``, ``_narrowed``), its first rate from a predicted move of its capacity
(``capacity_moves``, ``bound_moves``, sim/studies/serving/capacity_draw_starts.py); where
the nominal stopped a rate at its first replications, the rate grows while a draw's side
of the share there is open (``side_open``, ``capacity_move``, ``completion_tolerances``,
sim/studies/serving/capacity_completion.py).

``completed_draws`` in stages: the nominal search taken up again where none is given
(``_search_taken_up``), the ladder's working state (``LadderDraws``: the places, the draws'
attainment there and the nominal's completion), each draw's first place
(``_first_places``), the rounds that narrow every bracket to two neighbouring places
(``_narrowed_brackets``), each draw's capacity interpolated in its bracket
(``_capacities``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from sim.studies.serving.capacity_completion import LadderDraws, nominal_curve
from sim.studies.serving.capacity_result import PolicyCapacity
from sim.studies.serving.capacity_search import (
    LADDER_STEP,
    CapacitySearch,
    ladder_index,
    search_evaluator,
)
from sim.studies.serving.draws import DrawnPoints

__all__ = ["OUTWARD", "completed_draws", "drawn_capacities"]


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
    if search is None:
        search = _search_taken_up(draws, p, share, sequential)
    before = search.ev.replications_run
    assert p.rate_per_s is not None  # a crossing (above) has a capacity
    cap = math.log(p.rate_per_s)
    ladder = LadderDraws.of(draws, search, share, tolerance, cap)
    ladder.run(_first_places(ladder, cap, moves))
    _capacities(ladder, _narrowed_brackets(ladder), out)
    return out, search.result(), search.ev.replications_run - before


def _search_taken_up(
    draws: DrawnPoints, p: PolicyCapacity, share: float, sequential: bool
) -> CapacitySearch:
    """Policy ``p``'s search taken up again: a new evaluator on the draws' one (its plans,
    replications, seed, SLO and executor), with the search's sequential rule when
    ``sequential``."""
    ev = draws.evaluator
    nominal = search_evaluator(
        ev.builder, ev.replications, ev.seed, ev.slo, share, sequential, ev.executor
    )
    return CapacitySearch.of(p, nominal, share)


def _draw_bracket(ladder: LadderDraws, d: int) -> tuple[int, int] | None:
    """Draw ``d``'s bracket (``_bracket``) from its attainment now at every ladder rate it
    ran (None: a draw the scenario rejects)."""
    seen = {j: float(ladder.cache[j][d]) for j, ds in ladder.readers.items() if d in ds}
    if not all(np.isfinite(a) for a in seen.values()):
        return None
    return _bracket(seen, ladder.share, ladder.j_lo, ladder.j_hi)


def _first_places(
    ladder: LadderDraws, cap: float, moves: np.ndarray | None
) -> dict[int, list[int]]:
    """Each draw's first ladder place (place -> the draws that start there): the place
    nearest the nominal log capacity ``cap`` moved by the draw's predicted move
    (``moves``), else (no move, or a NaN or infinite one) the place at or below ``cap``."""
    j0 = ladder.place(cap)
    first: dict[int, list[int]] = {}
    for d in range(len(ladder.draws.draws)):
        m = math.nan if moves is None else float(moves[d])
        if math.isfinite(m):  # the ladder rate nearest the predicted crossing
            j = max(ladder.j_lo, min(ladder.j_hi, round(ladder_index(cap + m, ladder.origin))))
            first.setdefault(j, []).append(d)
        else:
            first.setdefault(j0, []).append(d)
    return first


def _narrowed_brackets(ladder: LadderDraws) -> dict[int, tuple[int, int]]:
    """Each draw's bracket (P, F), searched until F = P + 1 (draw -> bracket; a draw the
    scenario rejects has none): it passes at ladder place P and fails at F (``j_lo - 1``
    and ``j_hi + 1``: the virtual ends beyond the rates run). Every round, each bracket is
    taken from the draw's attainment at the places it ran, as they read now (``_draw_bracket``),
    and a draw whose bracket is wider runs the places ``_probes`` picks inside it."""
    brackets: dict[int, tuple[int, int]] = {}
    live = list(range(len(ladder.draws.draws)))
    while True:
        got = {d: _draw_bracket(ladder, d) for d in live}
        brackets = {d: b for d, b in got.items() if b is not None}  # else rejected
        live = list(brackets)
        curve = nominal_curve(ladder.search)
        probes: dict[int, list[int]] = {}
        for d, (lo, hi) in brackets.items():
            if hi - lo > 1:
                seen = {j: float(ladder.cache[j][d]) for j in (lo, hi) if j in ladder.cache}
                for j in _probes(lo, hi, ladder.origin, curve, seen, ladder.share):
                    probes.setdefault(j, []).append(d)
        if not probes:
            return brackets
        ladder.run(probes)


def _capacities(
    ladder: LadderDraws, brackets: Mapping[int, tuple[int, int]], out: np.ndarray
) -> None:
    """Each draw's capacity into ``out`` from its bracket (P, F): -inf where P lies below
    the ladder's span, inf where F lies above it, else exp(x_P + t (x_F - x_P)) with t =
    (a_P - share) / (a_P - a_F), the crossing of the share interpolated linearly in log
    rate x on the draw's attainment a at the two places."""
    for d, (lo, hi) in brackets.items():
        if lo < ladder.j_lo:
            out[d] = -math.inf
        elif hi > ladder.j_hi:
            out[d] = math.inf
        else:
            a_lo, a_hi = ladder.cache[lo][d], ladder.cache[hi][d]
            t = (a_lo - ladder.share) / (a_lo - a_hi)
            lo_x, hi_x = ladder.log_rate(lo), ladder.log_rate(hi)
            out[d] = math.exp(lo_x + t * (hi_x - lo_x))


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
