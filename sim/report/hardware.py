"""Text of ``specsim hardware`` (a scenario's passes), ``specsim hardware --list`` and
``specsim allreduce``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.report.format import count
from sim.report.screen import fit_width, wrap
from sim.report.uncertainty import off_centre_text

if TYPE_CHECKING:
    from sim.hardware.allreduce import AllReduceTime


def _ar_text(p: dict[str, Any]) -> str:
    ar = p["allreduce"]
    if p["allreduces"] == 0:
        return "none"
    eager = "" if p["graphed"] or ar["algorithm"] == "custom" else " eager"
    return f"{p['allreduces']} x {ar['us']:.1f} us {ar['algorithm']}/{ar['protocol']}{eager}"


def pass_lines(summary: dict[str, Any], verbose: bool = True) -> list[str]:
    """The header and the passes taken apart, within ``WIDTH`` characters a line (the
    hardware the timings were measured on named when it differs, or with ``verbose``)."""
    hw, ref = summary["hardware"], summary["measured_on"]
    gpu = f", {hw['gpu']}" if hw["gpu"] else ""
    graph = "graphed" if hw["verify_cuda_graph"] else "ungraphed"
    ref_gpu = f", {ref['gpu']}" if ref["gpu"] else ""
    ref_graph = "graphed" if ref["verify_cuda_graph"] else "ungraphed"
    here = f"{hw['gpus']}x {hw['interconnect']}{gpu}, verify {graph}"
    measured_on = f"{ref['gpus']}x {ref['interconnect']}{ref_gpu}, verify {ref_graph}"
    lines = [
        f"{summary['scenario']}: {hw['gpus']}x {hw['interconnect']}{gpu}, launch "
        f"{hw['launch_us']:.4g} us/kernel, verify {graph}",
        *([f"timings measured on {measured_on}"] if verbose or measured_on != here else []),
        *([f"note: {summary['note']}"] if summary.get("note") else []),
        "",
        f"{'pass':<13}{'tokens':>6} {'graph':<5}{'compute':>8}  {'all-reduces':<28}"
        f"{'comm':>7}{'launch':>8}{'total':>9}  origin",
    ]
    bound = False
    for name, p in summary["passes"].items():
        launch = f"{p['launch_ms']:8.3f}" if p["launch_ms"] else f"{'-':>8}"
        mark = "*" if p["launch_bound"] else " "
        bound = bound or p["launch_bound"]
        lines.append(
            f"{name:<13}{p['tokens']:>6} {'yes' if p['graphed'] else 'no':<5}"
            f"{p['compute_ms']:8.3f}  {_ar_text(p):<28}{p['comm_ms']:7.3f}{launch}"
            f"{p['total_ms']:9.3f}{mark} {p['origin']}"
        )
    lines.append(
        "(milliseconds; total = critical path of GPU work and CPU launch work"
        + ("; * launch-bound)" if bound else ")")
    )
    g = summary["verify_graphed"]
    lines.append(f"verify over {g['tokens']} tokens, graphed here: {g['total_ms']:.3f} ms")
    return fit_width(lines)


def render_hardware(summary: dict[str, Any], verbose: bool = True) -> str:
    """The passes taken apart and the levers ranked (a first screen); with ``verbose``
    also the verify on every interconnect preset and the levers' variants and kernel
    sweep."""
    lines = pass_lines(summary, verbose)
    if verbose:
        lines += [
            "",
            f"{'verify on':<24}{'ungraphed ms':>13}{'graphed ms':>12}  all-reduce (graphed)",
        ]
        for name, row in summary["verify_on_presets"].items():
            if "not_available" in row:
                lines.append(f"{name:<24}{'-':>13}{'-':>12}  not available: {row['not_available']}")
                continue
            lines.append(
                f"{name:<24}{row['ungraphed']['total_ms']:13.3f}"
                f"{row['graphed']['total_ms']:12.3f}  {_ar_text(row['graphed'])}"
            )
    levers = summary.get("levers")
    if levers:
        lines += ["", *fit_width(render_levers(levers, verbose, hint=False).splitlines())]
    if not verbose:
        more = ["the verify on each interconnect"]
        if levers:
            more.append(levers_hint(levers))
        lines += wrap(f"(--verbose: {', '.join(more)})", indent="", more="  ")
    return "\n".join(lines)


def render_presets(presets: dict[str, Any], verbose: bool = False) -> str:
    """A preset a line (the first screen); ``verbose`` adds each one's description, source
    and how many GPUs one domain of it joins."""
    lines = ["interconnects:"]
    for name, ic in presets["interconnects"].items():
        extras = [
            p
            for p, on in (("NVLS", ic["nvls"]), ("custom all-reduce", ic["custom_allreduce"]))
            if on
        ]
        eager = f", eager +{ic['eager_extra_us']:.1f} us" if ic["eager_extra_us"] else ""
        lines.append(
            f"  {name:<22} {ic['kind']:<7}busbw {ic['bus_bandwidth_gbps']:g} GB/s, "
            f"{'/'.join(ic['protocols'])}{eager}" + (f", {', '.join(extras)}" if extras else "")
        )
        if verbose:
            lines.append(f"  {'':<22} {ic['description']}")
            lines.append(f"  {'':<22} source: {ic['source']}")
            if ic.get("max_gpus") is not None:
                lines.append(
                    f"  {'':<22} one domain: at most {ic['max_gpus']} GPUs"
                    f" ({ic['max_gpus_source']})"
                )
    lines.append("gpus:")
    for name, g in presets["gpus"].items():
        lines.append(
            f"  {name:<22} {g['memory_bandwidth_gbps']:g} GB/s, {g['bf16_tflops']:g} TFLOP/s BF16,"
            f" {g['memory_gb']:g} GB"
        )
        if verbose:
            lines.append(f"  {'':<22} source: {g['source']}")
    if not verbose:  # no blank line before it: the first screen holds 25 lines
        lines.append("(--verbose: each preset's description, source and the GPUs one domain joins)")
    return "\n".join(lines)


def _tok(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def levers_hint(table: dict[str, Any]) -> str:
    """What ``--verbose`` adds to the levers' table."""
    sweep = " and the levers across the kernel count" if table.get("kernels") else ""
    return f"the variants{sweep}"


