"""The measured verify pass's growth per extra verified token (``PassModel.verify_slope``),
found once while ``pass_model`` builds the model: given, or derived by the hardware model
where the timings were measured, or 0 (a default, said so)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.errors import SpecsimError
from sim.hardware.pass_compute import compute_table, on_reference, weights_table

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel


def find_verify_slope(pm: PassModel) -> tuple[float, str, str]:
    """(ms per extra verified token, origin, reason) of the measured verify pass.

    Given (``verify_ms_per_extra_token``): measured. Otherwise derived by the hardware
    model where the timings were measured: the verify over one more token, with the
    calibrated compute plus the extra weight reads and FLOPs (sim/hardware/roofline.py
    ``growth_ms``) and the larger all-reduces, minus the measured pass. Without the
    weights or the GPU: 0, listed as a default.
    """
    times = pm.times
    if times.verify_ms_per_extra_token is not None:
        return times.verify_ms_per_extra_token, "measured", "given in the scenario"
    derived = _derived_slope(pm)
    if isinstance(derived, str):
        return (
            0.0,
            "default",
            (
                f"not measured, and the hardware model cannot derive it ({derived}): extra "
                "verified tokens are taken to cost nothing, which is optimistic"
            ),
        )
    base = (
        "the graphed decode's GPU work (timing.verify_compute = 'decode')"
        if pm.verify_from_decode
        else "the calibrated verify"
    )
    return (
        derived,
        "derived",
        (
            f"hardware model: {base} plus one token's extra weight reads (its new "
            f"distinct routed experts){_expert_words(pm)} and FLOPs at "
            f"hardware.bandwidth_efficiency {pm.efficiency:g} of the GPU's peak, and "
            "its larger all-reduces"
        ),
    )


def _expert_words(pm: PassModel) -> str:
    """How the extra experts are priced, for the slope's reason ('' when at the pass's
    own efficiency)."""
    eff = pm.inputs.expert_efficiency
    if eff is None or not pm.model.experts:
        return ""
    return f" through the fused-MoE kernel at hardware.expert_read_efficiency {eff:g} of peak"


def _derived_slope(pm: PassModel) -> float | str:
    """The derived slope (ms per token), or why it cannot be derived: the verify
    over m0 and m0 + 1 tokens on the reference, its compute the decode's grown
    (``verify_compute = 'decode'``) or the measured verify's calibrated compute plus
    one token's growth, less the time at m0."""
    times, model = pm.times, pm.model
    if times.verify_ms is None:
        return "no measured verify pass"
    missing = [
        f"model.{n}" for n in ("layers", "hidden_size", "layer_params") if getattr(model, n) is None
    ]
    if not pm.inputs.current.verify_cuda_graph and model.kernels_per_layer is None:
        missing.append("model.kernels_per_layer")
    if pm.reference.gpu is None:
        missing.append("hardware.gpu")
    if missing:
        return "needs " + ", ".join(missing)
    m0, ref = pm.measured_verify_tokens, pm.reference
    tokens = (m0, m0 + 1)
    try:
        if pm.verify_from_decode:  # the decode's GPU work, grown, under the eager launch
            computes, _ = compute_table(pm, "verify", tokens, decode_on_reference=True)
        else:
            x_m0 = on_reference(pm, "verify", (m0,), (times.verify_ms,), None)[0]
            grow = (ref, m0, "the verify slope")
            computes = [x_m0, x_m0 + weights_table(pm, "verify", (m0 + 1,), grow)[0]]
        t0, t1 = (b.total_ms for b in pm.composed("verify", tokens, computes, "derived", ref))
    except SpecsimError as exc:
        return exc.message
    return max(t1 - (t0 if pm.verify_from_decode else times.verify_ms), 0.0)
