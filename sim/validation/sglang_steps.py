"""SGLang's decode step by batch size, read from the ``Decode batch`` lines of public server
logs, against the growth the model charges from physics alone
(docs/studies/sglang-step-time.md: the pre-registered reading and rule, and what was found).

Each line covers ``--decode-log-interval`` decode iterations (40 by default) since the
previous line, and ``gen throughput`` is the tokens those iterations generated over their wall
time, so an iteration of plain decoding lasts

    step_ms = 1000 x B_int / gen_throughput,

B_int the interval's mean batch: the mean of this line's and the previous line's
``#running-req`` (this line's alone for the first line of a series). A line is used when its
``#queue-req`` is 0, it says ``cuda graph: True`` (an eager line adds launch costs, not a
per-request term) and no ``Prefill batch`` line falls between it and the previous decode line.
A source that publishes its retained steady intervals' rates (``trials``) gives one interval a
rate at its full batch (``trial_lines``), the lines it prints kept for the record. A
``bench_one_batch_server`` report row at batch B (``report_lines``) gives

    step_ms = ITL = 1000 x B / output_throughput,

its output throughput being B x output_len / (latency - ttft), ttft the time the batch's last
request streamed its first token (so only decode iterations at B running requests), at
B x (input_len + output_len / 2) KV tokens (the middle of the decode).

The model's step over the same lines is the batched pass's work (sim/hardware/batched.py
``BatchedPass.work_ms``; at the default slope 1 a pass grows exactly as its work): the weights
read once, the line's ``#token`` KV tokens in use read at the GPU preset's bandwidth, 2 x
active parameters x B_int FLOPs at ``GEMM_FLOP_EFFICIENCY`` of peak, and ``#token`` attention
(query, key) pairs at peak (a decode token attends to its whole context). A MoE model (a
series with ``experts``, ``experts_per_token`` and ``expert_params``) reads its routed
experts as the expected distinct experts of B tokens, E (1 - (1 - e/E)^B) a layer
(sim/hardware/roofline.py ``Weights.bytes_read``, uniform routing, no fused-MoE kernel
model), linear between the two whole batches around a fractional B_int.

Both sets of steps are fitted with a least-squares line a + b x B_int (b's standard error from
the residuals, n - 2 degrees of freedom); the per-request excess e = b - b_gpu (ms a running
request an iteration) is read against ``HOST_BOUND_MS``: host-bound when e - 2 SE is above it,
GPU-bound when e + 2 SE is below it, otherwise not identified.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from sim.calibration.importers.sglang_log import decode_fields
from sim.hardware.batched import GEMM_FLOP_EFFICIENCY
from sim.hardware.gpus import gpu_preset
from sim.hardware.roofline import Weights
from sim.validation.data_files import read_table

__all__ = [
    "HOST_BOUND_MS",
    "MIN_SERIES",
    "LineFit",
    "SeriesComparison",
    "StepLine",
    "compare_series",
    "fit_line",
    "published_series",
    "report_lines",
    "series_weights",
    "step_lines",
    "trial_lines",
]

#: The per-request excess above which a server is host-bound (ms a running request an
#: iteration): half the 708 us a request fitted on SpecForge #339's plain batch 4
#: (docs/moe-growth.md), far above the 7-38 us of SGLang's per-request host work when it is
#: hidden (sim/model/host_work.py). Fixed before any series was compared.
HOST_BOUND_MS = 0.354
#: Series needed before the question across servers can be answered (pre-registered).
MIN_SERIES = 5

Verdict = Literal["host-bound", "GPU-bound", "not identified"]


@dataclass(frozen=True, slots=True)
class StepLine:
    """One ``Decode batch`` line read as an interval: ``batch`` its mean batch B_int,
    ``step_ms`` one iteration's time, ``kv_tokens`` the line's ``#token``, ``used`` whether
    the pre-registered reading keeps it (``reason`` says why not)."""

    running_req: int
    batch: float
    step_ms: float
    kv_tokens: int
    cuda_graph: bool | None
    used: bool
    reason: str


@dataclass(frozen=True, slots=True)
class LineFit:
    """Least-squares a + b x over n points; ``b_se`` from the residuals (n - 2 d.o.f.,
    0 for n = 2)."""

    a: float
    b: float
    b_se: float
    n: int


@dataclass(frozen=True, slots=True)
class SeriesComparison:
    """One server's measured line against the model's over the same used lines."""

    name: str
    source: str
    lines: tuple[StepLine, ...]
    measured: LineFit
    model: LineFit
    model_steps_ms: tuple[float, ...]

    @property
    def excess_ms(self) -> float:
        """e = b - b_gpu: the measured growth a running request beyond the physics'."""
        return self.measured.b - self.model.b

    @property
    def verdict(self) -> Verdict:
        lo = self.excess_ms - 2.0 * self.measured.b_se
        hi = self.excess_ms + 2.0 * self.measured.b_se
        if lo > HOST_BOUND_MS:
            return "host-bound"
        if hi < HOST_BOUND_MS:
            return "GPU-bound"
        return "not identified"


