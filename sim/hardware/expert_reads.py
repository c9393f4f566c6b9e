"""What the extra routed experts of a longer pass cost: the fused-MoE kernel's reads.

A pass over m tokens instead of m0 reads, in every MoE layer, the experts the extra
tokens route to that the first m0 did not: D(m) - D(m0) more distinct experts, D(m) =
E (1 - (1 - e/E)^m) (sim/hardware/experts.py ``expected_distinct_experts``). Those reads
happen inside the fused-MoE kernel, which streams each activated expert's weights once,
as large contiguous reads; per rank and per extra expert it costs the kernel model's
fixed ``expert_us`` plus the expert's bytes per rank at ``efficiency`` x the GPU's peak
bandwidth (``H100_FUSED_MOE``, fitted on public ``benchmark_moe.py`` curves: 0.345 us +
bytes at 0.934 of peak):

    extra_ms = moe_layers x (D(m) - D(m0)) x (expert_us + expert_bytes / gpus
               / (efficiency x bandwidth)) / 1000.

A decode pass's efficiency (measured or assumed) is the share of peak of the WHOLE pass
(attention, dense weights, launch gaps, small all-reduces); it does not describe these
reads, which run near peak (docs/studies/moe-verify-reads.md gives the sources and the
range). The batched passes price their expert union through the same kernel
(sim/hardware/pass_physics.py ``PassPhysics.moe_kernel``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from sim.hardware.experts import FusedMoeKernel

# sim/hardware/experts.py (scipy) is imported where a growth is priced: the scenario schema
# reads the default below at start-up.

__all__ = [
    "EXPERT_READ_EFFICIENCY",
    "EXPERT_READ_EFFICIENCY_RANGE",
    "EXPERT_READ_REASON",
    "expert_kernel",
    "extra_expert_read_ms",
]

#: The share of peak bandwidth at which the fused-MoE kernel reads an activated expert's
#: weights: the kernel model's fit on vLLM PR #24700's H100 curves (``H100_FUSED_MOE``'s
#: ``hbm_efficiency``; a test keeps the two equal).
EXPERT_READ_EFFICIENCY = 0.934
#: Its plausible range: from 0.5 (the fit slowed by what an untuned default config loses
#: to a tuned one: 1.67x at 1-2 tokens in sgl-project/sglang PR #22208 on an MI355X, up
#: to 1.93x in vllm-project/vllm PR #54500 on an H20; 0.934 / 1.87 = 0.5) to peak.
EXPERT_READ_EFFICIENCY_RANGE: tuple[float, float] = (0.5, 1.0)
EXPERT_READ_REASON = (
    "the extra routed experts a longer pass reads stream through the fused-MoE kernel near "
    "peak bandwidth, not at the decode pass's whole-pass efficiency: 0.934 fitted on vLLM "
    "#24700's H100 kernel curves (plus 0.345 us an expert), 0.5-1 of peak across tuned and "
    "untuned kernel configs (docs/studies/moe-verify-reads.md)"
)


def expert_kernel(efficiency: float) -> FusedMoeKernel:
    """The fused-MoE kernel model with its expert reads at ``efficiency`` of peak."""
    from sim.hardware.experts import H100_FUSED_MOE  # lazy: scipy (module comment)

    if efficiency == H100_FUSED_MOE.hbm_efficiency:
        return H100_FUSED_MOE
    return replace(H100_FUSED_MOE, hbm_efficiency=efficiency)


def extra_expert_read_ms(
    experts: int,
    per_token: int,
    moe_layers: int,
    expert_bytes: float,
    gpus: int,
    bandwidth_gbps: float,
    tokens_from: float,
    tokens: ArrayLike,
    efficiency: float,
) -> np.ndarray:
    """Milliseconds per rank that a pass over each of ``tokens`` tokens spends reading the
    routed experts a pass over ``tokens_from`` did not (module docstring); ``expert_bytes``
    is one expert's bytes over all ranks, ``bandwidth_gbps`` one GPU's peak. Same shape as
    ``tokens``; 0 where a count equals ``tokens_from``."""
    from sim.hardware.experts import expected_distinct_experts  # lazy: scipy

    grown = expected_distinct_experts(experts, per_token, tokens)
    extra = grown - expected_distinct_experts(experts, per_token, tokens_from)
    per_expert_us = expert_kernel(efficiency).per_expert_us(expert_bytes / gpus, bandwidth_gbps)
    return moe_layers * extra * per_expert_us / 1e3
