"""What a load-sweep calibration fitted, recorded in the scenario it writes, and the draws
of a serving interval conditioned on it.

``record_load_fit`` writes the figures the fit used (``[[serving.calibrated_on]]``: load,
metric, measured value and its error, the run's draft and context, the file it came
from, and for a run priced as its own job its requests' lengths and workers) and the
terms they identified (``serving.calibrated_terms``) into the fitted scenario. The
serving commands' intervals read them back (``recorded_calibration``): an input drawn
over its range (the acceptance, a pass time, a batched term the sweep left as a
range) moves the recorded TPOTs as well, and held at the nominal fit a draw would predict
the calibration figures away from their measurements. So in every draw the identified
terms are re-fitted to the recorded figures under the draw (the least squares of
sim/calibration/load_fit.py over those terms only, started at their nominal values), as
re-running the calibration with the drawn inputs would.

The fitted terms' own error stays in the draw. Linearised, a fitted term t given the other
inputs x is normal around the refit t*(x) with the fit's standard error s (the fit held x
at its nominal values: s is the spread given x). The draw carries t's Sobol draw
t_0 + s z (its ``[uncertainty.serving]`` entry), so the conditioned draw is

    t = t*(x) + (t_drawn - t_0),

clipped to the fit's bounds; t*(x_0) = t_0 at the nominal inputs up to the optimiser's
tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import block_diag
from scipy.optimize import least_squares

from sim.binding.bound import bind
from sim.calibration.load_fit_result import LoadFit
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import BOUNDS, SCALES
from sim.calibration.run_job import RunJob
from sim.calibration.tpot_model import TpotModel, tpot_sigma_ms
from sim.hardware.pass_terms import PassTerms
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.sections.calibrated_on import CalibrationFigure
from sim.scenario.validate import scenario_from_dict

__all__ = [
    "METRIC",
    "RecordedRefit",
    "conditioning",
    "figure_of",
    "joined_correlation",
    "point_of",
    "record_load_fit",
    "recorded_calibration",
    "recorded_refit",
    "refit_terms",
    "term_correlation",
    "what_if",
]

#: The metric a load sweep is fitted to: a request's mean decode time per output token.
METRIC = "tpot_ms"
#: Where the figures and terms are recorded (dotted fields of the scenario).
FIGURES_FIELD = "serving.calibrated_on"
TERMS_FIELD = "serving.calibrated_terms"
#: Relative tolerance of a draw's refit (scipy least_squares ``xtol``/``ftol``): far below
#: the fit's 3% error floor, so the refit's own error is nothing beside the draw's spread.
REFIT_TOL = 1e-8


#: A recorded figure's fields (``CalibrationFigure``) and the run's (``LoadPoint``) they hold.
FIGURE_FIELDS: dict[str, str] = {
    "measured": "tpot_ms",
    "stderr": "tpot_se_ms",
    **{
        name: name
        for name in (
            "load", "load_kind", "rate_per_s", "speculative", "accept_length",
            "context_tokens", "num_steps", "topk", "num_draft_tokens", "source", "where",
            "format",
        )
    },
}  # fmt: skip


def figure_of(point: LoadPoint) -> dict[str, Any]:
    """One ``[[serving.calibrated_on]]`` table of a fitted run (its None fields left out;
    a run priced as its own job with its ``workers``, ``input_lens`` and ``output_lens``)."""
    assert point.tpot_ms is not None  # the fit uses only runs with a TPOT
    row = {mine: getattr(point, theirs) for mine, theirs in FIGURE_FIELDS.items()}
    if point.job is not None:
        row["workers"] = point.job.workers
        row["input_lens"] = list(point.job.input_lens)
        row["output_lens"] = list(point.job.output_lens)
    return {"metric": METRIC, **{k: v for k, v in row.items() if v is not None}}


def point_of(figure: CalibrationFigure) -> LoadPoint:
    """The run a recorded figure describes, as the fit reads it (with its own job where
    the figure records one)."""
    job = None
    if figure.workers is not None and figure.input_lens and figure.output_lens:
        job = RunJob(tuple(figure.input_lens), tuple(figure.output_lens), figure.workers)
    return LoadPoint(
        **{theirs: getattr(figure, mine) for mine, theirs in FIGURE_FIELDS.items()}, job=job
    )


def record_load_fit(fit: LoadFit, *, source: str = "--load-sweep") -> Scenario:
    """``fit.scenario`` with the figures it was fitted to and the terms they identified,
    and, when it identified several, their correlation (``term_correlation``) joined to the
    scenario's ``[uncertainty.correlation]`` (block-diagonal: the batch-1 values were
    fitted apart), so that a draw moves them together as the figures allow. Like the
    batch-1 calibration's, a new scenario: its values are its own (none set after loading,
    as when the file it is written to is read back)."""
    over: dict[str, Any] = {
        FIGURES_FIELD: [figure_of(r.point) for r in fit.rows],
        TERMS_FIELD: [name.removeprefix("serving.") for name in fit.identified],
    }
    terms = list(fit.identified)
    if len(terms) >= 2:
        points = [r.point for r in fit.rows]
        corr = term_correlation(fit.scenario, points, terms, source=source)
        over["uncertainty.correlation"] = joined_correlation(fit.scenario, terms, corr)
    recorded = with_overrides(fit.scenario, over, source=source)
    return scenario_from_dict(recorded.model_dump(exclude_none=True), source="calibrated scenario")


def joined_correlation(scenario: Scenario, fields: list[str], corr: np.ndarray) -> dict[str, Any]:
    """``[uncertainty.correlation]`` of ``scenario`` with ``fields``' block ``corr`` joined
    (block-diagonal; any earlier entry of those fields dropped)."""
    old = scenario.uncertainty.correlation
    names, matrix = list(fields), np.asarray(corr, dtype=float)
    if old is not None:
        keep = [i for i, f in enumerate(old.fields) if f.split("[")[0] not in fields]
        if len(keep) >= 2:
            names += [old.fields[i] for i in keep]
            matrix = block_diag(matrix, np.array(old.matrix)[np.ix_(keep, keep)])
    return {"fields": names, "matrix": [[float(x) for x in row] for row in matrix]}


def _value(scenario: Scenario, dotted: str) -> float:
    section, key = dotted.split(".", 1)
    value = getattr(getattr(scenario, section), key)
    assert isinstance(value, int | float)  # a recorded term is set by the fit
    return float(value)


def refit_terms(
    scenario: Scenario, points: Sequence[LoadPoint], terms: Sequence[str], *, source: str
) -> dict[str, float]:
    """The values of ``terms`` (dotted) that fit ``points``' TPOTs best under ``scenario``
    (every other field as it is): weighted least squares as the load fit's
    (sim/calibration/load_fit.py: residuals over ``tpot_sigma_ms``, within ``BOUNDS``),
    started at the scenario's values."""
    x, _ = _solve(scenario, points, terms, source)
    return dict(zip(terms, x.tolist(), strict=True))


