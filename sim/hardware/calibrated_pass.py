"""A batched pass calibrated to its measured points (``calibrated_pass``): each point's
work and the compute that makes its critical path equal the measurement
(``launch.calibrate_compute_ms``), the curve through them, and the checks that no
pass's compute goes negative (sim/hardware/batched.py's docstring, calibration)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.errors import SpecsimError
from sim.hardware.batched import BatchedPass
from sim.hardware.compute_curve import DEFAULT_SLOPE, ComputeCurve
from sim.hardware.launch import calibrate_compute_ms
from sim.hardware.pass_physics import MeasuredPass, PassPhysics, padded_shape, replays_graph
from sim.hardware.pass_terms import PassTerms
from sim.hardware.passes import PassShape, pass_allreduce


def _point_compute(
    physics: PassPhysics, point: MeasuredPass, field: str, terms: PassTerms
) -> tuple[float, float]:
    """(work ms, calibrated compute ms) of a measured point: a pure function of the
    physics and the point, kept in ``terms`` once computed (``PassTerms.of``)."""
    bare = BatchedPass(physics, ComputeCurve(np.array([0.0]), np.array([0.0])), terms)
    found = bare._points.get(point)
    if found is not None:
        return found
    work = bare.work_ms(point.tokens, point.kv_tokens, point.pairs, point.sequences)
    context = float(work - bare.work_ms(point.tokens, 0.0, 0.0, point.sequences))
    graphed = replays_graph(physics, point.tokens, point.sequences)
    ran_tokens, _ = padded_shape(physics, point.tokens, point.sequences)
    shape = PassShape(physics.name, ran_tokens, physics.layers, graphed)
    allreduce, _ = pass_allreduce(shape, physics.hardware, physics.geometry)
    schedule = bare.kernels(shape).with_allreduce_ms(allreduce.us / 1000.0)
    try:
        compute = (
            calibrate_compute_ms(schedule, point.ms)
            if point.compute_ms is None
            else point.compute_ms
        )
    except ValueError as exc:
        raise SpecsimError(
            f"{point.ms:.4g} ms for the {physics.name} pass over {point.tokens} tokens is "
            f"{exc.args[0]} of communication and launch ({point.source})",
            field=point.field or field,
        ) from None
    # the GPU work of its context alone (KV reads and attention at peak) must fit the GPU
    # time the measurement leaves: a pass "measured" faster extrapolated to negative
    # compute at shorter contexts (a serving run failed on a negative SimPy delay)
    if context > compute:
        raise SpecsimError(
            f"{point.ms:.4g} ms for the {physics.name} pass leaves {compute:.4g} ms of GPU work, "
            f"below the {context:.4g} ms that reading and attending its {point.kv_tokens:.4g} "
            f"context tokens alone take at the GPU's peak ({point.source}): the time cannot "
            "hold at that context",
            field=point.field or field,
        )
    found = bare._points[point] = (float(work), compute)
    return found


def calibrated_pass(
    physics: PassPhysics,
    points: Sequence[MeasuredPass],
    *,
    field: str = "timing",
    slope: float = DEFAULT_SLOPE,
    max_tail_slope: float | None = None,
    follow: ComputeCurve | None = None,
    terms: PassTerms | None = None,
) -> BatchedPass:
    """The pass calibrated to ``points`` (at least one); ``slope`` beyond a single point,
    ``max_tail_slope`` the steepest growth beyond the last of several. ``follow``: with a
    single point, take this curve (a pass on the same weights) shifted through it instead
    of a straight line at ``slope``. ``terms``: the token-count terms it shares
    (``PassTerms``; None: a table of its own).

    SpecsimError naming ``field`` when a point is below the modelled communication and
    launch floor, or two points have the same work.
    """
    if not points:
        raise ValueError("calibration needs at least one measured point")
    terms = PassTerms() if terms is None else terms
    pairs = sorted(_point_compute(physics, p, field, terms) for p in points)
    roof = np.array([r for r, _ in pairs])
    if np.any(np.diff(roof) <= 0):
        raise SpecsimError(
            f"two measured {physics.name} passes have the same work (bytes and FLOPs): "
            "give one per batch shape",
            field=field,
        )
    if follow is not None and len(pairs) == 1:
        curve = follow.through(*pairs[0])
    else:
        curve = ComputeCurve(roof, np.array([c for _, c in pairs]), slope, max_tail_slope)
    # the least work any pass of this kind does (one token, no context) must keep a
    # compute time >= 0: points whose slope, extended down, crosses 0 before it made a
    # serving run fail on a negative SimPy delay
    bare = BatchedPass(physics, ComputeCurve(np.array([0.0]), np.array([0.0])), terms)
    least = float(bare.work_ms(1, 0.0, 0.0)[()])
    if float(curve.at(np.array([least]))[0]) < 0.0:
        lowest = min(points, key=lambda p: _point_compute(physics, p, field, terms)[0])
        raise SpecsimError(
            f"the measured {physics.name} passes ({len(points)}: "
            + ", ".join(f"{p.ms:.4g} ms over {p.tokens} token(s) reading {p.kv_tokens:.4g} "
                        "KV tokens" for p in points)
            + ") extend to a negative compute time for one token without context: their "
            "growth is too steep for where the first one lies (were the batch-1 times taken "
            "at the context timing.context_tokens says?)",
            field=lowest.field or field,
        )  # fmt: skip
    return BatchedPass(physics, curve, terms)
