"""The serving simulation's report: a JSON body and a side-by-side text summary.

Both come from the same typed summary (sim/simulation/serving/metrics.py): speculation and
the baseline (plain decoding on the same arrivals) column by column, the paired speedup
(> 1: speculation helps; for latencies it is baseline / speculative), and the assumptions
the setup made.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.report.conditioning import conditioning_lines
from sim.report.format import count
from sim.report.model_error import model_error_line
from sim.report.screen import prompt_text
from sim.simulation.serving.metrics import (
    Estimate,
    PolicySummary,
    Ratio,
    ServingSummary,
    request_metrics,
)
from sim.simulation.serving.overload import BOUND_SOURCE, NO_STEADY_STATE, above, at_most
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, ServingSetup
from sim.simulation.serving.simulate import ServingRun

if TYPE_CHECKING:  # the study's result, only named here
    from sim.studies.serving.serve import Served

__all__ = [
    "finite",
    "ratio_dict",
    "render_serving",
    "render_unstable",
    "served_to_dict",
]

#: Metrics of the JSON document and the text table, with their labels.
METRICS: tuple[tuple[str, str], ...] = (
    ("per_user_tok_s", "per-user tok/s"),
    ("aggregate_tok_s", "aggregate tok/s"),
    ("ttft_ms", "TTFT ms"),
    ("tpot_ms", "TPOT ms"),
    ("itl_ms", "ITL ms"),
    ("e2e_ms", "E2E ms"),
    ("queue_ms", "queueing ms"),
)
#: Quantile levels of the distributions kept in the document (for plots).
LEVELS = np.linspace(0.0, 1.0, 101)


def finite(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _estimate(e: Estimate) -> dict[str, Any]:
    return {
        "mean": finite(e.mean),
        "ci95": None if e.ci95 is None else [finite(e.ci95[0]), finite(e.ci95[1])],
        "p50": finite(e.p50),
        "p90": finite(e.p90),
        "p99": finite(e.p99),
    }


def ratio_dict(r: Ratio | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "mean": finite(r.mean),
        "ci95": None if r.ci95 is None else [finite(r.ci95[0]), finite(r.ci95[1])],
    }


def _aggregate(p: PolicySummary) -> dict[str, Any]:
    """Aggregate tok/s is one number per replication: its quantiles are across them."""
    values = p.per_replication["aggregate_tok_s"]
    q = np.quantile(values, [0.5, 0.9, 0.99])
    out = ratio_dict(p.aggregate_tok_s) or {}
    return {**out, "p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2])}


def _distributions(run: ServingRun, name: str) -> dict[str, list[float]]:
    """Pooled quantiles (0..100%) of per-request metrics and of ITL, for plots."""
    out: dict[str, list[float]] = {}
    per_request = [request_metrics(r) for r in run.records[name]]
    for metric in ("per_user_tok_s", "ttft_ms", "tpot_ms", "e2e_ms"):
        values = np.concatenate([m[metric] for m in per_request])
        values = values[np.isfinite(values)]
        out[metric] = np.quantile(values, LEVELS).tolist() if values.size else []
    return out


def _policy_dict(run: ServingRun, summary: ServingSummary, name: str) -> dict[str, Any]:
    p = summary.policies[name]
    body: dict[str, Any] = {}
    for metric, _ in METRICS:
        body[metric] = (
            _aggregate(p) if metric == "aggregate_tok_s" else _estimate(p.metrics[metric])
        )
    body.update(
        {
            "mean_decode_batch": ratio_dict(p.mean_batch),
            "decode_batch_time_share": [float(x) for x in p.batch_share],
            "kv_utilisation": ratio_dict(p.kv_utilisation),
            "preemptions_per_request": ratio_dict(p.preemptions_per_request),
            "accept_length": ratio_dict(p.accept_length),
            "p_per_user_tok_s_at_least": {f"{t:g}": ratio_dict(r) for t, r in p.p_tok_s.items()},
            "slo_attainment": ratio_dict(p.slo_attainment),
            "little": {
                "in_system": ratio_dict(p.little[0]),
                "rate_x_time": ratio_dict(p.little[1]),
                "window": {
                    "rate_x_time": ratio_dict(p.little_window[0]),
                    "edge": ratio_dict(p.little_window[1]),
                },
            },
            "backlog": {
                "start": [b.start for b in p.backlogs],
                "end": [b.end for b in p.backlogs],
                "window_arrivals": [b.arrivals for b in p.backlogs],
                "overloaded_replications": p.overloaded,
            },
            "distributions": _distributions(run, name),
        }
    )
    return body


def _overload_lines(doc: dict[str, Any], names: list[str]) -> list[str]:
    """One warning per policy under which requests arrived faster than they were answered
    over the window (sim/simulation/serving/metrics.py ``Backlog``): an overload, or a run
    too short for the system to fill; its latencies are transient either way."""
    out = []
    for name in names:
        b = doc[name]["backlog"]
        n = b["overloaded_replications"]
        if not n:
            continue
        out.append(
            f"NOT STEADY ({name}): in {n} of {count(len(b['end']), 'replication')} the requests "
            "in the "
            f"system grew from {np.mean(b['start']):.0f} to {np.mean(b['end']):.0f} over the "
            f"measurement window ({np.mean(b['window_arrivals']):.0f} arrivals, mean): the "
            "load is above what the server answers, or the run ended while the system was "
            "still filling; either way the latencies above are transient and grow with the "
            "run's length. More requests (--requests, or workload.warmup_requests) tell "
            "which: a steady state stops growing, an overload does not"
        )
    return ["", *out] if out else []


#: Said when a closed loop of fixed lengths serves plain requests in lockstep waves
#: (``Workload.lockstep``): the plain TTFT is a wave's prefill, and so is much of the
#: paired TTFT "speedup". A server given that workload does the same; spread lengths do not.
LOCKSTEP_LINE = (
    "fixed lengths: plain requests end in lockstep and prefill in waves, raising TTFT "
    "(workload.lengths)"
)


def served_to_dict(served: Served, scenario: str) -> dict[str, Any]:
    """The ``serve`` document's body (every number the text and the figures show): the
    settings, then each policy's metrics and the paired speedup with their 90% intervals
    when ``served`` ran; when its Poisson load is above what a policy can answer
    (sim/simulation/serving/stability.py: nothing simulated), ``stable`` false, each
    policy's bound and the policies the load is above."""
    setup, run, summary = served.setup, served.run, served.summary
    if run is None or summary is None:
        assert served.check is not None
        body = _settings(setup, scenario, setup.replications, setup.seed)
        body.update(served.check.to_dict())
        return body
    body = _settings(setup, scenario, run.replications, run.seed)
    for name in setup.draftings:
        body[name] = _policy_dict(run, summary, name)
    if SPECULATIVE in summary.speedup:
        body["speedup"] = {m: ratio_dict(r) for m, r in summary.speedup[SPECULATIVE].items()}
    if served.interval90 is not None:
        body["interval90"] = served.interval90
    return body