def term_correlation(
    scenario: Scenario, points: Sequence[LoadPoint], terms: Sequence[str], *, source: str
) -> np.ndarray:
    """The correlation matrix (T, T) of the fitted ``terms`` at their least-squares values
    under ``scenario``: (J^T J)^-1 normalised to a unit diagonal, J (len(points), T) the
    weighted residuals' Jacobian at the solution (a scale of the covariance, such as the
    reduced chi-square's, cancels)."""
    _, jac = _solve(scenario, points, terms, source)
    cov = np.linalg.pinv(jac.T @ jac)
    se = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = np.clip(cov / np.outer(se, se), -1.0, 1.0)
    corr = 0.5 * (corr + corr.T)  # symmetric to the last bit
    np.fill_diagonal(corr, 1.0)
    return corr


def _solve(
    scenario: Scenario, points: Sequence[LoadPoint], terms: Sequence[str], source: str
) -> tuple[np.ndarray, np.ndarray]:
    """(values (T,), Jacobian (len(points), T) of the weighted residuals there) of the least
    squares of ``refit_terms``."""
    measured = np.array([p.tpot_ms for p in points], dtype=float)
    sigma = np.array([tpot_sigma_ms(p) for p in points])
    lower = np.array([BOUNDS[t][0] for t in terms])
    upper = np.array([BOUNDS[t][1] for t in terms])
    # every step moves serving terms only, which no binding step reads: the scenario bound
    # once, the same batch-1 passes and token-count terms, one table of their answers
    hardware = PassTerms()
    model = TpotModel(bind(scenario, hardware.passes), points, hardware)

    def residuals(x: np.ndarray) -> np.ndarray:
        values = dict(zip(terms, np.clip(x, lower, upper).tolist(), strict=True))
        return (model.tpot_ms(values, source) - measured) / sigma

    x0 = np.clip([_value(scenario, t) for t in terms], lower, upper)
    result = least_squares(
        residuals,
        x0,
        bounds=(lower, upper),
        x_scale=np.array([SCALES[t] for t in terms]),
        method="trf",
        xtol=REFIT_TOL,
        ftol=REFIT_TOL,
    )
    return np.clip(result.x, lower, upper), np.atleast_2d(result.jac)


