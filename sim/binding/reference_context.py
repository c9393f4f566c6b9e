"""The context at which a scenario's batch-1 ``[timing]`` passes hold: given, 0 when every
batch-1 pass is derived from the weights alone, else an error naming
``timing.context_tokens``."""

from __future__ import annotations

from sim.errors import SpecsimError
from sim.scenario.schema import Scenario

#: The batch-1 pass times a scenario can give; any left out is derived by the hardware model.
BATCH1_FIELDS = ("decode_ms", "verify_ms", "draft_step_ms", "draft_extend_ms")


def reference_context(scenario: Scenario, source: str) -> tuple[float, str]:
    """(the context in tokens at which the batch-1 [timing] passes hold, a note for the
    assumptions, empty when the scenario states it): ``timing.context_tokens`` when given.
    Without it, when the scenario models context (``model.kv_bytes_per_token`` or
    ``attention_flops_per_pair``) and gives no batch-1 pass time and no ``timing.points``
    entry without its own context, 0: every batch-1 pass is then derived from the weights
    alone (sim/hardware/roofline.py leaves the KV reads and attention out), the pass at zero
    context, and the batched model adds each request's KV reads and attention at its own
    context. A measured pass holds at the context it was measured at, which only the file
    can say: SpecsimError naming ``timing.context_tokens`` (``source``: the scenario's
    file)."""
    model, timing = scenario.model, scenario.timing
    if timing.context_tokens is not None:
        return timing.context_tokens, ""
    if not (model.kv_bytes_per_token or model.attention_flops_per_pair):
        return 0.0, ""
    measured = [f"timing.{f}" for f in BATCH1_FIELDS if getattr(timing, f) is not None]
    measured += [
        f"timing.points[{i}]" for i, p in enumerate(timing.points or []) if p.context_tokens is None
    ]
    if measured:
        raise SpecsimError(
            "needed with model.kv_bytes_per_token or attention_flops_per_pair: the context at "
            f"which the [timing] passes were measured ({', '.join(measured)}; specsim init "
            "--context-tokens, or --set timing.context_tokens=N)",
            source=source,
            field="timing.context_tokens",
        )
    return 0.0, (
        "reference context: 0 tokens, derived (no timing.context_tokens and no measured "
        "batch-1 pass: the hardware model's passes read the weights only, so the KV reads and "
        "attention of each request's context are all added under load)"
    )
