"""What the EAGLE-3 paper's serving cases assume: Llama-3.1-8B-Instruct's geometry and
weights, the EAGLE-1 drafter's size, and MT-Bench-like traffic (ASSUMED lengths)."""

from __future__ import annotations

from typing import Any

__all__ = ["EAGLE1_DRAFT_PARAMS", "LLAMA8B_MODEL", "MT_BENCH_CONTEXT", "MT_BENCH_WORKLOAD"]


#: Llama-3.1-8B-Instruct (meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096, 8 KV
#: heads of 128; derivation of the parameter counts in scenarios/llama31-8b-1xh100-eagle3.toml).
#: KV per token: 8 heads x 128 x 2 (K and V) x 2 bytes x 32 layers = 131,072 bytes; attention
#: FLOPs per (query, key) pair: 32 heads x 128 x 2 (scores and values) x 2 x 32 layers.
LLAMA8B_MODEL: dict[str, Any] = {
    "name": "Llama-3.1-8B-Instruct",
    "layers": 32,
    "hidden_size": 4096,
    "layer_params": 218.1e6,
    "lm_head_params": 525.3e6,
    "kernels_per_layer": 11,
    "draft_params": 0.424e9,
    "kv_bytes_per_token": 131072.0,
    "attention_flops_per_pair": 524288.0,
}
#: yuhuili/EAGLE-LLaMA3.1-Instruct-8B (EAGLE-1): an fc layer 2 x 4096 -> 4096 (33.6M) and
#: one Llama decoder layer (218.1M, as the target's); it has no LM head of its own, so each
#: drafter pass also reads the target's 128256 x 4096 head (525.3M): 777M read per pass
#: (SGLang's EAGLE worker and vLLM's proposer share the target's head with it). The EAGLE-3
#: drafter's 0.424B has its own 32k-token head.
EAGLE1_DRAFT_PARAMS = 33.6e6 + 218.1e6 + 525.3e6
#: MT-Bench traffic, ASSUMED (the papers do not print their lengths): prompts of ~128
#: tokens and answers of ~512, lognormal (log-sd 0.5) so that users drift apart.
MT_BENCH_WORKLOAD: dict[str, Any] = {
    "lengths": "lognormal",
    "input_tokens": 128,
    "input_sigma": 0.5,
    "output_tokens": 512,
    "output_sigma": 0.5,
}
MT_BENCH_CONTEXT = 128 + 512 / 2  # mean context while decoding
