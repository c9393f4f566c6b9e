"""Per-position acceptance cases from vLLM: the first positions' rates calibrate, the later
positions and the accept length are scored (vLLM's test_acceptance_length at K=3; vLLM
#26498's K=10 run)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import CumulativeObs, Measurements
from sim.scenario.overrides import with_overrides
from sim.validation import data as pub
from sim.validation.case_scoring import (
    accept_length_at,
    accept_length_fn,
    cumulative_draws,
    cumulative_fn,
    fitted_summary,
    flat_accept_length,
    held_out,
    scored_row,
)
from sim.validation.cases import Case, llama8b_base


def case_vllm_acceptance_test() -> Case:
    """Per-position rates from positions 1-2; predict c3 and AL at K=3."""
    c = pub.VLLM_ACCEPTANCE_TEST_CUMULATIVE
    sigma = pub.rounding_sigma(4)
    data = Measurements(
        cumulative=tuple(CumulativeObs(i + 1, c[i], sigma, "vLLM test") for i in range(2))
    )
    # c3 is a position of the run whose c1, c2 are given: within-run evidence alone
    cal = held_out(
        calibrate(llama8b_base(), data, acceptance="per_position", prefer="base"), cross_run=False
    )
    return Case(
        title="Llama-3.1-8B + EAGLE-3, vLLM test_acceptance_length, K=3, MT-Bench",
        sources=("vLLM tests/spec_decode test_acceptance_length (docs/reference.md §Published)",),
        calibrated_on=("vLLM test c1", "vLLM test c2"),
        rows=(
            scored_row(
                "cumulative rate c3",
                "vLLM test c3",
                "a3 from the EAGLE-3 prior's step shape (a plateau past position 2)",
                c[2],
                cal,
                cumulative_fn(3),
                lambda m: np.prod(m.rates[:, :3], axis=1),
            ),
            scored_row(
                "accept length",
                "vLLM test AL",
                "K=3",
                pub.VLLM_ACCEPTANCE_TEST_AL,
                cal,
                accept_length_fn(3),
                lambda m: m.accept_length(3),
                lambda s: flat_accept_length(s, 3),
            ),
        ),
        setup=(f"fitted: {fitted_summary(cal)}",),
    )


def case_vllm_26498() -> Case:
    """One conditional rate from positions 1-3 of a K=10 run; predict positions 4-10 and AL."""
    c = pub.VLLM_26498_CUMULATIVE
    sigma = pub.rounding_sigma(2)
    data = Measurements(
        cumulative=tuple(CumulativeObs(i + 1, c[i], sigma, "vLLM #26498") for i in range(3))
    )
    base = with_overrides(llama8b_base(), {"acceptance.method": "eagle"}, source="validation")
    # per-position c1..c3, continued by held-out choice; positions 4-10 of the same run:
    # the within-run shape error alone
    cal = held_out(calibrate(base, data, prefer="base"), cross_run=False)
    flat = calibrate(
        base, data, acceptance="alpha", prefer="base"
    )  # one equal rate: the old answer
    measured_al = 1.0 + pub.VLLM_26498_ACCEPTED / pub.VLLM_26498_DRAFTS
    how = "c1..c3, continued by the shape with the lowest held-out error"
    rows = [
        replace(
            scored_row(
                f"cumulative rate c{i}",
                f"vLLM #26498 c{i}",
                how,
                c[i - 1],
                cal,
                cumulative_fn(i),
                cumulative_draws(i),
            ),
            flat=cumulative_fn(i)(flat.scenario),
        )
        for i in (4, 6, 8, 10)
    ]
    rows.append(
        replace(
            scored_row(
                "accept length",
                "vLLM #26498 AL",
                f"K=10, {how}",
                measured_al,
                cal,
                accept_length_fn(10),
                lambda m: m.accept_length(10),
            ),
            flat=accept_length_at(flat.scenario, 10),
        )
    )
    return Case(
        title="EAGLE drafter, vLLM, K=10, SpecBench (padding fixed)",
        sources=(pub.VLLM_26498_URL,),
        calibrated_on=tuple(f"vLLM #26498 c{i + 1}" for i in range(3)),
        rows=tuple(rows),
        setup=(f"fitted: {fitted_summary(cal)}",),
        notes=(
            f"measured AL = 1 + accepted / drafts = 1 + {pub.VLLM_26498_ACCEPTED} / "
            f"{pub.VLLM_26498_DRAFTS}; cumulative rates are printed with two decimals (c10 = "
            "0.02 means 0.015-0.025).",
        ),
    )
