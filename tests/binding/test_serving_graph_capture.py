"""CUDA-graph capture limits under load: a pass beyond them runs eagerly, batch 1 exact."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.binding.serving_cost import serving_cost
from sim.cli import main
from sim.errors import SpecsimError
from sim.hardware.eager import EAGER_KERNEL_US
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
        ("serving.graph_batches_speculative=[1, 2, 4]", "serving.graph_max_batch_draft=8"),
        ("serving.graph_batches=[1, 2, 4]", "serving.graph_max_batch_draft=5"),
    ],
)
def test_captured_sizes_out_of_order_or_beside_their_limit_are_refused(sets):
    with pytest.raises(SpecsimError) as err:
        load_scenario(LLAMA, sets)
    assert "graph_batches" in str(err.value)


def test_a_drafter_limit_moves_only_the_drafter_passes_and_leaves_batch_one_exact():
    # vLLM's V1 DSpark proposer graphs its drafter at one request only (the opt-in wrapper,
    # docs/studies/public-data-cases39-40.md): the drafter's own limit, the verify and decode
    # unlimited
    free = _cost()
    capped = _cost("serving.graph_max_batch_draft=1")
    curves = capped.curves
    assert (curves.decode.physics.graph_max_rows, curves.verify.physics.graph_max_rows) == (
        None,
        None,
    )
    assert curves.draft_step.physics.graph_max_rows == 1
    assert curves.draft_extend.physics.graph_max_rows == 1
    context = np.array([384.0])
    k = 3
    for draft in (0, k):  # the batch-1 cycle, to the bit
        assert float(capped.decode_ms(1, draft, context)[0]) == float(
            free.decode_ms(1, draft, context)[0]
        )
    # 2 users: the drafter passes run eagerly. Each is GPU-bound (its compute over its 9
    # kernels, 0.25 ms, exceeds a kernel's CPU issue, 18.889 us), so its critical path,
    # max_i (C_i + x S_i), is at i = 0: the first kernel's issue plus the compute x, which
    # the graphed pass is alone. Each of the k - 1 draft steps and the draft extend costs
    # one kernel's issue more; the verify and the overhead are unchanged.
    c_ms = EAGER_KERNEL_US / 1000.0
    kv = pairs = np.array([2 * 384.0])
    for name in ("draft_step", "draft_extend"):
        graphed = float(getattr(free.curves, name).pass_ms(2, kv, pairs, 2)[0])
        assert graphed / 9 > c_ms  # GPU-bound, the case the hand value holds for
        eager = float(getattr(curves, name).pass_ms(2, kv, pairs, 2)[0])
        assert eager == pytest.approx(graphed + c_ms, rel=1e-12)
    eager_phases = capped.decode_phases(2, k, 2 * context)
    graphed_phases = free.decode_phases(2, k, 2 * context)
    assert float(eager_phases[0][0] - graphed_phases[0][0]) == pytest.approx(
        (k - 1) * c_ms, rel=1e-9
    )
    assert float(eager_phases[2][0] - graphed_phases[2][0]) == pytest.approx(c_ms, rel=1e-9)
    for phase in (1, 3):
        assert float(eager_phases[phase][0]) == float(graphed_phases[phase][0])
    # plain decoding never runs the drafter's passes
    assert float(capped.decode_ms(2, 0, 2 * context)[0]) == float(
        free.decode_ms(2, 0, 2 * context)[0]
    )


def test_the_drafter_limit_takes_over_from_the_speculative_one_for_the_drafter_only():
    cost = _cost("serving.graph_max_batch_speculative=32", "serving.graph_max_batch_draft=4")
    assert cost.curves.verify.physics.graph_max_rows == 32
    assert cost.curves.draft_step.physics.graph_max_rows == 4
    default = _cost("serving.graph_max_batch_speculative=32")
    assert default.curves.draft_extend.physics.graph_max_rows == 32


@pytest.mark.parametrize("value", ["0", "-1", "1.5", '"x"'])
def test_a_bad_drafter_limit_is_one_line_naming_the_field_and_exit_2(value):
    result = CliRunner().invoke(
        main, ["run", str(LLAMA), "--set", f"serving.graph_max_batch_draft={value}"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "serving.graph_max_batch_draft" in lines[0]


def test_a_drafter_limit_without_a_kernel_count_is_refused_by_name():
    raw = load_scenario(LLAMA, ("serving.graph_max_batch_draft=2",)).model_dump(exclude_none=True)
    del raw["model"]["kernels_per_layer"]
    with pytest.raises(SpecsimError) as err:
        serving_cost(bind(scenario_from_dict(raw, source="test")))
    assert err.value.field == "model.kernels_per_layer"


def test_a_drafter_limit_within_the_captured_sizes_pads_below_it_and_runs_eagerly_above():
    cost = _cost(
        "serving.graph_batches_speculative=[1, 2, 4, 8]", "serving.graph_max_batch_draft=4"
    )
    step = cost.curves.draft_step
    assert (step.physics.graph_rows, step.physics.graph_max_rows) == ((1, 2, 4, 8), 4)
    assert cost.curves.verify.physics.graph_max_rows == 8
    assert step.graphed(3, 3) and not step.graphed(5, 5)
