"""The text of a serving case: its errors, its notes, and the setup line of its host work
and CUDA-graph capture."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.scenario.schema import Scenario
from sim.validation.cases import Case, Row

__all__ = ["case_errors", "host_line", "noted", "with_note"]


def case_errors(rows: Sequence[Row]) -> str:
    e = np.array([abs(r.error) for r in rows])
    return f"median |error| {100 * np.median(e):.1f}%, max {100 * e.max():.1f}%"


def noted(case: Case, why: str) -> Case:
    """The case with a note: its errors and where (and why) the model misses."""
    return with_note(
        case,
        f"Scored: {case_errors(case.rows)}. The ± of these rows is the Monte Carlo standard "
        "error of the simulated mean (paired over replications), not a calibration "
        f"uncertainty, so |z| is large wherever the model itself misses. {why}",
    )


def _ranges(sizes: Sequence[int]) -> str:
    """Batch sizes as runs: [1, 2, 3, 5, 7, 64] -> '1-3, 5, 7, 64' (steps of one joined)."""
    runs: list[list[int]] = []
    for size in sizes:
        if runs and size == runs[-1][-1] + 1:
            runs[-1].append(size)
        else:
            runs.append([size])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def host_line(scenario: Scenario) -> str:
    """The case's host work and CUDA-graph capture limits, for its setup."""
    serving = scenario.serving
    assert serving is not None
    limits = ", ".join(
        f"{name} {value}"
        for name in (
            "graph_max_tokens",
            "graph_max_batch",
            "graph_max_batch_speculative",
            "graph_max_batch_draft",
        )
        if (value := getattr(serving, name)) is not None
    )
    sizes = "; ".join(
        f"{name} {_ranges(value)}"
        for name in ("graph_batches", "graph_batches_speculative")
        if (value := getattr(serving, name)) is not None
    )
    if sizes:
        capture = (
            f"; CUDA-graph capture by batch size ({sizes}; the engine's defaults: "
            "sim/calibration/engine_defaults.py GRAPH_CAPTURE): a batch between two captured "
            "sizes runs padded up to the next (decode, verify, draft step), beyond the largest "
            "eagerly"
        )
    elif limits:
        capture = (
            f"; CUDA-graph capture ({limits}, the engine's defaults: "
            "sim/calibration/engine_defaults.py GRAPH_CAPTURE): beyond, a pass runs eagerly"
        )
    else:
        capture = ""
    return (
        f"host work: {serving.host_us_per_request:g} us per running request per iteration "
        f"(assumed; 7-38 in public measurements, sim/model/host_work.py), "
        + {
            "baseline": "serial in speculative iterations only (SGLang turns its overlap "
            "scheduler off for EAGLE)",
            "none": "serial in every iteration (vLLM had no asynchronous scheduling then)",
            "both": "hidden behind the GPU in every iteration (vLLM >= 0.14 schedules "
            "asynchronously with EAGLE-3)",
        }[serving.host_overlap]
        + capture
    )


def with_note(case: Case, note: str) -> Case:
    """The case with one more note."""
    return Case(
        case.title,
        case.sources,
        case.calibrated_on,
        case.rows,
        case.setup,
        (*case.notes, note),
        case.scored,
    )
