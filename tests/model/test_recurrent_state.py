"""Recurrent state: a hybrid target's request moves its state once read and once written per
token of every target pass; only the requests beyond the batch-1 cycle's are added."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.per_request_costs import recurrent_state
from sim.binding.serving_cost import serving_cost
from sim.binding.serving_notes import recurrent_state_note
from sim.binding.state_shape import state_bandwidth_fraction
from sim.calibration.physics import decode_roofline_ms
from sim.errors import SpecsimError
from sim.model.batched_cost import IterationCost
from sim.model.cycle import cycle_cost
from sim.model.logit_rows import LogitRows
from sim.model.recurrent_state import (
    DEFAULT_STATE_BANDWIDTH_FRACTION,
    STATE_BANDWIDTH_FRACTION_RANGE,
    BlockLayout,
    PooledState,
    RecurrentState,
    StateShape,
    block_layout,
    state_io_bytes,
)
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.load import load_scenario
from sim.uncertainty.perturb import input_draws, serving_inputs
from tests.conftest import ROOT
from tests.model.test_batched_cost import LINEAR, PASSES
from tests.model.test_logit_rows import adds_to_the_verify_phase_only

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
#: Qwen3.8-27B's 48 Gated DeltaNet layers: 48 value heads x 128 x 128 in float32.
QWEN38_STATE = 48 * 48 * 128 * 128 * 4


def test_a_verify_of_three_tokens_moves_one_read_and_three_writes():
    # 150,994,944 bytes x (1 read + 3 writes) = 603,979,776 bytes
    assert QWEN38_STATE == 150_994_944
    assert state_io_bytes(QWEN38_STATE, 3) == 603_979_776
    assert state_io_bytes(QWEN38_STATE, 1) == 2 * QWEN38_STATE


def test_128_requests_on_a_b200_by_hand():
    # 127 requests beyond one, k = 2: 127 x 603,979,776 bytes at 8,000 GB/s = 9.588 ms;
    # plain decoding: 127 x 301,989,888 bytes = 4.794 ms
    state = RecurrentState(StateShape(QWEN38_STATE), 8000.0)
    assert state.growth_ms(128, 2) == pytest.approx(127 * 603_979_776 / 8e12 * 1e3, rel=1e-12)
    assert state.growth_ms(128, 2) == pytest.approx(9.5882, abs=1e-4)
    assert state.growth_ms(128, 0) == pytest.approx(4.7941, abs=1e-4)


@pytest.mark.parametrize(
    ("draft", "tokens"),
    [(0, 1), (1, 2), (3, 4), (TreeDraft(num_steps=4, topk=4, num_draft_tokens=16), 16)],
)
def test_requests_beyond_one_write_a_state_per_token_they_verify(draft, tokens):
    state = RecurrentState(StateShape(1e6), 1000.0)  # 1 MB at 1 TB/s: 1 us a read or a write
    assert state.growth_ms(1, draft) == 0.0
    assert state.growth_ms(9, draft) == pytest.approx(8 * (1 + tokens) * 1e-3, rel=1e-12)
    assert RecurrentState().growth_ms(9, draft) == 0.0


@pytest.mark.parametrize(
    "bad",
    [
        lambda: StateShape(-1.0),
        lambda: StateShape(math.inf),
        lambda: StateShape(1.0, math.nan, 3),
        lambda: StateShape(1.0, 1e3, 0),
        lambda: RecurrentState(StateShape(1e6)),
    ],
)
def test_a_state_must_be_finite_non_negative_and_have_a_bandwidth(bad):
    with pytest.raises(ValueError):
        bad()
    with pytest.raises(ValueError):
        state_io_bytes(-1.0, 1)
    with pytest.raises(ValueError):
        state_io_bytes(1.0, 0)


@pytest.mark.parametrize("k", range(0, 4))
def test_a_zero_state_leaves_every_iteration_the_same_bits(k):
    plain = IterationCost(PASSES, LINEAR, logits=LogitRows(0.25))
    zero = IterationCost(
        PASSES, LINEAR, logits=LogitRows(0.25), state=RecurrentState(StateShape(), 8e3)
    )
    many = np.linspace(0.0, 5e4, 40)
    for batch in (1, 7, 64):
        assert zero.decode_ms(batch, k, many).tolist() == plain.decode_ms(batch, k, many).tolist()
        assert zero.decode_ms_at(batch, k, 3e3) == plain.decode_ms_at(batch, k, 3e3)
        got, want = zero.decode_phases(batch, k, many), plain.decode_phases(batch, k, many)
        assert [a.tolist() for a in got] == [b.tolist() for b in want]


@pytest.mark.parametrize("k", [0, 2])
def test_the_state_adds_to_the_verify_phase_only_and_not_at_batch_one(k):
    state = RecurrentState(StateShape(QWEN38_STATE), 8000.0)
    priced = IterationCost(PASSES, LINEAR, state=state)
    assert priced.decode_ms_at(1, k, 0.0) == cycle_cost(PASSES, k).total_ms
    adds_to_the_verify_phase_only(priced, 16, k, state.growth_ms(16, k))


def test_a_scenario_without_a_state_builds_the_same_costs_and_with_one_prices_it():
    scenario = load_scenario(LLAMA)
    bound = bind(scenario)
    assert scenario.model.state_bytes_per_request is None
    assert serving_cost(bound).state == RecurrentState()
    hybrid = load_scenario(LLAMA, [f"model.state_bytes_per_request={QWEN38_STATE}"])
    state = recurrent_state(hybrid, bind(hybrid).hardware.current)
    gpu = bound.hardware.current.gpu
    assert gpu is not None
    assert state == RecurrentState(StateShape(float(QWEN38_STATE)), gpu.memory_bandwidth_gbps)
    assert serving_cost(bind(hybrid)).state == state
    assert "recurrent state: 151.0 MB a request" in recurrent_state_note(state)
    assert "conv state not priced" in recurrent_state_note(state)


def test_a_state_without_a_gpu_preset_names_the_field():
    hybrid = load_scenario(LLAMA, [f"model.state_bytes_per_request={QWEN38_STATE}"])
    bare = dataclasses.replace(bind(hybrid).hardware.current, gpu=None)
    with pytest.raises(SpecsimError) as err:
        recurrent_state(hybrid, bare)
    assert err.value.field == "hardware.gpu"


#: Qwen3.8-27B's conv window a position: 48 layers x (2 x 16 key heads x 128 + 48 value
#: heads x 128 = 10,240 channels) x 2 bytes (bfloat16); kernel 4: 3 positions.
QWEN38_CONV = 48 * 10_240 * 2
QWEN38 = StateShape(QWEN38_STATE, QWEN38_CONV, 3)


def test_the_conv_window_is_read_and_written_once_a_pass_by_hand():
    """A verify of 3 tokens (k = 2): the recurrent state 1 read + 3 writes (603,979,776
    bytes), the conv window's 3 positions read and its 3 + 2 written (8 x 983,040 =
    7,864,320); plain decoding 2 x 150,994,944 + 6 x 983,040 = 307,888,128."""
    assert QWEN38_CONV == 983_040
    assert QWEN38.io_bytes(3) == 603_979_776 + 7_864_320 == 611_844_096
    assert QWEN38.io_bytes(1) == 307_888_128
    assert StateShape(QWEN38_STATE).io_bytes(3) == state_io_bytes(QWEN38_STATE, 3)
    conv = RecurrentState(QWEN38, 8000.0)
    assert conv.growth_ms(128, 2) == pytest.approx(127 * 611_844_096 / 8e9, rel=1e-12)
    assert "its conv state, 2.95 MB (3 positions" in recurrent_state_note(conv)


def test_a_slot_holds_both_states_and_the_window_grows_with_k():
    """vLLM's page a layer holds the recurrent state and a window of kernel - 1 + k
    positions: 1 + k of them a request. k = 2: 3 x (150,994,944 + 5 x 983,040) =
    467,730,432 bytes (the "3 x (151 + 4.9) MB" of docs/studies/hybrid-recurrent-state.md)."""
    assert QWEN38.slot_bytes(3) == 3 * (QWEN38_STATE + 5 * QWEN38_CONV) == 467_730_432
    assert QWEN38.slot_bytes(1) == QWEN38_STATE + 3 * QWEN38_CONV == 153_944_064
    with pytest.raises(ValueError):
        QWEN38.slot_bytes(0)


def test_the_pooled_state_takes_its_slots_bytes_in_pool_tokens_rounded_up():
    """Qwen3.8-27B at k = 2: 3 slots x 150,994,944 bytes over a 69,632-byte pool token
    (16 attention layers and the MTP layer) = 6,505.4 -> 6,506 tokens; plain decoding one
    slot over the plain pool's 65,536 bytes = 2,304 exactly. With the conv state:
    467,730,432 / 69,632 = 6,717.2 -> 6,718 and 153,944,064 / 65,536 = 2,349."""
    pooled = PooledState(StateShape(QWEN38_STATE), 69_632.0, 65_536.0)
    assert pooled.tokens(3, True) == 6_506
    assert pooled.tokens(1, False) == 2_304 == QWEN38_STATE // 65_536
    both = PooledState(QWEN38, 69_632.0, 65_536.0)
    assert (both.tokens(3, True), both.tokens(1, False)) == (6_718, 2_349)
    for bad in ((StateShape(), 1.0, 1.0), (QWEN38, 0.0, 1.0), (QWEN38, 1.0, -1.0)):
        with pytest.raises(ValueError):
            PooledState(*bad)
    with pytest.raises(ValueError):
        pooled.tokens(0, True)


#: Qwen3.8-27B's states a request (48 Gated DeltaNet layers): recurrent 48 x 48 x 128 x 128 x
#: 4 bytes, conv 48 x 10,240 channels x 2 bytes a position over 3 positions; 16 attention
#: layers of 4,096 bytes a token.
QWEN38_SHAPE = StateShape(48 * 48 * 128 * 128 * 4, 48 * 10240 * 2, 3)


def _qwen38_layout(k: int, drafter: int, prefix_caching: bool = True) -> BlockLayout:
    """vLLM's layout of Qwen3.8-27B's pool: 48 linear and 16 attention layers of 4,096
    bytes a token, ``drafter`` attention layers more, speculating ``k`` tokens."""
    return block_layout(
        QWEN38_SHAPE,
        linear_layers=48,
        attention_layers=16,
        drafter_layers=drafter,
        kv_bytes_per_layer=4096.0,
        speculative_tokens=k,
        prefix_caching=prefix_caching,
    )


@pytest.mark.parametrize(
    ("k", "drafter", "block", "groups", "tokens"),
    [
        # MTP: a page 3,145,728 + 5 x 20,480 = 3,248,128 bytes; 16 x ceil(49.56) = 800;
        # 17 attention layers (g = 17), ceil(48 / 17) = 3 linear groups; 3 x 4 blocks
        (2, 1, 800, 3, 9_600),
        # DSpark: 3,145,728 + 10 x 20,480 = 3,350,528; 16 x 52 = 832; 21 layers, 3 groups,
        # 3 x 9 blocks
        (7, 5, 832, 3, 22_464),
        # plain: 3,145,728 + 3 x 20,480 = 3,207,168; 16 x 49 = 784; g = 16, 3 x 2 blocks
        (0, 0, 784, 3, 4_704),
    ],
)
def test_vllms_block_layout_by_hand(k, drafter, block, groups, tokens):
    layout = _qwen38_layout(k, drafter)
    assert (layout.block_tokens, layout.linear_groups) == (block, groups)
    assert layout.pool_tokens_per_block == block  # one attention group of g layers
    assert layout.state_tokens(1 + k) == tokens


@pytest.mark.parametrize(
    ("k", "drafter", "blocks", "tokens"),
    [
        (2, 1, 3, 7_200),  # MTP: 3 groups x (1 + 2) blocks of 800 (9,600 with it)
        (7, 5, 8, 19_968),  # DSpark: 3 x 8 x 832 (22,464)
        (0, 0, 1, 2_352),  # plain: 3 x 1 x 784 (4,704)
    ],
)
def test_without_prefix_caching_one_state_block_fewer_a_group_by_hand(k, drafter, blocks, tokens):
    """--no-enable-prefix-caching: vLLM's mamba_cache_mode "none" keeps 1 + k blocks a
    linear group, the block size unchanged."""
    layout = _qwen38_layout(k, drafter, prefix_caching=False)
    assert layout.state_blocks(1 + k) == blocks == 1 + k
    assert layout.state_tokens(1 + k) == tokens


def test_a_group_size_between_the_buckets():
    """12 attention and 13 linear layers: 13 < 1.5 x 12, so g = 13 (vLLM pads the
    attention bucket to 13); a block holds 16 x 13 / 12 pool tokens of the 12 layers."""
    layout = block_layout(
        StateShape(13 * 4096 * 16.0),
        linear_layers=13,
        attention_layers=12,
        drafter_layers=0,
        kv_bytes_per_layer=4096.0,
        speculative_tokens=0,
    )
    assert (layout.block_tokens, layout.linear_groups) == (16, 1)
    assert layout.pool_tokens_per_block == pytest.approx(16 * 13 / 12, rel=1e-12)
    assert layout.state_tokens(1) == math.ceil(2 * 16 * 13 / 12)


def test_the_state_moves_at_its_share_of_peak_by_hand():
    """At half of a B200's 8 TB/s, 127 requests beyond one verifying 3 tokens (611,844,096
    bytes each with the conv window) take 127 x 611,844,096 / 4e12 s = 19.43 ms, twice the
    peak's 9.71 ms; the default share is peak."""
    peak = RecurrentState(QWEN38, 8000.0)
    half = RecurrentState(QWEN38, 8000.0, 0.5)
    assert peak.fraction == DEFAULT_STATE_BANDWIDTH_FRACTION == 1.0
    assert half.growth_ms(128, 2) == pytest.approx(127 * 611_844_096 / 4e9, rel=1e-12)
    assert half.growth_ms(128, 2) == pytest.approx(2 * peak.growth_ms(128, 2), rel=1e-12)
    assert half.growth_ms(1, 2) == 0.0
    for bad in (0.0, -0.5, 1.01, math.nan):
        with pytest.raises(ValueError):
            RecurrentState(QWEN38, 8000.0, bad)