def step_lines(text: str) -> tuple[StepLine, ...]:
    """The decode lines of a log excerpt, in order, read as intervals (module docstring)."""
    out: list[StepLine] = []
    previous: int | None = None
    prefill_since = False
    for raw in text.splitlines():
        if "Prefill batch" in raw:
            prefill_since = True
            continue
        fields = decode_fields(raw)
        if fields is None:
            continue
        running = int(fields["#running-req"])
        gen = float(fields["gen throughput (token/s)"])
        graph = {"true": True, "false": False}.get(fields.get("cuda graph", "").lower())
        batch = running if previous is None else 0.5 * (running + previous)
        reasons = [
            why
            for why, bad in (
                ("requests queued", int(fields.get("#queue-req", "0")) != 0),
                ("not graphed", graph is not True),
                ("a prefill in the interval", prefill_since),
            )
            if bad
        ]
        out.append(
            StepLine(
                running_req=running,
                batch=batch,
                step_ms=1000.0 * batch / gen,
                kv_tokens=int(fields["#token"]),
                cuda_graph=graph,
                used=not reasons,
                reason=", ".join(reasons),
            )
        )
        previous, prefill_since = running, False
    return tuple(out)


def trial_lines(trials: Sequence[Mapping[str, Any]], context_tokens: float) -> tuple[StepLine, ...]:
    """Steady intervals a source publishes as rates only (batch, run, gen throughputs of its
    retained full-batch graphed intervals): B_int = the batch, ``kv_tokens`` = B x the mean
    context; every one used."""
    return tuple(
        StepLine(
            running_req=int(trial["batch"]),
            batch=float(trial["batch"]),
            step_ms=1000.0 * float(trial["batch"]) / float(rate),
            kv_tokens=round(float(trial["batch"]) * context_tokens),
            cuda_graph=True,
            used=True,
            reason="",
        )
        for trial in trials
        for rate in trial["rates"]
    )


def report_lines(table: Mapping[str, Any]) -> tuple[StepLine, ...]:
    """A ``bench_one_batch_server`` report's rows (``batch``, ``output_throughput``, at
    ``input_len`` and ``output_len``) read as steps (module docstring). Every row is used: a
    series to compare stores only the rows its server's CUDA graphs cover, as the registration
    asks (a report does not print them: ``cuda_graph`` None)."""
    context_tokens = int(table["input_len"]) + int(table["output_len"]) / 2.0
    return tuple(
        StepLine(
            running_req=int(b),
            batch=float(b),
            step_ms=1000.0 * float(b) / float(rate),
            kv_tokens=round(float(b) * context_tokens),
            cuda_graph=None,
            used=True,
            reason="",
        )
        for b, rate in zip(table["batch"], table["output_throughput"], strict=True)
    )


