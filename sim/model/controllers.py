"""Adaptive speculation controllers, from the engines' own rules: pure state machines.

A static policy (sim/model/policy.py) answers k from the batch size alone. An adaptive
policy also watches acceptance: ``start()`` gives a fresh ``Controller`` per replication,
which answers ``k_for_batch(batch)``, says how many iterations at a batch size it will
keep its answer (``horizon``: the serving engine plans no further ahead), and is told the
accepted drafts of every request in every decode iteration (``observe``).

* ``SGLangAdaptive``: SGLang's adaptive speculative decoding (``--speculative-adaptive``),
  sgl-project/sglang python/sglang/srt/speculative/adaptive_spec_params.py (commit
  015c8726, ``AdaptiveStepSlot``, ``DEFAULT_ADAPTIVE_CONFIG``) and adaptive_step_router.py
  (commit a12239f6): per batch-size slot (the largest configured key <= the batch, after
  padding to a captured CUDA-graph batch size when those are given) an exponential moving
  average of the mean accepted drafts per request (updated only while the slot drafts),
  and every ``update_interval`` batches after ``warmup_batches`` a move down the slot's
  candidate steps while the EMA is <= (previous candidate - 0.5, or 0.5 towards 0) +
  down hysteresis, else up while it is > current - 0.5 + up hysteresis; a slot at 0 steps
  probes the next candidate. Whether SGLang calls the slot's update on batches that run
  without drafts is not visible in those files; here it does (its counter advances, its
  EMA does not), which is what lets a slot at 0 probe again.
* ``VllmGoodput``: vLLM's dynamic speculative decoding manager,
  vllm-project/vllm vllm/v1/spec_decode/dynamic/manager.py (commit 594dc0f8, a PR branch in
  the crawled index): K*(bs) = argmax over K of (1 + sum of the first K per-position
  acceptance rates) / ITL(bs, K), ITL interpolated linearly in batch size between profiled
  batch sizes and in K between profiled K; after ``warmup_steps`` steps the per-position
  rates are recomputed every step from all steps so far (accepted / drafted at each
  position; a position never drafted has rate 0.0, as ``compute_acceptance_rate_per_pos``
  does). With ``refresh=False`` it is the table vLLM derives once, offline
  (vllm/v1/spec_decode/dynamic/generate_config.py measures the rates and the ITL table,
  then deploys ``num_speculative_tokens_per_batch_size``): ``static_table`` gives it as
  ``[start_bs, end_bs, K]`` rows.

Per-position rates here are what vLLM calls ``acceptance_rate_per_pos``: position i's
draft is accepted (with all before it) in that share of drafts, i.e. the cumulative rate
c_i of sim/model/rates.py.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "SGLANG_DEFAULT_CONFIG",
    "AdaptivePolicy",
    "Controller",
    "SGLangAdaptive",
    "SlotConfig",
    "VllmGoodput",
    "goodput_table",
]


class Controller(Protocol):
    """The running state of an adaptive policy in one replication."""

    def k_for_batch(self, batch: int) -> int: ...

    def horizon(self, batch: int) -> int: ...

    def observe(self, batch: int, k: int, accepted: np.ndarray) -> None: ...


@runtime_checkable
class AdaptivePolicy(Protocol):
    """A speculation policy that adapts to observed acceptance. ``k_for_batch(batch)`` is
    the largest k it may choose at that batch size (for KV lookahead and token-budget
    checks); ``start()`` a fresh controller."""

    @property
    def max_k(self) -> int: ...

    def k_for_batch(self, batch: int) -> int: ...

    def describe(self) -> str: ...

    def start(self) -> Controller: ...


# --------------------------------------------------------------------------- SGLang


@dataclass(frozen=True, slots=True)
class SlotConfig:
    """One batch-size slot of SGLang's adaptive config (``AdaptiveStepSlot`` defaults)."""

    candidate_steps: tuple[int, ...]
    ema_alpha: float = 0.2
    update_interval: int = 5
    warmup_batches: int = 10
    up_hysteresis: float = 0.0
    down_hysteresis: float = -0.25
    ceiling_coeff: float = 0.0

    def __post_init__(self) -> None:
        steps = tuple(sorted(set(self.candidate_steps)))
        if not steps or steps[0] < 0:
            raise ValueError("candidate_steps must be non-negative integers, at least one")
        if self.update_interval < 1 or self.warmup_batches < 0:
            raise ValueError("update_interval must be >= 1 and warmup_batches >= 0")
        object.__setattr__(self, "candidate_steps", steps)


