"""The batched terms a load sweep fits (sim/calibration/load_fit.py): their scenario
fields, the fit's bounds, plausible ranges and scales, the scans of the host work and the
speculative host factor, and the thresholds of their profile ranges."""

from __future__ import annotations

from sim.hardware.batched import SLOPE_RANGE
from sim.hardware.experts import SKEW_RANGE
from sim.model.host_work import SGLANG_SPEC_FACTOR, US_PER_REQUEST_RANGE

HOST_FIELD = "serving.host_us_per_request"
SLOPE_FIELD = "serving.kernel_slope"
SKEW_FIELD = "serving.expert_skew"
SPEC_FIELD = "serving.host_spec_factor"
#: Plausible speculative host factor: 1 (a speculative iteration's bookkeeping a request as
#: a plain one's: the default) to SGLang's EAGLE worker, 20/7 (sim/model/host_work.py).
SPEC_FACTOR_RANGE: tuple[float, float] = (1.0, SGLANG_SPEC_FACTOR)
#: Relative standard error floor of a measured TPOT (assumed, see the module docstring).
REL_FLOOR = 0.03
#: 90% two-sided normal quantile, for the ranges of fitted terms.
Z90 = 1.6449
#: Bounds of the fit, and each term's plausible range when the sweep cannot identify it.
BOUNDS = {
    HOST_FIELD: (0.0, 5000.0),
    SLOPE_FIELD: (0.0, 5.0),
    SKEW_FIELD: (0.0, 4.0),
    SPEC_FIELD: (0.0, 100.0),  # the schema's
}
#: (The batched cost terms an interval draws from when a sweep leaves them; the speculative
#: factor is not one: module docstring.)
PLAUSIBLE = {HOST_FIELD: US_PER_REQUEST_RANGE, SLOPE_FIELD: SLOPE_RANGE, SKEW_FIELD: SKEW_RANGE}
FIT_PLAUSIBLE = {**PLAUSIBLE, SPEC_FIELD: SPEC_FACTOR_RANGE}
SCALES = {HOST_FIELD: 10.0, SLOPE_FIELD: 0.3, SKEW_FIELD: 0.3, SPEC_FIELD: 0.3}
#: Values (us) of the host work's start scan and profile (0, then doubling to the bound).
HOST_SCAN_US: tuple[float, ...] = (0.0, *(5.0 * 2.0**i for i in range(10)), BOUNDS[HOST_FIELD][1])
#: Values of the speculative host factor's profile (0, then doubling from 1/4, the bound).
SPEC_SCAN: tuple[float, ...] = (0.0, *(0.25 * 2.0**i for i in range(9)), BOUNDS[SPEC_FIELD][1])
#: The source the serving setup of a fit's scenario names in its errors.
SWEEP_SOURCE = "load sweep"
#: Chi-square rise of a one-parameter 90% profile range.
CHI2_90 = 2.706
#: Bisection steps refining each end of the host work's profile range.
PROFILE_STEPS = 8
