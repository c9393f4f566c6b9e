"""The KV cache an engine makes of a GPU's memory: its memory fraction, the weights, and
the reserve it keeps for activations, CUDA graphs and communication buffers.

Per GPU (GiB; the scenario's KV bytes per token are per tensor-parallel rank):

    budget   = memory x fraction                                    (the engine's rule)
    capacity = (budget - weights - drafter weights - reserve) / (KV + drafter KV per token)

* **vLLM** (``gpu_memory_utilization`` = 0.9, vllm/config/cache.py): the budget holds the
  weights (the drafter's loaded with the target), the peak activations and non-torch
  memory of its profiling run (the reserve), and the KV cache, whose per-token size
  counts the drafter's layers (its KV cache spec lists every attention layer, the
  drafter's included). Its startup logs put the reserve at 0.57 GiB (a 24 GB card, TP 1,
  vllm-project/vllm PR #14447's logs), 3.05 and 4.84 GiB (Llama-3-8B on an H100, TP 1 and
  2, PR #10511) and about 8.5 GiB (Qwen3-235B FP8 on 4x H100: 8.1 GiB left for KV where
  the weights would leave 16.6, issue #21348): 2-11% of the GPU's memory
  (``RESERVE_SHARE_RANGE``; it grows with the GPU, whose token budget and CUDA graphs do).
* **SGLang** (``mem_fraction_static`` set by GPU memory and TP when not given,
  python/sglang/srt/server_args.py ``_handle_gpu_memory_settings``, PR #10975, merged
  2025-09-27, v0.5.3 onwards): the fraction is (memory - reserved) / memory with
  reserved (MiB) = 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs
  + 1024 x TP / 8, at least 10 GiB on GPUs above 60 GiB, + 2 GiB for an EAGLE drafter
  ("eagle draft models and cuda graphs"); chunked_prefill_size and cuda_graph_max_bs by
  the GPU's memory tier and TP (``sglang_mem_fraction_static``). The fraction applies to
  the memory free when SGLang starts, after the CUDA context and communicators: 0.4-1.2
  GiB of an H100's in SGLang's startup logs ("Load weight begin. avail mem=78.3-78.8
  GB"), about 2 GiB on 8x H200 ("Init torch distributed ends. mem usage=1.77-2.01 GB",
  sgl-project/sglang PR #11716): that is the reserve here, 0.5-1.5% of the GPU's memory
  (``RESERVE_SHARE_RANGE``). The drafter's weights and its KV pool (as many
  tokens as the target's) sit in the 2 GiB the rule adds for it, outside the budget.

A GPU's memory is its preset's ``memory_gb`` read as GiB (vendors' 80 GB is 81,559 MiB;
CUDA reports 79.1-79.3 GiB of an H100 in vLLM's logs: the 1% difference is inside the
reserve's range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ENGINE_RULES",
    "GIB",
    "RESERVE_SHARE_RANGE",
    "VLLM_GPU_MEMORY_UTILIZATION",
    "KvMemory",
    "ServerMemory",
    "engine_kv_memory",
    "memory_fraction",
    "reserve_range_gib",
    "sglang_mem_fraction_static",
]

GIB = float(2**30)
Engine = Literal["vllm", "sglang"]
ENGINE_RULES: tuple[Engine, ...] = ("vllm", "sglang")

#: vLLM's default ``gpu_memory_utilization`` (vllm/config/cache.py ``CacheConfig``).
VLLM_GPU_MEMORY_UTILIZATION = 0.9

#: The reserve (GiB per GPU the engine's budget keeps beyond the weights and the KV cache,
#: module docstring) as a share of the GPU's memory: the range its startup logs give, and
#: the default, the range's geometric middle. vLLM: 0.57 of 23.58 GiB (2.4%, PR #14447),
#: 3.05 and 4.84 of 79.22 (3.9% and 6.1%, PR #10511), about 8.5 of 79 (10.7%, issue
#: #21348); (a vision model's 36.6 GiB at 65k tokens without CUDA graphs, PR #12126, is a
#: vision encoder's profile, left out). SGLang: 0.4 of an H100's 79.2 (0.5%) to 2.0 of an
#: H200's 139.8 at TP 8 (1.4%).
RESERVE_SHARE_RANGE: dict[Engine, tuple[float, float]] = {
    "vllm": (0.02, 0.11),
    "sglang": (0.005, 0.015),
}


def reserve_range_gib(engine: Engine, memory_gib: float) -> tuple[float, float, float]:
    """(default, low, high) reserve in GiB per GPU of ``memory_gib`` GiB under ``engine``:
    ``RESERVE_SHARE_RANGE`` of the memory, the default at the range's geometric middle
    (rounded to 0.01 GiB)."""
    low, high = RESERVE_SHARE_RANGE[engine]
    ends = (round(memory_gib * low, 2), round(memory_gib * high, 2))
    return round(math.sqrt(ends[0] * ends[1]), 2), ends[0], ends[1]


def _sglang_tier(gpu_mem_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks by GPU memory (MiB) and TP
    (server_args.py ``_handle_gpu_memory_settings``, PR #10975)."""
    if gpu_mem_mib < 20 * 1024:
        return 2048, 8
    if gpu_mem_mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if gpu_mem_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mem_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def sglang_mem_fraction_static(gpu_mem_mib: float, tp: int, speculative: bool) -> float:
    """SGLang's default ``mem_fraction_static`` on a GPU of ``gpu_mem_mib`` MiB at tensor
    parallel ``tp`` (pipeline parallel 1, no DP attention), with an EAGLE drafter when
    ``speculative``: round((memory - reserved) / memory, 3), reserved as the module
    docstring gives it."""
    chunk, graph_bs = _sglang_tier(gpu_mem_mib, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative:
        reserved += 2 * 1024
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def memory_fraction(engine: Engine, memory_gib: float, tp: int, speculative: bool) -> float:
    """The share of a GPU's memory the engine's budget takes by default."""
    if engine == "vllm":
        return VLLM_GPU_MEMORY_UTILIZATION
    return sglang_mem_fraction_static(memory_gib * 1024, tp, speculative)


@dataclass(frozen=True, slots=True)
class KvMemory:
    """One GPU's memory as an engine divides it (GiB, per tensor-parallel rank) and the
    KV tokens it holds. ``drafter_gib`` and ``drafter_kv_bytes`` are what the budget
    holds of the drafter (0 where the engine keeps the drafter outside it); ``state_gib``
    what a state pool sized apart takes of it (SGLang's for a hybrid target,
    sim/hardware/state_pool.py; 0: none)."""

    engine: Engine
    memory_gib: float
    fraction: float
    weights_gib: float
    drafter_gib: float
    reserve_gib: float
    kv_bytes_per_token: float
    drafter_kv_bytes_per_token: float
    state_gib: float = 0.0

    @property
    def budget_gib(self) -> float:
        return self.memory_gib * self.fraction

    @property
    def kv_gib(self) -> float:
        """What the budget leaves the KV cache (negative: the weights do not fit)."""
        return self.rest_gib - self.state_gib

    @property
    def rest_gib(self) -> float:
        """What the budget leaves after the weights and the reserve (the KV cache and a
        state pool sized apart)."""
        return self.budget_gib - self.weights_gib - self.drafter_gib - self.reserve_gib

    @property
    def tokens(self) -> int:
        """KV tokens the cache holds (0 when nothing is left for it)."""
        per_token = self.kv_bytes_per_token + self.drafter_kv_bytes_per_token
        return max(int(self.kv_gib * GIB // per_token), 0)

    def describe(self) -> str:
        """The arithmetic, one line: budget - weights - drafter - reserve - states = KV, per
        GPU."""
        drafter = f" - drafter {self.drafter_gib:.2f}" if self.drafter_gib else ""
        per_token = f"{self.kv_bytes_per_token:,.0f}" + (
            f" + drafter {self.drafter_kv_bytes_per_token:,.0f}"
            if self.drafter_kv_bytes_per_token
            else ""
        )
        states = f" - states {self.state_gib:.2f}" if self.state_gib else ""
        return (
            f"{self.memory_gib:g} GiB x {self.fraction:g} ({self.engine}) - weights "
            f"{self.weights_gib:.2f}{drafter} - reserve {self.reserve_gib:g}{states} = "
            f"{self.kv_gib:.2f} GiB a GPU over {per_token} bytes a token"
        )


def engine_kv_memory(
    engine: Engine,
    *,
    memory_gib: float,
    gpus: int,
    weight_bytes: float,
    drafter_bytes: float,
    kv_bytes_per_token: float,
    drafter_kv_bytes_per_token: float,
    reserve_gib: float,
    speculative: bool,
) -> KvMemory:
    """How ``engine`` divides each of ``gpus`` GPUs of ``memory_gib`` GiB: the weights
    (``weight_bytes``, all ranks together, split evenly), the drafter's when
    ``speculative`` (vLLM's budget holds its weights and its KV; SGLang keeps both outside
    it), the reserve, and the KV cache (``kv_bytes_per_token`` per rank)."""
    if kv_bytes_per_token <= 0:
        raise ValueError("kv_bytes_per_token must be > 0")
    inside = engine == "vllm" and speculative
    return KvMemory(
        engine=engine,
        memory_gib=memory_gib,
        fraction=memory_fraction(engine, memory_gib, gpus, speculative),
        weights_gib=weight_bytes / gpus / GIB,
        drafter_gib=drafter_bytes / gpus / GIB if inside else 0.0,
        reserve_gib=reserve_gib,
        kv_bytes_per_token=kv_bytes_per_token,
        drafter_kv_bytes_per_token=drafter_kv_bytes_per_token if inside else 0.0,
    )


@dataclass(frozen=True, slots=True)
class ServerMemory:
    """A server's memory as its KV capacity reads it: the ``engine`` whose rule divides
    each of ``gpus`` GPUs of ``memory_gib`` GiB, the target's stored ``weight_bytes``
    (all ranks together), the drafter's ``drafter_bytes``, and the KV bytes per token per
    tensor-parallel rank of the target and of the drafter."""

    engine: Engine
    memory_gib: float
    gpus: int
    weight_bytes: float
    drafter_bytes: float
    kv_bytes_per_token: float
    drafter_kv_bytes_per_token: float

    def reserve_range_gib(self) -> tuple[float, float, float]:
        """(default, low, high) reserve in GiB per GPU (``reserve_range_gib``)."""
        return reserve_range_gib(self.engine, self.memory_gib)

    def kv(self, reserve_gib: float, speculative: bool) -> KvMemory:
        """How the engine divides one GPU at ``reserve_gib`` GiB (``engine_kv_memory``;
        ``speculative``: with the drafter)."""
        return engine_kv_memory(
            self.engine,
            memory_gib=self.memory_gib,
            gpus=self.gpus,
            weight_bytes=self.weight_bytes,
            drafter_bytes=self.drafter_bytes,
            kv_bytes_per_token=self.kv_bytes_per_token,
            drafter_kv_bytes_per_token=self.drafter_kv_bytes_per_token,
            reserve_gib=reserve_gib,
            speculative=speculative,
        )
