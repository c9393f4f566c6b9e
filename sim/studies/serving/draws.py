"""90% intervals of serving answers from inputs and model: drawn scenarios on common
random numbers.

A serving answer (a paired gain at a load, where speculation stops paying, the best k)
moves with the scenario's uncertain inputs (sim/uncertainty/perturb.py ``serving_inputs``:
every ``[uncertainty]`` entry with its range or stderr, batched cost terms a calibration
left unidentified included once the scenario carries them so, the acceptance decay prior,
the shape's tilt, the derived-compute efficiency, and the default batched terms of
``SERVING_DEFAULT_RANGES`` over their published ranges). The study is not re-run whole
at every draw; it is made affordable three ways:

* ``DRAWS`` scrambled Sobol draws of the inputs, each a set of overrides of the scenario,
  made once from the bound scenario (sim/uncertainty/perturb.py ``input_draws``), each
  draw's scenario re-validated and bound there (``perturbed``);
* each draw runs only ``DRAW_REPLICATIONS`` replications, on the seeds of the nominal run's
  first replications (common random numbers: the same users, arrivals, lengths and
  acceptance uniforms), and only at the loads that decide the answer (a crossing's
  neighbouring grid loads; the one load of ``serve``);
* a draw's answer is the nominal answer moved by the paired shift, the mean over those
  replications of (draw - nominal): a control variate, the Monte Carlo noise the two
  share cancels, so two replications measure a shift that one draw would need the whole
  run for.

The 90% interval joins the draws' 5% and 95% quantiles, their normal prediction interval
(where one more draw would fall: 8 draws' own quantiles hold a new draw at most 7 times
in 9) and the nominal answer's own Monte Carlo 95% interval (``interval90``): a scenario
without uncertain inputs gets the Monte Carlo interval alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.model_error import widen
from sim.model.policy import FixedK
from sim.parallel import longest_first
from sim.simulation.serving.records import ServingRecord
from sim.studies.serving.evaluator import (
    BASELINE,
    PointEvaluator,
    PointTask,
    ScenarioPlans,
    gain_band,
    replications_of,
    run_in_blocks,
    run_point,
    run_points,
)
from sim.studies.serving.paired_metrics import METRICS, Load, PolicyPoint, gain, paired_values
from sim.studies.serving.sequential import SETTLED_SE, merge, precise
from sim.uncertainty.model_error import beyond_measured_note, model_error_term
from sim.uncertainty.perturb import (
    DRAWS,
    InputDraws,
    Overrides,
    Refit,
    input_draws,
    perturbed,
)

if TYPE_CHECKING:
    from sim.binding.bound import Bound

__all__ = [
    "DRAWS",
    "DRAW_NOISE_SHARE",
    "DRAW_REPLICATIONS",
    "NOISE_CONFIDENCE",
    "SERVE_METRICS",
    "DrawnPoints",
    "Joined",
    "band_joined",
    "beyond_calibrated",
    "interval90",
    "measured_move",
    "one_replication_enough",
    "prediction_half_width",
    "probe_draws",
    "ratio_interval",
    "replication_counts",
    "shifted",
]

#: Replications each draw runs at a deciding load (the nominal run's first seeds).
DRAW_REPLICATIONS = 2
#: Sequential draws (``DrawnPoints(sequential=True)``, ``tree-load``'s draws): a
#: comparison's draws keep their first replication where the second could move a draw's
#: answer (one standard deviation) by at most this share of the comparison's 90% interval
#: (``one_replication_enough``).
DRAW_NOISE_SHARE = 0.1
#: One-sided confidence of the measured bound on that move (``measured_move``).
NOISE_CONFIDENCE = 0.95


def prediction_half_width(values: np.ndarray) -> float:
    """Half the 90% prediction interval of one more draw from the distribution ``values``
    (n,) were drawn from, normal: t(0.95, n - 1) x s x sqrt(1 + 1/n) (s the sample standard
    deviation; 0 for fewer than two values). n draws' own 5-95% quantiles are a sample's:
    they hold a new draw about (n - 1) / (n + 1) of the time at most (7 in 9 at 8 draws)."""
    n = values.size
    if n < 2:
        return 0.0
    from scipy.special import stdtrit  # lazy: scipy.special at import is slow

    s = float(np.std(values, ddof=1))
    return float(stdtrit(n - 1, 0.95)) * s * float(np.sqrt(1.0 + 1.0 / n))


def interval90(
    values: Sequence[float], ci95: tuple[float, float] | None, positive: bool = False
) -> list[float] | None:
    """The 90% interval of the answer: the draws' answers ``values``' 5-95% quantiles
    joined with their normal prediction interval (mean +- ``prediction_half_width``: where
    one more draw of the inputs would fall; ``positive``: a level or a ratio, whose draws
    are all > 0, takes it on the log scale, so that it stays above 0 and skews as the
    draws do) and with the Monte Carlo ``ci95`` of the nominal answer; NaN answers (a draw
    the scenario rejects) are left out; None when there is neither."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    ends: list[float] = []
    if v.size:
        ends += [float(q) for q in np.quantile(v, [0.05, 0.95])]
        if positive and np.all(v > 0):
            logs = np.log(v)
            half = prediction_half_width(logs)
            ends += [float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))]
        else:
            half = prediction_half_width(v)
            ends += [float(v.mean()) - half, float(v.mean()) + half]
    if ci95 is not None:
        ends += [float(ci95[0]), float(ci95[1])]
    return [min(ends), max(ends)] if ends else None


