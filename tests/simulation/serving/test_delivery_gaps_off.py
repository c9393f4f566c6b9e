"""A run that keeps no delivery gaps (``delivery_gaps=False``, what the studies run: their
metrics read no ITL) records every other number bit for bit, and no ITL."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.model.policy import FixedK
from sim.simulation.serving import ClosedLoop, LogNormal, Poisson
from sim.simulation.serving.metrics import SloSpec
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.sketch import StreamedStat
from sim.studies.serving.paired_metrics import policy_point
from tests.simulation.serving.helpers import WITH_KV, plan

ITL = ("itl_ms", "itl_weight", "itl_exact", "itl_stats")

LOADS = {
    "one user": lambda: plan(ClosedLoop(1), output=LogNormal(60.0, 0.6, 300), requests=15),
    "closed loop": lambda: plan(
        ClosedLoop(24),
        output=LogNormal(60.0, 0.6, 300),
        input_tokens=LogNormal(100.0, 0.5, 400),
        requests=80,
        curves=WITH_KV,
    ),
    "poisson, KV": lambda: plan(
        Poisson(20.0),
        output=LogNormal(60.0, 0.6, 300),
        input_tokens=LogNormal(100.0, 0.5, 400),
        requests=80,
        curves=WITH_KV,
        kv_capacity_tokens=3000,
    ),
}


@pytest.mark.parametrize("load", sorted(LOADS))
def test_without_delivery_gaps_every_other_number_is_the_same(load):
    p = LOADS[load]()
    draftings = work_out(p, {"baseline": FixedK(0), "k=2": FixedK(2)})
    kept = simulate_serving(p, draftings, replications=2, seed=4)
    bare = simulate_serving(p, draftings, replications=2, seed=4, delivery_gaps=False)
    for name in draftings:
        for a, b in zip(kept.records[name], bare.records[name], strict=True):
            assert a.itl_ms.size and a.itl_stats.weight > 0
            assert b.itl_ms.size == 0 and b.itl_weight.size == 0 and not b.itl_exact
            assert repr(b.itl_stats) == repr(StreamedStat())
            for f in dataclasses.fields(a):
                if f.name in ITL:
                    continue
                x, y = getattr(a, f.name), getattr(b, f.name)
                if isinstance(x, np.ndarray):
                    assert x.dtype == y.dtype and np.array_equal(x, y), f.name
                else:
                    assert repr(x) == repr(y), f.name
        slo = SloSpec(tok_s=(50.0,), ttft_ms=2000.0, tpot_ms=40.0)
        pa, pb = policy_point(kept.records[name], slo), policy_point(bare.records[name], slo)
        assert all(np.array_equal(pa.values[m], pb.values[m]) for m in pa.values)
