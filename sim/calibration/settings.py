"""What ``calibrate`` can fit, as plain names (importable without the fitting stack)."""

from __future__ import annotations

#: Timing fields calibrate can fit, in the default priority order (earlier = fitted first
#: when the data cannot separate two of them). ``draft_extend_ms`` and
#: ``cycle_overhead_ms`` are always collinear with verify_ms in tok/s data; they, the
#: extend's growth per accepted token (seen when accept lengths differ at one num_steps)
#: and the per-step drafter overhead (a slope in num_steps, like draft_step_ms) are
#: fitted only when named explicitly.
TIMING_FIELDS = (
    "decode_ms",
    "verify_ms",
    "draft_step_ms",
    "verify_ms_per_extra_token",
    "draft_extend_ms",
    "cycle_overhead_ms",
    "draft_extend_ms_per_token",
    "draft_step_overhead_ms",
)
DEFAULT_TIMING_FIT = TIMING_FIELDS[:4]
#: ``shape``: a first-position rate and a decay (sim/model/shapes.py) fitted to accept
#: lengths at two or more num_steps (or per-position rates), the shape chosen by held-out
#: error; ``auto`` picks per_position for per-position counters, shape for accept lengths
#: at two or more num_steps, alpha for one accept length.
ACCEPTANCE_MODELS = ("auto", "alpha", "per_position", "shape")

#: Default fit order when the base's verify pass comes from the hardware model.
TABLE_TIMING_FIT = ("decode_ms", "cycle_overhead_ms", "draft_step_ms")
