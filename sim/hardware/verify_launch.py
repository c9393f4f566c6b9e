"""The per-kernel CPU cost an ungraphed measured verify fixes under ``verify_compute =
"decode"`` (its GPU work the graphed decode's, the rest its eager launches), found once
while ``pass_model`` places the model on its hardware."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.errors import SpecsimError
from sim.hardware.passes import calibrate_launch_us

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel


def launch_us_from_verify(pm: PassModel) -> float | None:
    """Under ``verify_compute = 'decode'`` with an ungraphed measured verify: the
    per-kernel CPU cost that makes the eager verify, with the decode-derived GPU work,
    take ``verify_ms`` on the hardware it was measured on (None otherwise).

    A file that also states ``hardware.launch_us`` says two things about one
    quantity: SpecsimError naming the field. (A what-if of it keeps the derived cost
    for the timings; the hardware asked about takes the override.)"""
    times = pm.times
    if not pm.verify_from_decode or times.verify_ms is None:
        return None
    if pm.reference.verify_cuda_graph:
        return None
    m0 = pm.measured_verify_tokens
    shape = pm.shape("verify", m0, pm.reference)
    compute_ms = pm.verify_compute_from_decode_ms(m0)
    try:
        derived_us = calibrate_launch_us(
            shape, pm.reference, pm.geom, compute_ms, times.verify_ms, pm.memo
        )
    except ValueError as exc:
        raise SpecsimError(
            f"{times.verify_ms:.4g} ms cannot be an ungraphed verify whose GPU work is "
            f"the graphed decode's plus its growth ({compute_ms:.4g} ms of compute): "
            f"{exc}",
            field="timing.verify_ms",
        ) from None
    stated = pm.inputs.launch_us
    if stated is not None and pm.inputs.launch_stated:
        raise SpecsimError(
            f"stated as {stated:g} us, but the ungraphed timing.verify_ms with "
            "timing.verify_compute = 'decode' fixes the per-kernel CPU cost at "
            f"{derived_us:.4g} us ({pm.geom.kernels_per_layer} kernels a layer): leave "
            "it out, or set timing.verify_compute = 'measured' to take the verify's GPU "
            "work from its time at this cost instead",
            field="hardware.launch_us",
        )
    return derived_us
