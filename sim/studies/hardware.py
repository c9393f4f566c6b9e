"""What ``specsim hardware`` shows: every pass taken apart, and verify what-ifs.

Pure functions returning JSON-ready documents; their text is sim/report/hardware.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sim.binding.bound import Bound
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import PRESETS, resolve_interconnect
from sim.hardware.passes import HardwarePoint, PassBreakdown
from sim.studies.levers import lever_table


def breakdown_dict(b: PassBreakdown) -> dict[str, Any]:
    return {
        "tokens": b.tokens,
        "graphed": b.graphed,
        "compute_ms": b.compute_ms,
        "allreduces": b.allreduces,
        "allreduce": b.allreduce.as_dict(),
        "message_bytes": b.message_bytes,
        "comm_ms": b.comm_ms,
        "launch_ms": b.launch_ms,
        "gpu_ms": b.gpu_ms,
        "total_ms": b.total_ms,
        "launch_bound": b.launch_bound,
        "origin": b.origin,
    }


def _point(hw: HardwarePoint) -> dict[str, Any]:
    return {
        "interconnect": hw.interconnect.name,
        "gpus": hw.gpus,
        "gpu": hw.gpu.name if hw.gpu else None,
        "verify_cuda_graph": hw.verify_cuda_graph,
        "launch_us": hw.launch_us,
        "allreduce": hw.allreduce,
    }


def hardware_summary(bound: Bound) -> dict[str, Any]:
    """Breakdown of every pass of the bound scenario (its hardware model, ``Bound.hardware``)
    plus the verify pass graphed and on each interconnect preset, and its levers' table."""
    scenario, hw = bound.scenario, bound.hardware
    passes = hw.breakdowns()
    verify = passes.get("verify") or hw.breakdown("verify")
    cur = hw.current
    what_if: dict[str, Any] = {}
    for name in PRESETS:
        ic = resolve_interconnect(name)
        beyond = ic.domain_error(cur.gpus)
        if beyond is not None:  # not priced: no such domain
            what_if[name] = {"not_available": beyond}
            continue
        row = {}
        for graphed in (False, True):
            point = replace(cur, interconnect=ic, verify_cuda_graph=graphed)
            b = hw.breakdown("verify", verify.tokens, point)
            row["graphed" if graphed else "ungraphed"] = breakdown_dict(b)
        what_if[name] = row
    graphed_here = replace(cur, verify_cuda_graph=True)
    levers = lever_table(bound).to_dict() if scenario.num_steps > 0 else None
    note = cur.interconnect.domain_note(cur.gpus)
    return {
        "scenario": scenario.name,
        "hardware": _point(cur),
        "measured_on": _point(hw.reference),
        "passes": {name: breakdown_dict(b) for name, b in passes.items()},
        "verify_graphed": breakdown_dict(hw.breakdown("verify", verify.tokens, graphed_here)),
        "verify_on_presets": what_if,
        "levers": levers,
        **({"note": note} if note else {}),
    }


def presets_dict() -> dict[str, Any]:
    """Interconnect and GPU presets with their sources."""
    return {
        "interconnects": {
            name: {
                "kind": ic.kind,
                "bus_bandwidth_gbps": ic.bus_bandwidth_gbps,
                "protocols": list(ic.protocols),
                "eager_extra_us": ic.eager_extra_us,
                "nvls": ic.nvls_latency_us is not None,
                "custom_allreduce": ic.custom_allreduce is not None,
                "description": ic.description,
                "source": ic.source,
                "max_gpus": ic.max_gpus,
                "max_gpus_source": ic.max_gpus_source,
            }
            for name, ic in PRESETS.items()
        },
        "gpus": {
            name: {
                "memory_bandwidth_gbps": g.memory_bandwidth_gbps,
                "bf16_tflops": g.bf16_tflops,
                "memory_gb": g.memory_gb,
                "source": g.source,
            }
            for name, g in GPU_PRESETS.items()
        },
    }
