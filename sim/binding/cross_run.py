"""Accept lengths of one drafter measured in separate runs at several num_steps.

A within-run per-position profile (sim/binding/priors.py ``PROFILES``) shows how the
conditional rate falls with position inside one run. Runs at different num_steps differ
beyond that: the position-1 rate itself moves with num_steps (vllm-project/vllm PR #48892:
83.59% at K = 1, 75.68% at K = 8, same drafter and data), so accept lengths measured
across runs fall away from a profile fitted to the shortest runs faster or slower than any
within-run profile shows. The series below are that cross-run evidence: each gives one
log rho (sim/binding/priors.py ``cross_run_log_rho``), pooled with the within-run ones
into the shape error past the measured positions. The figures and their sources are in
sim/binding/data/cross_run.toml; this module builds the series from them.

They are also the validation report's held-out acceptance cases (sim/validation/). There,
every case's prediction and interval use the shape error estimated without the case's
own source (``shape_error(method, leave_out=source)``), so no series informs its own score.

Printed precision matters: a figure printed with d decimals carries a rounding error of
0.5 x 10^-d, whose standard deviation 10^-d / sqrt(12) is the sigma used when fitting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.tables import curve, read_package_table


def rounding_sigma(decimals: int) -> float:
    """Standard deviation of the rounding error of a figure printed with ``decimals``."""
    return 10.0**-decimals / 12**0.5


#: Draft lengths a series is fitted on (the research notes' protocol: predict AL(K_long)
#: from AL(K <= 2)); every longer num_steps is compared.
MULTI_K_CALIBRATE_UP_TO = 2


# Accept lengths (bonus included) measured at several draft lengths with the same model,
# drafter and data. None of them is a profile of the decay priors (``PROFILES``).
@dataclass(frozen=True, slots=True)
class MultiKSeries:
    """Accept lengths of one setup at several num_steps; ``decimals`` as printed (None:
    approximate, ``approx_sigma`` is the error given to it)."""

    name: str
    method: str  # the draft method's decay prior (sim/binding/priors.py METHODS)
    source: str
    setting: str
    accept_lengths: dict[int, float]
    decimals: int | None = 2
    approx_sigma: float = 0.05
    note: str = ""

    def sigma(self) -> float:
        return rounding_sigma(self.decimals) if self.decimals is not None else self.approx_sigma

    @property
    def fitted_num_steps(self) -> list[int]:
        """The num_steps a series is fitted on: those <= ``MULTI_K_CALIBRATE_UP_TO``, or
        the shortest when none is that short; every longer one is compared."""
        ks = sorted(self.accept_lengths)
        return [k for k in ks if k <= MULTI_K_CALIBRATE_UP_TO] or ks[:1]


_DATA = read_package_table("sim.binding", "cross_run")


def _series(table: dict[str, Any]) -> MultiKSeries:
    """One ``[[multi_k]]`` table: accept lengths as printed, or 1 + n x rate from a printed
    acceptance rate (accepted / drafted)."""
    if "accept_rates" in table:
        accept_lengths = {int(n): 1.0 + n * r for n, r in table["accept_rates"]}
    else:
        accept_lengths = curve(table["accept_lengths"])
    return MultiKSeries(
        table["name"],
        table["method"],
        table["source"],
        table["setting"],
        accept_lengths,
        decimals=table.get("decimals"),
        note=table.get("note", ""),
    )


# vllm-project/speculators issue #563: Qwen3-8B EAGLE-3 drafters, accept length per k =
# 1..7 by task and drafter architecture (sim/binding/data/cross_run.toml).
_S563 = _DATA["speculators_563"]
SPECULATORS_563_URL: str = _S563["source"]
SPECULATORS_563: tuple[MultiKSeries, ...] = tuple(
    MultiKSeries(
        f"Qwen3-8B + EAGLE-3 ({arch} drafter), {task}",
        _S563["method"],
        SPECULATORS_563_URL,
        _S563["setting"],
        dict(zip(_S563["num_steps"], values, strict=True)),
    )
    for task, arch, values in _S563["runs"]
)

#: The held-out multi-K series: speculators #563 and the ``[[multi_k]]`` tables (MTP heads
#: in vLLM, llama.cpp and ik_llama.cpp).
MULTI_K: tuple[MultiKSeries, ...] = (
    *SPECULATORS_563,
    *(_series(table) for table in _DATA["multi_k"]),
)

# Accept lengths of the validation report's batch-1 cases (their tok/s are in
# sim/validation/data/batch1_runs.toml), cross-run evidence like the series above.
# vllm-project/vllm issue #20780: Llama-3.1-8B-Instruct + EAGLE-3, vLLM V1, H100, MT-Bench.
VLLM_20780_URL: str = _DATA["vllm_20780"]["source"]
VLLM_20780_AL = _series(_DATA["vllm_20780"])
# sgl-project/sglang PR #4247 (comment by chromecast56): Llama-3.1-8B + EAGLE-3, MT-bench.
SGLANG_4247_URL: str = _DATA["sglang_4247"]["source"]
SGLANG_4247_AL = _series(_DATA["sglang_4247"])
# vllm-project/vllm PR #16035 (comment by ekagra-ranjan): Llama-3-8B-Instruct +
# lmsys/sglang-EAGLE-LLaMA3-Instruct-8B, vLLM V1, MT-Bench.
VLLM_16035_URL: str = _DATA["vllm_16035"]["source"]
VLLM_16035_AL = _series(_DATA["vllm_16035"])

#: Every cross-run series (the held-out multi-K cases and the batch-1 cases' accept lengths).
CROSS_RUN: tuple[MultiKSeries, ...] = (*MULTI_K, VLLM_20780_AL, SGLANG_4247_AL, VLLM_16035_AL)
