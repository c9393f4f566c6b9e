"""Eager execution: what a pass run without a CUDA graph costs beyond its GPU work.

Without a graph the CPU runs the model's Python forward and issues every kernel itself; the
GPU cannot start a kernel before it is issued (sim/hardware/launch.py: the pass ends at the
critical path of CPU issue work and GPU work). Three host-side costs, each per kernel or per
call, build the CPU side of a pass:

- ``kernel_us``: CPU time per kernel, all-in: the serving framework's Python around the op
  (module calls, custom-op dispatch, views), PyTorch's dispatcher and the launch itself.
  The raw launch is only a part of it: ``cuLaunchKernel`` 3.0-3.3 us on GB200, Triton's
  binder 4.7-5.6 us, a PyTorch Inductor kernel call 6.8-9.1 us (meta-pytorch/tritonbench PR
  #1017; its sibling PR #1016 puts a raw ``cuLaunchKernel`` at ~1.3 us and one Inductor
  kernel through its ``call()`` wrapper at ~9 us, ~33 us end to end with the graph's
  guards), "4 us per op" for plain PyTorch eager on A100 (pytorch/pytorch issue #82793). The
  default is calibrated on one public graphed-vs-eager pair where the source counts the
  kernels: Qwen2.5-72B-Instruct-AWQ on one A100-SXM4-80GB, single sequence, run eagerly
  through vLLM's model code: 22.68 ms a token eager against 15.39 ms graphed
  (FULL_DECODE_ONLY), "~1200 individual CUDA kernels (80 layers x ~15 kernels/layer)"
  (pie-project/pie PR #348). The eager pass is launch-bound there (1200 kernels, 15.39 ms of
  GPU work), so T_eager = 1200 c + g_last gives c = 18.9 us (``calibrate_kernel_us``).
- ``allreduce_us``: CPU time per eager NCCL call; taken as one framework op (the call goes
  through the same Python and dispatch to one NCCL kernel launch). A loop of eager
  ``torch.distributed`` all-reduces of 2-256 KiB on 8 GPUs takes 18.6-19.8 us a call
  (sgl-project/sglang PR #22734, "torch eager" column), which bounds the call's CPU cost
  from above and agrees with one framework op. The GPU side of an eager
  call keeps the interconnect's ``eager_extra_us`` (sim/hardware/interconnects.py).
- ``native_op_us`` / ``native_op_gpu_us``: ops that run unfused because torch.compile is
  off. vLLM's ``--enforce-eager`` turns CUDA graphs and torch.compile off together, and a
  CustomOp whose CUDA path falls back to its PyTorch-native form then issues one small
  kernel per elementwise op where the compiled graph fuses them into one ("Every call under
  enforce_eager=True produces 8 unfused elementwise/reduce kernels instead of 1 fused
  Triton kernel", GemmaRMSNorm, vllm-project/vllm PR #42251). Each extra kernel costs CPU
  and a little GPU time. CPU: DeepseekScalingRotaryEmbedding's eager fallback, "~8 kernel
  launches ... per attention layer", takes 120.5 us a call against 11.8 us for the fused
  kernel on an RTX PRO 6000 (decode, batch 8; vllm-project/vllm PR #51480), 15.5 us per
  extra launch. GPU: GemmaRMSNorm at M = 1 takes 0.0116 ms native (8 kernels) against
  0.0014 ms fused (RTX 5090; vllm-project/vllm PR #55329), 1.46 us per extra kernel.
  SGLang's graphed passes run the same kernels as its eager ones (no compiler in the
  way), so the term is for vLLM's enforce_eager only.
- host synchronisations: after a syncing kernel (``.item()``, ``.tolist()``, a blocking
  copy) the CPU waits for the GPU to drain and pays ``sync_us`` before it goes on: "a
  `.item()/.cpu()` costs the remaining GPU queue" plus a fixed part; "two stream
  synchronization on device is about 3 us" (facebookincubator/velox PR #6096). None by
  default: the serving engines' decode forward has no per-layer sync in their graph-capable
  paths (a graph cannot contain one).

The serving engine's per-step host work (scheduling, input preparation, sampling, the
sampled token's copy to the host) is outside the pass and a graph does not remove it: at
batch 1 the next step needs the sampled token, so it runs in series with the pass graphed
or not, and a step takes host + pass. A small model shows it plainly: GPT-2 on one H200
takes 41.8 ms (vLLM) and 33.2 ms (SGLang) for 32 tokens graphed, 1.0-1.3 ms a step, for
a pass whose weights take 0.05 ms to read (deepspeedai/DeepSpeed PR #8352).
``host_ms_from_graphed`` splits a measured graphed step into that host work and the GPU
work of its pass, taking the GPU work at its floor (the weights read at peak bandwidth,
sim/hardware/roofline.py): an upper bound on the host work, tight when the pass is small
against the step.

Modes: ``graphed`` (one graph launch, no per-kernel CPU work), ``eager`` (every kernel
issued by the CPU) and ``piecewise`` (vLLM's PIECEWISE CUDA graphs: the attention op of every
layer runs eager between captured pieces, each piece costing one launch, ``kernel_us``).
Graphing never slows a pass: the critical path is nondecreasing in every CPU cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from sim.hardware.launch import KernelSchedule, calibrate_cpu_scale, kernel_schedule

GraphMode = Literal["graphed", "eager", "piecewise"]
GRAPH_MODES: tuple[str, ...] = ("graphed", "eager", "piecewise")

#: CPU per extra kernel of an unfused PyTorch-native op (us): vllm-project/vllm PR #51480,
#: DeepseekScalingRotaryEmbedding on an RTX PRO 6000 (SM120), decode batch 8, median of
#: 5 x 200 iterations: eager fallback 120.5 us ("~8 kernel launches") vs the fused
#: ``ops.rotary_embedding`` kernel 11.8 us: (120.5 - 11.8) / (8 - 1) us per extra launch.
NATIVE_OP_US = (120.5 - 11.8) / (8 - 1)
#: GPU time per extra kernel of an unfused op at decode sizes (us): vllm-project/vllm PR
#: #55329, GemmaRMSNorm, RTX 5090, bf16, hidden 5120, M = 1: native 0.0116 ms (the 8
#: kernels vllm-project/vllm PR #42251 lists) vs FlashInfer's fused 0.0014 ms.
NATIVE_OP_GPU_US = (11.6 - 1.4) / (8 - 1)

#: Calibration pair (pie-project/pie PR #348): Qwen2.5-72B-Instruct-AWQ, 1x A100-SXM4-80GB.
PIE_348_EAGER_MS = 22.68
PIE_348_GRAPHED_MS = 15.39
PIE_348_LAYERS = 80
PIE_348_KERNELS_PER_LAYER = 15


@dataclass(frozen=True, slots=True)
class EagerCosts:
    """Host-side costs of eager execution (microseconds); see the module docstring."""

    kernel_us: float
    allreduce_us: float | None = None
    sync_us: float = 3.0
    syncs_per_layer: int = 0
    native_op_us: float = NATIVE_OP_US
    native_op_gpu_us: float = NATIVE_OP_GPU_US
    source: str = ""

    def __post_init__(self) -> None:
        costs = (self.kernel_us, self.allreduce_us or 0.0, self.sync_us)
        if min(*costs, self.native_op_us, self.native_op_gpu_us) < 0:
            raise ValueError("eager costs must be >= 0")
        if self.syncs_per_layer < 0:
            raise ValueError("syncs_per_layer must be >= 0")

    @property
    def allreduce_call_us(self) -> float:
        return self.kernel_us if self.allreduce_us is None else self.allreduce_us

    def scaled(self, factor: float) -> EagerCosts:
        """Every per-kernel and per-call CPU cost times ``factor`` (syncs unchanged)."""
        return replace(
            self,
            kernel_us=self.kernel_us * factor,
            allreduce_us=None if self.allreduce_us is None else self.allreduce_us * factor,
            native_op_us=self.native_op_us * factor,
        )


def eager_schedule(
    *,
    layers: int,
    kernels_per_layer: int,
    allreduces_per_layer: int,
    allreduce_ms: float,
    tensor_parallel: bool,
    costs: EagerCosts,
    mode: GraphMode,
    attention_kernels: int = 0,
    unfused_kernels: int = 0,
) -> KernelSchedule:
    """The pass's kernels with the CPU issue costs of ``mode``.

    ``unfused_kernels``: extra kernels per layer of ops that run unfused when torch.compile
    is off (vLLM's enforce_eager; module docstring), ``eager`` mode only: at the head of
    each layer, each costing ``costs.native_op_us`` of CPU and ``costs.native_op_gpu_us``
    of GPU time. The graphed (compiled) pass has them fused away.

    ``attention_kernels``: kernels of each layer's attention op (the compute kernels of the
    layer's first segment after its first, projection, kernel), eager in ``piecewise``
    mode; the captured piece between two attention ops (output projection, all-reduces,
    MLP/MoE, the next layer's projection) costs one launch, so each layer costs
    ``(attention_kernels + 1) x kernel_us`` of CPU. ``allreduce_ms`` is the caller's: an
    all-reduce inside a piece is a graphed one. Host syncs (``costs.syncs_per_layer``, eager
    and piecewise modes) sit on the last compute kernels of each layer.

    Everything but the all-reduce kernels' time is built by ``_eager_template``; a batched
    pass, whose every token count changes only ``allreduce_ms``, builds it once a physics
    and sets the all-reduces on it (sim/hardware/batched.py ``BatchedPass.kernels``).
    """
    template = _eager_template(
        layers,
        kernels_per_layer,
        allreduces_per_layer,
        tensor_parallel,
        costs,
        mode,
        attention_kernels,
        unfused_kernels,
    )
    return template.with_allreduce_ms(allreduce_ms)


def _eager_template(
    layers: int,
    kernels_per_layer: int,
    allreduces_per_layer: int,
    tensor_parallel: bool,
    costs: EagerCosts,
    mode: GraphMode,
    attention_kernels: int,
    unfused_kernels: int,
) -> KernelSchedule:
    """``eager_schedule`` with all-reduces of 0 ms, its arrays read-only (shared by every
    schedule built from it)."""
    allreduce_ms = 0.0
    if mode not in GRAPH_MODES:
        raise ValueError(f"mode must be one of {GRAPH_MODES}, got {mode!r}")
    if unfused_kernels < 0 or (unfused_kernels and mode != "eager"):
        raise ValueError("unfused_kernels must be >= 0, and only in eager mode")
    base = kernel_schedule(
        layers=layers,
        kernels_per_layer=kernels_per_layer,
        allreduces_per_layer=allreduces_per_layer,
        allreduce_ms=allreduce_ms,
        tensor_parallel=tensor_parallel,
        launch_ms=0.0,
    )
    n = base.num_kernels
    if mode == "graphed":
        return base.read_only()
    per_layer = n // layers
    position = np.arange(n) % per_layer
    compute = ~base.is_allreduce
    if mode == "eager":
        cpu = np.where(base.is_allreduce, costs.allreduce_call_us, costs.kernel_us) / 1000.0
    else:
        first = compute[:per_layer] & (base.segment[:per_layer] == 0)
        n_compute_first = int(np.count_nonzero(first))
        if not 0 < attention_kernels < n_compute_first:
            raise ValueError(
                f"attention_kernels must be between 1 and {n_compute_first - 1} (the first "
                f"segment's compute kernels less the projection before attention)"
            )
        attention = (position >= 1) & (position <= attention_kernels)
        piece_start = position == attention_kernels + 1
        piece_start[0] = True
        cpu = np.where(attention | piece_start, costs.kernel_us / 1000.0, 0.0)
    sync = np.zeros(n, dtype=bool)
    if costs.syncs_per_layer:
        for layer in range(layers):
            idx = np.flatnonzero(compute[layer * per_layer : (layer + 1) * per_layer])
            sync[layer * per_layer + idx[-costs.syncs_per_layer :]] = True
    schedule = replace(base, cpu_ms=cpu, host_sync=sync, sync_ms=costs.sync_us / 1000.0)
    if unfused_kernels:  # the unfused ops: no compute share, their own GPU and CPU time
        gpu_ms, cpu_ms = costs.native_op_gpu_us / 1000.0, costs.native_op_us / 1000.0
        schedule = schedule.with_head_kernels(layers, unfused_kernels, gpu_ms, cpu_ms)
    return schedule.read_only()


def with_layer_gpu_ms(
    schedule: KernelSchedule, layers: int, per_layer_ms: float, position: int
) -> KernelSchedule:
    """``schedule`` with ``per_layer_ms`` more fixed GPU time on kernel ``position`` of
    every layer: work one side of a comparison runs and the other does not (another
    attention path, sim/hardware/mla.py). Adds GPU time only, so the pass never gets
    faster."""
    n = schedule.num_kernels
    if per_layer_ms < 0 or not 0 <= position < n // layers:
        raise ValueError("per_layer_ms must be >= 0 and position inside a layer")
    fixed = schedule.fixed_ms.copy()
    fixed[np.arange(layers) * (n // layers) + position] += per_layer_ms
    return replace(schedule, fixed_ms=fixed)


def host_ms_from_graphed(graphed_step_ms: float, graphed_pass_ms: float) -> float:
    """The host work (ms) of a measured graphed step whose pass takes ``graphed_pass_ms``
    of GPU work: the rest of the step, at least 0 (module docstring). With the pass at its
    GPU floor this is the largest host share the measurement allows."""
    if graphed_step_ms < 0 or graphed_pass_ms < 0:
        raise ValueError("step and pass times must be >= 0")
    return max(graphed_step_ms - graphed_pass_ms, 0.0)


def calibrate_kernel_us(
    schedule_for: Callable[[float], KernelSchedule], compute_ms: float, measured_ms: float
) -> float:
    """The per-kernel CPU cost c (us) that makes the pass take ``measured_ms``.

    ``schedule_for(c)`` builds the pass's schedule with CPU cost c per kernel; its CPU
    issue costs scale with c, so the exact inversion of sim/hardware/launch.py applies to
    the schedule at c = 1 us. Raises ValueError when the GPU work alone exceeds
    ``measured_ms``.
    """
    return calibrate_cpu_scale(schedule_for(1.0), compute_ms, measured_ms)


def pie_348_schedule(kernel_us: float) -> KernelSchedule:
    """The calibration pass: 80 layers x 15 kernels, one GPU, every kernel eager."""
    return eager_schedule(
        layers=PIE_348_LAYERS,
        kernels_per_layer=PIE_348_KERNELS_PER_LAYER,
        allreduces_per_layer=0,
        allreduce_ms=0.0,
        tensor_parallel=False,
        costs=EagerCosts(kernel_us=kernel_us),
        mode="eager",
    )


#: Per-kernel CPU cost (us) of a Python serving engine running eagerly, calibrated on
#: pie-project/pie PR #348 (module docstring): launch-bound, 1200 c + 15.39 ms / 1200 =
#: 22.68 ms gives c = 18.889 us (tests check ``calibrate_kernel_us`` agrees).
EAGER_KERNEL_US = 18.889

DEFAULT_EAGER_COSTS = EagerCosts(
    kernel_us=EAGER_KERNEL_US,
    source="kernel_us calibrated on pie-project/pie PR #348 (Qwen2.5-72B-AWQ, 1x A100, "
    "22.68 ms eager vs 15.39 ms graphed, 80 layers x ~15 kernels); all-reduce call = one "
    "framework op; sync 3 us (facebookincubator/velox PR #6096)",
)
