"""What each serving engine does by default, as a scenario states it, with the version and
source each default comes from (``specsim init`` writes them as named defaults).

Only what the scenario models: whether the verify pass runs in a CUDA graph
(``timing.verify_cuda_graph``), how prefills are scheduled beside decodes
(``serving.batching``) and whether host work overlaps the GPU (``serving.host_overlap``);
sources as the scenario schema cites them (sim/scenario/sections/serving.py, ``ServingSpec``).
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
            EngineDefault(
                "serving.max_running_requests_speculative",
                48,
                "SGLang resets max_running_requests to 48 when a speculative algorithm is on "
                'and none is given ("Max running requests is reset to 48 for speculative '
                'decoding", python/sglang/srt/server_args.py from v0.4.5; 32 in v0.4.4); '
                "the plain server keeps what its memory allows",
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
            EngineDefault(
                "serving.max_running_requests",
                2048,
                "max_batch_size (tensorrt_llm/llmapi/llm_args.py, Field(default=2048); "
                "trtllm-serve --max_batch_size)",
            ),
        ),
    ),
}


#: CUDA-graph capture limits per engine and version (``serving.graph_max_tokens``,
#: ``graph_max_batch``, ``graph_max_batch_speculative``; sim/hardware/batched.py): a pass
#: beyond them runs eagerly. Not written by ``specsim init`` (an eager pass needs
#: ``model.kernels_per_layer``, which init does not know); a scenario states them.
GRAPH_CAPTURE: dict[str, tuple[EngineDefault, ...]] = {
    "vllm 0.8": (
        EngineDefault(
            "serving.graph_max_tokens",
            512,
            "vLLM V1 captures [1, 2, 4] + range(8, 513, 8) tokens by default (vllm/config.py "
            "VllmConfig._set_cudagraph_sizes; max_capture_size 512); a batch of more tokens "
            "runs without graphs",
        ),
    ),
    "vllm 0.14": (
        EngineDefault(
            "serving.graph_max_tokens",
            512,
            "vllm/config/vllm.py _set_cudagraph_sizes: max_cudagraph_capture_size = "
            "min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512, "
            "max_num_batched_tokens); cudagraph_dispatcher.py runs a batch of more tokens "
            "with CUDAGraphMode.NONE",
        ),
    ),
    "sglang 0.4.4": (
        EngineDefault(
            "serving.graph_max_batch",
            160,
            "server_args.py: cuda_graph_max_bs = 160 on GPUs of 25 GB or more (8 below at TP "
            "< 4, 80 at TP >= 4); cuda_graph_runner.py captures [1, 2, 4] + 8..160 and "
            "CudaGraphRunner.can_run sends a larger batch down the eager path",
        ),
        EngineDefault(
            "serving.graph_max_batch_speculative",
            32,
            "v0.4.4 and v0.4.4.post1 with EAGLE: get_batch_sizes_to_capture captures "
            "range(1, 33) and server_args.py sets disable_cuda_graph_padding (only those "
            "sizes replay); from v0.4.4.post3 the list reaches max_running_requests (32, "
            "then 48 from v0.4.5), so a speculating server runs graphed at every batch it "
            "admits",
        ),
    ),
    "sglang 0.4.4.post2": (
        EngineDefault(
            "serving.graph_batches",
            [1, 2, 4, *range(8, 161, 8)],
            "cuda_graph_runner.py get_batch_sizes_to_capture: [1, 2, 4] + [i x 8 for i in "
            "range(1, 21)] for plain decoding (cuda_graph_max_bs 160 on GPUs of 25 GB or "
            "more); replay_prepare pads a batch up to the next captured size",
        ),
        EngineDefault(
            "serving.graph_batches_speculative",
            [*range(1, 9), *range(9, 33, 2), 64, 96, 128, 160],
            "v0.4.4.post2 and post3 (the first releases with EAGLE3): "
            "get_batch_sizes_to_capture captures list(range(1, 9)) + list(range(9, 33, 2)) + "
            "[64, 96, 128, 160] with speculative decoding ('we capture less'), and server_args.py "
            "no longer sets disable_cuda_graph_padding for EAGLE: the verify "
            "(cuda_graph_runner.py replay_prepare) and the draft steps "
            "(eagle_draft_cuda_graph_runner.py replay) run padded up to the next captured size",
        ),
    ),
}
