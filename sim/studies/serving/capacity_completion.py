"""When a ladder rate's nominal replications are complete enough for the draws read there
(``completed_draws``, sim/studies/serving/capacity_ladder.py): a draw's attainment on the
nominal's replications (``capped_shift``), whether the nominal's replications not yet run
could still move it across the share (``side_open``) or its capacity by more than a
tolerance (``capacity_move``, on the nominal's fall across its capacity, ``nominal_fall``,
``nominal_curve``), and those tolerances per policy (``completion_tolerances``); a
policy's draws on its ladder while they run, each rate completed while a draw read there
is undecided (``LadderDraws``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.studies.serving.capacity_search import LADDER_STEP, CapacitySearch, ladder_index
from sim.studies.serving.draws import DrawnPoints
from sim.studies.serving.sequential import PRECISION_SHARE, SETTLED_SE
from sim.uncertainty.model_error import ModelErrorTerm

__all__ = [
    "COMPLETION_STEP",
    "LadderDraws",
    "capacity_move",
    "capped_shift",
    "completion_tolerances",
    "nominal_curve",
    "nominal_fall",
    "side_open",
]


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
    xs, means = nominal_curve(search)
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


def nominal_curve(search: CapacitySearch) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass(slots=True)
class LadderDraws:
    """A policy's draws on its ladder while they run (``completed_draws``): the draws, the
    nominal ``search``, the ladder's ``origin`` (the search's hint) and span of places
    (``j_lo``, ``j_hi``), the nominal's ``fall`` across its capacity (``nominal_fall``),
    and what the draws gave: ``cache`` (ladder place -> every draw's attainment there,
    NaN where it did not run) and ``readers`` (ladder place -> the draws that ran there).
    Ladder place j is log rate ``origin + j LADDER_STEP``."""

    draws: DrawnPoints
    search: CapacitySearch
    share: float
    tolerance: float
    fall: float
    origin: float
    j_lo: int
    j_hi: int
    cache: dict[int, np.ndarray] = field(default_factory=dict)
    readers: dict[int, list[int]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, draws: DrawnPoints, search: CapacitySearch, share: float, tolerance: float, cap: float
    ) -> LadderDraws:
        """The ladder of ``search`` before any draw ran (``cap``: the nominal log capacity)."""
        j_lo, j_hi = search.ladder_span()
        fall = nominal_fall(search, cap)
        return cls(draws, search, share, tolerance, fall, search.origin, j_lo, j_hi)

    def log_rate(self, j: int) -> float:
        """Ladder place ``j``'s log rate (on the search's lattice)."""
        return self.search.log_rate(self.origin + j * LADDER_STEP)

    def ran(self, j: int) -> bool:
        """Whether the nominal search ran ladder place ``j`` (the draws read it there)."""
        return self.search.ran(self.origin + j * LADDER_STEP)

    def nominal_at(self, j: int) -> np.ndarray:
        """The nominal's attainment at ladder place ``j``, one value a replication run."""
        got = self.search.known(self.log_rate(j))
        assert got is not None  # a ladder rate at most the bound
        return got.values["slo_attainment"]

    def place(self, x: float) -> int:
        """The ladder place at or below log rate ``x``, inside the ladder's span."""
        return max(self.j_lo, min(self.j_hi, math.floor(ladder_index(x, self.origin) + 1e-9)))

    def read(self, j: int) -> None:
        """Every draw that ran at ``j`` read on the nominal's replications there now (on
        its own where the search did not run there)."""
        got = self.cache.setdefault(j, np.full(len(self.draws.draws), np.nan))
        mine = self.nominal_at(j) if self.ran(j) else None
        key = self.search.key(self.log_rate(j))
        for d in self.readers[j]:
            pts = self.draws.points[d]
            if pts is not None and key in pts:
                drawn = pts[key].values["slo_attainment"]
                got[d] = float(np.mean(drawn)) if mine is None else capped_shift(mine, drawn)

    def open_at(self, j: int, d: int, mine: np.ndarray, drawn: np.ndarray) -> bool:
        """Draw ``d``'s side at ``j`` could still change (``side_open``) by a move of its
        capacity larger than ``tolerance`` (``capacity_move``)."""
        r = self.search.ev.replications
        if not side_open(self.cache[j][d], mine, drawn, self.share, r):
            return False
        return not (
            self.tolerance > 0 and capacity_move(mine, drawn, r, self.fall) <= self.tolerance
        )

    def undecided(self, j: int) -> bool:
        """Whether the nominal's other replications at ``j`` could still move a draw that
        ran there across the share by more than the tolerance (``open_at``)."""
        if not self.ran(j):  # a draw's own attainment: no nominal replications to add
            return False
        mine, key = self.nominal_at(j), self.search.key(self.log_rate(j))
        return any(
            self.open_at(j, d, mine, pts[key].values["slo_attainment"])
            for d in self.readers[j]
            if (pts := self.draws.points[d]) is not None and key in pts
        )

    def run(self, probes: Mapping[int, Sequence[int]]) -> None:
        """Every draw at its rates of ``probes`` (one batch), then each rate read, the
        nominal there (a rate the search ran) completed while a draw that ran there, in
        this round or an earlier one, is undecided."""
        keys = {j: self.search.key(self.log_rate(j)) for j in sorted(probes)}
        self.draws.ensure_pairs([(d, [keys[j]]) for j in keys for d in probes[j]])  # one batch
        for j, key in keys.items():
            ds = list(probes[j])
            self.readers[j] = sorted({*self.readers.get(j, ()), *ds})
            self.read(j)
            while self.undecided(j):
                have = self.nominal_at(j).size
                if not self.search.ev.complete([key], upto=have + COMPLETION_STEP):
                    break
                self.read(j)
