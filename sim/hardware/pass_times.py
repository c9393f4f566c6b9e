"""The configuration's pass times on its hardware (``PassModel.passes``), found once while
``pass_model`` builds the model: the measured times as given at the measured hardware,
else every pass re-composed or derived, the verify tabulated over token counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.errors import SpecsimError
from sim.hardware.passes import PASS_NAMES
from sim.model.cycle import PassTimes

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel

#: Verify passes tabulated for the cycle model: m = 1..33 covers best-k searches k <= 32.
VERIFY_TABLE_TOKENS = 33


def find_pass_times(pm: PassModel) -> PassTimes:
    """The configuration's pass times on its hardware.

    At the measured hardware with every time given, the measured times come back
    unchanged (after checking each is above its modelled communication + launch floor
    when the model geometry is known). Otherwise each pass is re-composed or derived.
    """
    times, num_steps = pm.times, pm.num_steps
    measured: dict[str, float | None] = {n: getattr(times, f"{n}_ms") for n in PASS_NAMES}
    all_measured = all(v is not None for v in measured.values())
    m0 = pm.measured_verify_tokens
    # a measured line, unless the verify's GPU work is the decode's and its growth is
    # the hardware model's: then every token count is composed (launch- to GPU-bound)
    linear = times.verify_growth == "linear" and not (
        pm.verify_from_decode and times.verify_ms_per_extra_token is None
    )
    if pm.at_reference and all_measured and linear:
        if pm.geometry_known():
            names = PASS_NAMES if num_steps > 0 else ("decode", "verify")
            for name in names:
                pm.compute_ms(name, pm.default_tokens(name))
        return times.as_pass_times(num_steps, pm.inputs.draft_tokens, pm.verify_slope[0])
    # m0 + 1: the slope at the measured point needs the next entry
    max_m = max(VERIFY_TABLE_TOKENS, pm.inputs.draft_tokens, m0 + 1)
    table = pm.verify_table_ms(max_m)

    def total(name: str) -> float:
        if num_steps == 0 and measured[name] is None:
            try:
                return pm.breakdown(name).total_ms
            except SpecsimError:
                return float("nan")  # no drafter to derive, and none is needed at k = 0
        return pm.breakdown(name).total_ms

    return PassTimes(
        decode_ms=total("decode"),
        verify_ms=table[m0 - 1],
        verify_tokens=m0,
        verify_ms_per_extra_token=table[m0] - table[m0 - 1],
        draft_step_ms=total("draft_step"),
        draft_extend_ms=total("draft_extend"),
        cycle_overhead_ms=times.cycle_overhead_ms,
        verify_table_ms=table,
        draft_step_overhead_ms=times.draft_step_overhead_ms,
        **times.extend_fields(num_steps),
    )
