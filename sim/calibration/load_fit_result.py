"""What a load fit returns (``LoadFit``: the batched terms fitted and kept, their ranges,
the figures at the fitted values) and one figure of it (``LoadRow``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import FIT_PLAUSIBLE
from sim.scenario.schema import Scenario


@dataclass(frozen=True, slots=True)
class LoadRow:
    """One figure: the run, its load, measured and predicted TPOT (ms), and sigma."""

    point: LoadPoint
    measured_ms: float
    predicted_ms: float
    sigma_ms: float

    @property
    def relative(self) -> float:
        return self.predicted_ms / self.measured_ms - 1.0


@dataclass(frozen=True, slots=True)
class LoadFit:
    """The fitted scenario's batched terms: ``values`` (every term), ``identified`` (the
    fitted ones, with ``stderr``), ``kept`` (term -> why the sweep cannot fix it),
    ``ranges`` (term -> (low, high): 90% for fitted terms, the plausible range for kept
    ones, the host work's cut to what the sweep allows), ``condition`` (ratio of the scaled
    Jacobian's extreme singular values over the identified terms; inf when none), ``rows``
    at the fitted values, ``max_load`` (the highest load fitted: answers beyond it
    extrapolate), ``scenario`` (with the values), ``host_profile_us`` (when the host work is
    not identified: the 90% range of it the sweep allows, module docstring; else None),
    ``spec_factor_profile`` (the same for the speculative host factor when it is not
    fitted) and ``spec_factor_runs`` (the runs it was fitted on; "" when not fitted)."""

    values: dict[str, float]
    identified: tuple[str, ...]
    stderr: dict[str, float]
    kept: dict[str, str]
    ranges: dict[str, tuple[float, float]]
    condition: float
    rows: tuple[LoadRow, ...]
    max_load: float
    scenario: Scenario
    notes: tuple[str, ...] = field(default=())
    host_profile_us: tuple[float, float] | None = None
    spec_factor_profile: tuple[float, float] | None = None
    spec_factor_runs: str = ""

    @property
    def outside_plausible(self) -> dict[str, tuple[float, float]]:
        """Fitted term -> its plausible range (``PLAUSIBLE``, the speculative host factor's
        ``SPEC_FACTOR_RANGE``), for each fitted value outside it: kept as fitted, not
        clamped; the figures hold something the model does not price."""
        out = {}
        for name in self.identified:
            lo, hi = FIT_PLAUSIBLE[name]
            if not lo <= self.values[name] <= hi:
                out[name] = (lo, hi)
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "values": self.values,
            "identified": list(self.identified),
            "stderr": self.stderr,
            "kept": self.kept,
            "ranges": {k: list(v) for k, v in self.ranges.items()},
            "condition": self.condition if math.isfinite(self.condition) else None,
            "max_load": self.max_load,
            "rows": [
                {
                    "source": r.point.source,
                    "where": r.point.where,
                    "format": r.point.format,
                    "load": r.point.load,
                    "load_kind": r.point.load_kind,
                    "speculative": r.point.speculative,
                    "measured_tpot_ms": r.measured_ms,
                    "predicted_tpot_ms": r.predicted_ms,
                    "relative": r.relative,
                    "job": (
                        None
                        if r.point.job is None
                        else {"requests": r.point.job.requests, "workers": r.point.job.workers}
                    ),
                    "job_note": r.point.job_note,
                }
                for r in self.rows
            ],
            "notes": list(self.notes),
            "outside_plausible": {k: list(v) for k, v in self.outside_plausible.items()},
            "host_profile_us": None if self.host_profile_us is None else list(self.host_profile_us),
            "spec_factor_profile": (
                None if self.spec_factor_profile is None else list(self.spec_factor_profile)
            ),
            "spec_factor_runs": self.spec_factor_runs,
        }
