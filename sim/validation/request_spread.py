"""Acceptance that varies between requests in the job cases 43-46, as pre-registered in
docs/accuracy-under-load.md: each request draws one flat rate a ~ Beta(m kappa,
(1 - m) kappa), kappa calibrated on the per-request spread of TPOT at C = 1 net of the plain
arm's (sim/calibration/tpot_spread.py), m the mean that keeps the pooled accept length
measured there; its range, kappa at the measured CV's ends, goes under
``[uncertainty.acceptance]`` and beside each scored figure (reported, not scored).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sim.calibration.spread_fit import KAPPA_BOUNDS
from sim.calibration.tpot_spread import TpotSpread, kappa_range, tpot_spread

__all__ = ["RequestSpread", "request_spread", "spread_kappa", "spread_note", "spread_overrides"]

#: (the calibrated Beta, (kappa at the widest CV, kappa at the narrowest)).
RequestSpread = tuple[TpotSpread, tuple[float, float]]


def request_spread(
    accept_length: float,
    num_steps: int,
    cv: float,
    cv_ends: tuple[float, float],
    plain_cv: float,
    inverse_tokens: float,
) -> RequestSpread:
    """The Beta whose batch-1 TPOT CV is ``cv`` net of ``plain_cv`` (in squares), the mean
    keeping ``accept_length``, and the concentrations at ``cv_ends`` (low, high)."""
    fit = tpot_spread(accept_length, num_steps, cv, plain_cv, inverse_tokens)
    return fit, kappa_range(accept_length, num_steps, cv_ends, plain_cv, inverse_tokens)


def spread_kappa(kappa: float) -> float | None:
    """``kappa`` as the model takes it: None (one rate for every request) at the upper
    bound, which the calibration returns when the spread is within the sampling noise."""
    return None if kappa >= KAPPA_BOUNDS[1] else kappa


def spread_overrides(kappa: float, ends: tuple[float, float], reason: str) -> dict[str, Any]:
    """The scenario overrides of a per-request concentration ``kappa`` and its range
    ``ends`` (measured: ``reason``); none for one rate."""
    if spread_kappa(kappa) is None:
        return {}
    return {
        "acceptance.concentration": kappa,
        "uncertainty.acceptance.concentration": {
            "range": [min(ends), max(ends)],
            "origin": "measured",
            "reason": reason,
        },
    }


def spread_note(
    arm: str,
    measured: str,
    noise: str,
    spread: RequestSpread,
    range_of: str,
    tok_s_at_ends: Mapping[int, tuple[float, float]],
) -> str:
    """The note of a case's calibrated spread: ``measured`` what the C = 1 TPOT spreads,
    ``noise`` where one rate's sampling noise comes from, ``range_of`` what the range
    spans, ``tok_s_at_ends`` the scored tok/s at the range's two ends by C."""
    fit, (wide, narrow) = spread
    ends = "; ".join(
        f"{users}: {min(a, b):.1f}-{max(a, b):.1f}" for users, (a, b) in tok_s_at_ends.items()
    )
    return (
        "Acceptance that varies between requests, calibrated at C = 1 (docs/"
        f"accuracy-under-load.md): {measured}; removed in squares, "
        f"{math.sqrt(fit.target_cv2):.2%} to explain, of which one rate for every request "
        f"({noise}) gives {math.sqrt(fit.noise_cv2):.2%}: concentration "
        f"{fit.concentration:.1f} (rate sd {fit.rate_sd:.4f} around the mean rate "
        f"{fit.mean:.4f} that keeps the pooled accept length), {wide:.1f}-{narrow:.1f} over "
        f"{range_of}. The scored {arm} tok/s at those two ends by C (reported, not scored): "
        f"{ends}."
    )