#: SGLang's ``DEFAULT_ADAPTIVE_CONFIG`` (adaptive_spec_params.py, commit 015c8726).
SGLANG_DEFAULT_CONFIG: dict[int, SlotConfig] = {
    1: SlotConfig((1, 3, 5, 7), down_hysteresis=-0.25),
    8: SlotConfig((0, 1, 3), down_hysteresis=0.0),
    32: SlotConfig((0, 1), down_hysteresis=0.0),
    64: SlotConfig((0,), down_hysteresis=0.0),
}


@dataclass
class _Slot:
    """``AdaptiveStepSlot``'s state."""

    cfg: SlotConfig
    steps: int
    ema: float
    count: int = 0

    def update(self, mean_accepted: float) -> None:
        c = self.cfg
        if self.steps > 0:
            self.ema = (1 - c.ema_alpha) * self.ema + c.ema_alpha * mean_accepted
        self.count += 1
        if self.count <= c.warmup_batches or (self.count - c.warmup_batches) % c.update_interval:
            return
        self.recompute()

    def recompute(self) -> None:
        cands, c = self.cfg.candidate_steps, self.cfg
        idx = old = cands.index(self.steps)
        if self.steps == 0:  # probe the smallest positive step after a no-draft interval
            idx = min(idx + 1, len(cands) - 1)
            target = cands[idx]
            if target > 0 and self.ema < 0:
                self.ema = float(target - 1)
            self.steps = target
            return
        while idx > 0:
            prev = cands[idx - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) + c.down_hysteresis
            if self.ema <= drop:
                idx -= 1
            else:
                break
        if idx == old:
            while idx < len(cands) - 1 and self.ema > cands[idx] - 0.5 + c.up_hysteresis:
                idx += 1
        target = cands[idx]
        if c.ceiling_coeff > 0:
            ceiling = max(1, int(np.ceil(self.ema * c.ceiling_coeff)))
            if ceiling < target <= self.steps:
                while idx > 0 and cands[idx] > ceiling:
                    idx -= 1
                target = cands[idx]
        self.steps = target

    def horizon(self) -> int:
        """Updates until (and including) the next decision."""
        c = self.cfg
        if self.count < c.warmup_batches:
            return c.warmup_batches + c.update_interval - self.count
        return c.update_interval - (self.count - c.warmup_batches) % c.update_interval