def _settings(setup: ServingSetup, scenario: str, replications: int, seed: int) -> dict[str, Any]:
    """The settings every ``serve`` document starts with."""
    sched = setup.plan.scheduler
    n_in, n_out = setup.mean_tokens
    return {
        "scenario": scenario,
        "load": setup.load,
        "replications": replications,
        "requests": setup.plan.workload.requests,
        "warmup_requests": setup.plan.workload.warmup,
        "seed": seed,
        "mean_input_tokens": n_in,
        "mean_output_tokens": n_out,
        "scheduler": {
            "max_running_requests": sched.max_running_requests,
            "max_running_requests_speculative": sched.max_running_requests_speculative,
            "batching": sched.batching,
            "token_budget": sched.token_budget,
            "kv_capacity_tokens": sched.kv_capacity_tokens,
            "plain_kv_capacity_tokens": sched.plain_kv_capacity_tokens,
            "prefill": sched.prefill,
        },
        "kv_capacity": setup.kv_capacity.to_dict() if setup.kv_capacity else None,
        "policies": {name: p.describe() for name, p in setup.policies.items()},
        "slo": {
            "tok_s": list(setup.slo.tok_s),
            "ttft_ms": setup.slo.ttft_ms,
            "tpot_ms": setup.slo.tpot_ms,
        },
        "assumptions": list(setup.assumptions),
        "lockstep": setup.plan.workload.lockstep,
    }


# --------------------------------------------------------------------------- text


def _cell(mean: float | None, ci: list[float | None] | None, digits: int) -> str:
    if mean is None:
        return "-"
    text = f"{mean:.{digits}f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return text


def _digits(value: float | None) -> int:
    if value is None:
        return 1
    return 0 if abs(value) >= 1000 else 1 if abs(value) >= 10 else 2


def _quantiles(m: dict[str, Any], digits: int) -> str:
    return " / ".join("-" if m[q] is None else f"{m[q]:.{digits}f}" for q in ("p50", "p90", "p99"))