def shifted(nominal: float, drawn: np.ndarray, first: np.ndarray) -> float:
    """The nominal answer moved by the paired shift: ``nominal`` + mean(``drawn`` -
    ``first``), ``drawn`` (r,) a draw's replications and ``first`` (r,) the nominal run's
    replications on the same seeds."""
    return float(nominal + np.mean(np.asarray(drawn) - np.asarray(first)))


def near(drawn: np.ndarray, nominal: np.ndarray, reference: float, sigma: float = 0.0) -> bool:
    """Whether a draw's answer ``drawn`` (D,) lies within ``SETTLED_SE`` standard errors of
    the nominal's replications ``nominal`` (n,) from ``reference``: the draws then read
    the nominal mean's last digits, and a nominal point stopped at its first replications
    (sim/studies/serving/sequential.py) runs the rest (``PointEvaluator.complete``).
    False where the nominal is ``precise`` against the answer's model-error band
    ``sigma`` (in the values' units): its other replications would move every draw by
    less than a quarter of the band's standard deviation."""
    if precise(nominal, sigma):
        return False
    ok = np.isfinite(drawn)
    if nominal.size < 2 or not ok.any():
        return False
    se = float(np.std(nominal, ddof=1)) / np.sqrt(nominal.size)
    return bool(np.any(np.abs(drawn[ok] - reference) <= SETTLED_SE * se))


