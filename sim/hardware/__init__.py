"""Hardware model: physics only (no scenario): interconnect and GPU presets, NCCL
all-reduce, launch, expert union, roofline, jitter, one pass on one piece of hardware
(``passes``) and the layer-level SimPy pass (``layer``)."""
