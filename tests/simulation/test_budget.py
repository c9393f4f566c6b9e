"""Run-size limits: refused with the estimate before a run starts; a streamed run is
limited by its time only (it keeps no per-request arrays)."""

from __future__ import annotations

import pytest

from sim.errors import SpecsimError
from sim.simulation.budget import MAX_RESULT_BYTES, check_run_size, result_bytes


def test_a_kept_run_too_large_for_memory_is_refused_with_the_estimate() -> None:
    assert result_bytes(100_000, 1_000, 2) > MAX_RESULT_BYTES
    with pytest.raises(SpecsimError, match="GiB of per-request results") as err:
        check_run_size(100_000, 1_000, 1, 2, "fast", 1)
    assert err.value.param == "requests"


def test_a_streamed_run_of_the_same_size_is_only_limited_by_time() -> None:
    check_run_size(100_000, 1_000, 1, 2, "fast", 1, streamed=True)  # 1e8 one-token requests
    check_run_size(1_000_000, 1_000, 512, 2, "fast", 1, streamed=True)  # 1e9: ~2.8 h
    with pytest.raises(SpecsimError, match="hours with the fast engine"):
        check_run_size(10_000_000, 1_000, 512, 2, "fast", 1, streamed=True)  # ~28 h


def test_a_streamed_run_still_holds_one_replication_at_a_time() -> None:
    """Streaming folds replications, not the requests inside one: 1e9 requests in one
    replication would need ~90 GiB of engine arrays and are refused before the run."""
    with pytest.raises(SpecsimError, match="1 replication x 1000000000 requests"):
        check_run_size(20, 1_000_000_000, 512, 2, "fast", 1, streamed=True)


def test_a_serving_size_error_names_what_grew_the_most():
    """500,000 simulations from a load list 71,000 times the default grid and 20
    replications given as 1x the scenario's: the load list is named, with what to lower."""
    from sim.simulation.budget import check_serving_size

    grown = {"concurrency": (71_428.0, "loads"), "replications": (1.0, "replications")}
    with pytest.raises(SpecsimError) as err:
        check_serving_size(500_000, 20, 110, 1, grown=grown)
    assert err.value.param == "concurrency" and err.value.message.endswith("use fewer loads")
    # memory: the load list does not hold requests; the grown requests do
    grown = {"concurrency": (9.0, "loads"), "requests": (1000.0, "requests")}
    with pytest.raises(SpecsimError) as err:
        check_serving_size(1, 20, 100_000, 1, grown=grown)
    assert err.value.param == "requests" and "GiB" in err.value.message
    # nothing grew past its default: the scenario's own sizes, named as before
    with pytest.raises(SpecsimError) as err:
        check_serving_size(500_000, 20, 110, 1)
    assert err.value.param == "requests"
    assert err.value.message.endswith("loads, draft lengths, users, replications or requests")
