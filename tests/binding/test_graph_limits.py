"""The CUDA-graph capture limits each serving pass takes from ``[serving]``."""

from __future__ import annotations

from sim.binding.graph_limits import graph_limits
from sim.scenario.sections.serving import ServingSpec


def test_no_section_and_no_fields_limit_nothing():
    for serving in (None, ServingSpec()):
        limits = graph_limits(serving)
        assert not limits.limited
        assert limits.max_rows("decode", drafter=False) is None
        assert limits.padded_to("decode") is None


def test_captured_sizes_pad_the_speculative_passes_too_and_their_largest_is_the_row_limit():
    limits = graph_limits(ServingSpec(graph_batches=[1, 2, 4, 8]))
    assert limits.limited
    for name in ("decode", "verify", "draft_step"):
        assert limits.padded_to(name) == (1, 2, 4, 8)
    for name in ("prefill", "draft_extend", "draft_prefill"):  # not padded
        assert limits.padded_to(name) is None
    assert limits.max_rows("decode", drafter=False) == 8
    assert limits.max_rows("draft_extend", drafter=True) == 8


def test_a_speculative_row_limit_keeps_the_speculative_passes_unpadded():
    limits = graph_limits(ServingSpec(graph_batches=[1, 2, 4, 8], graph_max_batch_speculative=4))
    assert limits.padded_to("decode") == (1, 2, 4, 8)
    assert limits.padded_to("verify") is None
    assert limits.max_rows("prefill", drafter=False) == 8
    assert limits.max_rows("verify", drafter=False) == 4
    assert limits.max_rows("draft_step", drafter=True) == 4  # the drafter's: the verify's


def test_each_row_limit_defaults_to_the_one_before_it():
    limits = graph_limits(ServingSpec(graph_max_batch=16, graph_max_batch_draft=8))
    assert limits.max_rows("decode", drafter=False) == 16
    assert limits.max_rows("verify", drafter=False) == 16
    assert limits.max_rows("draft_step", drafter=True) == 8
