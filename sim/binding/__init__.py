"""What a scenario means: ``bind(scenario) -> Bound``, the one frozen model (acceptance by
position, pass times, cycle cost, cycle-time model, batched costs, provenance) built once
from a validated ``Scenario`` and passed to everything above."""
