"""What each serving engine does by default, as a scenario states it, with the version and
source each default comes from (``specsim init`` writes them as named defaults).

Only what the scenario models: whether the verify pass runs in a CUDA graph
(``timing.verify_cuda_graph``), how prefills are scheduled beside decodes
(``serving.batching``) and whether host work overlaps the GPU (``serving.host_overlap``);
sources as the scenario schema cites them (sim/scenario/schema.py, ``ServingSpec``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Default interconnect of each GPU preset's usual 8-GPU server (the SXM boards' NVLink
#: generation; PCIe cards on the PCIe generation their hosts carry).
GPU_INTERCONNECT = {
    "H100": "nvlink4",
    "H200": "nvlink4",
    "H20": "nvlink4",
    "A100": "nvlink3",
    "B200": "nvlink5",
    "GB200": "nvlink5",
    "L40S": "pcie-gen4",
    "RTX-3090": "pcie-gen4",
    "RTX-PRO-6000": "pcie-gen5",
    "MI300X": "xgmi-mi300x",
}


@dataclass(frozen=True, slots=True)
class EngineDefault:
    """One default of an engine: the scenario field, its value and where it comes from."""

    field: str
    value: object
    source: str


@dataclass(frozen=True, slots=True)
class Engine:
    name: str
    version: str
    defaults: tuple[EngineDefault, ...]


ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        "vllm",
        "0.14",
        (
            EngineDefault(
                "timing.verify_cuda_graph",
                True,
                "vLLM V1 captures uniform decode batches, the speculative verify's included, "
                "in full CUDA graphs (compilation_config.cudagraph_mode FULL_AND_PIECEWISE, "
                "vllm/config/compilation.py)",
            ),
            EngineDefault(
                "serving.batching",
                "chunked",
                "vLLM V1 always chunks prefills into the decode batch "
                "(vllm/v1/core/sched/scheduler.py)",
            ),
            EngineDefault(
                "serving.host_overlap",
                "both",
                "vLLM >= 0.14 schedules asynchronously with EAGLE/MTP (sim/scenario/schema.py "
                "ServingSpec)",
            ),
            EngineDefault(
                "serving.max_running_requests",
                1024,
                "max_num_seqs for GPUs of 70 GiB or more (vllm/engine/arg_utils.py)",
            ),
        ),
    ),
    "sglang": Engine(
        "sglang",
        "0.5",
        (
            EngineDefault(
                "timing.verify_cuda_graph",
                True,
                "SGLang captures the TARGET_VERIFY forward in a CUDA graph "
                "(python/sglang/srt/model_executor/cuda_graph_runner.py)",
            ),
            EngineDefault(
                "serving.batching",
                "prefill_first",
                "SGLang runs a prefill batch before decoding (scheduler.py get_next_batch_to_run)",
            ),
            EngineDefault(
                "serving.host_overlap",
                "baseline",
                "SGLang turns its overlap scheduler off for speculative decoding "
                "(server_args.py; sim/scenario/schema.py ServingSpec)",
            ),
        ),
    ),
    "trtllm": Engine(
        "trtllm",
        "1.1",
        (
            EngineDefault(
                "timing.verify_cuda_graph",
                True,
                "assumed: TensorRT-LLM's PyTorch backend with cuda_graph_config set, as its "
                "speculative-decoding examples run (a verify without graphs is far slower)",
            ),
            EngineDefault(
                "serving.batching",
                "prefill_first",
                "TensorRT-LLM's enable_chunked_prefill defaults to off (llm_args.py)",
            ),
            EngineDefault(
                "serving.host_overlap",
                "baseline",
                "TensorRT-LLM turns its overlap scheduler off for speculative decoding "
                "(sim/scenario/schema.py ServingSpec)",
            ),
        ),
    ),
}
