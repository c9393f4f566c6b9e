"""The policies the controllers' replay compares (sim/studies/serving/controllers.py,
``standard_policies``): the static best-k table (or a given one), SGLang's adaptive
speculative decoding, vLLM's dynamic speculative decoding as its offline table and with
its online acceptance refresh, every fixed k and plain decoding.

vLLM's offline profile is what vllm/v1/spec_decode/dynamic/generate_config.py measures
(``vllm_profile``): the per-position acceptance rates of the workload (here the
scenario's mix, averaged over the whole trace: vLLM profiles once, offline) and the ITL
at batch sizes 1, 4, 16, 64, 256 (up to ``max_num_seqs``) for K = 0, 1, 3, 5; the ITL here
is the cost model's iteration time at that batch and K with every request at the trace's
mean context (generate_config takes the median ITL of ``vllm bench serve``, which the
iteration time is up to scheduling noise).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from sim.model.controllers import SGLangAdaptive, VllmGoodput
from sim.model.policy import FixedK, KTable, SpeculationPolicy
from sim.simulation.serving.plan import ServingPlan

__all__ = [
    "BEST_K_TABLE",
    "GIVEN_TABLE",
    "VLLM_PROFILE_BATCHES",
    "VLLM_PROFILE_K",
    "standard_policies",
    "vllm_profile",
]


#: vLLM generate_config.py defaults: ``--batch-size-list 1 4 16 64 256``,
#: ``--num-speculative-tokens-list 1 3 5`` (K = 0 is the vanilla run).
VLLM_PROFILE_BATCHES: tuple[int, ...] = (1, 4, 16, 64, 256)


VLLM_PROFILE_K: tuple[int, ...] = (0, 1, 3, 5)


def vllm_profile(
    plan: ServingPlan, context_tokens: float, max_batch: int
) -> dict[int, dict[int, float]]:
    """ITL (ms) at vLLM's profiled batch sizes (those <= ``max_batch``, and
    ``max_batch`` itself) and K, from the plan's cost model at ``context_tokens`` per
    request, on the speculating server (K = 0 too: the server that profiles has its
    drafter loaded, so its plain iterations pay what its speculative ones pay for host
    work)."""
    sizes = sorted({b for b in VLLM_PROFILE_BATCHES if b <= max_batch} | {max_batch})
    return {
        b: {
            k: float(plan.cost.decode_ms(b, k, np.array([b * context_tokens]), drafter=True)[0])
            for k in VLLM_PROFILE_K
        }
        for b in sizes
    }


#: The static table's name (its policy's key and the reference of every advantage): chosen
#: by best k, or given with ``--k-table`` (then it is no best-k table).
BEST_K_TABLE = "best-k table"


GIVEN_TABLE = "given k table"


def standard_policies(
    plan: ServingPlan,
    table: KTable,
    ks: Sequence[int],
    initial_steps: int,
    context_tokens: float,
    table_name: str = BEST_K_TABLE,
) -> dict[str, SpeculationPolicy]:
    """Plain decoding, each fixed k, the static table (``table_name``: the best-k table,
    or ``GIVEN_TABLE`` for a table the user gave), SGLang adaptive (default config,
    starting at ``initial_steps``) and vLLM dynamic SD (offline table and online refresh)
    profiled on ``plan``; the plan's acceptance must cover k = 7 (SGLang's largest default
    candidate) and 5 (vLLM's profile)."""
    max_batch = plan.scheduler.max_running_requests
    rates = plan.acceptance.expected_cumulative()[1 : max(VLLM_PROFILE_K) + 1]
    stats = vllm_profile(plan, context_tokens, min(max_batch, max(VLLM_PROFILE_BATCHES)))
    top = max(stats)
    offline = VllmGoodput.of(rates, stats, top, refresh=False)
    out: dict[str, SpeculationPolicy] = {"plain decoding": FixedK(0)}
    out.update({f"k = {k}": FixedK(k) for k in ks})
    out[table_name] = table
    out["SGLang adaptive"] = SGLangAdaptive(initial_steps)
    out["vLLM DSD table"] = KTable(offline.static_table())
    out["vLLM DSD online"] = dataclasses.replace(offline, refresh=True)
    return out
