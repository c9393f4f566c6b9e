"""The engines' CUDA-graph capture limits: scenario fields a serving scenario accepts."""

from __future__ import annotations

import pytest

from sim.calibration.engine_defaults import GRAPH_CAPTURE
from sim.scenario.sections.serving import ServingSpec
from sim.validation.engine_versions import graph_capture


@pytest.mark.parametrize("engine", sorted(GRAPH_CAPTURE))
def test_each_engines_capture_limits_are_serving_fields_with_a_source(engine):
    fields = graph_capture(engine)
    assert fields, engine
    spec = ServingSpec(**fields)  # valid values of real fields
    for name, value in fields.items():
        assert getattr(spec, name) == value
    for default in GRAPH_CAPTURE[engine]:
        assert default.field.startswith(("serving.graph_max_", "serving.graph_batches"))
        assert ".py" in default.source  # names the engine file it was read in


def test_sglang_044_captures_fewer_batches_for_eagle_than_for_plain_decoding():
    fields = graph_capture("sglang 0.4.4")
    assert fields["graph_max_batch_speculative"] < fields["graph_max_batch"]


def test_sglang_044_post2_pads_eagle_batches_between_its_captured_sizes():
    fields = graph_capture("sglang 0.4.4.post2")
    spec = fields["graph_batches_speculative"]
    assert isinstance(spec, list)
    assert 31 in spec and 32 not in spec and 64 in spec
