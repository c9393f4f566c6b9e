"""Adaptive controllers: SGLang's EMA + hysteresis slots and vLLM's goodput manager, checked
against their rules by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.controllers import (
    SGLANG_DEFAULT_CONFIG,
    AdaptivePolicy,
    SGLangAdaptive,
    SlotConfig,
    VllmGoodput,
    goodput_table,
)
from sim.model.policy import FixedK

#: vLLM's example profile (vllm/v1/spec_decode/dynamic/dynamic.py ``_DYNAMIC_STATS``, E1).
E1 = [0.68, 0.39, 0.20, 0.10, 0.06, 0.03, 0.02]
STATS = {
    1: {0: 6.87, 1: 7.97, 3: 9.41, 4: 9.91, 5: 10.8, 7: 12.29},
    4: {0: 6.87, 1: 7.97, 3: 9.41, 4: 9.91, 5: 10.8, 7: 12.29},
    16: {0: 7.3, 1: 8.39, 3: 9.95, 4: 10.8, 5: 11.59, 7: 13.11},
    32: {0: 7.64, 1: 8.97, 3: 10.78, 4: 11.79, 5: 12.81, 7: 14.86},
    64: {0: 8.53, 1: 10.44, 3: 13.16, 4: 15.7, 5: 17.54, 7: 120.57},
}


def feed(ctl, batch: int, k_accepted: float, n: int, requests: int = 4) -> None:
    """n iterations in which every request accepted ``k_accepted`` drafts."""
    ctl.observe(batch, ctl.k_for_batch(batch), np.full((requests, n), k_accepted))


def test_sglang_slot_rises_then_holds():
    ctl = SGLangAdaptive(3, {1: SlotConfig((1, 3, 5, 7))}).start()
    assert ctl.k_for_batch(1) == 3 and ctl.horizon(1) == 15  # warm-up 10 + interval 5
    feed(ctl, 1, 3.0, 14)
    assert ctl.k_for_batch(1) == 3 and ctl.horizon(1) == 1
    feed(ctl, 1, 3.0, 1)  # 15th update: EMA 3 - 0.8^15 = 2.96 > 3 - 0.5: up to 5
    assert ctl.k_for_batch(1) == 5 and ctl.horizon(1) == 5
    feed(ctl, 1, 3.0, 50)  # EMA -> 3 <= 5 - 0.5: stays (not > 4.5; not <= 3 - 0.5 - 0.25)
    assert ctl.k_for_batch(1) == 5


def test_sglang_slot_falls_to_zero_and_probes_back():
    ctl = SGLangAdaptive(3, {8: SlotConfig((0, 1, 3), down_hysteresis=0.0)}).start()
    feed(ctl, 8, 0.1, 15)  # EMA 2 -> ~0.16: below 1 - 0.5 and 0.5: straight down to 0
    assert ctl.k_for_batch(8) == 0
    feed(ctl, 8, 0.0, 5)  # at 0 the EMA is frozen; the next decision probes one step up
    assert ctl.k_for_batch(8) == 1
    feed(ctl, 8, 0.1, 5)
    assert ctl.k_for_batch(8) == 0


def test_sglang_routing_and_defaults():
    policy = SGLangAdaptive(3)
    assert isinstance(policy, AdaptivePolicy) and not isinstance(FixedK(3), AdaptivePolicy)
    assert policy.max_k == 7
    ctl = policy.start()
    assert [ctl.k_for_batch(b) for b in (1, 7, 8, 31, 32, 64, 500)] == [3, 3, 3, 3, 1, 0, 0]
    assert SGLANG_DEFAULT_CONFIG[1].down_hysteresis == -0.25
    padded = SGLangAdaptive(3, cuda_graph_bs=(1, 2, 4, 8, 16, 32)).start()
    assert padded.k_for_batch(5) == 3  # 5 -> graph bs 8 -> the bs>=8 slot ([0, 1, 3]: 3)
    assert padded.k_for_batch(20) == 1  # 20 -> 32 -> the bs>=32 slot, middle of [0, 1]
    assert policy.k_for_batch(40) == 1 and policy.k_for_batch(2) == 7


def test_vllm_goodput_by_hand():
    itl = VllmGoodput.of(E1, STATS, 64).itl_table()
    assert itl[1, 2] == pytest.approx((7.97 + 9.41) / 2)  # K interpolated
    assert itl[8, 0] == pytest.approx(6.87 + (8 - 4) / 12 * (7.3 - 6.87))  # bs interpolated
    table = goodput_table(E1, itl)
    # bs 1: 1.68/7.97 = .211, 2.07/8.69 = .238, 2.27/9.41 = .241, 2.37/9.91 = .239 -> K = 3
    # bs 64: 1.68/10.44 = .161, 2.07/11.80 = .175, 2.27/13.16 = .172 -> K = 2
    assert table[1] == 3 and table[64] == 2
    rows = VllmGoodput.of(E1, STATS, 64, refresh=False).static_table()
    assert rows[0][:2] == (1, rows[0][1]) and rows[0][2] == 3 and rows[-1] == (rows[-1][0], 64, 2)


def test_vllm_refresh_follows_observed_acceptance_up_to_drafted_positions():
    policy = VllmGoodput.of(E1, STATS, 64, warmup_steps=10)
    ctl = policy.start()
    assert ctl.k_for_batch(1) == 3
    k = ctl.k_for_batch(1)
    ctl.observe(1, k, np.full((2, 9), k))  # everything accepted, still warming up
    assert ctl.k_for_batch(1) == 3 and ctl.horizon(1) == 1
    ctl.observe(1, k, np.full((2, 2), k))  # past warm-up: positions 1..3 at rate 1, 4..7 at 0
    assert ctl.k_for_batch(1) == 3  # rate 0 where never drafted: no reason to go beyond 3
    ctl.observe(1, 3, np.zeros((2, 50)))  # all steps so far count: rates 22/122 = 0.18
    assert ctl.k_for_batch(1) == 3  # 1.54 / 9.41 = .164 > 1.18 / 7.97 = .148 > 1 / 6.87
    ctl.observe(1, 3, np.zeros((2, 500)))  # 22/1122 = 0.02: plain decoding wins
    assert ctl.k_for_batch(1) == 0
    static = VllmGoodput.of(E1, STATS, 64, refresh=False).start()
    static.observe(1, 3, np.zeros((2, 50)))
    assert static.k_for_batch(1) == 3 and static.horizon(1) > 10**6
    with pytest.raises(ValueError):
        VllmGoodput.of(E1, {4: STATS[4]}, 64)