def test_a_scenario_gives_the_share_and_the_note_says_it():
    default = load_scenario(LLAMA, [f"model.state_bytes_per_request={QWEN38_STATE}"])
    hardware = bind(default).hardware.current
    at_peak = recurrent_state(default, hardware)
    assert at_peak.fraction == 1.0
    assert "at the GPU's peak bandwidth (serving.state_bandwidth_fraction 1; public GDN" in (
        recurrent_state_note(at_peak)
    )
    given = load_scenario(
        LLAMA,
        [f"model.state_bytes_per_request={QWEN38_STATE}", "serving.state_bandwidth_fraction=0.6"],
    )
    state = recurrent_state(given, hardware)
    assert state == dataclasses.replace(at_peak, fraction=0.6)
    assert state.request_ms(0) == pytest.approx(at_peak.request_ms(0) / 0.6, rel=1e-12)
    assert "at 0.6 of the GPU's peak bandwidth (serving.state_bandwidth_fraction, else" in (
        recurrent_state_note(state)
    )


@pytest.mark.parametrize(
    ("efficiency", "share"), [(0.7, 0.7), (0.55, 0.55), (0.3, 0.40), (1.2, 1.0)]
)
def test_not_given_the_share_is_the_measured_decodes_efficiency_clipped(efficiency, share):
    """With a measured batch-1 decode of the weights' roofline at peak / e (one H100, one
    rank, graphed: no all-reduce or launch in it), the states move at e of peak, clipped to
    the public readings' 0.40 up to peak; a given share wins; a derived decode takes
    hardware.bandwidth_efficiency."""
    base = load_scenario(LLAMA, [f"model.state_bytes_per_request={QWEN38_STATE}"])
    roof_ms = decode_roofline_ms(base)
    state = f"model.state_bytes_per_request={QWEN38_STATE}"
    measured = load_scenario(LLAMA, [state, f"timing.decode_ms={roof_ms / efficiency!r}"])
    assert state_bandwidth_fraction(measured) == pytest.approx(share, rel=1e-9)
    hardware = bind(measured).hardware.current
    assert recurrent_state(measured, hardware).fraction == pytest.approx(share, rel=1e-9)
    given = load_scenario(
        LLAMA,
        [
            state,
            f"timing.decode_ms={roof_ms / efficiency!r}",
            "serving.state_bandwidth_fraction=0.9",
        ],
    )
    assert state_bandwidth_fraction(given) == 0.9
    derived = load_scenario(LLAMA, [state, "hardware.bandwidth_efficiency=0.8"])
    assert state_bandwidth_fraction(derived) == 0.8


