"""The compute of any pass over any token counts at once (``compute_table``), the one place
a ``PassModel``'s compute comes from, in two steps: the measured pass it rests on
calibrated where the timings were measured (``on_reference``: sim/hardware/passes.py
``calibrate_pass``), then what the weights add (``weights_table``:
sim/hardware/roofline.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.errors import SpecsimError
from sim.hardware.model_weights import draft_weights, target_weights
from sim.hardware.passes import HardwarePoint, calibrate_pass

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel


def _measured_ms(pm: PassModel, name: str, tokens: int) -> float | None:
    times = pm.times
    if name == "verify":
        if times.verify_ms is None:
            return None
        slope = pm.verify_slope[0]
        return times.verify_ms + (tokens - pm.measured_verify_tokens) * slope
    return getattr(times, f"{name}_ms")


def on_reference(
    pm: PassModel,
    name: str,
    tokens: Sequence[int],
    measured_ms: Sequence[float],
    launch_stated: bool | None,
) -> list[float]:
    """The compute (ms) that makes the pass ``name`` over each of ``tokens`` take its
    ``measured_ms`` where the timings were measured (sim/hardware/passes.py
    ``calibrate_pass``; ``launch_stated``: check an ungraphed pass's launches first)."""
    field = "timing.verify_ms" if name == "verify" else f"timing.{name}_ms"
    m0, ref = pm.measured_verify_tokens, pm.reference
    x_ref = []
    for m, measured in zip(tokens, measured_ms, strict=True):
        given = None
        if name == "verify" and m != m0:  # the user gave another: verify_ms is set
            given = (  # and ``measured`` came from it
                f"{pm.times.verify_ms:.4g} ms over {m0} tokens at "
                f"{pm.verify_slope[0]:.4g} ms a token, i.e. {measured:.4g} ms"
            )
        shape = pm.shape(name, m, ref)
        x_ref.append(
            calibrate_pass(shape, ref, pm.geom, measured, field, given, launch_stated, pm.memo)
        )
    return x_ref


def compute_table(
    pm: PassModel, name: str, tokens: Sequence[int], *, decode_on_reference: bool = False
) -> tuple[list[float], str]:
    """(compute ms on the current hardware of the pass ``name`` over each of
    ``tokens``, origin), in two steps: the measured pass it rests on calibrated where
    the timings were measured, then what grows with tokens (sim/hardware/roofline.py).

    - the verify under ``verify_compute = 'decode'``: the graphed decode's compute
      plus ``verify_ms_per_extra_token`` per extra token when given, else (and with
      ``verify_growth = experts``) plus the weight reads and FLOPs of the extra tokens
      (only that share of a batch-1 pass grows with tokens), on the reference, then
      rescaled (``decode_on_reference``: this, not rescaled, whatever
      ``verify_compute`` says);
    - a measured verify with ``verify_growth = 'experts'``: its compute plus the growth
      from its measured tokens on the current hardware;
    - a measured pass: its time at each token count calibrated, then rescaled;
    - an unmeasured verify with a measured decode: the decode's plus its growth;
    - anything else: the roofline of the weights on the current GPU.
    """
    times, verify, m0 = pm.times, name == "verify", pm.measured_verify_tokens
    origin = pm.inputs.stated_origins.get(name) or ("measured" if pm.at_reference else "recomposed")
    from_decode = verify and (pm.verify_from_decode or decode_on_reference)
    experts = verify and times.verify_ms is not None and times.verify_growth == "experts"
    base, at = name, tokens  # the measured pass the compute rests on, and its tokens
    grow: tuple[HardwarePoint, int, str] | None = None  # growth: where, from, why
    if from_decode:
        if times.decode_ms is None:
            raise SpecsimError(
                "needed by timing.verify_compute = 'decode'", field="timing.decode_ms"
            )
        base, at = "decode", (1,)
        if times.verify_growth == "experts" or times.verify_ms_per_extra_token is None:
            grow = (pm.reference, 1, "verify_compute = 'decode'")
    elif experts:
        base, at = "verify", (m0,)
        grow = (pm.current, m0, "verify_growth = experts")
    elif _measured_ms(pm, name, pm.default_tokens(name)) is None:
        if not verify or times.decode_ms is None:
            return weights_table(pm, name, tokens, None), "derived"
        origin, base, at = "derived", "decode", (1,)
        grow = (pm.current, 1, "a verify derived from decode")
    measured = [_measured_ms(pm, base, m) or 0.0 for m in at]  # each one measured
    stated = None if from_decode else pm.inputs.launch_us is not None
    x_ref = on_reference(pm, base, at, measured, stated)
    if from_decode:
        if grow is None:  # the given slope
            slope = times.verify_ms_per_extra_token or 0.0
            growth = [(m - 1) * slope for m in tokens]
        else:
            growth = weights_table(pm, name, tokens, grow)
        grown = [x_ref[0] + g for g in growth]
        if decode_on_reference:
            return grown, origin
        scale = pm.scale_to_current
        return [x * scale for x in grown], origin
    scale = pm.scale_to_current
    if grow is None:
        return [x * scale for x in x_ref], origin
    growth = weights_table(pm, name, tokens, grow)
    return [x_ref[0] * scale + g for g in growth], origin


def weights_table(
    pm: PassModel, name: str, tokens: Sequence[int], grow: tuple[HardwarePoint, int, str] | None
) -> list[float]:
    """What the weights read and the FLOPs done take (sim/hardware/roofline.py), for
    each of ``tokens``: ``grow`` = (hardware, tokens from, what for): the extra time of
    a target pass over more tokens there (``growth_ms``); None: the pass ``name``
    derived whole on the current GPU (``roofline_ms``)."""
    from sim.hardware.roofline import compute_table_ms  # lazy: derived passes only

    hw, tokens_from, what = grow or (pm.current, None, "")
    if hw.gpu is None:
        if grow is None:
            raise SpecsimError(
                f"needed to derive the {name} pass (no measured time)", field="hardware.gpu"
            )
        raise SpecsimError(f"needed for {what} (the GPU's bandwidth)", field="hardware.gpu")
    target = grow is not None or name in ("decode", "verify")
    weights = target_weights(pm.model) if target else draft_weights(pm.model)
    experts = pm.inputs.expert_efficiency if grow is not None else None
    table = compute_table_ms(weights, tokens, hw.gpu, hw.gpus, pm.efficiency, tokens_from, experts)
    return list(table)