def _table(rows: list[list[str]], first: int = 31, width: int = 30) -> list[str]:
    return [(f"{r[0]:<{first}}" + "".join(f"{c:<{width}}" for c in r[1:])).rstrip() for r in rows]


def sample_text(doc: dict[str, Any]) -> str:
    """The replications, requests, seed and mean lengths of a ``serve`` document (the
    prompt's left out when none was given: its assumption says so on a line of its own)."""
    prompt = prompt_text(doc, doc["mean_input_tokens"])
    return (
        f"{count(doc['replications'], 'replication')} x "
        f"{count(doc['requests'], 'measured request')} ({doc['warmup_requests']} warm-up), "
        f"seed {doc['seed']}; mean {prompt}{doc['mean_output_tokens']:.0f} output tokens"
    )


def scheduler_text(doc: dict[str, Any]) -> str:
    """The scheduler of a ``serve`` document: batching, limits, KV capacity, prefill."""
    sched = doc["scheduler"]
    kv = sched["kv_capacity_tokens"]
    plain = sched.get("plain_kv_capacity_tokens")
    return (
        f"scheduler: {sched['batching'].replace('_', '-')}, up to "
        f"{sched['max_running_requests']} running"
        + (
            f" ({spec} speculating)"
            if (spec := sched.get("max_running_requests_speculative")) is not None
            else ""
        )
        + f", {sched['token_budget']} tokens per "
        "iteration, KV "
        + (f"{kv} tokens" if kv else "unlimited")
        + (f" ({plain} without the drafter)" if plain and plain != kv else "")
        + f", prefill {sched['prefill']}"
    )


def _header(doc: dict[str, Any]) -> list[str]:
    return [f"{doc['scenario']}: {doc['load']}; {sample_text(doc)}", scheduler_text(doc), ""]


def render_unstable(doc: dict[str, Any]) -> str:
    """The text of a ``serve`` document whose load no steady state answers."""
    rate = doc["offered_rate_per_s"]
    names = [n for n in (SPECULATIVE, BASELINE) if n in doc["service_bounds"]]
    unstable = [doc["policies"][n] for n in doc["unstable"]]
    lines = _header(doc)
    lines.append(f"UNSTABLE: {above(rate, unstable)}: {NO_STEADY_STATE}")
    width = max(len(doc["policies"][n]) for n in names) + 1
    for name in names:
        b = doc["service_bounds"][name]
        bound = b["rate_per_s"]
        verdict = (
            f"its queue grows by at least {rate - bound:.3g} requests a second"
            if name in doc["unstable"]
            else "the load is under it (not simulated either: the comparison is paired)"
        )
        prefill = (
            f" + prefill {b['prefill_ms_per_request']:.1f} ms"
            if b["prefill_ms_per_request"]
            else ""
        )
        lines.append(
            f"  {doc['policies'][name] + ':':<{width}} {at_most(bound)}, "
            f"{verdict} ({b['decode_tok_s']:.4g} decode tok/s at batch {b['batch']}, accept "
            f"length {b['accept_length']:.3f}, {b['iteration_ms']:.1f} ms an iteration; "
            f"server time a request: decode {b['decode_ms_per_request']:.1f} ms{prefill})"
        )
    note = (
        f"{BOUND_SOURCE} A rate below them can still be more than the server answers: "
        "simulate it (serve flags a backlog that grows, NOT STEADY)."
    )
    return "\n".join(lines + _footer(doc, note))


def _footer(doc: dict[str, Any], note: str) -> list[str]:
    """A blank line, ``note`` and the assumptions."""
    lines = ["", note]
    if doc["assumptions"]:
        lines.append("assumptions:")
        lines.extend(f"  - {a}" for a in doc["assumptions"])
    return lines


#: serve's metrics with a 90% interval from inputs and model, as the text names them.
_INTERVAL_METRICS = (
    ("per_user_tok_s", "per-user tok/s"),
    ("aggregate_tok_s", "aggregate tok/s"),
    ("tpot_p50_ms", "TPOT p50 ms"),
)


def _ends(pair: Sequence[float] | None, digits: int) -> str:
    return "-" if pair is None else f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]"


