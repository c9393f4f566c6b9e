"""The load-sweep fit on a public concurrency curve: fit the batched terms at low load,
predict the decode time per token at high load.

``specsim calibrate --load-sweep`` (sim/calibration/load_fit.py) fits the host work per
request, the kernel growth slope and the expert skew to the decode time per output token
of runs at several loads. This case does what a user with the report's sweep would do:
the calibrated Kimi scenario of the serving case (batch-1 figures and plain decoding at
8 users) is given the runs at 2-16 users (with and without speculation) as a load
sweep, and the fitted model predicts the TPOT at 32, 64 and 128 users, which it never
saw. The report's benchmark skips prefill (context 0), so 1000 x users / aggregate tok/s
is the decode time per token of a user. Scored beside it, the same prediction with the
terms at their defaults (no load sweep).
"""

from __future__ import annotations

from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.tpot_model import predicted_tpot_ms
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row
from sim.validation.kimi_rtx6kpro_cases import kimi_scenario

__all__ = ["load_fit_cases"]

#: Loads the fit sees, and the loads scored.
FIT_LOADS = (2, 4, 8, 16)
SCORED_LOADS = (32, 64, 128)
LABELS = {"MTP=3": True, "no MTP": False}


def _points(loads: tuple[int, ...]) -> list[LoadPoint]:
    curves = pub.RTX6KPRO_AGGREGATE_TOK_S
    return [
        LoadPoint(
            source=pub.RTX6KPRO_URL,
            where=f"{label} conc={b}",
            format="published table",
            load=float(b),
            load_kind="concurrency",
            speculative=spec,
            tpot_ms=1000.0 * b / curves[label][b],
        )
        for label, spec in LABELS.items()
        for b in loads
    ]


def case_kimi_load_fit() -> Case:
    """Kimi-K2.5 on 8x RTX PRO 6000: batched terms fitted at 2-16 users, TPOT scored at
    32-128 users."""
    base = kimi_scenario()[0]
    fit = fit_load_sweep(base, _points(FIT_LOADS), source="rtx6kpro sweep, conc 2-16")
    scored = _points(SCORED_LOADS)
    fitted = predicted_tpot_ms(fit.scenario, scored)
    default = predicted_tpot_ms(base, scored)
    rows = tuple(
        Row(
            "decode ms per token of a user",
            f"rtx6kpro {p.where} TPOT",
            f"closed loop of {p.load:g} users, batched terms fitted at 2-16 users",
            float(p.tpot_ms or 0.0),
            float(f),
        )
        for p, f in zip(scored, fitted, strict=True)
    )
    terms = "; ".join(
        f"{n} {fit.values[n]:.3g} "
        + (
            f"± {fit.stderr[n]:.2g} (fitted, 90% range {fit.ranges[n][0]:.3g}-"
            f"{fit.ranges[n][1]:.3g})"
            if n in fit.identified
            else f"(kept: {fit.kept[n]})"
        )
        for n in fit.values
    )
    before = "; ".join(
        f"{r.figure} {100 * (d / r.measured - 1):+.0f}%" for r, d in zip(rows, default, strict=True)
    )
    return Case(
        "Kimi-K2.5 on 8x RTX PRO 6000, vLLM: batched terms fitted to the load sweep at 2-16 "
        "users, decode time per token predicted at 32-128 users",
        (pub.RTX6KPRO_URL,),
        tuple(f"rtx6kpro {p.where} TPOT" for p in _points(FIT_LOADS)),
        rows,
        setup=(
            "the calibrated scenario of the serving case (batch-1 figures, plain decoding at 8 "
            "users); the load fit (sim/calibration/load_fit.py) on the TPOT 1000 x users / "
            "aggregate tok/s of both curves at 2, 4, 8 and 16 users; deterministic TPOT "
            "model T_iteration(B, k, B x 384-token context) / AL",
            f"fitted terms: {terms}; condition of the Jacobian {fit.condition:.3g}",
        ),
        notes=(f"The same prediction with the terms at their defaults (no sweep): {before}.",),
    )


def load_fit_cases() -> tuple[Case, ...]:
    return (case_kimi_load_fit(),)
