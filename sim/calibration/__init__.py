"""From what servers print to a scenario: importers (Prometheus, vLLM counters, SGLang
logs), measurements with their errors, identifiability-aware least squares, calibrate."""
