"""Serving validation: published concurrency curves, calibrated on batch 1 and one point.

Each curve is a speedup (or a throughput) of speculative decoding against concurrency
(closed loop of B users), with and without speculation on the same server. A case builds
a scenario from the model's public config and the GPU preset, takes its batch-1 facts as
published, calibrates ONE more number on ONE more point of the curve (the per-cycle
overhead on the speedup at the smallest batch, or the acceptance of a drafter whose
acceptance is not published), and scores every other point with the serving simulation
(sim/simulation/serving/): the paired ratio of aggregate tok/s over replications, with
its 95% interval turned into the row's standard error.

Calibration uses the iteration-cost ratio at the mean context (the renewal-reward value
AL x T_decode(B) / T_cycle(B), deterministic), scoring the full simulation (prefill,
scheduling, lengths drawn per request).
"""

from __future__ import annotations

from sim.validation.cases import Case
from sim.validation.eagle3_paper_cases import case_eagle3_sglang, case_eagle3_vllm, sglang_scenarios
from sim.validation.eagle3_paper_misses import VLLM_MISS, eagle1_rows_note, sglang_miss
from sim.validation.kimi_rtx6kpro_cases import case_kimi_rtx6kpro, kimi_scenario
from sim.validation.kimi_rtx6kpro_miss import kimi_miss
from sim.validation.serving_case_text import noted, with_note

__all__ = ["serving_cases"]


def serving_cases() -> tuple[Case, ...]:
    """Every serving case of the validation report."""
    eagle3, eagle = (noted(c, sglang_miss()) for c in case_eagle3_sglang())
    sglang = (eagle3, with_note(eagle, eagle1_rows_note(eagle.rows, sglang_scenarios()[1])))
    vllm = tuple(noted(c, VLLM_MISS) for c in case_eagle3_vllm())
    kimi = case_kimi_rtx6kpro()
    return (*sglang, *vllm, noted(kimi, kimi_miss(kimi.rows, kimi_scenario()[0])))
