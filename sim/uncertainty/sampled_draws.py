"""The sampled model: what each draw of a scenario's uncertain inputs gives.

The uncertain inputs and their quasi-random draws are sim/binding/inputs.py's (found once
when the scenario is bound, ``Bound.inputs``). ``sampled_draws`` turns draws into the
closed forms' inputs for every draw (sim/model/sampled.py): pass times by a response
table per input (the scenario re-validated at a few values of the input, effects on the
pass times interpolated and added up: exact for the timing fields, which each move one
pass linearly), the acceptance profile directly (anchor, shape and decay per draw); a mix
or a per-request spread by its effective rates re-built in each distinct draw of the
acceptance inputs, the scenario re-validated at them (``drawn_rates``, as the nominal
answer takes them).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.binding.acceptance_shape import acceptance_shape, measured_depth
from sim.binding.bound import Bound
from sim.binding.closed_form import conditional_rates
from sim.binding.decompose import scenario_pass_times
from sim.binding.inputs import UncertainInput, draw_inputs
from sim.errors import SpecsimError
from sim.hardware.passes import PassMemo
from sim.model.cycle import PassTimes, parallel_draft_ms
from sim.model.distinct_rows import distinct_rows
from sim.model.equal_rates import equal_rate_accept_length
from sim.model.profile_scales import scales_of_rows
from sim.model.sampled import SampledModel
from sim.model.shapes import (
    continue_rates,
    rates_for_positions,
    shape_factors,
    tilt_factors,
    tilted,
)
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.perturb import draw_overrides, is_acceptance_input

#: Draft lengths the sampled model covers (the closed forms' best-k range, K_RANGE).
MAX_STEPS = 32
#: Quantiles of an input's draws at which its response table is evaluated.
NODE_QUANTILES = (0.0, 0.5, 1.0)


# --------------------------------------------------------------------------- pass responses

#: Pass-time vector: decode, drafter step (with its per-step overhead), draft extend,
#: cycle overhead, extend growth per accepted token, the tokens the extend was taken at
#: (0: k + 1), then the verify over 1..K + 1 tokens, then a block-parallel drafter's draft
#: phase at k = 1..K (``parallel_draft_ms``; zeros for a sequential drafter, whose drafter
#: step slot is then the one used).
_FIXED = 6


def pass_vector(passes: PassTimes, max_steps: int = MAX_STEPS) -> np.ndarray:
    """The pass times the cycle at k = 1..K uses, shape (6 + K + 1 + K,)."""
    verify = [passes.verify_over_ms(m) for m in range(1, max_steps + 2)]
    parallel = passes.parallel_draft_table_ms is not None
    head = [
        passes.decode_ms,
        0.0 if parallel else passes.draft_step_ms + passes.draft_step_overhead_ms,
        passes.draft_extend_ms,
        passes.cycle_overhead_ms,
        passes.draft_extend_ms_per_token,
        passes.draft_extend_tokens or 0.0,
    ]
    drafts = [parallel_draft_ms(passes, k) for k in range(1, max_steps + 1)]
    return np.array(head + verify + drafts, dtype=float)


@dataclass(frozen=True, slots=True)
class PassResponse:
    """An input's effect on the pass-time vector: nodes (J,) and deltas (J, V) from nominal."""

    field: str
    nodes: np.ndarray
    deltas: np.ndarray

    def at(self, values: np.ndarray) -> np.ndarray:
        """Deltas at draws ``values`` (n,), interpolated per component: shape (n, V)."""
        out = np.zeros((values.shape[0], self.deltas.shape[1]))
        if self.nodes.size > 1:
            self._interpolate(values, out, np.empty_like(out))
        return out

    def add_to(
        self, total: np.ndarray, values: np.ndarray, below: np.ndarray, above: np.ndarray
    ) -> None:
        """``total += self.at(values)`` in place, with the same bits; ``below`` and
        ``above`` are working space of total's shape (n, V), reused from one input to the
        next: a fresh (n, V) array cost its page faults, most of the interpolation's time
        on the 2-core machine."""
        if self.nodes.size == 1:
            total += 0.0  # what adding at()'s zeros does (a -0.0 becomes 0.0)
            return
        self._interpolate(values, below, above)
        total += below

    def _interpolate(self, values: np.ndarray, below: np.ndarray, above: np.ndarray) -> None:
        """(1 - t) deltas[i] + t deltas[i + 1] into ``below`` (n, V), ``above`` its
        working space: the products and the sum of ``at``, one buffer at a time."""
        idx = np.clip(np.searchsorted(self.nodes, values) - 1, 0, self.nodes.size - 2)
        x0, x1 = self.nodes[idx], self.nodes[idx + 1]
        t = np.clip((values - x0) / (x1 - x0), 0.0, 1.0)[:, None]
        np.take(self.deltas, idx, axis=0, out=below, mode="clip")
        np.multiply(1.0 - t, below, out=below)
        np.take(self.deltas, idx + 1, axis=0, out=above, mode="clip")
        np.multiply(t, above, out=above)
        np.add(below, above, out=below)


