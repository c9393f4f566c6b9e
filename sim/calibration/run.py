"""``specsim calibrate`` as one library call: read the inputs, fit the base scenario (or,
without one, say what the files hold), then the per-request spread of acceptance and the
batched terms of a load sweep (recorded in the scenario with the figures they were
fitted to, sim/calibration/load_record.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sim.calibration.calibrate import calibrate
from sim.calibration.init_calibrate import init_and_calibrate
from sim.calibration.init_request import InitRequest, InitScenario
from sim.calibration.inputs import CalibrationInputs, imported_summary, read_inputs
from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_fit_result import LoadFit
from sim.calibration.load_record import record_load_fit
from sim.calibration.load_sweep import read_load_sweep
from sim.calibration.result import Calibration
from sim.errors import SpecsimError
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.calibration.importers.per_request import PerRequestFile
    from sim.calibration.spread_fit import SpreadFit

__all__ = [
    "CalibrationRun",
    "fit_files",
    "load_sweep_into",
    "run_calibration",
    "run_init",
    "spread_into",
]


@dataclass(frozen=True, slots=True)
class CalibrationRun:
    """What calibrate found: without a base, ``imported`` (what the files hold, nothing
    fitted but the per-request spread); with one, the ``calibration``, the per-request
    ``spread`` written into it, and a load sweep's ``load`` fit (whose scenario the
    calibration carries)."""

    imported: dict[str, Any] | None = None
    calibration: Calibration | None = None
    spread: SpreadFit | None = None
    load: LoadFit | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON body: the import summary, or the calibration with its ``load_fit`` and
        ``per_request_spread``."""
        if self.calibration is None:
            assert self.imported is not None
            return self.imported
        extra = {"load_fit": self.load.as_dict()} if self.load is not None else {}
        if self.spread is not None:
            extra["per_request_spread"] = self.spread.as_dict()
        return {**self.calibration.as_dict(), **extra}


def run_calibration(
    inputs: CalibrationInputs,
    base: Scenario | None,
    *,
    fit_timing: Sequence[str] | None = None,
    acceptance: str = "auto",
    prefer: str | None = None,
) -> CalibrationRun:
    """Read ``inputs``; without ``base`` return what they hold (SpecsimError when they hold
    nothing); with it, fit it (sim/calibration/calibrate.py), then the per-request spread
    (sim/calibration/spread.py) and the batched terms to the load sweeps
    (sim/calibration/load_fit.py)."""
    data, files = read_inputs(inputs, base.num_steps if base is not None else None)
    if base is None:
        if data.empty and not data.imported:
            raise SpecsimError("nothing to read: give a file or a figure", source="calibrate")
        body = imported_summary(data)
        if files:
            body["per_request_spread"] = fit_files(files)[0].as_dict()
        return CalibrationRun(imported=body)
    if data.empty and inputs.load_sweeps:
        raise SpecsimError(NO_BATCH1, source="--load-sweep")
    result = calibrate(base, data, fit_timing=fit_timing, acceptance=acceptance, prefer=prefer)
    spread = None
    if files:
        spread, result = spread_into(result, files)
    if not inputs.load_sweeps:
        return CalibrationRun(calibration=result, spread=spread)
    result, load = load_sweep_into(result, inputs.load_sweeps)
    return CalibrationRun(calibration=result, spread=spread, load=load)


#: Why a load sweep without batch-1 figures is refused.
NO_BATCH1 = (
    "the batched terms are fitted over a batch-1 fit, and no batch-1 figure is given: "
    "give the sweep's files as --sglang-bench, --vllm-bench or --trtllm-bench too "
    "(their concurrency 1 runs), or --baseline-tok-s and --point"
)


def load_sweep_into(cal: Calibration, paths: Sequence[str]) -> tuple[Calibration, LoadFit]:
    """The batched terms fitted to the runs of the load-sweep files ``paths`` over the
    batch-1 fit ``cal`` (sim/calibration/load_fit.py), and ``cal`` with its scenario
    carrying them and the runs (sim/calibration/load_record.py)."""
    points = [p for path in paths for p in read_load_sweep(path)]
    load = fit_load_sweep(cal.scenario, points, source="--load-sweep")
    return replace(cal, scenario=record_load_fit(load)), load


def fit_files(files: Sequence[PerRequestFile]) -> tuple[SpreadFit, str]:
    """The per-request spread fitted to all files' requests, and their names (one
    num_steps: SpecsimError when the files ran at several)."""
    # lazy: the fit only when a per-request file is given (start-up)
    from sim.calibration.spread_fit import fit_spread

    ks = {f.num_steps for f in files}
    source = ", ".join(f.source for f in files)
    if len(ks) > 1:
        raise SpecsimError(
            f"the files ran at num_steps {sorted(ks)}: one spread is fitted at one num_steps",
            source="--per-request",
        )
    requests = [r for f in files for r in f.requests]
    return fit_spread(requests, ks.pop(), source=source), source


def spread_into(cal: Calibration, files: Sequence[PerRequestFile]) -> tuple[SpreadFit, Calibration]:
    """The per-request spread of all files' requests, fitted and written into ``cal``."""
    # lazy: the fit only when a per-request file is given (start-up)
    from sim.calibration.spread import with_spread

    fit, source = fit_files(files)
    return fit, with_spread(cal, fit, source)


def run_init(
    req: InitRequest, inputs: CalibrationInputs, *, prefer: str | None = None
) -> tuple[InitScenario, Calibration | None, LoadFit | None]:
    """``specsim init`` as one call: the scenario ``req`` describes and, with figures among
    ``inputs``, its calibration to them (sim/calibration/init_calibrate.py), with the
    per-request spread written in and, with load sweeps, the batched terms fitted over it
    as ``calibrate --load-sweep`` fits them (``load_sweep_into``)."""
    data, files = read_inputs(inputs, inputs.num_steps)
    if data.empty and inputs.load_sweeps:
        raise SpecsimError(NO_BATCH1, source="--load-sweep")
    init, cal = init_and_calibrate(req, data, prefer=prefer)
    if files and cal is not None:
        cal = spread_into(cal, files)[1]
    if cal is None or not inputs.load_sweeps:
        return init, cal, None
    cal, load = load_sweep_into(cal, inputs.load_sweeps)
    return init, cal, load