def fit_line(x: Sequence[float], y: Sequence[float]) -> LineFit:
    """Ordinary least squares y = a + b x, with b's standard error."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = xs.size
    if n < 2 or np.ptp(xs) == 0:
        raise ValueError(f"a line needs two distinct x, got {xs.tolist()}")
    sxx = float(np.sum((xs - xs.mean()) ** 2))
    b = float(np.sum((xs - xs.mean()) * (ys - ys.mean())) / sxx)
    a = float(ys.mean() - b * xs.mean())
    rss = float(np.sum((ys - a - b * xs) ** 2))
    b_se = float(np.sqrt(rss / (n - 2) / sxx)) if n > 2 else 0.0
    return LineFit(a=a, b=b, b_se=b_se, n=n)


def series_weights(table: Mapping[str, Any]) -> Weights:
    """A series' model weights; its MoE fields (``dense_layers``, ``dense_layer_params``,
    ``experts``, ``experts_per_token``, ``expert_params``, ``expert_bytes_per_param``) when
    it has them, from the model's config.json."""
    moe = {
        key: table[key]
        for key in (
            "dense_layers",
            "dense_layer_params",
            "experts",
            "experts_per_token",
            "expert_params",
            "expert_bytes_per_param",
        )
        if key in table
    }
    return Weights(
        layers=int(table["layers"]),
        layer_params=float(table["layer_params"]),
        lm_head_params=float(table["lm_head_params"]),
        weight_bytes_per_param=float(table["weight_bytes_per_param"]),
        **moe,
    )


def _weight_bytes(weights: Weights, batch: float) -> float:
    """Weight bytes a pass over ``batch`` decode tokens reads (all ranks): a dense model's
    whatever the batch; a MoE model's linear between the whole batches around a fractional
    interval mean (module docstring)."""
    if not weights.is_moe:
        return weights.bytes_read(1)
    lo = math.floor(batch)
    share = batch - lo
    low = weights.bytes_read(lo)
    return low if share == 0.0 else low + share * (weights.bytes_read(lo + 1) - low)


def _model_step_ms(table: Mapping[str, Any], line: StepLine) -> float:
    """The batched pass's work (ms a rank) over the line: B_int decode tokens, its ``#token``
    KV tokens read and as many attention pairs (module docstring)."""
    weights = series_weights(table)
    gpu = gpu_preset(str(table["gpu"]))
    gpus = int(table["gpus"])
    bytes_per_ms = gpu.memory_bandwidth_gbps * 1e6
    flops_per_ms = gpu.bf16_tflops * 1e9
    # Weights.flops is linear in the tokens, so a fractional interval mean is its mean.
    flops = weights.flops(1) * line.batch
    memory = (
        _weight_bytes(weights, line.batch) / gpus + line.kv_tokens * table["kv_bytes_per_token"]
    ) / bytes_per_ms
    compute = flops / gpus / (GEMM_FLOP_EFFICIENCY * flops_per_ms)
    attention = line.kv_tokens * table["attention_flops_per_pair"] / flops_per_ms
    return float(memory + compute + attention)


def compare_series(table: Mapping[str, Any]) -> SeriesComparison:
    """One data-file series: its lines (its ``trials`` when it has them, else its printed
    ``lines``), the measured fit and the model's over the used lines."""
    if "trials" in table:
        lines = trial_lines(table["trials"], float(table["context_tokens"]))
    else:
        lines = step_lines(str(table["lines"]))
    used = [line for line in lines if line.used]
    model = [_model_step_ms(table, line) for line in used]
    batches = [line.batch for line in used]
    return SeriesComparison(
        name=str(table["name"]),
        source=str(table["source"]),
        lines=lines,
        measured=fit_line(batches, [line.step_ms for line in used]),
        model=fit_line(batches, model),
        model_steps_ms=tuple(model),
    )


def published_series() -> tuple[SeriesComparison, ...]:
    """Every series of sim/validation/data/sglang_decode_steps.toml, compared."""
    return tuple(compare_series(table) for table in read_table("sglang_decode_steps")["series"])
