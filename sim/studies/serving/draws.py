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

Here the draws run for the decisions (``DrawnPoints``) and what a study's document says
they simulated (``replication_counts``); the interval arithmetic is draw_intervals.py,
``serve``'s intervals serve_intervals.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.errors import SpecsimError
from sim.model.policy import FixedK
from sim.parallel import longest_first
from sim.studies.serving.draw_intervals import (
    DRAW_NOISE_SHARE,
    DRAW_REPLICATIONS,
    NOISE_CONFIDENCE,
    Joined,
    band_joined,
    near,
    one_replication_enough,
    paired_gain,
    probe_draws,
    shifted,
)
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, PolicyPoint, gain, paired_values
from sim.studies.serving.point_tasks import (
    PointTask,
    replications_of,
    run_in_blocks,
    run_point,
    run_points,
)
from sim.studies.serving.scenario_plans import BASELINE, ScenarioPlans, gain_band
from sim.studies.serving.sequential import merge
from sim.uncertainty.model_error import beyond_measured_note
from sim.uncertainty.perturb import (
    InputDraws,
    Overrides,
)

if TYPE_CHECKING:
    pass

__all__ = ["DrawnPoints", "beyond_calibrated", "replication_counts"]

Key = tuple[Load, Any]


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
    def uncertain(self) -> bool:
        """Whether the scenario has uncertain inputs (draws made of them, or inputs its
        plans found but drew none of: ``draws`` 0, or every draw ruled out): False, the
        Monte Carlo interval holds the inputs' spread, none (draw_intervals.py
        ``sources90``)."""
        plans = self.evaluator.builder
        return bool(self.draws) or (isinstance(plans, ScenarioPlans) and bool(plans.sampled.inputs))

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
