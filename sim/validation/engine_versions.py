"""The engine versions the published serving curves name, the host overlap each ran with,
and their CUDA-graph capture as serving fields."""

from __future__ import annotations

from sim.calibration.engine_defaults import GRAPH_CAPTURE

__all__ = [
    "SGLANG_OVERLAP",
    "SGLANG_PAPER",
    "VLLM_2025_OVERLAP",
    "VLLM_2026",
    "VLLM_PAPER",
    "graph_capture",
]


#: Which iterations hide their host work (sim/model/host_work.py), per engine as the papers
#: ran it: SGLang v0.4.4 overlaps plain decoding only (its EAGLE path turns the overlap
#: scheduler off); vLLM in March 2025 (the EAGLE-3 paper) had no asynchronous scheduling.
SGLANG_OVERLAP, VLLM_2025_OVERLAP = "baseline", "none"


def graph_capture(engine: str) -> dict[str, int | list[int]]:
    """The CUDA-graph capture limits (or captured batch sizes) of ``engine`` (a key of
    sim/calibration/engine_defaults.py ``GRAPH_CAPTURE``) as serving fields."""
    limits: dict[str, int | list[int]] = {}
    for d in GRAPH_CAPTURE[engine]:
        assert isinstance(d.value, int | list), d
        limits[d.field.removeprefix("serving.")] = d.value
    return limits


#: The engine versions the curves name: SGLang v0.4.4 (EAGLE-3 paper, section 4.3: "the
#: SGLang v0.4.4 environment"), whose first release that runs EAGLE3 is v0.4.4.post2 (the
#: v0.4.4 and v0.4.4.post1 wheels offer --speculative-algorithm EAGLE and NEXTN only), so
#: its capture list and padding; vLLM V1 as of the paper (March 2025: the 0.8 capture
#: list); vLLM >= 0.14 for the rtx6kpro report's 2026-04 image.
SGLANG_PAPER, VLLM_PAPER, VLLM_2026 = "sglang 0.4.4.post2", "vllm 0.8", "vllm 0.14"
