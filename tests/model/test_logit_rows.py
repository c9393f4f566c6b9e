"""Logit rows: a verify brings its draft tokens' rows of target logits a request, plain
decoding one; only the rows beyond the batch-1 cycle's are added."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.per_request_costs import logit_rows
from sim.binding.serving_cost import serving_cost
from sim.binding.serving_notes import logit_rows_note
from sim.model.batched_cost import IterationCost
from sim.model.cycle import cycle_cost
from sim.model.logit_rows import (
    BYTES_PER_LOGIT_RANGE,
    DEFAULT_BYTES_PER_LOGIT,
    LogitRows,
    logit_row_ms,
)
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.load import load_scenario
from tests.conftest import ROOT
from tests.model.test_batched_cost import LINEAR, PASSES

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"


def test_a_row_on_one_gpu_is_its_bytes_at_the_memory_bandwidth():
    # 128,256 logits x 12 bytes at 3,350 GB/s: 0.459 us
    assert logit_row_ms(128_256, 12.0, 3350.0) == pytest.approx(128_256 * 12 / 3.35e12 * 1e3)


def test_tensor_parallel_ranks_add_the_gather_of_the_bf16_row():
    # 8 ranks over 48 GB/s: 7/8 of 163,840 x 2 bytes on the wire, 5.97 us
    alone = logit_row_ms(163_840, 12.0, 1800.0)
    gathered = logit_row_ms(163_840, 12.0, 1800.0, gpus=8, bus_bandwidth_gbps=48.0)
    assert gathered - alone == pytest.approx(7 / 8 * 163_840 * 2 / 48e9 * 1e3)
    with pytest.raises(ValueError, match="bus bandwidth"):
        logit_row_ms(163_840, 12.0, 1800.0, gpus=8)


def test_the_default_lies_inside_its_range():
    low, high = BYTES_PER_LOGIT_RANGE
    assert low < DEFAULT_BYTES_PER_LOGIT < high


@pytest.mark.parametrize(
    ("draft", "rows"),
    [(0, 1), (1, 2), (3, 4), (TreeDraft(num_steps=4, topk=4, num_draft_tokens=16), 16)],
)
def test_rows_beyond_one_request_are_the_tokens_each_request_verifies(draft, rows):
    logits = LogitRows(0.5)
    assert logits.growth_ms(1, draft) == 0.0
    assert logits.growth_ms(9, draft) == pytest.approx(8 * rows * 0.5)
    assert LogitRows().growth_ms(9, draft) == 0.0


@pytest.mark.parametrize("k", range(0, 6))
def test_batch_one_is_still_the_batch_one_cycle_exactly(k):
    cost = IterationCost(PASSES, LINEAR, logits=LogitRows(0.25))
    assert cost.decode_ms(1, k, np.array([0.0])).tolist() == [cycle_cost(PASSES, k).total_ms]
    assert cost.decode_ms_at(1, k, 0.0) == cycle_cost(PASSES, k).total_ms


@pytest.mark.parametrize("k", [0, 3])
def test_the_rows_add_to_the_verify_phase_and_to_the_total(k):
    priced = IterationCost(PASSES, LINEAR, logits=LogitRows(0.25))
    adds_to_the_verify_phase_only(priced, 16, k, 15 * (k + 1) * 0.25)


def adds_to_the_verify_phase_only(priced: IterationCost, batch: int, k: int, added: float):
    """``priced`` (a cost over ``PASSES`` and ``LINEAR``) is the unpriced cost plus ``added``
    ms in its verify (decode) phase at ``batch`` requests drafting ``k``, its other phases
    the same bits."""
    plain = IterationCost(PASSES, LINEAR)
    context = np.array([4000.0])
    assert float(priced.decode_ms(batch, k, context)[0]) == pytest.approx(
        float(plain.decode_ms(batch, k, context)[0]) + added, rel=1e-12
    )
    before, after = plain.decode_phases(batch, k, context), priced.decode_phases(batch, k, context)
    assert float(after[1][0] - before[1][0]) == pytest.approx(added, rel=1e-12)
    assert [float(a[0]) for i, a in enumerate(after) if i != 1] == [
        float(b[0]) for i, b in enumerate(before) if i != 1
    ]


def test_one_value_and_many_give_the_same_bits():
    cost = IterationCost(PASSES, LINEAR, logits=LogitRows(0.25))
    many = np.linspace(0.0, 5e4, 40)  # beyond the scalar path's size: arrays
    arrays = cost.decode_ms(32, 3, many)
    assert arrays.tolist() == [cost.decode_ms_at(32, 3, float(s)) for s in many]


def test_a_scenario_prices_its_vocabulary_on_its_hardware():
    scenario = load_scenario(LLAMA)
    bound = bind(scenario)
    vocab = scenario.model.lm_head_params / scenario.model.hidden_size
    gpu = bound.hardware.current.gpu
    assert gpu is not None
    assert logit_rows(scenario, bound.hardware.current).row_ms == pytest.approx(
        logit_row_ms(vocab, DEFAULT_BYTES_PER_LOGIT, gpu.memory_bandwidth_gbps)
    )
    given = load_scenario(LLAMA, ["serving.bytes_per_logit=40"])
    assert logit_rows(given, bound.hardware.current).row_ms == pytest.approx(
        logit_row_ms(vocab, 40.0, gpu.memory_bandwidth_gbps)
    )
    no_head = load_scenario(LLAMA, ["model.lm_head_params=0"])
    assert logit_rows(no_head, bound.hardware.current).row_ms == 0.0


def test_the_note_describes_the_row_as_priced():
    """The serving note reads the vocabulary, the bytes a logit and whether those were
    given from the priced row (``LogitRows``), not from the scenario."""
    scenario = load_scenario(LLAMA)
    bound = bind(scenario)
    rows = logit_rows(scenario, bound.hardware.current)
    vocab = scenario.model.lm_head_params / scenario.model.hidden_size
    assert (rows.vocab, rows.bytes_per_logit) == (vocab, DEFAULT_BYTES_PER_LOGIT)
    assert not rows.given
    note = logit_rows_note(rows)
    assert (
        f"a row of {vocab:,.0f} target logits (12 bytes a logit, greedy decoding, assumed;" in note
    )
    given = load_scenario(LLAMA, ["serving.bytes_per_logit=40"])
    priced = logit_rows(given, bound.hardware.current)
    assert priced.given
    assert "(40 bytes a logit, given in the scenario;" in logit_rows_note(priced)
    assert logit_rows_note(LogitRows()).startswith("logit rows: not priced")


def test_more_bytes_a_logit_slow_the_speculative_iteration_more_than_the_plain_one():
    def iteration(overrides, k):
        scenario = load_scenario(LLAMA, overrides)
        cost = serving_cost(bind(scenario))
        return cost.decode_ms_at(64, k, 0.0)

    k = load_scenario(LLAMA).num_steps
    plain = iteration(["serving.bytes_per_logit=40"], 0) - iteration([], 0)
    spec = iteration(["serving.bytes_per_logit=40"], k) - iteration([], k)
    assert spec == pytest.approx((k + 1) * plain, rel=1e-6)
    assert plain > 0.0
