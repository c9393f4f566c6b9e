"""The settings a serving study document carries (seed, sample size, lengths), for the
renderer tests' hand-built documents."""

from __future__ import annotations

SETTINGS = {
    "seed": 1,
    "replications": 10,
    "requests": 200,
    "warmup_requests": 20,
    "input_tokens_mean": 1024,
    "output_tokens_mean": 512,
    "batching": "prefill_first",
}