def render_levers(table: dict[str, Any], verbose: bool = True, hint: bool = True) -> str:
    """The levers side by side, plain decoding the reference row, ranked below; the
    variants behind the variants column and the kernel-count sweep only when
    ``verbose`` (else, with ``hint``, a line saying where they are)."""
    rows = table["levers"]
    ref = next(r for r in rows if r["reference"])
    title = (
        f"levers for {table['scenario']} (closed-form long-run tok/s; 90% = "
        f"{table['interval90']}; variants = {table['interval']})"
        if verbose
        else f"levers for {table['scenario']} (closed-form long-run tok/s; 90%: "
        f"{table['interval90'].removeprefix('90% interval ')}; variants: the hardware model's)"
    )
    lines = [
        title,
        f"{'lever':<18}{'tok/s':>8}{'90%':>15}{'variants':>15}{'vs plain':>10}{'AL':>7}"
        f"{'cycle ms':>10}",
    ]
    for r in rows:
        if r.get("not_applicable"):
            why = r["not_applicable"] if verbose else _clause(r["not_applicable"])
            lines.append(f"{r['name']:<18}{'-':>8}  not applicable: {why}")
            continue
        if r["tok_s"] is None:
            lines.append(f"{r['name']:<18}{'-':>8}  not available: {r['error']}")
            continue
        span = f"{_tok(r['low'])}-{_tok(r['high'])}"
        i90 = r.get("interval90")
        inner = "-" if i90 is None else f"{_tok(i90[0])}-{_tok(i90[1])}"
        ratio = r["tok_s"] / ref["tok_s"] if ref["tok_s"] else float("nan")
        tag = "  (reference)" if r["reference"] else ""
        lines.append(
            f"{r['name']:<18}{r['tok_s']:8.1f}{inner:>15}{span:>15}{ratio:9.2f}x"
            f"{r['accept_length']:7.2f}{r['cycle_ms']:10.2f}{tag}"
        )
    ranked = [next(r for r in rows if r["name"] == n) for n in table["ranked"]]
    label = "ranked (one lever at a time)" if verbose else "each lever alone"
    if ranked:
        order = ", then ".join(f"{r['name']} ({r['tok_s']:.1f})" for r in ranked)
        lines.append(f"{label}: {order}")
    elif any(r.get("not_applicable") for r in rows):
        lines.append(f"{label}: none applies here")
    lines += [f"note: {n}" for n in table.get("notes") or []]
    lines += off_centre_lines(rows, table.get("off_centre_inputs") or [], verbose)
    if not verbose:
        lines += [f"(--verbose: {levers_hint(table)})"] if hint else []
        return "\n".join(lines)
    lines.append("variants behind the variants column:")
    lines += [f"  {v['name']}: {v['description']}" for v in table["variants"]]
    if table.get("kernels"):
        lines += kernel_sweep_lines(table["kernels"])
    return "\n".join(lines)


