"""What ``specsim hardware`` shows: every pass taken apart, and verify what-ifs.

Pure functions returning plain dicts and text; the CLI prints them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sim.hardware.decompose import HardwarePoint, PassBreakdown, ScenarioHardware
from sim.hardware.gpus import GPU_PRESETS
from sim.hardware.interconnects import PRESETS, resolve_interconnect
from sim.scenario import Scenario


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


def hardware_summary(scenario: Scenario) -> dict[str, Any]:
    """Breakdown of every pass plus the verify pass graphed and on each interconnect preset."""
    hw = ScenarioHardware(scenario)
    passes = hw.breakdowns()
    verify = passes.get("verify") or hw.breakdown("verify")
    cur = hw.current
    what_if: dict[str, Any] = {}
    for name in PRESETS:
        ic = resolve_interconnect(name)
        row = {}
        for graphed in (False, True):
            point = replace(cur, interconnect=ic, verify_cuda_graph=graphed)
            b = hw.breakdown("verify", verify.tokens, point)
            row["graphed" if graphed else "ungraphed"] = breakdown_dict(b)
        what_if[name] = row
    graphed_here = replace(cur, verify_cuda_graph=True)
    return {
        "scenario": scenario.name,
        "hardware": _point(cur),
        "measured_on": _point(hw.reference),
        "passes": {name: breakdown_dict(b) for name, b in passes.items()},
        "verify_graphed": breakdown_dict(hw.breakdown("verify", verify.tokens, graphed_here)),
        "verify_on_presets": what_if,
    }


def _ar_text(p: dict[str, Any]) -> str:
    ar = p["allreduce"]
    if p["allreduces"] == 0:
        return "none"
    eager = "" if p["graphed"] or ar["algorithm"] == "custom" else " eager"
    return f"{p['allreduces']} x {ar['us']:.1f} us {ar['algorithm']}/{ar['protocol']}{eager}"


def render_hardware(summary: dict[str, Any]) -> str:
    """The summary as a readable table."""
    hw, ref = summary["hardware"], summary["measured_on"]
    gpu = f", {hw['gpu']}" if hw["gpu"] else ""
    graph = "graphed" if hw["verify_cuda_graph"] else "ungraphed"
    lines = [
        f"{summary['scenario']}: {hw['gpus']}x {hw['interconnect']}{gpu}, launch "
        f"{hw['launch_us']:g} us/kernel, verify {graph}",
        f"timings measured on {ref['gpus']}x {ref['interconnect']}"
        f"{', ' + ref['gpu'] if ref['gpu'] else ''}, verify "
        f"{'graphed' if ref['verify_cuda_graph'] else 'ungraphed'}",
        "",
        f"{'pass':<13}{'tokens':>7}  {'graph':<6}{'compute':>9}  {'all-reduces':<34}"
        f"{'comm':>8}{'launch':>8}{'total':>9}  origin",
    ]
    for name, p in summary["passes"].items():
        launch = f"{p['launch_ms']:8.3f}" if p["launch_ms"] else f"{'-':>8}"
        bound = " (launch-bound)" if p["launch_bound"] else ""
        lines.append(
            f"{name:<13}{p['tokens']:>7}  {'yes' if p['graphed'] else 'no':<6}"
            f"{p['compute_ms']:9.3f}  {_ar_text(p):<34}{p['comm_ms']:8.3f}{launch}"
            f"{p['total_ms']:9.3f}  {p['origin']}{bound}"
        )
    lines.append("(milliseconds; total = critical path of GPU work and CPU launch work)")
    g = summary["verify_graphed"]
    lines += ["", f"verify over {g['tokens']} tokens, graphed here: {g['total_ms']:.3f} ms", ""]
    lines.append(f"{'verify on':<24}{'ungraphed ms':>13}{'graphed ms':>12}  all-reduce (graphed)")
    for name, row in summary["verify_on_presets"].items():
        lines.append(
            f"{name:<24}{row['ungraphed']['total_ms']:13.3f}{row['graphed']['total_ms']:12.3f}"
            f"  {_ar_text(row['graphed'])}"
        )
    return "\n".join(lines)


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


def render_presets(presets: dict[str, Any]) -> str:
    lines = ["interconnects:"]
    for name, ic in presets["interconnects"].items():
        extras = [
            p
            for p, on in (("NVLS", ic["nvls"]), ("custom all-reduce", ic["custom_allreduce"]))
            if on
        ]
        lines.append(
            f"  {name:<22} {ic['kind']:<7}busbw {ic['bus_bandwidth_gbps']:g} GB/s, "
            f"{'/'.join(ic['protocols'])}, eager +{ic['eager_extra_us']:.1f} us"
            + (f", {', '.join(extras)}" if extras else "")
        )
        lines.append(f"  {'':<22} {ic['description']}")
        lines.append(f"  {'':<22} source: {ic['source']}")
    lines.append("gpus:")
    for name, g in presets["gpus"].items():
        lines.append(
            f"  {name:<22} {g['memory_bandwidth_gbps']:g} GB/s, {g['bf16_tflops']:g} TFLOP/s BF16,"
            f" {g['memory_gb']:g} GB"
        )
        lines.append(f"  {'':<22} source: {g['source']}")
    return "\n".join(lines)
