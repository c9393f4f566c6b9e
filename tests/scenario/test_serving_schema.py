"""The serving keys of a scenario: validated, errors naming the field, defaults stated."""

from __future__ import annotations

import pytest

from sim.binding.bound import bind
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario
from sim.simulation.serving.lengths import LogNormal
from sim.simulation.serving.setup import serving_setup, with_load
from sim.simulation.serving.workload import ClosedLoop, Poisson
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["serving.concurrency=0"], "serving.concurrency"),
        (["serving.rate_per_s=-1.0"], "serving.rate_per_s"),
        (["serving.batching='eager'"], "serving.batching"),
        (["serving.k_table=[[1, 4]]"], "serving"),
        (["serving.disable_above_batch=4", "serving.k_table=[[1, 4, 2]]"], "serving"),
        (["workload.output_sigma=-0.1"], "workload.output_sigma"),
        (["workload.output_sigma=1e308"], "workload.output_sigma"),  # overflowed in serve
        (["workload.input_sigma=11"], "workload.input_sigma"),
        (["workload.warmup_requests=100000000000"], "workload.warmup_requests"),  # ran on
        (["workload.input_max_tokens=10"], "workload"),
        (["timing.points=[{kind='prefill', batch=1, ms=5.0, source='x'}]"], "timing.points[0]"),
        (["timing.points=[{kind='decode', batch=1, ms=5.0}]"], "timing.points[0].source"),
    ],
)
def test_bad_serving_keys_name_their_field(sets, field):
    with pytest.raises(SpecsimError) as err:
        load_scenario(SERVING, sets)
    assert err.value.field is not None and err.value.field.startswith(field), err.value


def test_kv_reads_need_the_reference_context(tmp_path):
    text = SERVING.read_text().replace("context_tokens = 2048.0\n", "")
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SpecsimError) as err:
        serving_setup(bind(load_scenario(path)))
    assert err.value.field == "timing.context_tokens"


def test_a_point_below_its_floor_names_its_entry():
    sc = load_scenario(SERVING)
    bad = load_scenario(
        SERVING, ["timing.points=[{kind='decode', batch=8, ms=0.5, source='made-up'}]"]
    )
    with pytest.raises(SpecsimError) as err:
        serving_setup(bind(bad))
    assert err.value.field == "timing.points[0]" and "made-up" in err.value.message
    assert serving_setup(bind(sc)).plan.max_k == 2


def test_setup_reads_the_load_and_lengths():
    setup = serving_setup(bind(load_scenario(SERVING)))
    w = setup.plan.workload
    assert isinstance(w.arrivals, ClosedLoop) and w.arrivals.users == 16
    assert isinstance(w.output_tokens, LogNormal) and w.output_tokens.max_tokens > 512
    assert w.warmup == max(16, 200 // 10)
    assert set(setup.policies) == {"baseline", "speculative"}
    rate = serving_setup(bind(with_load(load_scenario(SERVING), rate_per_s=3.0)))
    assert isinstance(rate.plan.workload.arrivals, Poisson)
    assert any("lognormal" in a for a in setup.assumptions)


def test_k_table_is_clamped_to_num_steps_like_vllm():
    sc = load_scenario(SERVING, ["serving.k_table=[[1, 8, 5], [9, 64, 1], [65, 1024, 0]]"])
    policy = serving_setup(bind(sc)).policies["speculative"]
    assert [policy.k_for_batch(b) for b in (1, 8, 9, 65)] == [2, 2, 1, 0]