def probe_draws(draws: int) -> range:
    """The draws that run their second replication to measure the noise of a
    one-replication shift where the a priori bound does not settle a comparison
    (``one_replication_enough``): the first half of the ``draws`` (at least two), which
    for scrambled Sobol draws are a balanced net of the inputs of their own."""
    return range(min(draws, max(2, draws // 2)))


def measured_move(differences: np.ndarray, confidence: float = NOISE_CONFIDENCE) -> float:
    """An upper bound on the standard deviation of the move a draw's second replication
    makes to its answer, measured on draws that ran both: ``differences`` (m,) each such
    draw's e1 - e2, e_j its shift (draw - nominal) on replication j of the comparison.

    Derivation: a draw's shifts on two seeds are exchangeable, so given the draw e1 - e2
    has mean 0 and variance 2 sigma^2 (sigma^2 the variance of a one-replication shift,
    pooled over the draws: assumed the same for every draw at the comparison); its answer
    on one replication carries e1, on two (e1 + e2) / 2, a move of (e2 - e1) / 2 with
    variance sigma^2 / 2. With the m differences normal and independent, S = sum d^2
    has S / (2 sigma^2) ~ chi^2(m), so sigma^2 <= S / (2 q) with probability
    ``confidence``, q the (1 - ``confidence``) quantile of chi^2(m); the move's standard
    deviation is then at most sqrt(S / (4 q)). Fewer than two finite differences: inf."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return math.inf
    from scipy.special import chdtri  # lazy: scipy.special at import is slow

    q = float(chdtri(d.size, confidence))  # the (1 - confidence) quantile of chi^2(m)
    return math.sqrt(float(np.sum(d * d)) / (4.0 * q))


def one_replication_enough(
    drawn: np.ndarray,
    own: np.ndarray,
    ci95: tuple[float, float] | None = None,
    differences: np.ndarray | None = None,
    share: float = DRAW_NOISE_SHARE,
    joined: Joined | None = None,
) -> bool:
    """Whether the draws' answers ``drawn`` (D,) of a comparison, most of them shifted on
    one replication, settle its 90% interval: one is enough where the standard deviation
    of the move a second replication makes to a draw's answer, (e2 - e1) / 2 (e the noise
    of a one-replication shift), is at most ``share`` of the width of the comparison's 90%
    interval (``interval90`` of the draws joined with the nominal's Monte Carlo ``ci95``,
    then with the answer's model-error band where ``joined`` gives it: ends -> the
    interval the answer reports, None -> the band and ``ci95`` alone, which with fewer
    than two draws, or a subset of them, is the least the interval holds whatever the
    draws say). The one rule of the sequential draws of ``crossover``, ``best-k`` and
    ``tree-load``.

    The move's bound: ``differences`` given (each probe draw's e1 - e2, ``probe_draws``),
    the measured one (``measured_move``: a 95% upper bound); else the a priori one, which
    decides whether the probe draws run their second at all: e's standard deviation is at
    most s_draw + s_nominal whatever their correlation, taken as 2 s_nominal
    (s_nominal the standard deviation of the nominal's per-replication values ``own``
    (n,): a drawn scenario's replications vary as the nominal's, assumed), a move of at
    most sqrt(2) s_nominal. Common random numbers make the real noise smaller than that
    bound (docs/study-speed.md), which the measured one sees. The noise only adds to the
    draws' spread (it widens their law, never narrows it), and each end of the interval
    moves by about one draw's move; inside the band an end is the band's and does not
    move at all. Fewer than two finite answers without ``joined``, or fewer than two
    values of ``own`` (a priori) or of ``differences``: False."""
    v = np.asarray(drawn, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2 and joined is None:
        return False
    if differences is not None:
        move = measured_move(differences)
    else:
        o = np.asarray(own, dtype=float)
        o = o[np.isfinite(o)]
        if o.size < 2:
            return False
        move = math.sqrt(2.0) * float(np.std(o, ddof=1))
    ends = interval90(v.tolist() if v.size >= 2 else [], ci95)
    if joined is not None:
        ends = joined(ends)
    if ends is None:
        return False
    return bool(move <= share * (ends[1] - ends[0]))


def band_joined(nominal: float, sigma: float) -> Joined:
    """A positive answer's interval -> the one joined with its model-error band
    [``nominal`` exp(-1.645 ``sigma``), ``nominal`` exp(1.645 ``sigma``)] (each end the
    farther; sim/model/model_error.py ``widen``, as ``ModelErrorTerm.gain``); None -> the
    band alone. Unchanged where there is no band (``sigma`` 0, or a nominal not > 0)."""

    def joined(ends: list[float] | None) -> list[float] | None:
        if not (sigma > 0 and nominal > 0 and math.isfinite(nominal)):
            return ends
        return list(widen(nominal, ends, sigma))

    return joined


def paired_gain(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """Per replication gain of ``a`` over ``b`` (> 1: ``a`` better; as
    sim/studies/serving/paired_metrics.py ``gain``)."""
    num, den = (a, b) if METRICS[metric].higher_is_better else (b, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, np.nan)


Key = tuple[Load, Any]
#: A comparison's 90% interval from its inputs' (``interval90``; None: none) to the one
#: its answer reports, joined with the model-error band (``one_replication_enough``).
Joined = Callable[[list[float] | None], list[float] | None]


def _by_draw(
    ev: PointEvaluator, todo: Sequence[tuple[int, Key]], tasks: Sequence[PointTask]
) -> list[PolicyPoint]:
    """``tasks`` (``todo[j]``: the draw and key of ``tasks[j]``) run through the
    evaluator's executor as one unit a draw (``run_points``: its pass terms computed in
    one worker), longest first; each task's point in the order of ``tasks``."""
    units: dict[int, list[int]] = {}
    for j, (i, _) in enumerate(todo):
        units.setdefault(i, []).append(j)
    order = list(units.values())
    sent = [[tasks[j] for j in unit] for unit in order]
    points: list[PolicyPoint | None] = [None] * len(tasks)
    for u, got in longest_first(
        ev.executor, run_points, sent, lambda unit: sum(t.replications for t in unit)
    ):
        for j, point in zip(order[u], got, strict=True):
            points[j] = point
    assert all(p is not None for p in points)
    return [p for p in points if p is not None]


