"""How a serving answer's 90% interval is read from its drawn scenarios: the draws'
quantiles joined with their normal prediction interval and the nominal's Monte Carlo
interval (``interval90``), what that interval holds and the label it takes
(``IntervalSources``, ``sources90``), a draw's answer as the nominal moved by its paired shift
(``shifted``), and the rule that lets a comparison's draws stop at one replication
(``one_replication_enough``, with the measured bound on the move a second one makes).
Pure arithmetic on the draws' values; the draws themselves run in draws.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum

import numpy as np

from sim.model.model_error import widen
from sim.studies.serving.paired_metrics import METRICS
from sim.studies.serving.sequential import SETTLED_SE, precise
from sim.uncertainty.interval import INTERVAL_LABEL

__all__ = [
    "DRAW_NOISE_SHARE",
    "DRAW_REPLICATIONS",
    "NOISE_CONFIDENCE",
    "IntervalSources",
    "Joined",
    "answering",
    "band_joined",
    "interval90",
    "measured_move",
    "near",
    "one_replication_enough",
    "paired_gain",
    "prediction_half_width",
    "probe_draws",
    "ratio_interval",
    "shifted",
    "sources90",
    "weakest",
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
#: A comparison's 90% interval from its inputs' (``interval90``; None: none) to the one
#: its answer reports, joined with the model-error band (``one_replication_enough``).
Joined = Callable[[list[float] | None], list[float] | None]


class IntervalSources(StrEnum):
    """What a serving answer's 90% interval holds (``sources90``), its JSON value and its
    label (``label``); any of them is joined with the answer's model-error band where the
    answer's term is included (sim/uncertainty/model_error.py, stated on its own line)."""

    #: Two or more draws of the uncertain inputs answered (their 5-95% and normal
    #: prediction interval joined with the Monte Carlo 95%), or the scenario states no
    #: uncertain input (nothing to draw: the Monte Carlo 95% holds the inputs' none).
    INPUTS = "inputs_and_model"
    #: Fewer than two draws answered (none asked, or the scenario rejected the others):
    #: no spread of the inputs, the nominal's Monte Carlo 95% (with the one draw's answer;
    #: and the model-error band where the answer's term is included).
    MONTE_CARLO = "monte_carlo"
    #: Neither two draws nor a Monte Carlo interval: no interval.
    NONE = "none"

    @classmethod
    def of(cls, value: str | None) -> IntervalSources:
        """The sources a document's ``*sources`` value names (None, absent: ``INPUTS``)."""
        return cls(value) if value else cls.INPUTS

    @property
    def label(self) -> str:
        """The words a report puts before the interval."""
        return _LABELS[self]

    @property
    def short(self) -> str:
        """The label in a few words, where a line names the interval inline."""
        return _SHORT[self]


_LABELS = {
    IntervalSources.INPUTS: INTERVAL_LABEL,
    IntervalSources.MONTE_CARLO: (
        "90% interval without the inputs' spread: the Monte Carlo 95% and the model error "
        "(fewer than 2 draws answered)"
    ),
    IntervalSources.NONE: (
        "no interval (fewer than 2 draws of the inputs answered, no Monte Carlo one)"
    ),
}
_SHORT = {
    IntervalSources.INPUTS: "90% from inputs and model",
    IntervalSources.MONTE_CARLO: "90% without the inputs' spread (< 2 draws answered)",
    IntervalSources.NONE: "no interval",
}
_RANK = (IntervalSources.NONE, IntervalSources.MONTE_CARLO, IntervalSources.INPUTS)


def sources90(answered: int, ci95: object | None, uncertain: bool = True) -> IntervalSources:
    """What a 90% interval of ``answered`` draws' answers (the finite ones: ``answering``)
    joined with the Monte Carlo ``ci95`` holds (``interval90``): ``INPUTS`` with at
    least two (``prediction_half_width`` needs two), or where the scenario has no
    uncertain input (``uncertain`` False); else ``MONTE_CARLO`` with a ``ci95``; else
    ``NONE``."""
    if answered >= 2 or not uncertain:
        return IntervalSources.INPUTS
    return IntervalSources.MONTE_CARLO if ci95 is not None else IntervalSources.NONE


def answering(values: Sequence[float] | np.ndarray) -> int:
    """How many of the draws' answers ``values`` are finite (NaN: a draw the scenario
    rejects)."""
    return int(np.count_nonzero(np.isfinite(np.asarray(values, dtype=float))))


def weakest(sources: Iterable[IntervalSources]) -> IntervalSources:
    """The least of several intervals' sources (``INPUTS`` when there are none): what a
    document's one label can say of all of them."""
    return min(sources, key=_RANK.index, default=IntervalSources.INPUTS)


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
    the scenario rejects) are left out; None when there is no ``ci95`` and fewer than two
    finite answers (one draw is a point, not an interval). What it holds:
    ``sources90``."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    ends: list[float] = []
    if v.size == 1 and ci95 is None:
        return None
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


def ratio_interval(draws: np.ndarray, ci95: tuple[float, float] | None) -> list[float] | None:
    """``interval90`` of a ratio's draws (D,) joined with its Monte Carlo 95% interval."""
    return interval90(draws.tolist(), ci95, positive=True)
