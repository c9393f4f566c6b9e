"""The validation report: no case scored on what it was calibrated on; checks pass; file written."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.validation.cases import Case, Row
from sim.validation.report import build_report, main, render_markdown

ROOT = Path(__file__).parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")


@pytest.fixture(scope="module")
def report():
    return build_report(SEED, serving=False)  # the serving cases: test_serving_cases below


def test_no_scored_figure_was_calibrated_on(report) -> None:
    for case in report.cases:
        if case.scored:
            assert case.rows
            assert not set(case.calibrated_on) & {r.figure for r in case.rows}, case.title


def test_a_case_tuned_to_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="scored on figures it was calibrated on"):
        Case("t", ("s",), ("fig A",), (Row("q", "fig A", "", 1.0, 1.0),))


def test_sglang_4247_both_directions_present(report) -> None:
    titles = [c.title for c in report.cases]
    assert any("calibrate on num_steps 5, predict num_steps 8" in t for t in titles)
    assert any("calibrate on num_steps 8, predict num_steps 5" in t for t in titles)


def test_closed_form_checks_pass(report) -> None:
    failed = [c.name for c in report.checks if not c.passed]
    assert not failed


def test_vllm_20780_timing_predictions_within_ten_percent(report) -> None:
    """The two-point linear cycle model predicts the held-out num_steps to a few percent."""
    case = report.cases[0]
    rows = [r for r in case.rows if r.quantity == "tok/s (measured AL)"]
    assert len(rows) == 4
    assert all(abs(r.error) < 0.10 for r in rows), [(r.figure, r.error) for r in rows]


def test_markdown_and_atomic_write(tmp_path: Path, report) -> None:
    text = render_markdown(report)
    assert text.startswith("# specsim validation report")
    assert "## Closed-form checks" in text and "## Not reconstructed" in text
    out = tmp_path / "validation.md"
    assert main(["--out", str(out), "--seed-scenario", SEED, "--no-serving"]) == 0
    assert out.read_text() == text


def test_end_to_end_rows_carry_a_monte_carlo_spread(report) -> None:
    rows = [r for c in report.cases for r in c.rows if r.quantity == "tok/s (end to end)"]
    assert rows and all(r.spread is not None for r in rows)
    for r in rows:
        sp = r.spread
        assert sp.p5 < sp.ci95[0] <= sp.mean <= sp.ci95[1] < sp.p95
        # per-request mean (Monte Carlo) vs the long-run closed form (renewal-reward)
        assert sp.mean == pytest.approx(r.predicted, rel=0.02)


def test_graphed_verify_case_scales_the_ungraphed_figure_by_the_cycle_ratio(report) -> None:
    (case,) = [c for c in report.cases if "CUDA-graphed" in c.title]
    (row,) = case.rows
    # graphing removes the eager CPU issue work: a faster cycle, never slower
    assert row.predicted > 75.0


@pytest.mark.slow
def test_serving_cases() -> None:
    """Concurrency curves: calibrated on batch 1 and at most one more point of a curve,
    scored on the others; the vLLM chain-2 curve within 15% at its median."""
    from sim.validation.serving_cases import serving_cases

    cases = serving_cases()
    assert len(cases) == 5
    for case in cases:
        assert case.rows and not set(case.calibrated_on) & {r.figure for r in case.rows}
    vllm = next(c for c in cases if "Table 5: EAGLE-3" in c.title)
    errors = sorted(abs(r.error) for r in vllm.rows)
    assert errors[len(errors) // 2] < 0.15


def test_a_check_is_shown_to_a_tenth_of_its_tolerance() -> None:
    """The report shows a closed-form check's value to a tenth of its tolerance, so two
    BLAS kernels' last bits print the same line (a 1e-12 check at a few ulps: < 1e-13)."""
    from sim.validation.report import _at_resolution

    assert _at_resolution(4.88498e-15, 1e-12) == _at_resolution(5.32907e-15, 1e-12) == "< 1e-13"
    assert _at_resolution(2.6049, 0.005) == "2.605"
    assert _at_resolution(60.0601, 1.0) == "60.1"
    assert _at_resolution(0.0, 1e-12) == "0"
    assert _at_resolution(3.14159265, 0.0) == "3.14159"  # exact check: every digit shown