@dataclass
class DrawnPoints:
    """The study's (load, policy) points in every draw: ``points[i][key]`` a
    ``PolicyPoint`` of up to ``DRAW_REPLICATIONS`` replications of draw i (None: the
    scenario rejects the draw). Run through the evaluator's executor, every draw and point
    at once.

    ``sequential``: every draw runs its first replication at a point, and the others only
    where a comparison read there needs them: each time a study reads the draws' answers
    of a comparison (a paired gain, a difference; ``gains``, ``shifts``), where some of
    its draws ran one replication and ``one_replication_enough`` fails for them (the move
    a second could make above ``DRAW_NOISE_SHARE`` of the comparison's 90% interval), or
    the comparison is read on a subset of the draws, those draws' points run the rest
    (the same seeds as running them at once: the values are those of a run of all of
    them) and the answers are read again. Where the a priori bound on that move fails,
    the probe draws (``probe_draws``) run their second first and the bound measured on
    them decides for the others. Decided on the values alone, in the study's
    order: the same for any worker count. A point with more replications pairs with one
    with fewer on the first replications both ran."""

    evaluator: PointEvaluator
    draws: tuple[Overrides, ...]
    replications: int = DRAW_REPLICATIONS
    sequential: bool = False

    def __post_init__(self) -> None:
        self.points: list[dict[Key, PolicyPoint] | None] = [{} for _ in self.draws]
        self.replications = min(self.replications, self.evaluator.replications)
        #: Draws whose scenario the schema accepts (checked once a draw, ``ensure``).
        self._accepted: set[int] = set()

    @property
    def first(self) -> int:
        """Replications a draw runs first at a point (all of them unless sequential)."""
        return 1 if self.sequential else self.replications

    @property
    def replications_run(self) -> int:
        """Replications every draw's points ran together."""
        return sum(p.replications for got in self.points if got for p in got.values())

    def points_by_replications(self) -> dict[str, int]:
        """How many draw points ran each count of replications ("1": n, "2": m)."""
        counts = [p.replications for got in self.points if got for p in got.values()]
        return {str(r): counts.count(r) for r in sorted(set(counts))}

    def describe(self) -> str | None:
        """The assumption a document states for sequential draws (None: not sequential,
        or no draw ran)."""
        counts = self.points_by_replications()
        if not self.sequential or not counts:
            return None
        ran = ", ".join(f"{n} at {r}" for r, n in counts.items())
        return (
            f"draws: sequential, 1 replication at every draw's point first, all "
            f"{self.replications} only where the move the others could make to a draw's "
            f"answer exceeds {DRAW_NOISE_SHARE:g} of the width of the comparison's 90% "
            f"interval, its model-error band included (a comparison read on a few draws "
            f"only: the band and its Monte Carlo interval alone): bounded by sqrt(2) x "
            f"the nominal's per-replication standard deviation, or where that is too "
            f"wide by a {NOISE_CONFIDENCE:.0%} upper bound "
            f"measured on the first {len(probe_draws(len(self.draws)))} draws' two "
            f"replications (points by replications: {ran}; --all-replications runs "
            f"{self.replications} everywhere)"
        )

    def ensure(
        self, keys: Sequence[Key], which: Sequence[int] | None = None, upto: int | None = None
    ) -> None:
        """Run ``keys`` in the draws ``which`` (default: every draw) up to ``upto``
        replications (default ``first``), those not yet run there from the first, those
        with fewer from where they stopped, in one batch through the evaluator's
        executor."""
        draws = range(len(self.draws)) if which is None else which
        self.ensure_pairs([(i, list(keys)) for i in draws], upto)

    def ensure_pairs(
        self, pairs: Sequence[tuple[int, Sequence[Key]]], upto: int | None = None
    ) -> None:
        """``ensure`` for several sets of draws at once: each (draw i, its keys) of
        ``pairs``, up to ``upto`` replications, all in one batch."""
        ev = self.evaluator
        want = self.first if upto is None else upto
        todo: list[tuple[int, Key]] = []
        tasks: list[PointTask] = []
        for i, keys in pairs:
            ov, got = self.draws[i], self.points[i]
            if got is None:
                continue
            plans = ev.builder
            assert isinstance(plans, ScenarioPlans)  # a scenario's plans are drawn
            builder = replace(plans, drawn=ov, sampled=InputDraws())
            if i not in self._accepted:
                try:
                    builder.scenario(None, builder.default_steps)
                except SpecsimError:
                    self.points[i] = None  # outside what the scenario allows
                    continue
                self._accepted.add(i)
            for key in dict.fromkeys(keys):
                have = got[key].replications if key in got else 0
                if have < want:
                    load, policy = key
                    todo.append((i, key))
                    tasks.append(
                        PointTask(builder, load, policy, want - have, ev.seed, ev.slo, first=have)
                    )
        if not tasks:
            return
        # fewer tasks than the pool runs at once (a crossing's walk outwards, one draw at a
        # time): each cut into blocks of replications (the same seeds)
        width = ev.executor.width()
        if len(tasks) < width:
            points = run_in_blocks(ev.executor, tasks, width)
        elif width > 1 and len({i for i, _ in todo}) >= width:
            points = _by_draw(ev, todo, tasks)
        else:
            done = dict(longest_first(ev.executor, run_point, tasks, replications_of))
            points = [done[j] for j in range(len(tasks))]
        for (i, key), point in zip(todo, points, strict=True):
            got = self.points[i]
            assert got is not None
            got[key] = merge(got[key], point) if key in got else point

    def shifts(
        self,
        keys: Sequence[Key],
        metric: str,
        pair: Callable[[np.ndarray, np.ndarray], np.ndarray],
        nominal: float,
        own: np.ndarray,
    ) -> np.ndarray:
        """Each draw's answer of the comparison ``pair(a, b)`` (per replication) of the
        points ``keys`` (a, b) in ``metric`` (D,): ``nominal`` moved by the paired shift
        against the nominal's per-replication values ``own``, on the first replications
        both points ran; NaN for a rejected draw and one without both points."""
        out = np.full(len(self.draws), np.nan)
        for i, got in enumerate(self.points):
            if got is None or keys[0] not in got or keys[1] not in got:
                continue
            a, b = got[keys[0]], got[keys[1]]
            r = min(a.replications, b.replications)
            values = pair(a.values[metric][:r], b.values[metric][:r])
            out[i] = shifted(nominal, values, own[:r])
        return out

    def differences(
        self,
        keys: Sequence[Key],
        metric: str,
        pair: Callable[[np.ndarray, np.ndarray], np.ndarray],
        own: np.ndarray,
        which: Sequence[int],
    ) -> np.ndarray | None:
        """Each of the draws ``which``' e1 - e2 (m,) in the comparison ``pair(a, b)`` of the
        points ``keys`` in ``metric``, e_j its shift against the nominal's per-replication
        values ``own`` on replication j (``measured_move``); None while one of them has
        not run two replications at both points."""
        out = []
        for i in which:
            got = self.points[i]
            assert got is not None  # a rejected draw is no probe
            a, b = got[keys[0]], got[keys[1]]
            if min(a.replications, b.replications) < 2:
                return None
            e = pair(a.values[metric][:2], b.values[metric][:2]) - own[:2]
            out.append(float(e[0] - e[1]))
        return np.asarray(out, dtype=float)

    def settle(
        self,
        keys: Sequence[Key],
        which: Sequence[int] | None,
        drawn: np.ndarray,
        own: np.ndarray,
        ci95: tuple[float, float] | None,
        metric: str,
        pair: Callable[[np.ndarray, np.ndarray], np.ndarray],
        joined: Joined | None = None,
    ) -> bool:
        """Sequential draws: where some of the draws ``which`` ran fewer than
        ``replications`` at ``keys`` and their answers ``drawn`` (D,) of the comparison
        ``pair`` in ``metric`` are not enough on them (``one_replication_enough`` against
        the nominal's per-replication values ``own``, Monte Carlo ``ci95`` and the
        answer's model-error band ``joined``; a comparison read on a subset of the draws
        only by the a priori bound against the band and ``ci95`` alone: a subset's spread
        is not the comparison's), run those points' other replications; whether any ran
        (then read the answers again). Where the a priori bound does not settle it, the
        probe draws (``probe_draws``, those the scenario accepts) run their second
        replication first, and the move measured on them (``differences``) decides for
        the others."""
        if not self.sequential:
            return False
        idx = list(range(len(self.draws)) if which is None else which)
        # the draws that ran the comparison (both points: a study that runs its draws in
        # stages, best-k's selection, may have run one of them further for another)
        short = [
            i
            for i in idx
            if (got := self.points[i]) is not None
            and all(key in got for key in keys)
            and any(got[key].replications < self.replications for key in keys)
        ]
        if not short:
            return False
        # a subset's spread is not the comparison's (a crossing's walk outwards reads its
        # few draws beyond the cell): there every draw runs both
        if len(idx) == len(self.draws):
            # the probes that ran both points (the next stage may not have reached them)
            probes = [
                i
                for i in probe_draws(len(self.draws))
                if (got := self.points[i]) is not None and all(key in got for key in keys)
            ]
            measured = self.differences(keys, metric, pair, own, probes)
            if measured is None and one_replication_enough(drawn[idx], own, ci95, joined=joined):
                return False  # the a priori bound settles it
            if measured is None:  # the probes run their second, then it is read again
                self.ensure(keys, [i for i in probes if i in short], self.replications)
                return True
            if one_replication_enough(drawn[idx], own, ci95, measured, joined=joined):
                return False
        elif joined is not None and one_replication_enough(
            np.array([]), own, ci95, None, joined=joined
        ):
            return False  # the band alone is wide enough for one replication
        self.ensure(keys, short, self.replications)
        return True

    def gains(
        self,
        load: Load,
        k: int,
        metric: str,
        which: Sequence[int] | None = None,
        versus: int = 0,
    ) -> np.ndarray:
        """Each draw's paired gain of k over k = ``versus`` (default plain decoding) at
        ``load`` (D,): the nominal gain shifted (``shifted``); NaN for a rejected draw and
        one not in ``which``. Sequential draws run their second replication where one is
        not enough (``settle``)."""
        other = BASELINE if versus == 0 else FixedK(versus)
        keys = [(load, FixedK(k)), (load, other)]
        ev = self.evaluator
        band = gain_band(ev.builder)

        def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return paired_gain(a, b, metric)

        def nominal_now() -> tuple[np.ndarray, tuple[float, float] | None, float]:
            """The nominal's per-replication gains, their Monte Carlo 95% interval (None
            without sequential draws) and the gains' band at the load (on ln g)."""
            spec, base = ev(*keys[0]), ev(*keys[1])
            nominal = paired_gain(*paired_values(spec, base, metric), metric)
            ci95 = gain(spec, base, metric).ci95 if self.sequential else None
            here = {p: point for (at, p), point in ev.memo.items() if at == load}
            return nominal, ci95, 0.0 if band is None else band(here)

        # a comparison read on a subset of the draws runs every replication there unless
        # the band alone is wide enough for one (``settle``): then they run in one batch,
        # not the first and then the rest
        upto = None
        if which is not None and len(which) != len(self.draws) and self.sequential:
            nominal, ci95, sigma = nominal_now()
            joined = band_joined(float(np.mean(nominal)), sigma)
            if not one_replication_enough(np.array([]), nominal, ci95, joined=joined):
                upto = self.replications
        self.ensure(keys, which, upto)
        while True:
            nominal, ci95, sigma = nominal_now()
            mean = float(np.mean(nominal))
            out = self.shifts(keys, metric, pair, mean, nominal)
            joined = band_joined(mean, sigma)
            if self.settle(keys, which, out, nominal, ci95, metric, pair, joined):
                continue
            if not (near(out, nominal, 1.0, sigma * abs(mean)) and ev.complete(keys)):
                return out

    def levels(self, load: Load, policy: Any, metric: str) -> np.ndarray:
        """Each draw's level of ``metric`` for ``policy`` at ``load`` (D,), shifted."""
        self.ensure([(load, policy)], upto=self.replications)
        nominal = self.evaluator(load, policy).values[metric]
        r = self.replications
        out = np.full(len(self.draws), np.nan)
        for i, got in enumerate(self.points):
            if got is not None:
                drawn = got[(load, policy)].values[metric]
                out[i] = shifted(float(np.mean(nominal)), drawn, nominal[:r])
        return out


