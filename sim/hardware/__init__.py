"""Hardware model: interconnect and GPU presets, NCCL all-reduce, launch, pass decomposition.

Pure functions and frozen data; no engine code. Modules: ``interconnects`` (presets with
sources), ``allreduce`` (NCCL tuner + custom all-reduce), ``gpus`` (GPU presets),
``launch`` (kernel schedule, critical path), ``experts`` (MoE distinct-expert union),
``roofline`` (derived compute), ``decompose`` (a scenario's passes taken apart).
"""