@dataclass(frozen=True, slots=True)
class RecordedRefit:
    """A draw's overrides -> the recorded terms re-fitted to the recorded figures under the
    draw, each moved by its own drawn deviation (see the module docstring). Called with the
    overrides of a draw (dotted field -> value), as sim/studies/serving/draws.py's
    ``Refit``."""

    scenario: Scenario
    points: tuple[LoadPoint, ...]
    terms: tuple[str, ...]

    def __call__(self, over: Mapping[str, Any]) -> dict[str, float]:
        nominal = {t: _value(self.scenario, t) for t in self.terms}
        drawn = with_overrides(self.scenario, {**over, **nominal}, source="uncertainty")
        fitted = refit_terms(drawn, self.points, self.terms, source="uncertainty")
        out = {}
        for t in self.terms:
            moved = fitted[t] + float(over.get(t, nominal[t])) - nominal[t]
            out[t] = float(np.clip(moved, *BOUNDS[t]))
        return out


#: Fields a setting may change while the recorded figures still describe the server (the
#: load, the sample, the lengths, SLOs and targets, the scheduler's admission, the policy
#: by batch size, and the record itself): what else a ``--set`` changes (the hardware, the
#: passes, the draft, the acceptance, a batched term) makes a what-if server the figures
#: were not measured on, whose draws are then not conditioned on them.
NEUTRAL_FIELDS: tuple[str, ...] = (
    "simulation.", "targets.", "workload.", "serving.concurrency", "serving.rate_per_s",
    "serving.trace", "serving.think_time_ms", "serving.max_running_requests",
    "serving.batching", "serving.token_budget", "serving.kv_capacity_tokens",
    "serving.kv_reserve_gib", "serving.prefill", "serving.disable_above_batch",
    "serving.k_table", "serving.draft_table", "serving.ttft_slo_ms", "serving.tpot_slo_ms",
    "serving.calibrated_",
)  # fmt: skip


def what_if(scenario: Scenario) -> dict[str, str]:
    """The fields set after loading that change the server the recorded figures describe
    (field -> what set it; ``NEUTRAL_FIELDS`` left out)."""
    return {
        name: via
        for name, via in scenario.origins.overrides.items()
        if not name.startswith(NEUTRAL_FIELDS)
    }


def recorded_calibration(
    scenario: Scenario,
) -> tuple[RecordedRefit | None, dict[str, Any] | None]:
    """What a scenario records of a load-sweep calibration, read once: the refit of the
    terms it records as calibrated to the figures it records (None: it records no
    calibrated term, or a setting made it another server, ``what_if``), and what a
    document says about the conditioning of its draws on them (None: it records no
    calibrated term): the figures' count, metric, loads and files, and the terms re-fitted
    in every draw (``refitted``), or, for a what-if server, why they are not
    (``not_conditioned``: the settings that made it)."""
    serving = scenario.serving
    if serving is None or not serving.calibrated_on or not serving.calibrated_terms:
        return None, None
    loads = [f.load for f in serving.calibrated_on]
    out: dict[str, Any] = {
        "figures": len(serving.calibrated_on),
        "metric": METRIC,
        "loads": [min(loads), max(loads)],
        "sources": sorted({f.source for f in serving.calibrated_on}),
    }
    changed = what_if(scenario)
    if changed:
        out["not_conditioned"] = "set after loading, " + ", ".join(
            f"{name} ({via})" for name, via in changed.items()
        )
        return None, out
    terms = tuple(f"serving.{t}" for t in serving.calibrated_terms)
    refit = RecordedRefit(scenario, tuple(point_of(f) for f in serving.calibrated_on), terms)
    return refit, {**out, "refitted": list(terms)}


def recorded_refit(scenario: Scenario) -> RecordedRefit | None:
    """The refit of ``recorded_calibration``."""
    return recorded_calibration(scenario)[0]


def conditioning(scenario: Scenario) -> dict[str, Any] | None:
    """The conditioning document of ``recorded_calibration``."""
    return recorded_calibration(scenario)[1]
