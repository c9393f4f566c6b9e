"""A speculative-only batch-1 measurement split between the target's pass and the rest.

One speculative figure (tok/s at an accept length, or a speculative job) measures a whole
cycle: the target's pass, the drafter's passes and the cycle's host work together, and
nothing in it tells them apart. When the figures hold no plain-decoding run and the base
derives its passes from its weights (no ``timing.decode_ms``, no
``hardware.bandwidth_efficiency`` given), the split is made by a named default
(docs/accuracy-under-load.md, "A speculative-only batch-1 measurement"):

- the target's batch-1 decode is DERIVED from its bytes at ``DEFAULT_DECODE_EFFICIENCY`` of
  the GPU's peak bandwidth (the drafter's passes and the verify's growth at the same share);
- the remainder of the measured cycle is ``timing.cycle_overhead_ms`` (host and launch work
  once a cycle), fitted;
- the share is written ``assumed`` with ``DECODE_EFFICIENCY_RANGE`` as a normal whose 90%
  interval is that range, and the overhead's error carries how it moves over that range.

The share's sources, the batch-1 decodes measured in the repository on current data-centre
GPUs (fraction of peak bandwidth, each from a curve's own plain batch-1 decode): 0.59 on a
B200 (validation cases 39-42), 0.66 on a GB10 (case 50), 0.71 on an H100 NVL (cases 43, 44,
47), about 0.50 for Qwen3-8B BF16 on one H200 under SGLang (sgl-project/sglang PR #36631's
``Decode batch`` line at batch 1: 157.77 tok/s against a 3.15 ms roofline; overlap off,
sampling masks on, a low end). The default is the range's middle.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.binding.efficiency import derivable
from sim.calibration.measurements import Measurements
from sim.scenario.schema import Scenario

__all__ = [
    "DECODE_EFFICIENCY_RANGE",
    "DEFAULT_DECODE_EFFICIENCY",
    "SPLIT_REASON",
    "split_applies",
]

#: The range of batch-1 decode shares of peak bandwidth (see the module docstring).
DECODE_EFFICIENCY_RANGE = (0.50, 0.71)
#: The share a target's batch-1 decode is derived at when no plain figure measures it: the
#: range's middle.
DEFAULT_DECODE_EFFICIENCY = 0.5 * (DECODE_EFFICIENCY_RANGE[0] + DECODE_EFFICIENCY_RANGE[1])
#: What the calibrated scenario says of the share.
SPLIT_REASON = (
    "no plain-decoding figure: the target's batch-1 decode is derived from its bytes at the "
    f"default share {DEFAULT_DECODE_EFFICIENCY:.3g} of peak bandwidth (the middle of "
    f"{DECODE_EFFICIENCY_RANGE[0]:g}-{DECODE_EFFICIENCY_RANGE[1]:g}, the batch-1 shares "
    "measured on B200, GB10, H100 NVL and H200 servers; sim/calibration/speculative_split.py), "
    "the rest of the measured cycle is timing.cycle_overhead_ms; the split is not identified "
    "by the figures, so the share is drawn over that range"
)


def split_applies(base: Scenario, data: Measurements, fit_timing: Sequence[str] | None) -> bool:
    """True when the measured cycles must be split by the default: speculative rows and no
    plain-decoding figure, a base that derives its passes from its weights and GPU and gives
    neither ``timing.decode_ms`` nor ``hardware.bandwidth_efficiency``, and no timing
    fields named by the user."""
    return (
        fit_timing is None
        and bool(data.points)
        and not data.baselines
        and derivable(base)
        and base.timing.decode_ms is None
        and "hardware.bandwidth_efficiency" not in base.origins.given
        and "hardware.bandwidth_efficiency" not in base.origins.overrides
    )
