"""A scenario's KV capacity: given, or derived from its own GPU, weights, TP and engine
(sim/binding/kv_capacity.py), with the reserve drawn in the serving intervals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.kv_capacity import kv_capacity, stored_weight_bytes
from sim.errors import SpecsimError
from sim.hardware.memory import GIB, reserve_range_gib, sglang_mem_fraction_static
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.engine import run_replication
from sim.simulation.serving.setup import serving_setup
from sim.simulation.serving.simulate import serving_streams
from sim.uncertainty.perturb import serving_inputs

#: Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json): 32 layers of 218.1M, a 525.3M head
#: and an embedding of the same size: 8.03B parameters, BF16.
LLAMA: dict[str, Any] = {
    "layers": 32,
    "hidden_size": 4096,
    "layer_params": 218.1e6,
    "lm_head_params": 525.3e6,
    "draft_params": 0.424e9,
    "kv_bytes_per_token": 131072.0,
    # the ungraphed prefill's launches (a dense layer's 11-18 kernels, docs/reference.md):
    # serving_setup prices one prefill before any run; no capacity reads it
    "kernels_per_layer": 14,
}


WEIGHTS_GIB = (32 * 218.1e6 + 2 * 525.3e6) * 2 / GIB


def _scenario(**over: Any) -> Scenario:
    raw: dict[str, Any] = {
        "name": "kv",
        "model": LLAMA,
        "hardware": {"gpus": 1, "gpu": "H100", "interconnect": "nvlink4"},
        "timing": {"decode_ms": 6.3, "context_tokens": 400, "verify_cuda_graph": True},
        "speculation": {"num_steps": 3},
        "acceptance": {"alpha": 0.7},
        "workload": {"input_tokens": 128, "output_tokens": 256},
        "serving": {"concurrency": 4},
    }
    for key, value in over.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    return scenario_from_dict(raw, source="test")


def test_the_weights_are_the_models_own():
    params = 32 * 218.1e6 + 2 * 525.3e6  # every layer, the head and the embedding
    assert stored_weight_bytes(_scenario()) == pytest.approx(params * 2, rel=1e-12)


def test_vllm_rule_by_hand_with_the_default_reserve():
    sc = _scenario(server={"engine": "vllm"})
    cap = kv_capacity(sc, speculates=True)
    reserve = reserve_range_gib("vllm", 80.0)[0]
    weights, drafter = WEIGHTS_GIB, 0.424e9 * 2 / GIB
    kv_gib = 80 * 0.9 - weights - drafter - reserve
    per_token = 131072 + 131072 / 32  # the drafter's one layer
    assert cap.origin == "derived"
    assert abs(cap.tokens - kv_gib * GIB / per_token) <= 1 + 1e-3 * cap.tokens
    # plain decoding: no drafter weights, no drafter KV
    plain = (80 * 0.9 - weights - reserve) * GIB / 131072
    assert abs(cap.plain - plain) <= 1 + 1e-3 * plain
    # the range: the reserve's ends
    low, high = cap.range
    assert low < cap.tokens < high


def test_sglang_rule_keeps_the_drafter_outside_its_fraction():
    sc = _scenario(server={"engine": "sglang"})
    cap = kv_capacity(sc, speculates=True)
    frac = sglang_mem_fraction_static(80 * 1024, 1, True)
    reserve = reserve_range_gib("sglang", 80.0)[0]
    expected = (80 * frac - WEIGHTS_GIB - reserve) * GIB / 131072
    assert abs(cap.tokens - expected) <= 1 + 1e-3 * expected
    assert cap.plain > cap.tokens  # without the drafter SGLang's fraction is larger


def test_without_an_engine_vllm_is_assumed_and_said():
    cap = kv_capacity(_scenario(), speculates=True)
    assert cap.origin == "derived" and "vLLM's rule ASSUMED" in cap.note


def test_a_given_capacity_or_reserve_is_used():
    given = kv_capacity(_scenario(serving={"kv_capacity_tokens": 5000}), speculates=True)
    assert (given.tokens, given.plain, given.origin) == (5000, None, "given")
    a = kv_capacity(_scenario(serving={"kv_reserve_gib": 1.0}), speculates=False)
    b = kv_capacity(_scenario(serving={"kv_reserve_gib": 3.0}), speculates=False)
    assert a.range is None  # a given reserve: no range
    assert a.tokens - b.tokens == pytest.approx(2 * GIB / 131072, abs=2)


@pytest.mark.parametrize(
    ("over", "why"),
    [
        (
            {
                "hardware": {"gpus": 1, "interconnect": "nvlink4", "gpu": None},
                "timing": {"verify_ms": 7.0, "draft_step_ms": 0.5, "draft_extend_ms": 0.5},
            },
            "hardware.gpu",
        ),
        ({"model": {"kv_bytes_per_token": None}}, "kv_bytes_per_token"),
        ({"server": {"engine": "trtllm"}}, "no memory rule"),
    ],
)
def test_unlimited_where_the_scenario_cannot_size_it(over, why):
    cap = kv_capacity(_scenario(**over), speculates=True)
    assert cap.tokens is None and cap.origin == "unlimited" and why in cap.note


def test_weights_that_do_not_fit_are_an_error_naming_the_field():
    sc = _scenario(hardware={"gpus": 1, "interconnect": "pcie-gen4", "gpu": "RTX-3090"},
                   model={**LLAMA, "layer_params": 700e6})  # fmt: skip
    with pytest.raises(SpecsimError) as err:
        kv_capacity(sc, speculates=True)
    assert err.value.field == "serving.kv_capacity_tokens"


def test_the_plan_gives_plain_decoding_its_own_capacity():
    setup = serving_setup(bind(_scenario(server={"engine": "vllm"})))
    sched = setup.plan.scheduler
    assert sched.plain_kv_capacity_tokens > sched.kv_capacity_tokens
    base, spec = (setup.policies[n] for n in ("baseline", "speculative"))
    assert sched.kv_capacity(base) == sched.plain_kv_capacity_tokens
    assert sched.kv_capacity(spec) == sched.kv_capacity_tokens
    assert any(a.startswith("KV capacity: derived") for a in setup.assumptions)


def test_the_reserve_is_drawn_only_when_the_capacity_is_derived_by_default():
    fields = {u.field for u in serving_inputs(bind(_scenario()))}
    assert "serving.kv_reserve_gib" in fields
    for sc in (
        _scenario(serving={"kv_capacity_tokens": 9000}),
        _scenario(serving={"kv_reserve_gib": 2.0}),
        _scenario(model={"kv_bytes_per_token": None}),
    ):
        assert "serving.kv_reserve_gib" not in {u.field for u in serving_inputs(bind(sc))}
    drawn = with_overrides(_scenario(), {"serving.kv_reserve_gib": 8.0}, source="test")
    assert kv_capacity(drawn, True).tokens < kv_capacity(_scenario(), True).tokens


#: A recurrent state a request per rank large enough for the pool to bind (1 GB a slot).
STATE_BYTES = 1e9


def test_a_hybrid_targets_state_comes_out_of_vllms_pool_by_hand():
    """vLLM keeps 1 + k state pages a request in the KV pool: at k = 3 a running request
    holds ceil(4 x 1 GB / (131,072 + 4,096) bytes a token) = 29,593 tokens of the
    speculating server's pool beside its context and lookahead, and ceil(1 GB / 131,072) =
    7,630 of the plain server's; the capacities themselves do not move."""
    sc = _scenario(server={"engine": "vllm"}, model={"state_bytes_per_request": STATE_BYTES})
    cap = kv_capacity(sc, speculates=True)
    base = kv_capacity(_scenario(server={"engine": "vllm"}), speculates=True)
    assert (cap.tokens, cap.plain) == (base.tokens, base.plain)
    assert cap.state.tokens(4, True) == 29_593 == -(-4 * STATE_BYTES // (131072 + 4096))
    assert cap.state.tokens(1, False) == 7_630 == -(-STATE_BYTES // 131072)
    assert "29,593 tokens of the pool at k = 3, 7,630 for plain decoding" in cap.note
    assert cap.to_dict()["state"] == {
        "recurrent_bytes": STATE_BYTES,
        "conv_bytes_per_position": 0.0,
        "conv_positions": 0,
    }
    assert "state" not in base.to_dict()
    setup = serving_setup(bind(sc))
    spec, plain = setup.draftings["speculative"], setup.draftings["baseline"]
    assert spec.lookahead == 4 + 29_593 and plain.lookahead == 1 + 7_630


def test_the_state_bounds_concurrency_in_the_pool():
    """At 32 users of 128 + 256 tokens the speculating server's pool (a reserve of 40 GiB
    leaves 16.25 GiB a GPU: 129,08x tokens) holds at most cap // (400 + 29,593) = 4
    requests with the state (384 + 4 tokens in vLLM's whole blocks of 16: 400), and every
    user's request without it; the decode batch never exceeds that."""

    def largest_batch(**model: float) -> tuple[int, int]:
        sc = _scenario(
            server={"engine": "vllm"},
            model=model,
            serving={"concurrency": 32, "kv_reserve_gib": 40.0},
            workload={"requests": 64},
        )
        setup = serving_setup(bind(sc))
        drafting = setup.draftings["speculative"]
        rec = run_replication(setup.plan, drafting, serving_streams(np.random.SeedSequence(3)))
        used = np.flatnonzero(rec.batch_time_ms)
        return int(used.max()), drafting.kv_capacity // drafting.held(384)

    with_state, bound = largest_batch(state_bytes_per_request=STATE_BYTES)
    assert with_state <= bound == 4
    without, _ = largest_batch()
    assert without > bound


def test_sglang_keeps_a_hybrids_state_in_a_pool_of_its_own_by_hand():
    """SGLang carves its state pool out of what the weights leave (sim/hardware/state_pool.py).
    The speculating server: 80 x 0.811 - 14.957 weights - 0.69 reserve = 49.233 GiB, a
    state budget of 49.233 x 0.9 / 1.9 GiB = 25.041 GB; K = (25.041 - 1 x (1 + 4)) // (1 x
    (1 + 4 / 5)) = 11 slots of 1 GB, 11 // 5 = 2 running requests, with the verify's
    intermediate states 1 GB x (2 + 1) x 4: 24 GB = 22.352 GiB; KV left 26.882 GiB / 131,072
    bytes = 220,215 tokens. The plain server (fraction 0.836): 51.233 GiB, a budget of
    26.058 GB, K = 25, 5 running requests, 26 GB = 24.214 GiB; 27.019 GiB = 221,338 tokens."""
    sc = _scenario(server={"engine": "sglang"}, model={"state_bytes_per_request": STATE_BYTES})
    cap = kv_capacity(sc, speculates=True)
    assert cap.state is None  # not in the KV pool
    spec, plain = cap.state_pool
    assert (spec.slots, spec.requests, plain.slots, plain.requests) == (11, 2, 25, 5)
    assert spec.state_gib == pytest.approx(24e9 / GIB, rel=1e-12)
    assert plain.state_gib == pytest.approx(26e9 / GIB, rel=1e-12)
    assert abs(cap.tokens - 220_215) <= 2 and abs(cap.plain - 221_338) <= 2
    assert "at most 2 run at once (5 for plain decoding" in cap.note
    assert cap.to_dict()["state_pool"]["requests"] == 2
    # whole 1 GB slots: the reserve's ends (10 slots at the high one) leave more KV than its
    # middle; the range spans all three
    low, high = cap.range
    assert low == cap.tokens < high
    base = kv_capacity(_scenario(server={"engine": "sglang"}), speculates=True)
    assert base.state_pool is None and "state_pool" not in base.to_dict()
    assert base.tokens > cap.tokens


def test_sglangs_state_pool_bounds_the_running_requests():
    """With room for 2 speculating requests' states (above), the speculating server never
    decodes more than 2 of its 4 users at once; the plain server (5) runs all 4."""
    sc = _scenario(
        server={"engine": "sglang"},
        model={"state_bytes_per_request": STATE_BYTES},
        workload={"requests": 16},
    )
    setup = serving_setup(bind(sc))
    sched = setup.plan.scheduler
    assert (sched.max_running_requests, sched.max_running_requests_speculative) == (5, 2)
    for name, most in (("speculative", 2), ("baseline", 4)):
        drafting = setup.draftings[name]
        rec = run_replication(setup.plan, drafting, serving_streams(np.random.SeedSequence(3)))
        assert int(np.flatnonzero(rec.batch_time_ms).max()) == most


def test_with_linear_layers_vllms_pool_charges_whole_state_blocks():
    """24 of the 32 layers linear: 8 attention layers of 16,384 bytes a token (the drafter's
    4,096 rounds to none of them); a state page of 1 GB / 24 gives blocks of 16 x ceil(
    41.67 MB / (16 x 16,384)) = 2,544 tokens, g = 8, 3 linear groups: at k = 3 a request
    holds 3 x (2 + 3) blocks = 38,160 tokens, plain decoding 3 x 2 = 15,264."""
    sc = _scenario(
        server={"engine": "vllm"},
        model={"state_bytes_per_request": STATE_BYTES, "linear_layers": 24},
    )
    cap = kv_capacity(sc, speculates=True)
    assert cap.state.tokens(4, True) == 38_160 and cap.state.tokens(1, False) == 15_264
    assert cap.to_dict()["state"]["block_tokens"] == [2544, 2544]
    assert "blocks of 2544 tokens (2544 for plain decoding), 3 groups of linear" in cap.note
    assert "x (2 + k) state blocks a request under prefix caching's align mode" in cap.note
    setup = serving_setup(bind(sc))
    assert setup.draftings["speculative"].lookahead == 4 + 38_160
    assert setup.draftings["baseline"].lookahead == 1 + 15_264
    # each request's context and slots in the layout's whole blocks
    assert cap.block_tokens == (2544, 2544) and cap.to_dict()["block_tokens"] == [2544, 2544]
    assert setup.draftings["speculative"].held(2544 - 4) == 2544 + 38_160
    assert setup.draftings["speculative"].held(2544 - 3) == 2 * 2544 + 38_160


def test_without_prefix_caching_a_request_keeps_one_state_block_fewer_a_group():
    """serving.prefix_caching = false (vLLM's --no-enable-prefix-caching): 1 + k state
    blocks a linear group instead of 2 + k. The scenario above at k = 3: 3 x 4 blocks of
    2,544 tokens = 30,528 a request (38,160 with it), plain decoding 3 x 1 = 7,632
    (15,264); the blocks themselves and the capacity do not move."""
    over = {"server": {"engine": "vllm"}}
    model = {"state_bytes_per_request": STATE_BYTES, "linear_layers": 24}
    on = kv_capacity(_scenario(model=model, **over), speculates=True)
    off = kv_capacity(
        _scenario(model=model, serving={"prefix_caching": False}, **over), speculates=True
    )
    assert [layout.state_blocks(4) for layout in on.state.layouts] == [5, 5]
    assert [layout.state_blocks(4) for layout in off.state.layouts] == [4, 4]
    assert off.state.tokens(4, True) == 30_528 and off.state.tokens(1, False) == 7_632
    assert (off.tokens, off.plain, off.block_tokens) == (on.tokens, on.plain, on.block_tokens)
    assert "x (1 + k) state blocks a request without prefix caching" in off.note
    spec = serving_setup(bind(_scenario(model=model, serving={"prefix_caching": False}, **over)))
    assert spec.draftings["speculative"].lookahead == 4 + 30_528
    # a target without a state in vLLM's layout does not read the key
    plain_target = kv_capacity(_scenario(serving={"prefix_caching": False}, **over), True)
    assert plain_target == kv_capacity(_scenario(**over), True)


@pytest.mark.parametrize(
    ("over", "blocks"),
    [
        ({"server": {"engine": "vllm"}}, (16, 16)),
        ({}, (16, 16)),  # vLLM's rule assumed
        ({"server": {"engine": "sglang"}}, (1, 1)),  # per token
        ({"server": {"engine": "vllm"}, "serving": {"kv_capacity_tokens": 50_000}}, (16, 16)),
        ({"serving": {"kv_capacity_tokens": 50_000}}, (1, 1)),  # no engine named
    ],
)
def test_vllm_hands_out_whole_blocks_of_16_tokens(over, blocks):
    cap = kv_capacity(_scenario(**over), speculates=True)
    assert cap.block_tokens == blocks
    assert ("block_tokens" in cap.to_dict()) == (blocks != (1, 1))
    assert ("whole blocks of 16 tokens" in cap.note) == (blocks != (1, 1))
    setup = serving_setup(bind(_scenario(**over)))
    assert setup.plan.scheduler.kv_block_tokens == blocks[0]
    assert setup.draftings["speculative"].held(128) == (144 if blocks[0] == 16 else 132)


@pytest.mark.parametrize(
    ("over", "block", "held"),
    [
        # FlashMLA's / FlashInfer MLA's forced block: 128 context + 4 slots = 132 tokens,
        # ceil(132 / 64) = 3 blocks = 192 tokens; plain decoding 129 -> 3 blocks = 192
        ({"server": {"engine": "vllm"}, "serving": {"kv_block_tokens": 64}}, 64, (192, 192)),
        # a given pool under vLLM's rule reads it too
        (
            {
                "server": {"engine": "vllm"},
                "serving": {"kv_block_tokens": 64, "kv_capacity_tokens": 50_000},
            },
            64,
            (192, 192),
        ),
        # CUTLASS MLA's: 132 -> 2 blocks of 128 = 256; 129 -> 256
        ({"serving": {"kv_block_tokens": 128}}, 128, (256, 256)),
        # the key below the default: 132 -> 17 blocks of 8 = 136; 129 -> 17 x 8 = 136
        ({"serving": {"kv_block_tokens": 8}}, 8, (136, 136)),
    ],
)
def test_the_block_key_overrides_vllms_default_by_hand(over, block, held):
    cap = kv_capacity(_scenario(**over), speculates=True)
    assert cap.block_tokens == (block, block)
    assert cap.to_dict()["block_tokens"] == [block, block]
    assert f"whole blocks of {block} tokens (serving.kv_block_tokens" in cap.note
    setup = serving_setup(bind(_scenario(**over)))
    assert setup.plan.scheduler.kv_block_tokens == block
    assert setup.plan.scheduler.plain_kv_block_tokens == block
    assert setup.draftings["speculative"].held(128) == held[0]
    assert setup.draftings["baseline"].held(128) == held[1]


def test_without_the_key_the_default_says_so():
    cap = kv_capacity(_scenario(server={"engine": "vllm"}), speculates=True)
    assert cap.block_tokens == (16, 16)
    assert "an MLA backend's larger block: serving.kv_block_tokens" in cap.note


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"server": {"engine": "sglang"}}, "SGLang's pool is per token"),
        ({"serving": {"kv_capacity_tokens": 50_000}}, "server.engine is not vllm"),
        (
            {"model": {"state_bytes_per_request": STATE_BYTES, "linear_layers": 24}},
            "a hybrid's block layout sets its own block",
        ),
    ],
)
def test_the_block_key_is_refused_where_no_vllm_block_is_charged(over, why):
    over = {**over, "serving": {**over.get("serving", {}), "kv_block_tokens": 64}}
    with pytest.raises(SpecsimError, match=why) as err:
        kv_capacity(_scenario(**over), speculates=True)
    assert err.value.field == "serving.kv_block_tokens"


@pytest.mark.parametrize("bad", [0, 48, 512, 64.0, "64"])
def test_a_block_vllm_does_not_accept_is_refused(bad):
    with pytest.raises(SpecsimError) as err:
        _scenario(serving={"kv_block_tokens": bad})
    assert "serving.kv_block_tokens" in str(err.value)