def test_the_serving_cost_prices_the_share_on_the_bound_hardware_model(monkeypatch):
    """The serving cost of a bound hybrid reads the share its measured decode implies from
    the ``Bound``'s hardware model: the scenario is not taken apart again below the
    binding (sim/binding/efficiency.py's ``scenario_hardware`` is never called). The
    share is the same arithmetic on an equal hardware model, so it is equal exactly."""
    import sim.binding.efficiency as efficiency

    state = f"model.state_bytes_per_request={QWEN38_STATE}"
    roof_ms = decode_roofline_ms(load_scenario(LLAMA, [state]))
    measured = load_scenario(LLAMA, [state, f"timing.decode_ms={roof_ms / 0.7!r}"])
    share = state_bandwidth_fraction(measured)
    bound = bind(measured)

    def taken_apart_again(scenario):
        raise AssertionError("the scenario's hardware was taken apart again")

    monkeypatch.setattr(efficiency, "scenario_hardware", taken_apart_again)
    cost = serving_cost(
        bound, kv_bytes_per_token=0.0, attention_flops_per_pair=0.0, reference_context_tokens=0.0
    )
    assert cost.state.fraction == share
    assert share == pytest.approx(0.7, rel=1e-9)


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.2"])
def test_a_share_outside_zero_to_one_is_refused_naming_the_field(bad):
    with pytest.raises(SpecsimError) as err:
        load_scenario(LLAMA, [f"serving.state_bandwidth_fraction={bad}"])
    assert "serving.state_bandwidth_fraction" in str(err.value)