class _SGLangController:
    def __init__(self, policy: SGLangAdaptive):
        self.keys = sorted(policy.config)
        self.graph_bs = sorted(policy.cuda_graph_bs) if policy.cuda_graph_bs else None
        self.slots = {}
        for key in self.keys:
            cfg = policy.config[key]
            steps = policy.initial_steps
            if steps not in cfg.candidate_steps:
                steps = cfg.candidate_steps[len(cfg.candidate_steps) // 2]
            self.slots[key] = _Slot(cfg, steps, float(steps - 1))

    def route(self, batch: int) -> _Slot:
        if self.graph_bs is not None:
            i = bisect.bisect_left(self.graph_bs, batch)
            if i < len(self.graph_bs):
                batch = self.graph_bs[i]
        i = bisect.bisect_right(self.keys, batch) - 1
        return self.slots[self.keys[max(0, i)]]

    def k_for_batch(self, batch: int) -> int:
        return self.route(batch).steps

    def horizon(self, batch: int) -> int:
        return self.route(batch).horizon()

    def observe(self, batch: int, k: int, accepted: np.ndarray) -> None:
        slot = self.route(batch)
        for mean in accepted.mean(axis=0).tolist():
            slot.update(mean)


@dataclass(frozen=True, slots=True)
class SGLangAdaptive:
    """SGLang adaptive speculative decoding (EMA + hysteresis per batch-size slot).

    ``config``: slot key (smallest batch size of the slot) -> ``SlotConfig``;
    ``initial_steps``: ``--speculative-num-steps`` (a slot without it among its candidates
    starts at its middle candidate); ``cuda_graph_bs``: captured batch sizes to pad to
    before routing (empty: no padding).
    """

    initial_steps: int
    config: Mapping[int, SlotConfig] = field(default_factory=lambda: dict(SGLANG_DEFAULT_CONFIG))
    cuda_graph_bs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.config:
            raise ValueError("the adaptive config needs at least one batch-size slot")
        object.__setattr__(self, "config", dict(sorted(self.config.items())))

    def __hash__(self) -> int:
        return hash((self.initial_steps, tuple(self.config.items()), self.cuda_graph_bs))

    @property
    def max_k(self) -> int:
        return max(max(c.candidate_steps) for c in self.config.values())

    def k_for_batch(self, batch: int) -> int:
        keys = sorted(self.config)
        i = max(0, bisect.bisect_right(keys, batch) - 1)
        if self.cuda_graph_bs:  # padding may route up to a later slot
            return max(max(self.config[k].candidate_steps) for k in keys[i:])
        return max(self.config[keys[i]].candidate_steps)

    def describe(self) -> str:
        return (
            "SGLang adaptive (EMA + hysteresis, slots "
            + ", ".join(f"bs>={k}: {list(c.candidate_steps)}" for k, c in self.config.items())
            + ")"
        )

    def start(self) -> Controller:
        return _SGLangController(self)


# --------------------------------------------------------------------------- vLLM


def _interp_itl(
    batch_stats: Mapping[int, Mapping[int, float]], max_batch: int, max_k: int
) -> np.ndarray:
    """ITL (ms), shape (max_batch + 1, max_k + 1), row b for batch size b (row 0 = row 1):
    ``_get_batch_stats`` (linear between the nearest profiled batch sizes, clamped beyond)
    and ``_get_itl`` (linear between profiled K) of vLLM's manager."""
    sizes = sorted(batch_stats)
    out = np.zeros((max_batch + 1, max_k + 1))
    for b in range(1, max_batch + 1):
        smaller = max((s for s in sizes if s < b), default=sizes[0])
        larger = min((s for s in sizes if s > b), default=sizes[-1])
        if b in batch_stats:
            stats = dict(batch_stats[b])
        elif smaller == larger:
            stats = dict(batch_stats[smaller])
        else:
            r = (b - smaller) / (larger - smaller)
            lo, hi = batch_stats[smaller], batch_stats[larger]
            stats = {k: lo[k] + r * (hi[k] - lo[k]) for k in lo}
        ks = sorted(stats)
        for k in range(max_k + 1):
            if k in stats:
                out[b, k] = stats[k]
            else:
                lower = max(x for x in ks if x < k)
                upper = min(x for x in ks if x > k)
                t = (k - lower) / (upper - lower)
                out[b, k] = stats[lower] + t * (stats[upper] - stats[lower])
    out[0] = out[1]  # no batch of 0 requests decodes; keeps the table finite
    return out


def goodput_table(rates: Sequence[float] | np.ndarray, itl_ms: np.ndarray) -> np.ndarray:
    """K*(b) for every batch size (shape (B + 1,)): argmax over K of (1 + sum of the first
    K ``rates``) / ITL(b, K), the first K on ties (the manager's strict ``>``)."""
    al = 1.0 + np.concatenate([[0.0], np.cumsum(rates)])
    return np.argmax(al[None, : itl_ms.shape[1]] / itl_ms[:, :], axis=1)


class _VllmController:
    def __init__(self, policy: VllmGoodput):
        self.policy = policy
        self.itl = policy.itl_table()
        self.k = policy.max_k
        self.table = goodput_table(policy.acceptance_rate_per_pos, self.itl)
        self.steps = 0
        self.drafted = np.zeros(self.k)
        self.accepted = np.zeros(self.k)

    def k_for_batch(self, batch: int) -> int:
        return int(self.table[min(batch, self.policy.max_batch)])

    def horizon(self, batch: int) -> int:
        if not self.policy.refresh:
            return 1 << 30
        return max(1, self.policy.warmup_steps - self.steps)

    def observe(self, batch: int, k: int, accepted: np.ndarray) -> None:
        n = accepted.shape[1]
        if k > 0:
            self.drafted[:k] += accepted.size
            self.accepted[:k] += (accepted[:, :, None] > np.arange(k)).sum(axis=(0, 1))
        self.steps += n
        if self.policy.refresh and self.steps > self.policy.warmup_steps:
            with np.errstate(invalid="ignore", divide="ignore"):
                rates = np.where(self.drafted > 0, self.accepted / self.drafted, 0.0)
            self.table = goodput_table(rates, self.itl)


@dataclass(frozen=True, slots=True)
class VllmGoodput:
    """vLLM's dynamic speculative decoding manager (see the module docstring).

    ``acceptance_rate_per_pos`` (K,): the offline per-position rates; ``batch_stats``:
    batch size -> {K: ITL ms} as profiled (must hold K = 0 and 1 and batch size 1);
    ``max_batch``: vLLM's ``max_num_seqs`` (batch sizes above use its row);
    ``refresh``: recompute the rates online after ``warmup_steps`` steps.
    """

    acceptance_rate_per_pos: tuple[float, ...]
    batch_stats: tuple[tuple[int, tuple[tuple[int, float], ...]], ...]
    max_batch: int
    warmup_steps: int = 10
    refresh: bool = True

    def __post_init__(self) -> None:
        stats = dict(self.batch_stats)
        if 1 not in stats or any(0 not in dict(v) or 1 not in dict(v) for v in stats.values()):
            raise ValueError("batch_stats needs batch size 1 and K = 0 and 1 at every size")
        if not self.acceptance_rate_per_pos or not all(
            0.0 <= a <= 1.0 for a in self.acceptance_rate_per_pos
        ):
            raise ValueError("acceptance_rate_per_pos must be rates in [0, 1], at least one")

    @staticmethod
    def of(
        rates: Sequence[float] | np.ndarray,
        batch_stats: Mapping[int, Mapping[int, float]],
        max_batch: int,
        **kw: object,
    ) -> VllmGoodput:
        stats = tuple(
            (int(b), tuple((int(k), float(v)) for k, v in sorted(s.items())))
            for b, s in sorted(batch_stats.items())
        )
        return VllmGoodput(tuple(float(r) for r in rates), stats, max_batch, **kw)  # type: ignore[arg-type]

    @property
    def max_k(self) -> int:
        return len(self.acceptance_rate_per_pos)

    def itl_table(self) -> np.ndarray:
        stats = {b: dict(s) for b, s in self.batch_stats}
        return _interp_itl(stats, self.max_batch, self.max_k)

    def k_for_batch(self, batch: int) -> int:
        return self.max_k

    def describe(self) -> str:
        mode = "online acceptance refresh" if self.refresh else "offline table"
        return f"vLLM dynamic SD ({mode}, K <= {self.max_k})"

    def start(self) -> Controller:
        return _VllmController(self)

    def static_table(self) -> tuple[tuple[int, int, int], ...]:
        """The offline table as vLLM ``[start_bs, end_bs, K]`` rows, equal rows merged."""
        ks = goodput_table(self.acceptance_rate_per_pos, self.itl_table())[1:]
        rows: list[list[int]] = []
        for b, k in enumerate(ks.tolist(), start=1):
            if rows and rows[-1][2] == k:
                rows[-1][1] = b
            else:
                rows.append([b, b, int(k)])
        return tuple((a, b, k) for a, b, k in rows)
