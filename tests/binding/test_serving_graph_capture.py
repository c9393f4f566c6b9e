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