def _clause(reason: str) -> str:
    """A reason without its closing parenthesis (the field it names: ``--verbose``)."""
    head, paren, _ = reason.rpartition(" (")
    return head if paren and reason.endswith(")") else reason


def off_centre_lines(
    rows: list[dict[str, Any]], off: list[dict[str, Any]], verbose: bool = True
) -> list[str]:
    """Why tok/s as specified can sit at an end of its 90% interval: the inputs specified
    outside the 5-95% of their own ranges, and the rows that lie outside their interval
    (not ``verbose``: the inputs counted, in one wrapped sentence)."""
    if not off:
        return []
    outside = [
        r["name"]
        for r in rows
        if r["tok_s"] is not None
        and r.get("interval90") is not None
        and not r["interval90"][0] <= r["tok_s"] <= r["interval90"][1]
    ]
    if not verbose:
        where = f", so it lies outside its 90% interval for {', '.join(outside)}" if outside else ""
        return wrap(
            f"tok/s as specified takes {count(len(off), 'input')} outside the 5-95% of their "
            f"ranges (--verbose names them){where}",
            indent="",
            more="  ",
        )
    head = "tok/s as specified takes inputs outside the 5-95% of their ranges: "
    lines = [head + off_centre_text(off)]
    if outside:
        lines.append(
            "  so it lies outside its 90% interval for: "
            + ", ".join(outside)
            + " (the interval is the range the answer could take)"
        )
    return lines


def kernel_sweep_lines(sweep: dict[str, Any]) -> list[str]:
    """The levers at the ends of the kernel count's range (``KernelSweep.to_dict``)."""
    counts = sweep["counts"]
    head = "".join(f"{f'{k} kernels':>12}" for k in counts)
    lines = [
        f"across the kernels an eager layer issues (model.kernels_per_layer "
        f"{counts[0]}-{counts[-1]}: {sweep['reason']}), tok/s as specified:",
        f"{'lever':<18}{head}",
    ]
    for name, values in sweep["tok_s"].items():
        lines.append(f"{name:<18}" + "".join(f"{_tok(x):>12}" for x in values))
    cost = "".join(f"{x:>12.2f}" for x in sweep["launch_us"])
    lines.append(f"{'us a kernel':<18}{cost}  ({sweep['launch_origin']})")
    gpu = "".join(f"{_tok(x):>12}" for x in sweep["gpu_work"])
    lines.append(f"{'graph, GPU work':<18}{gpu}  (verify time as GPU work)")
    if all(x is None for x in sweep["gpu_work"]):
        fits = sweep["gpu_work_fits_up_to"]
        where = f"; it fits only up to {count(fits, 'kernel')} a layer" if fits else ""
        lines.append(
            f"  verify time as GPU work does not fit the measured verify anywhere in the "
            f"range{where}: {sweep['gpu_work_note']}"
        )
    return lines


def render_allreduce(result: AllReduceTime, note: str | None) -> str:
    """``specsim allreduce``: the time (us) with the algorithm and protocol chosen, and the
    interconnect's note on the GPU count where it has one."""
    lines = [f"{result.us:.3f} us  {result.algorithm}/{result.protocol}"]
    if note:
        lines.append(f"note: {note}")
    return "\n".join(lines)
