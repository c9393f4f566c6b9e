"""Notes on a fitted acceptance profile: one that rises with position, and base rates kept
past the measured positions above the fitted ones."""

from __future__ import annotations

from sim.binding.closed_form import conditional_rates
from sim.calibration.measurements import Measurements
from sim.model.profile_fit import DECAY_BOUNDS
from sim.scenario.schema import Scenario


def measured_depth(data: Measurements) -> int:
    """The deepest position the acceptance figures cover (at least 2)."""
    depths = [c.position for c in data.cumulative] + [a.num_steps for a in data.accept_lengths]
    return max([2, *depths])


def rising_note(scenario: Scenario, depth: int) -> str | None:
    """A note naming a fitted acceptance profile that rises with position over the
    measured ``depth`` positions (None: it does not rise). Drafters' conditional rates
    usually fall with position (the decay priors' published profiles,
    sim/binding/priors.py), so a rise is more often a sign of figures measured under
    different prompts or settings than of the drafter."""
    rates = conditional_rates(scenario.acceptance, depth)
    rises = [i for i in range(1, depth) if rates[i] > rates[i - 1] + 1e-9]
    if not rises:
        return None
    spec = scenario.acceptance
    assert spec is not None
    shown = ", ".join(f"{r:.3f}" for r in rates)
    decay = ""
    if spec.decay is not None and spec.decay > 1.0:
        at_bound = ", the upper end of the fit's range" if spec.decay >= DECAY_BOUNDS[1] else ""
        decay = f" (acceptance.decay {spec.decay:g} > 1{at_bound})"
    first = rises[0]
    return (
        f"the fitted acceptance rises with position: per-position rates {shown} at positions "
        f"1..{depth}{decay}, position {first + 1} above position {first}; drafters' rates "
        "usually fall with position, so check that every figure was measured on the same "
        "prompts and settings (a rising profile is kept as fitted)"
    )


def seam_note(scenario: Scenario, depth: int) -> str | None:
    """A note naming listed rates kept from the base past the ``depth`` measured positions
    when the first of them is above the fitted rate at the last measured position (None
    otherwise): the written profile then rises where the measurements stop, from rates
    that were not measured with these figures."""
    spec = scenario.acceptance
    listed = None if spec is None else spec.per_position
    if listed is None or len(listed) <= depth:
        return None
    last, kept = listed[depth - 1], listed[depth]
    if kept <= last + 1e-9:
        return None
    ends = f"{depth}" if len(listed) == depth + 1 else f"{depth}..{len(listed) - 1}"
    return (
        f"acceptance.per_position[{ends}] kept from the base scenario ({kept:.3f} at "
        f"position {depth + 1}) is above the fitted rate {last:.3f} at position {depth}, "
        f"the last measured: the written profile rises at position {depth + 1}; those "
        "rates were not measured with these figures, so measure them or set them"
    )
