"""Calibration: fit a scenario's unknown timings and acceptance profile to measurements.

Two independent least-squares problems (scipy.optimize.least_squares), each on residuals
divided by the measurement's standard error:

- **timing** — the cycle cost model of sim/model/cycle.py (SGLang chain cycle,
  docs/reference.md §Cycle). A baseline figure gives ``decode_ms = 1000 / tok_s``;
  a speculative figure at
  num_steps k with measured accept length AL gives ``tok_s = 1000 AL / T_cycle(k)``
  (renewal-reward, sim/model/closed_forms.py), where
  ``T_cycle(k) = (k - 1) draft_step_ms + verify_ms + (k + 1 - verify_tokens)
  verify_ms_per_extra_token + draft_extend_ms + cycle_overhead_ms``.
  T_cycle is linear in k, so tok/s figures determine at most an intercept and a slope:
  ``draft_step_ms`` and ``verify_ms_per_extra_token`` can never be told apart from tok/s
  alone, and one num_steps determines only the intercept.
- **acceptance** — conditional per-position rates a_1..a_K (``per_position``) or one
  equal rate (``alpha``), fitted to vLLM cumulative rates c_i = a_1...a_i and to accept
  lengths AL(k) = 1 + sum_(i<=k) c_i (docs/reference.md §Acceptance; rates beyond the
  list repeat the last one, as in scenario files).

Which values the data determine is decided before fitting, from the rank of the weighted
Jacobian (at the base scenario's timings; at rates of 0.5 for acceptance, so that a base
rate of 0 cannot hide later positions): parameters are taken in priority order and one is
fitted only if it adds a direction the data can see; the others keep the base scenario's
values and the result says why. Standard errors come from the covariance (J^T J)^-1 at the
solution, scaled by the reduced chi-square when that exceeds 1 (more scatter than the
stated errors explain).

This module runs the blocks and writes the calibrated scenario: the timing block is
sim/calibration/timing_fit.py (its residuals timing_residuals.py, the drafter passes the
figures cannot fix efficiency_range.py), the acceptance blocks acceptance_fit.py and
tree_acceptance_fit.py (each a ``FitBlock``, fit_block.py); the result is result.py
(``Calibration``), the written ``[uncertainty]`` uncertainty_entries.py, the notes on
the fitted profile profile_notes.py. ``calibrate`` in stages: the request checked
(``_request``), the blocks fitted (``_fit_blocks``), the fields written (``_overrides``)
and their ``[uncertainty]`` entries (``_uncertainty_entries``), the scenario validated
and bound (``_calibrated_scenario``), the held-out checks and the notes on the result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from sim.binding.bound import Bound, bind
from sim.binding.decompose import hardware_point, reference_point, scenario_hardware
from sim.binding.inputs import clipping_notes
from sim.calibration.acceptance_fit import acceptance_block, choose_acceptance_model, shape_block
from sim.calibration.fit_block import FitBlock, six_digits
from sim.calibration.measurements import Measurements
from sim.calibration.physics import check_units
from sim.calibration.profile_notes import measured_depth, rising_note, seam_note
from sim.calibration.result import Calibration, FittedValue, Residual
from sim.calibration.server_match import check_server, kept_from_base
from sim.calibration.settings import DEFAULT_TIMING_FIT, TABLE_TIMING_FIT, TIMING_FIELDS
from sim.calibration.timing_fit import timing_block, verify_given
from sim.calibration.timing_residuals import point_residual
from sim.calibration.tree_acceptance_fit import tree_acceptance_block
from sim.calibration.uncertainty_entries import uncertainty_overrides
from sim.errors import SpecsimError
from sim.hardware.pass_model import PassModel
from sim.hardware.passes import PassMemo
from sim.scenario.overrides import apply_overrides, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

#: The scenario field behind each entry of ``HardwarePoint.key()``, in its order, and its
#: name under ``timing.measured_on``.
_POINT_FIELDS = (
    ("hardware.interconnect", "interconnect"),
    ("hardware.gpus", "gpus"),
    ("hardware.gpu", "gpu"),
    ("timing.verify_cuda_graph", "verify_cuda_graph"),
    ("hardware.allreduce", "allreduce"),
)


def _toml_value(value: object) -> str:
    """``value`` as ``--set`` takes it (TOML booleans; "none" for a field left out)."""
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)


def _check_table_fit(base: Scenario, fit_timing: Sequence[str]) -> None:
    """Refuse to fit a verify field of a base whose verify pass comes from the hardware
    model's table (``verify_compute = "decode"`` or ``verify_growth = "experts"``): the
    table, not the field, prices the verify, so a fitted value would not be the one used."""
    asked = [f for f in fit_timing if f in ("verify_ms", "verify_ms_per_extra_token")]
    if not asked:
        return
    held = "its verify_ms is held as given" if verify_given(base) else "its verify is derived"
    raise SpecsimError(
        f"cannot fit {', '.join(asked)}: the base's verify pass grows by the hardware model "
        f'(verify_compute = "decode" or verify_growth = "experts") and {held}; fit '
        'cycle_overhead_ms for the intercept, or set verify_compute = "measured" and '
        'verify_growth = "linear" to fit the verify',
        source="--fit",
    )


def _check_not_what_if(base: Scenario) -> None:
    """Refuse a base that asks about other hardware than its timings hold on, naming each
    field that differs and the ``--set`` that says the figures were measured so."""
    asked, measured = hardware_point(base).key(), reference_point(base).key()
    if asked == measured:
        return
    differ = [
        (field, ref, _toml_value(now), _toml_value(then))
        for (field, ref), now, then in zip(_POINT_FIELDS, asked, measured, strict=True)
        if now != then
    ]
    said = "; ".join(f"{f} {now}, timing.measured_on.{r} {then}" for f, r, now, then in differ)
    sets = " ".join(
        f"--set timing.measured_on.{r}={now}" for _, r, now, _ in differ if now != "none"
    )
    so = f", or, if they were measured so, add {sets}" if sets else ""
    raise SpecsimError(
        f"the base scenario asks about other hardware than its timings were measured on "
        f"({said}): calibrate the scenario of the server the figures come from{so}",
        source="calibrate",
    )


def _calibrated_scenario(
    base: Scenario, overrides: dict[str, Any], drop: Sequence[str], memo: PassMemo
) -> Bound:
    """``base`` with ``overrides`` set and the dotted keys ``drop`` removed, validated and
    bound (``memo``: the calibration's hardware answers)."""
    raw = base.model_dump(exclude_none=True)
    for dotted in drop:
        section, key = dotted.split(".")
        raw.get(section, {}).pop(key, None)
    merged = apply_overrides(raw, overrides)
    try:
        calibrated = scenario_from_dict(merged, source="calibrated scenario")
        # the hardware model may refuse the calibrated values as well
        return bind(calibrated, memo)
    except SpecsimError as exc:
        raise SpecsimError(
            f"the calibrated values make an invalid scenario: {exc}", source="calibrate"
        ) from None


def calibrate(
    base: Scenario,
    data: Measurements,
    *,
    fit_timing: Sequence[str] | None = None,
    acceptance: str = "auto",
    prefer: str | None = None,
    memo: PassMemo | None = None,
) -> Calibration:
    """Fit ``base``'s timings and acceptance profile to ``data``; see the module docstring.

    ``fit_timing`` lists timing fields (without ``timing.``) in priority order (default
    ``DEFAULT_TIMING_FIT``, or ``TABLE_TIMING_FIT`` when the base derives its verify pass).
    The figures are taken as measured on the base's hardware: a base whose server the
    files contradict (engine, model, tensor-parallel size, num_steps;
    sim/calibration/server_match.py) is refused unless ``prefer`` says which wins. Raises
    SpecsimError on empty data, unknown fields, a what-if base, figures the server's
    physics rules out (sim/calibration/physics.py), or a fit that makes the scenario
    invalid. ``memo``: the hardware answers (sim/hardware/passes.py ``PassMemo``) of the
    command that calibrates (None: the calibration's own), shared by every scenario its
    fits try.
    """
    req = _request(base, data, fit_timing, prefer, memo)
    base, base_hw, notes = req.base, req.base_hw, list(req.notes)
    blocks, model, drop = _fit_blocks(req, data, acceptance, notes)
    overrides, written = _overrides(req, data, blocks, notes)
    covariance = block_diag(*[b.covariance for b in blocks]) if blocks else np.zeros((0, 0))
    overrides.update(_uncertainty_entries(base, blocks, overrides))
    bound = _calibrated_scenario(base, overrides, drop, base_hw.memo)
    scenario = bound.scenario
    checks: list[Residual] = []
    if data.checks:
        passes, hw = bound.passes, bound.hardware
        checks = [point_residual(passes, pt, scenario, "held out: tok/s", hw) for pt in data.checks]
    # a fitted value whose error reaches past its field's valid values: later answers
    # clip its draws there (and say so); say it here too
    notes.extend(f"written [uncertainty]: {n}" for n in clipping_notes(bound.inputs).values())
    if model is not None:
        depth = measured_depth(data)
        for note in (rising_note(scenario, depth), seam_note(scenario, depth)):
            if note is not None:
                notes.append(note)
    return Calibration(
        scenario,
        tuple(v for b in blocks for v in b.values if v.field not in _fields(b.extra_values))
        + tuple(v for b in blocks for v in b.extra_values),
        model,
        tuple(r for b in blocks for r in b.residuals),
        sum(b.chi2 for b in blocks),
        sum(b.n_obs - b.n_fit for b in blocks),
        tuple(notes),
        tuple(tuple(float(x) for x in row) for row in covariance),
        data.imported,
        tuple(checks),
        () if written is None else (("timing.context_tokens", written[1]),),
        calibration_sources(data),
    )


@dataclass(frozen=True, slots=True)
class _Request:
    """A calibration's request checked (``_request``): the base scenario (with the
    figures' server where ``--prefer data`` says they win), its hardware model bound once
    (``base_hw``; its memo serves every scenario the fits try), the timing fields to fit
    in priority order, whether the base derives its verify from a table (``table``) and
    the first notes (the data's, the server's, what is kept
    from the base)."""

    base: Scenario
    base_hw: PassModel
    fit_timing: tuple[str, ...]
    table: bool
    notes: tuple[str, ...]


def _request(
    base: Scenario,
    data: Measurements,
    fit_timing: Sequence[str] | None,
    prefer: str | None,
    memo: PassMemo | None,
) -> _Request:
    """The request checked: figures given, a base that is not a what-if, the server the
    figures come from (``check_server``; its overrides where ``prefer`` says the data
    win), units the server's physics allows (``check_units``), timing fields known (default
    ``DEFAULT_TIMING_FIT``, or ``TABLE_TIMING_FIT`` when the base derives its verify from
    a table). SpecsimError otherwise."""
    if data.empty:
        raise SpecsimError(
            "nothing to calibrate from: give --baseline-tok-s, --point, --vllm-bench, "
            "--sglang-bench, --vllm-metrics or --sglang-log",
            source="calibrate",
        )
    _check_not_what_if(base)
    server_overrides, server_notes = check_server(base, data, prefer)
    if server_overrides:
        base = with_overrides(base, server_overrides, source="--prefer data")
    # the base's hardware model, bound once; its memo serves every scenario the fits try
    base_hw = scenario_hardware(base, PassMemo() if memo is None else memo)
    check_units(base, data, base_hw)
    base_passes = base_hw.passes
    table = base_passes.verify_table_ms is not None
    if fit_timing is None:
        fit_timing = TABLE_TIMING_FIT if table else DEFAULT_TIMING_FIT
    elif table:
        _check_table_fit(base, fit_timing)
    unknown = [f for f in fit_timing if f not in TIMING_FIELDS]
    if unknown:
        raise SpecsimError(
            f"cannot fit {', '.join(unknown)}; timing fields are {', '.join(TIMING_FIELDS)}",
            param="fit_timing",
        )
    notes = (*data.notes, *server_notes, kept_from_base(base, server_overrides))
    return _Request(base, base_hw, tuple(fit_timing), table, notes)


def _fit_blocks(
    req: _Request, data: Measurements, acceptance: str, notes: list[str]
) -> tuple[list[FitBlock], str | None, list[str]]:
    """The fitted blocks (the timing block where a tok/s figure is given; the acceptance
    block of the model ``choose_acceptance_model`` picks, or a tree's from its tree rows),
    the acceptance model (None: no acceptance data) and the dotted fields the calibrated
    scenario drops (a heterogeneous base's per-request spread, replaced by the fitted
    effective rates). Each note is appended to ``notes``."""
    base = req.base
    blocks: list[FitBlock] = []
    if data.baselines or data.points:
        timing = [f"timing.{f}" for f in req.fit_timing]
        blocks.append(timing_block(base, req.base_hw, data, timing))
    else:
        notes.append("no tok/s figure given: every timing is kept from the base scenario")
    model = choose_acceptance_model(data, acceptance)
    drop: list[str] = []
    tree_points = [p for p in data.points if p.is_tree]
    if model is None and tree_points:
        tree_block = tree_acceptance_block(base, tree_points)
        if tree_block is None:
            notes.append(
                "tree rows' accept lengths need the ranks below the top-1 (the base's "
                "acceptance.rank_profile or rank_rates): the acceptance profile is kept"
            )
        else:
            blocks.append(tree_block)
            model = "tree"
    elif model is None:
        notes.append("no acceptance data given: the acceptance profile is kept from the base")
    elif model != "tree":
        if model == "shape":
            blocks.append(shape_block(base, data))
        else:
            blocks.append(acceptance_block(base, data, model))
        spec = base.acceptance
        if spec is not None and spec.heterogeneous:
            drop = ["acceptance.concentration", "acceptance.std"]
            notes.append(
                "the base's per-request spread (mix, concentration or std) is replaced: the "
                "fitted rates are the effective rates the figures show; add a spread back "
                "only with mean rates refitted to it"
            )
    return blocks, model, drop


def _overrides(
    req: _Request, data: Measurements, blocks: Sequence[FitBlock], notes: list[str]
) -> tuple[dict[str, Any], tuple[float, str] | None]:
    """The fields the calibration writes, before their ``[uncertainty]`` entries: the
    base's verify tokens (unless its verify is a table), the verify's CUDA graph where the
    figures say it (SGLang's decode lines), every block's values, the context the figures
    ran at (``measured_context``) and the calibrated name and description. Also that
    context (tokens, origin; None where not written). Each note is appended to ``notes``."""
    base = req.base
    verify_tokens = req.base_hw.passes.verify_tokens
    overrides: dict[str, Any] = {} if req.table else {"timing.verify_tokens": verify_tokens}
    if data.cuda_graph is not None:
        # SGLang's speculative "Decode batch" line prints the can_run_cuda_graph of the
        # target verify forward (python/sglang/srt/speculative/eagle_worker.py,
        # forward_batch_generation returns verify()'s flag), so it says whether verify ran
        # graphed; the figures were measured so, hence measured_on too.
        overrides["timing.verify_cuda_graph"] = data.cuda_graph
        if base.timing.measured_on is not None:
            overrides["timing.measured_on.verify_cuda_graph"] = data.cuda_graph
        if data.cuda_graph != base.timing.verify_cuda_graph:
            notes.append(
                f"timing.verify_cuda_graph set to {data.cuda_graph}: every speculative decode "
                f"line says cuda graph: {data.cuda_graph} (the verify pass's flag)"
            )
    for b in blocks:
        overrides.update(b.overrides)
        notes.extend(b.notes)
    written = measured_context(base, data) if data.baselines or data.points else None
    if written is not None:
        overrides["timing.context_tokens"] = written[0]
        notes.append(f"timing.context_tokens {written[0]:.6g}: {written[1]}")
    overrides.update(_calibrated_identity(base, data))
    return overrides, written


def _uncertainty_entries(
    base: Scenario, blocks: Sequence[FitBlock], overrides: dict[str, Any]
) -> dict[str, Any]:
    """The ``[uncertainty]`` entries of the fitted values (``uncertainty_overrides``, on
    the blocks' full covariance, block-diagonal) and of the values written with an error
    though not fitted, which join them with their correlations (their origin and reason
    as the block says: popped from ``overrides``)."""
    with_extra = [v for b in blocks for v in (*(x for x in b.values if x.fitted), *b.extra_values)]
    full = block_diag(*[
        b.full_covariance if b.full_covariance is not None else b.covariance for b in blocks
    ]) if blocks else np.zeros((0, 0))  # fmt: skip
    entries = uncertainty_overrides(base, with_extra, full, overrides)
    for v in (x for b in blocks for x in b.extra_values):
        entries[f"uncertainty.{v.field}"] = {
            "stderr": six_digits(v.stderr or 0.0),
            **overrides.pop(f"uncertainty.{v.field}"),
        }
    return entries


def measured_context(base: Scenario, data: Measurements) -> tuple[float, str] | None:
    """(tokens, origin) of the context the tok/s figures' passes ran at, for
    ``timing.context_tokens`` (the context the calibrated batch-1 passes hold at under
    load, sim/binding/reference_context.py ``reference_context``): the mean over the figures whose
    files state it (a vLLM bench run's mean prompt + half its mean answer); None when none
    does, or when the base states its own (the base's is kept: it may hold for passes the
    figures do not refit)."""
    figures = [(b.context_tokens, b.source) for b in data.baselines]
    figures += [(p.context_tokens, p.source) for p in data.points]
    stated = [(c, src) for c, src in figures if c is not None]
    if not stated or base.timing.context_tokens is not None:
        return None
    mean = sum(c for c, _ in stated) / len(stated)
    each = "; ".join(f"{c:.6g} in {src}" for c, src in stated)
    unstated = len(figures) - len(stated)
    return mean, (
        "measured: the mean prompt + half the mean answer of the runs the pass times were "
        f"fitted to ({each}"
        + (f"; {unstated} figure{'s' * (unstated != 1)} without it" if unstated else "")
        + (", their mean)" if len(stated) > 1 else ")")
    )


def _fields(values: Sequence[FittedValue]) -> set[str]:
    return {v.field for v in values}


def calibration_sources(data: Measurements) -> tuple[str, ...]:
    """Every figure's source once, in the order read (a file and line, or a flag)."""
    return tuple(
        dict.fromkeys(
            m.source
            for group in (data.baselines, data.points, data.accept_lengths, data.cumulative)
            for m in group
        )
    )


#: What an earlier calibration appended to a name and a description (``_calibrated_identity``).
_NAME_SUFFIX = re.compile(r"(-calibrated)+$")
_ABOUT_SUFFIX = re.compile(r"(, calibrated to \d+ sources?)+$")


def _calibrated_identity(base: Scenario, data: Measurements) -> dict[str, str]:
    """``name`` and ``description`` of a calibrated scenario: say so, and to how many
    figures. The figures' sources are the written file's header comment and each value's
    origin comment, not the description, which the reports print as the title. A base
    calibrated before says so once: its own suffixes are replaced, not piled up."""
    count = len(calibration_sources(data))
    name = _NAME_SUFFIX.sub("", base.name[:180]) or base.name[:180]
    about = _ABOUT_SUFFIX.sub("", base.description[:180]) or name
    return {
        "name": f"{name}-calibrated",
        "description": f"{about}, calibrated to {count} source{'s' * (count != 1)}",
    }