def pass_response(
    scenario: Scenario,
    inp: UncertainInput,
    values: np.ndarray,
    base: np.ndarray,
    vector: Callable[[Scenario], np.ndarray] | None = None,
    memo: PassMemo | None = None,
) -> PassResponse:
    """The response table of one input over the span of its draws ``values`` (n,): the
    change of ``vector(scenario)`` (default: the pass-time vector ``pass_vector``, of the
    size of ``base``) from ``base`` with the input at a few values. ``memo``: the hardware
    answers of the bound scenario's model (``PassModel.memo``), which its what-ifs meet
    again."""
    span = np.quantile(values, NODE_QUANTILES) if values.size else np.array([])
    nodes = np.unique(np.concatenate([span, [inp.nominal]]))
    if inp.integer:
        nodes = np.unique(np.round(nodes))
    kept, deltas = [], []
    for x in nodes:
        value: float | int = int(x) if inp.integer else float(x)
        if x == inp.nominal:
            kept.append(x)
            deltas.append(np.zeros_like(base))
            continue
        try:
            other = with_overrides(scenario, {inp.field: value}, source="uncertainty")
            passes = scenario_pass_times(other, memo)  # the hardware model may refuse it
        except SpecsimError:
            continue  # outside what the scenario allows: draws there take the nearest node
        kept.append(x)
        if vector is None:
            deltas.append(pass_vector(passes, (base.size - _FIXED - 1) // 2) - base)
        else:
            deltas.append(vector(other) - base)
    return PassResponse(inp.field, np.array(kept, dtype=float), np.array(deltas))


# --------------------------------------------------------------------------- the model


#: What each distinct draw of the acceptance inputs gives once the scenario is re-validated
#: at it, by (what makes it, the drawn values' bytes): a chain's effective rates (K,)
#: (``drawn_rates``), a tree's population (sim/uncertainty/tree_sampled.py); None where the
#: scenario rejects the draw. Studies of scenarios that differ elsewhere share it.
Drawn = dict[tuple[str, bytes], typing.Any]


def acceptance_rows(
    inputs: Sequence[UncertainInput], values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows (m, A) of the acceptance inputs' columns of ``values`` (n, F)
    and each draw's index among them (n,) (one row of none: no acceptance input)."""
    cols = [j for j, inp in enumerate(inputs) if is_acceptance_input(inp.field)]
    acc = np.ascontiguousarray(values[:, cols])
    if not cols:
        return acc[:1], np.zeros(values.shape[0], dtype=int)
    first, again = distinct_rows(acc)
    return acc[first], again


def drawn_scenario(
    scenario: Scenario, inputs: Sequence[UncertainInput], row: np.ndarray
) -> Scenario | None:
    """``scenario`` with the acceptance ``inputs`` at ``row`` (A,): re-validated with
    them (``draw_overrides``), the scenario itself at the nominal values, None where it
    rejects them."""
    if all(float(v) == inp.nominal for inp, v in zip(inputs, row, strict=True)):
        return scenario
    try:
        return with_overrides(scenario, draw_overrides(scenario, inputs, row), source="uncertainty")
    except SpecsimError:
        return None


def drawn_rates(
    scenario: Scenario,
    inputs: Sequence[UncertainInput],
    values: np.ndarray,
    max_steps: int,
    drawn: Drawn,
) -> np.ndarray:
    """The effective conditional rates (n, K) of a mix or a per-request spread in every
    draw ``values`` (n, F), as the nominal answer takes them: in each distinct draw of the
    acceptance inputs (``acceptance_rows``) the scenario re-validated at them
    (``drawn_scenario``) and its ``conditional_rates`` (every class's means and Beta
    spread rebuilt, E[c_i] / E[c_(i-1)] over requests; a draw away from the nominal by
    the drawn scenarios' quadrature, ``conditional_rates``); NaN rows where the scenario
    rejects the draw (missing). Each distinct draw's rates are kept in ``drawn``."""
    spec = scenario.acceptance
    assert spec is not None
    acc = [inp for inp in inputs if is_acceptance_input(inp.field)]
    distinct, again = acceptance_rows(inputs, values)
    what = f"rates|{spec.model_dump_json()}|{scenario.num_steps}|{max_steps}|" + "|".join(
        inp.field for inp in acc
    )
    out = np.empty((distinct.shape[0], max_steps))
    for i, row in enumerate(distinct):
        key = (what, row.tobytes())
        if key not in drawn:
            other = drawn_scenario(scenario, acc, row)
            drawn[key] = (
                None
                if other is None
                else conditional_rates(other.acceptance, max_steps, drawn=other is not scenario)
            )
        rates = drawn[key]
        out[i] = np.nan if rates is None else rates
    return out[again]


def sampled_acceptance(
    scenario: Scenario,
    inputs: Sequence[UncertainInput],
    values: np.ndarray,
    max_steps: int = MAX_STEPS,
    drawn: Drawn | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(rates, factors), each (n, K), of the drafter in every draw.

    A mix or per-request spread takes its effective rates in each distinct draw of its
    acceptance inputs as the nominal answer does (``drawn_rates``, kept in ``drawn``; NaN
    where the scenario rejects the draw); other acceptance is drawn directly.
    """
    n = values.shape[0]
    spec = scenario.acceptance
    if spec is None:
        return np.zeros((n, max_steps)), np.ones((n, max_steps))
    col = {inp.field: j for j, inp in enumerate(inputs)}

    def get(field: str, nominal: float) -> np.ndarray:
        j = col.get(field)
        return np.full(n, nominal) if j is None else values[:, j]

    if not acceptance_propagated(scenario):
        rates = drawn_rates(scenario, inputs, values, max_steps, {} if drawn is None else drawn)
        rates = np.clip(rates, 0.0, 1.0)
        first = np.where(rates[:, :1] > 0, rates[:, :1], 1.0)
        return rates, rates / first
    shape = acceptance_shape(spec)
    decay = get("acceptance.decay", shape.decay)
    tilt = get("acceptance.tilt", shape.tilt)
    k0 = spec.measured_num_steps or max(scenario.num_steps, 1)
    depth = measured_depth(spec, k0)
    factor_shape = "flat" if shape.shape == "repeat" else shape.shape
    if spec.per_position is not None:
        listed = np.column_stack(
            [get(f"acceptance.per_position[{i}]", r) for i, r in enumerate(spec.per_position)]
        )
        rates = tilted(continue_rates(listed, shape.shape, decay, max_steps), tilt, depth)
        first = np.where(rates[:, :1] > 0, rates[:, :1], 1.0)
        return rates, rates / first
    factors = shape_factors(factor_shape, decay, max_steps)
    if spec.first_rate is not None:
        a1 = get("acceptance.first_rate", spec.first_rate)
    elif spec.rank_rates is not None:
        a1 = np.full(n, spec.rank_rates[0])
    elif spec.rank_rates_by_depth is not None:  # each depth's top-1 rate, not drawn
        listed = np.tile([row[0] for row in spec.rank_rates_by_depth], (n, 1))
        rates = tilted(continue_rates(listed, shape.shape, decay, max_steps), tilt, depth)
        first = np.where(rates[:, :1] > 0, rates[:, :1], 1.0)
        return rates, rates / first
    elif spec.alpha is not None and factor_shape == "flat":
        a1 = get("acceptance.alpha", spec.alpha)
    else:
        if spec.alpha is not None:
            al0 = equal_rate_accept_length(get("acceptance.alpha", spec.alpha), k0)
        else:
            assert spec.accept_length is not None
            al0 = get("acceptance.accept_length", spec.accept_length)
        a1 = scales_of_rows(al0, factors[:, :k0])
    rates = tilted(rates_for_positions(factor_shape, a1, decay, max_steps), tilt, depth)
    return rates, factors * tilt_factors(tilt, depth, max_steps)


def acceptance_propagated(scenario: Scenario) -> bool:
    """False for a mix or per-request spread: their effective profile is re-built in each
    distinct draw of the acceptance inputs (``drawn_rates``) instead of drawn directly."""
    spec = scenario.acceptance
    return spec is None or (spec.mix is None and not spec.heterogeneous)


@dataclass(frozen=True, slots=True)
class SampledScenario:
    """A scenario's uncertain inputs, the response tables of the non-acceptance ones, and
    its nominal pass-time vector; ``model(values)`` builds the sampled closed forms. A mix's
    or a spread's rates in each distinct draw (``drawn_rates``) are kept in ``drawn``."""

    scenario: Scenario
    inputs: tuple[UncertainInput, ...]
    responses: tuple[PassResponse | None, ...]
    base: np.ndarray
    max_steps: int
    drawn: Drawn = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def model(self, values: np.ndarray) -> SampledModel:
        """The closed forms' inputs in each draw ``values`` (n, len(inputs))."""
        n = values.shape[0]
        vec = np.broadcast_to(self.base, (n, self.base.size)).copy()
        below, above = np.empty_like(vec), np.empty_like(vec)  # the responses' working space
        for j, resp in enumerate(self.responses):
            if resp is not None:
                resp.add_to(vec, values[:, j], below, above)
        decode, draft, extend, overhead, per_token, at_tokens = (vec[:, i] for i in range(_FIXED))
        verify = vec[:, _FIXED : _FIXED + self.max_steps + 1]  # over 1..K + 1 tokens
        parallel = vec[:, _FIXED + self.max_steps + 1 :]  # a block-parallel drafter's, k = 1..K
        k = np.arange(1, self.max_steps + 1)[None, :]
        tokens = np.where(at_tokens[:, None] > 0, at_tokens[:, None], k + 1.0)
        fixed = (
            (k - 1) * draft[:, None]
            + parallel
            + verify[:, 1:]
            + extend[:, None]
            - per_token[:, None] * tokens
            + overhead[:, None]
        )
        rates, factors = sampled_acceptance(
            self.scenario, self.inputs, values, self.max_steps, self.drawn
        )
        return SampledModel(decode, fixed, rates, factors, per_token)


def sampled_draws(
    bound: Bound, samples: int, seed: int, max_steps: int = MAX_STEPS, drawn: Drawn | None = None
) -> tuple[SampledScenario, np.ndarray]:
    """``samples`` draws (n, F) of the bound scenario's uncertain inputs (``draw_inputs``)
    and its ``SampledScenario``, the response tables spanning them; a mix's or a spread's
    drawn rates kept in ``drawn`` when given (studies of scenarios that differ elsewhere
    share them)."""
    draws = draw_inputs(bound.scenario, bound.inputs, samples, seed)
    return _sampled(bound, draws, max_steps, drawn), draws


def _sampled(
    bound: Bound, draws: np.ndarray, max_steps: int, drawn: Drawn | None
) -> SampledScenario:
    scenario, inputs = bound.scenario, bound.inputs
    base, memo = pass_vector(bound.passes, max_steps), bound.hardware.memo
    responses = tuple(
        None
        if is_acceptance_input(inp.field)
        else pass_response(scenario, inp, draws[:, j], base, memo=memo)
        for j, inp in enumerate(inputs)
    )
    return SampledScenario(
        scenario, inputs, responses, base, max_steps, {} if drawn is None else drawn
    )
