"""Compute time derived from the model's weights and a GPU preset (batch-1 roofline).

A pass over ``m`` tokens reads every weight it uses once and does 2 FLOPs per active
parameter per token; split evenly over ``gpus`` tensor-parallel ranks its compute is

    max(bytes / (gpus x memory_bandwidth), flops / (gpus x peak_flops)).

MoE layers read the expected number of distinct routed experts for m tokens,
E (1 - (1 - e/E)^m) (sim/hardware/experts.py), so the verify pass grows with draft length:
``growth_ms`` is the part of a calibrated pass that grows with tokens (extra weight reads
and FLOPs), the rest of it does not. With ``expert_efficiency`` the extra routed experts
are priced as the fused-MoE kernel reads them (sim/hardware/expert_reads.py) instead of at
the pass's own efficiency.
KV-cache reads are left out (at batch 1 and a few thousand tokens of context they are ~2%
of the weights for Llama-3.1-8B and less for MLA); this is a lower bound on real time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim.hardware.expert_reads import extra_expert_read_ms
from sim.hardware.experts import expected_distinct_experts
from sim.hardware.gpus import GpuPreset


@dataclass(frozen=True, slots=True)
class Weights:
    """Parameter counts and bytes per parameter of a target model (or a drafter).

    ``layer_params``: per layer, outside routed experts; ``dense_layer_params``: per dense
    layer of a MoE model; ``expert_params``: one routed expert.
    """

    layers: int
    layer_params: float
    lm_head_params: float = 0.0
    weight_bytes_per_param: float = 2.0
    dense_layers: int = 0
    dense_layer_params: float | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    expert_params: float | None = None
    expert_bytes_per_param: float | None = None

    @property
    def is_moe(self) -> bool:
        return bool(self.experts and self.experts_per_token and self.expert_params)

    def _dense_part(self) -> tuple[float, float]:
        """(params, bytes) read whatever the tokens: non-expert layers and the head."""
        moe_layers = self.layers - self.dense_layers if self.is_moe else 0
        dense_layers = self.layers - moe_layers
        per_dense = self.dense_layer_params or self.layer_params
        params = moe_layers * self.layer_params + dense_layers * per_dense + self.lm_head_params
        return params, params * self.weight_bytes_per_param

    @property
    def moe_layers(self) -> int:
        """Layers with routed experts (0 for a dense model)."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def dense_bytes(self) -> float:
        """Bytes every pass reads whatever its tokens (all ranks together)."""
        return self._dense_part()[1]

    @property
    def expert_bytes(self) -> float:
        """Bytes of one routed expert (all ranks together; 0 for a dense model)."""
        if not self.is_moe:
            return 0.0
        assert self.expert_params
        return self.expert_params * (self.expert_bytes_per_param or self.weight_bytes_per_param)

    def bytes_read(self, tokens: int) -> float:
        """Weight bytes one pass over ``tokens`` tokens reads (all ranks together)."""
        _, dense_bytes = self._dense_part()
        if not self.is_moe:
            return dense_bytes
        assert self.experts and self.experts_per_token and self.expert_params
        distinct = float(expected_distinct_experts(self.experts, self.experts_per_token, tokens))
        per_expert = self.expert_params * (
            self.expert_bytes_per_param or self.weight_bytes_per_param
        )
        return dense_bytes + (self.layers - self.dense_layers) * distinct * per_expert

    def flops(self, tokens: int) -> float:
        """2 x active params x tokens."""
        params, _ = self._dense_part()
        if self.is_moe:
            assert self.experts_per_token and self.expert_params
            params += (
                (self.layers - self.dense_layers) * self.experts_per_token * self.expert_params
            )
        return 2.0 * params * tokens


def weight_read_ms(
    weights: Weights, tokens: int, gpu: GpuPreset, gpus: int, efficiency: float = 1.0
) -> float:
    """Time (ms) per rank to read the weights a pass over ``tokens`` tokens uses, at
    ``efficiency`` x the GPU's peak memory bandwidth."""
    return weights.bytes_read(tokens) / (gpus * gpu.memory_bandwidth_gbps * 1e9 * efficiency) * 1e3


def flop_ms(
    weights: Weights, tokens: int, gpu: GpuPreset, gpus: int, efficiency: float = 1.0
) -> float:
    """Time (ms) per rank for a pass's 2 x active params x tokens FLOPs at ``efficiency``
    x the GPU's dense BF16 peak."""
    return weights.flops(tokens) / (gpus * gpu.bf16_tflops * 1e12 * efficiency) * 1e3


def roofline_ms(
    weights: Weights, tokens: int, gpu: GpuPreset, gpus: int, efficiency: float = 1.0
) -> float:
    """max(bytes / bandwidth, flops / peak) per rank, milliseconds (at ``efficiency`` x
    peak)."""
    return compute_table_ms(weights, (tokens,), gpu, gpus, efficiency)[0]


def growth_ms(
    weights: Weights,
    tokens_from: int,
    tokens_to: int,
    gpu: GpuPreset,
    gpus: int,
    efficiency: float = 1.0,
    expert_efficiency: float | None = None,
) -> float:
    """Extra compute (ms per rank) of a pass over ``tokens_to`` instead of ``tokens_from``
    tokens: the weight reads it adds (the distinct routed experts of the extra tokens; none
    for a dense model at batch 1) plus the FLOPs it adds, each at ``efficiency`` x peak;
    with ``expert_efficiency`` the extra experts through the fused-MoE kernel at that share
    of peak (``extra_expert_read_ms``), the FLOPs still at ``efficiency``.

    Only these shares of a calibrated pass grow with tokens: attention over the context,
    kernel and launch overheads and everything else the calibration lumps into compute
    stay as measured (at batch 1 they are most of it). Reads and FLOPs are added, not
    overlapped as in the roofline: an upper estimate at a given efficiency.
    """
    table = compute_table_ms(
        weights, (tokens_to,), gpu, gpus, efficiency, tokens_from, expert_efficiency
    )
    return table[0]


def compute_table_ms(
    weights: Weights,
    tokens: Sequence[int],
    gpu: GpuPreset,
    gpus: int,
    efficiency: float = 1.0,
    tokens_from: int | None = None,
    expert_efficiency: float | None = None,
) -> tuple[float, ...]:
    """For each of ``tokens``, in order: ``roofline_ms`` (the whole pass derived from its
    weights), or with ``tokens_from`` the ``growth_ms`` from there (``expert_efficiency``:
    its extra routed experts through the fused-MoE kernel, ``growth_ms``). Each token
    count's weight reads and FLOPs are computed once."""
    counts = tuple(tokens) if tokens_from is None else (tokens_from, *tokens)
    math = [flop_ms(weights, m, gpu, gpus, efficiency) for m in counts]
    if tokens_from is not None and expert_efficiency is not None and weights.is_moe:
        # a MoE's dense reads do not grow with tokens: the growth's reads are its experts'
        assert weights.experts and weights.experts_per_token
        extra = extra_expert_read_ms(
            weights.experts,
            weights.experts_per_token,
            weights.moe_layers,
            weights.expert_bytes,
            gpus,
            gpu.memory_bandwidth_gbps,
            tokens_from,
            counts[1:],
            expert_efficiency,
        )
        return tuple(float(x) + (math[i] - math[0]) for i, x in enumerate(extra, start=1))
    reads = [weight_read_ms(weights, m, gpu, gpus, efficiency) for m in counts]
    if tokens_from is None:
        return tuple(max(r, f) for r, f in zip(reads, math, strict=True))
    return tuple((reads[i] - reads[0]) + (math[i] - math[0]) for i in range(1, len(counts)))
