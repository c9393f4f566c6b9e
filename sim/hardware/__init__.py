"""Hardware model: physics only (no scenario): interconnect and GPU presets, NCCL
all-reduce, launch, eager execution, expert union, roofline, MLA's prefill branch (``mla``),
jitter, one pass on one piece of hardware
(``passes``) and the layer-level SimPy pass (``layer``)."""