def replication_counts(
    evaluator: PointEvaluator, draws: DrawnPoints | None = None
) -> dict[str, Any]:
    """What a study's document says it simulated: the replications of its (load, policy)
    points and of its interval's draws (every replication one serving run of the
    scenario's requests); for a scenario that records its calibration figures, whether
    the draws were conditioned on them (``conditioned_on``) and which loads lie beyond the
    highest calibrated one (``beyond_calibrated``)."""
    out: dict[str, Any] = {
        "replications_run": evaluator.replications_run,
        "draw_replications_run": 0 if draws is None else draws.replications_run,
    }
    if draws is not None and draws.sequential:
        out["draw_points_by_replications"] = draws.points_by_replications()
    plans = evaluator.builder
    if isinstance(plans, ScenarioPlans):
        if draws is not None and draws.draws and plans.conditioning:
            out["conditioned_on"] = plans.conditioning
        out.update(beyond_calibrated(plans, evaluator))
    return out


def beyond_calibrated(plans: ScenarioPlans, evaluator: PointEvaluator) -> dict[str, Any]:
    """For a scenario that records the figures a load sweep calibrated it on
    (``[[serving.calibrated_on]]``), the study's loads whose mean decode batch is above the
    highest measured one and the note they carry (sim/uncertainty/model_error.py
    ``beyond_measured_note`` at the largest such batch): ``{"beyond_measured": {...}}``, or
    nothing when none is, or the scenario records no figure. Read from the study's plans
    as bound (their mapping and their model-error term, ``ModelErrorTerm.highest_measured``),
    not from a scenario rebuilt from them."""
    if not (plans.base.get("serving") or {}).get("calibrated_on"):
        return {}
    top = plans.model_error.highest_measured
    over: dict[Load, float] = {}
    for (load, _), point in evaluator.memo.items():
        batch = float(np.mean(point.mean_batch))
        if batch > top:
            over[load] = max(over.get(load, 0.0), batch)
    if not over:
        return {}
    loads = sorted(over, key=lambda x: x.value)
    return {
        "beyond_measured": {
            "load_kind": loads[0].kind,
            "loads": [x.value for x in loads],
            "highest_measured_batch": top,
            "note": beyond_measured_note(top, max(over.values())),
        }
    }