def interval90_lines(doc: dict[str, Any], names: Sequence[str], screen: bool = False) -> list[str]:
    """serve's 90% intervals from inputs and model, a row per policy and the speedup,
    and whether they include the model error (``screen``: only when they do, the block
    then without its blank line before; none without ``interval90``); headed by the
    document's label, which says what they hold where fewer than two draws answered
    (``sources``, sim/studies/serving/draw_intervals.py ``IntervalSources``)."""
    iv = doc.get("interval90")
    if not iv:
        return []
    inputs = len(iv["inputs"])
    if iv.get("sources"):  # not from the inputs' draws: the label says what instead
        head = (
            f"{iv['label']}: {iv['draws_run']} of {count(iv['draws'], 'draw')} of "
            f"{count(inputs, 'input')} ran"
        )
    elif iv["draws_run"]:
        head = (
            f"{iv['label']} ({iv['draws_run']} draws of {count(inputs, 'input')} x "
            f"{iv['replications_per_draw']} replications, with the 95% CI)"
        )
    else:
        head = f"{iv['label']} (no uncertain input: the 95% CI)"
    rows = [[head]]
    rows += [[line] for line in conditioning_lines(iv)]
    rows.append(["", *(label for _, label in _INTERVAL_METRICS)])
    for name in names:
        by = iv["levels"][name]
        rows.append(
            [
                f"  {doc['policies'][name]}",
                *(_ends(by.get(m), 1 if "tok_s" in m else 2) for m, _ in _INTERVAL_METRICS),
            ]
        )
    for name, by in iv["speedup"].items():
        rows.append(
            [f"  speedup (paired, {doc['policies'][name]})"[:30]]
            + [_ends(by.get(m), 3) for m, _ in _INTERVAL_METRICS]
        )
    lines = ["", *_table(rows, width=22)]
    term = iv.get("model_error")
    if term and (term["included"] or not screen):
        lines.append("  " + model_error_line(term))
        if screen:  # the screen keeps its 25 lines: no blank line before the block
            lines.pop(0)
    if iv.get("note"):
        lines += textwrap.wrap(iv["note"], 100, initial_indent="  ", subsequent_indent="    ")
    return lines


def render_serving(doc: dict[str, Any]) -> str:
    """The side-by-side summary of a ``serve`` document body."""
    if doc.get("stable") is False:
        return render_unstable(doc)
    names = [n for n in (SPECULATIVE, BASELINE) if n in doc]
    paired = "speedup" in doc
    lines = _header(doc)
    rows = [["", *[doc["policies"][n] for n in names], *(["speedup (paired)"] if paired else [])]]
    for metric, label in METRICS:
        cells = [doc[n][metric] for n in names]
        d = _digits(cells[0]["mean"])
        row = [f"{label} (mean, 95% CI)", *[_cell(c["mean"], c["ci95"], d) for c in cells]]
        if paired and doc["speedup"].get(metric):
            row.append(_cell(doc["speedup"][metric]["mean"], doc["speedup"][metric]["ci95"], 3))
        rows.append(row)
        rows.append(["  p50 / p90 / p99", *[_quantiles(c, d) for c in cells]])
    extras = (
        ("mean decode batch", "mean_decode_batch", 2),
        ("accept length", "accept_length", 3),
        ("KV utilisation", "kv_utilisation", 3),
        ("preemptions / request", "preemptions_per_request", 3),
        ("SLO attainment", "slo_attainment", 3),
    )
    for label, key, d in extras:
        values = [doc[n][key] for n in names]
        if any(v is not None for v in values):
            rows.append([label, *[_cell(v["mean"], v["ci95"], d) if v else "-" for v in values]])
    for target in doc[names[0]]["p_per_user_tok_s_at_least"]:
        values = [doc[n]["p_per_user_tok_s_at_least"][target] for n in names]
        rows.append([f"P(per-user >= {target})", *[_cell(v["mean"], v["ci95"], 3) for v in values]])
    laws = [doc[n]["little"] for n in names]
    rows.append(
        [
            "Little: L = lambda W + edge",
            *[
                f"{x['in_system']['mean']:.2f} = {x['window']['rate_x_time']['mean']:.2f} + "
                f"{x['window']['edge']['mean']:.2f}"
                for x in laws
            ],
        ]
    )
    lines += _table(rows)
    lines += [LOCKSTEP_LINE] if doc.get("lockstep") else []
    lines += interval90_lines(doc, names)
    lines += _overload_lines(doc, names)
    note = (
        "per-user tok/s: a request's decoding speed after its first token; ITL: the gap "
        "between deliveries (a speculative step delivers its accepted tokens at once); "
        "speedup: per-replication ratio of means on the same arrivals (> 1: speculation helps); "
        "Little, exact over the measurement window: W is the time its arrivals spend in the "
        "system inside it, edge the time inside it of those already there when it opened, "
        "over its length (lambda x the measured requests' mean E2E, JSON little.rate_x_time, "
        "approaches L as the window grows)."
    )
    return "\n".join(lines + _footer(doc, note))
