"""CUDA-graph capture limits under load: a pass beyond them runs eagerly, batch 1 exact."""

from __future__ import annotations

import numpy as np
import pytest

from sim.binding.bound import bind
from sim.binding.serving import serving_cost
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.scenario.validate import scenario_from_dict
from tests.conftest import ROOT

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"


def _cost(*sets: str):
    bound = bind(load_scenario(LLAMA, sets))
    return serving_cost(bound, kv_bytes_per_token=131072.0, reference_context_tokens=384.0)


def test_the_scenario_fields_reach_every_graphed_pass_and_leave_batch_one_exact():
    free = _cost()
    capped = _cost("serving.graph_max_tokens=64", "serving.graph_max_batch=16")
    k = 3
    for name in ("decode", "verify", "draft_step", "draft_extend"):
        physics = getattr(capped.curves, name).physics
        assert (physics.graph_max_tokens, physics.graph_max_rows) == (64, 16)
    context = np.array([384.0])
    for draft in (0, k):  # the batch-1 cycle, to the bit
        assert float(capped.decode_ms(1, draft, context)[0]) == float(
            free.decode_ms(1, draft, context)[0]
        )
    # 16 users: a 64-token verify and 16-row passes, all still graphed
    assert float(capped.decode_ms(16, k, 16 * context)[0]) == float(
        free.decode_ms(16, k, 16 * context)[0]
    )
    # 17 users: every pass over 17 rows (and the 68-token verify) runs eagerly: never
    # cheaper, and the one-layer drafter passes, launch-bound, pay their kernels' launches
    eager = float(capped.decode_ms(17, k, 17 * context)[0])
    graphed = float(free.decode_ms(17, k, 17 * context)[0])
    assert eager > graphed
    # plain decoding over 17 tokens is within the token limit but over the rows
    assert float(capped.decode_ms(17, 0, 17 * context)[0]) >= float(
        free.decode_ms(17, 0, 17 * context)[0]
    )


def test_a_capture_limit_without_a_kernel_count_is_refused_by_name():
    raw = load_scenario(LLAMA, ("serving.graph_max_tokens=512",)).model_dump(exclude_none=True)
    del raw["model"]["kernels_per_layer"]
    scenario = scenario_from_dict(raw, source="test")
    with pytest.raises(SpecsimError) as err:
        serving_cost(bind(scenario))
    assert err.value.field == "model.kernels_per_layer"


def test_a_speculating_servers_own_capture_list_limits_its_verify_and_drafter_passes():
    # SGLang v0.4.4: a plain server captures batch sizes up to 160, an EAGLE server 1-32
    cost = _cost("serving.graph_max_batch=160", "serving.graph_max_batch_speculative=32")
    rows = {n: getattr(cost.curves, n).physics.graph_max_rows for n in ("decode", "verify")}
    assert rows == {"decode": 160, "verify": 32}
    assert cost.curves.draft_step.physics.graph_max_rows == 32


def test_captured_batch_sizes_pad_the_decode_verify_and_draft_steps_and_set_the_limit():
    # SGLang v0.4.4.post2: plain decoding captures 1, 2, 4, 8..160 by 8; EAGLE 1-8, 9-31
    # odd, 64, 96, 128, 160; the draft extend and the prefills run eagerly (not padded)
    plain = "[1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 160]"
    spec = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 64, 160]"
    cost = _cost(f"serving.graph_batches={plain}", f"serving.graph_batches_speculative={spec}")
    free = _cost("serving.graph_max_batch=160")
    curves = cost.curves
    assert curves.decode.physics.graph_rows[-1] == curves.decode.physics.graph_max_rows == 160
    assert curves.verify.physics.graph_rows == curves.draft_step.physics.graph_rows
    assert curves.verify.physics.graph_rows[9] == 11
    assert curves.draft_extend.physics.graph_rows is None
    context = np.array([384.0])
    k = 3
    for draft in (0, k):  # batch 1 to the bit
        assert float(cost.decode_ms(1, draft, context)[0]) == float(
            free.decode_ms(1, draft, context)[0]
        )
    # 31 users: captured, unchanged; 32: the EAGLE iteration runs the 64-row graphs
    for users, more in ((31, False), (32, True)):
        ctx = users * context
        padded, exact = (float(c.decode_ms(users, k, ctx)[0]) for c in (cost, free))
        assert (padded > exact) is more and padded >= exact
    # plain decoding at 32 is captured; at 33 it runs as 40
    assert float(cost.decode_ms(32, 0, 32 * context)[0]) == float(
        free.decode_ms(32, 0, 32 * context)[0]
    )
    assert float(cost.decode_ms(33, 0, 33 * context)[0]) > float(
        free.decode_ms(33, 0, 33 * context)[0]
    )


@pytest.mark.parametrize(
    "sets",
    [
        ("serving.graph_batches=[1, 4, 2]",),
        ("serving.graph_batches=[1, 2, 2]",),
        ("serving.graph_batches=[1, 2]", "serving.graph_max_batch=2"),
        ("serving.graph_batches_speculative=[1, 2]", "serving.graph_max_batch_speculative=8"),
    ],
)
def test_captured_sizes_out_of_order_or_beside_their_limit_are_refused(sets):
    with pytest.raises(SpecsimError) as err:
        load_scenario(LLAMA, sets)
    assert "graph_batches" in str(err.value)