def ratio_interval(draws: np.ndarray, ci95: tuple[float, float] | None) -> list[float] | None:
    """``interval90`` of a ratio's draws (D,) joined with its Monte Carlo 95% interval."""
    return interval90(draws.tolist(), ci95, positive=True)


#: The ``serve`` metrics given a 90% interval from inputs and model (paired_metrics.py
#: ``METRICS`` names), levels of each policy and the paired speedup.
SERVE_METRICS: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s", "tpot_p50_ms")


def serve_intervals(
    bound: Bound,
    records: Mapping[str, list[ServingRecord]],
    *,
    slo: Any,
    seed: int,
    base_dir: Any = None,
    source: str = "scenario",
    workers: int = 1,
    baseline: str = "baseline",
    batch: float = 1.0,
    draws: int = DRAWS,
    replications: int = DRAW_REPLICATIONS,
    refit: Refit | None = None,
    model_error: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    """``serve``'s 90% intervals from inputs and model: for each policy of ``records``
    (its nominal replications) the levels of ``SERVE_METRICS``, and each policy's paired
    speedup over ``baseline``, each the draws' answers (every draw ``replications``
    replications at the nominal run's first seeds, the nominal moved by the paired shift)
    joined with the nominal's Monte Carlo 95% interval; ``batch``: the mean decode batch
    of the nominal run, against the highest measured one (``beyond_note``); ``refit``: the
    draws conditioned on the calibration figures (``input_draws``). The draws perturb the
    nominal run's bound scenario ``bound`` and bind each (sim/uncertainty/perturb.py
    ``perturbed``). Each interval from the inputs then takes the model-error term at
    ``batch`` (sim/uncertainty/model_error.py: ``model_error`` (the levels' s, the gains'
    ceiling a and scale d0), default the scenario's or the shipped one)."""
    # lazy: the serving setup and the uncertainty layer only when serve draws
    from sim.hardware.batched import PassTerms
    from sim.simulation.serving.setup import serving_setup
    from sim.simulation.serving.simulate import simulate_serving
    from sim.studies.serving.paired_metrics import gain, level, policy_point, replication_values

    sampled = input_draws(bound, seed, draws, refit)  # found once: drawn and described
    r = min(replications, min(len(v) for v in records.values()))
    runs = []  # each draw's records, its first r replications
    terms = PassTerms()  # the draws' plans share their passes' terms
    for ov in sampled.overrides:
        try:
            drawn_bound = perturbed(bound, ov)
            setup = serving_setup(drawn_bound, base_dir=base_dir, source=source, terms=terms)
        except SpecsimError:
            continue  # outside what the scenario allows
        run = simulate_serving(
            setup.plan, setup.draftings, replications=r, seed=seed, workers=workers
        )
        runs.append(run.records)
    # the nominal's per-replication values; its first r are the ones the draws' seeds share
    nominal = {name: policy_point(recs, slo) for name, recs in records.items()}
    # a draw's values only: its batch and backlog are never read
    drawn = [{name: replication_values(recs, slo) for name, recs in got.items()} for got in runs]
    # each answer's nominal and its interval from the inputs
    levels: dict[str, dict[str, tuple[float, list[float] | None]]] = {}
    for name, point in nominal.items():
        levels[name] = {}
        for m in SERVE_METRICS:
            values = [
                shifted(float(np.mean(point.values[m])), d[name][m], point.values[m][:r])
                for d in drawn
            ]
            lv = level(point, m)
            levels[name][m] = (lv.mean, interval90(values, lv.ci95, positive=True))
    speedup: dict[str, dict[str, tuple[float, list[float] | None]]] = {}
    for name, point in nominal.items():
        if name == baseline or baseline not in nominal:
            continue
        speedup[name] = {}
        for m in SERVE_METRICS:
            g = gain(point, nominal[baseline], m)
            own = paired_gain(point.values[m][:r], nominal[baseline].values[m][:r], m)
            values = [
                shifted(g.mean, paired_gain(d[name][m], d[baseline][m], m), own) for d in drawn
            ]
            speedup[name][m] = (g.mean, interval90(values, g.ci95, positive=True))
    # then the model's error at the nominal run's batch on each
    term = model_error_term(bound.scenario, batch, model_error)
    note = term.beyond_note()
    return {
        **sampled.doc(r),
        "draws_run": len(drawn),
        "levels": {
            name: {m: term.level(*v, name != baseline) for m, v in ms.items()}
            for name, ms in levels.items()
        },
        "speedup": {
            name: {m: term.gain(*v) for m, v in ms.items()} for name, ms in speedup.items()
        },
        "model_error": term.doc(),
        **({"note": note} if note else {}),
    }
