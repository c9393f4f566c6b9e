"""The model-error forms scored leave one curve out: figures, fits, the keep rule."""

import math

import numpy as np
import pytest

from sim.validation.cases import Case, Row
from sim.validation.error_forms import (
    FORMS,
    MARGIN_NATS,
    FormFigure,
    form_figures,
    form_lines,
    leads_by_distance,
    score_form,
)


def _row(title: str, side: str, load: float, ratio: float, cal: tuple[float, ...]) -> Row:
    return Row("aggregate tok/s", f"{title} {side} {load}", "-", 100.0 * ratio, 100.0, 0.0,
               load=load, calibrated_loads=cal, side=side)  # fmt: skip


def test_arms_distances_engine_and_shared_calibration():
    rows = (_row("k", "speculative", 64, 1.2, (1.0,)), _row("k", "plain", 64, 1.1, (1.0, 8.0)))
    (case,) = [Case("Kimi on vLLM", ("-",), ("k 1",), rows)]
    figs = form_figures([case])
    (gain,) = [f for f in figs if f.gain]
    assert gain.log_error == pytest.approx(math.log(1.2 / 1.1))
    assert gain.distance_speculative == pytest.approx(math.log(64))
    assert gain.distance_plain == pytest.approx(math.log(8))
    assert gain.engine == "vllm" and not gain.both_arms
    arms = (_row("x", "speculative", 4, 1.0, (1.0,)), _row("x", "plain", 4, 1.0, (1.0,)))
    shared = Case("x on SGLang", ("-",), ("x 1",), arms)
    assert all(f.both_arms and f.engine == "sglang" for f in form_figures([shared]))


def _synthetic(sigma_of_d, seed: int, curves: int = 12, per_curve: int = 8) -> list[FormFigure]:
    """Gains and levels drawn as r ~ N(0, sigma(d)^2) at d uniform on 0.3-4.5."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(curves):
        for gain in (False, True):
            for d in rng.uniform(0.3, 4.5, per_curve):
                r = float(rng.normal(0.0, sigma_of_d(d)))
                out.append(FormFigure(f"c{c}", "vllm" if c % 2 else "sglang", True, gain,
                                      r, 0.0, float(d), float(d), float(d)))  # fmt: skip
    return out


def test_s_d_fit_is_the_closed_form_on_the_other_curves():
    figs = [f for f in _synthetic(lambda d: 0.05 * d, seed=3) if f.gain]
    score = score_form(figs, FORMS[0], gain=True)
    others = [f for f in figs if f.curve != "c0"]
    s = math.sqrt(np.mean([(f.log_error / f.distance) ** 2 for f in others]))
    own = [f for f in figs if f.curve == "c0"]
    expected = sum(-0.5 * math.log(2 * math.pi * (s * f.distance) ** 2)
                   - 0.5 * (f.log_error / (s * f.distance)) ** 2 for f in own)  # fmt: skip
    # the search stops within 1e-6 relative of the optimum: the score within 1e-4 nats
    assert score.per_curve["c0"] == pytest.approx(expected, abs=1e-4)


def test_a_constant_error_is_found():
    # a constant log error of 0.1 wherever d > 0: the constant-plus form leads by far
    figs = [f for f in _synthetic(lambda d: 0.1, seed=5, curves=8, per_curve=6) if f.gain]
    lead = score_form(figs, FORMS[1], gain=True).total - score_form(figs, FORMS[0], True).total
    assert lead > 5 * MARGIN_NATS


@pytest.mark.slow
def test_s_d_is_kept_when_true():
    # drawn from s d itself: no form leads it by the margin on every curve left out
    lines = form_lines(_synthetic(lambda d: 0.05 * d, seed=7, curves=8, per_curve=6))
    for kind in ("levels", "gains"):
        verdict = next(x for x in lines if x.startswith(f"{kind}: best"))
        assert verdict.endswith("s d stays"), verdict
    assert MARGIN_NATS == 2.0


def test_leads_by_distance_add_up_to_the_lead():
    figs = [f for f in _synthetic(lambda d: 0.1, seed=11, curves=5, per_curve=5) if f.gain]
    bands = leads_by_distance(figs, FORMS[2], gain=True)
    lead = score_form(figs, FORMS[2], True).total - score_form(figs, FORMS[0], True).total
    assert sum(n for _, n, _ in bands) == len(figs)
    assert sum(x for _, _, x in bands) == pytest.approx(lead, abs=1e-9)
    # a constant error: s d is too narrow near and too wide far, s sqrt(d) wins at both ends
    assert bands[0][2] > 0 and bands[-1][2] > 0