def test_a_serving_answer_draws_the_share_only_where_a_state_is_priced_and_not_given():
    """Left at its default on a hybrid target, the share is a serving input uniform over
    the public readings' lowest to peak (nominal: peak); a target without a state, a share
    the scenario gives, or one with its own [uncertainty] entry add none."""
    hybrid = load_scenario(LLAMA, [f"model.state_bytes_per_request={QWEN38_STATE}"])
    drawn = {u.field: u for u in serving_inputs(bind(hybrid))}
    share = drawn["serving.state_bandwidth_fraction"]
    assert (share.kind, share.origin, share.nominal) == ("uniform", "assumed", 1.0)
    assert (share.low, share.high) == STATE_BANDWIDTH_FRACTION_RANGE == (0.40, 1.0)
    assert "public readings of other Gated DeltaNet decode kernels span 0.4-0.95" in share.reason
    draws = [dict(d) for d in input_draws(bind(hybrid), seed=3).overrides]
    values = [d["serving.state_bandwidth_fraction"] for d in draws]
    assert 0.40 <= min(values) < max(values) <= 1.0
    measured = load_scenario(
        LLAMA,
        [
            f"model.state_bytes_per_request={QWEN38_STATE}",
            f"timing.decode_ms={decode_roofline_ms(hybrid) / 0.7!r}",
        ],
    )
    share = {u.field: u for u in serving_inputs(bind(measured))}["serving.state_bandwidth_fraction"]
    assert share.nominal == pytest.approx(0.7, rel=1e-9)  # the server's measured efficiency
    assert (share.low, share.high) == (0.40, 1.0)
    for scenario in (
        load_scenario(LLAMA),
        load_scenario(
            LLAMA,
            [
                f"model.state_bytes_per_request={QWEN38_STATE}",
                "serving.state_bandwidth_fraction=0.7",
            ],
        ),
    ):
        fields = [u.field for u in serving_inputs(bind(scenario))]
        assert "serving.state_bandwidth_fraction" not in fields
