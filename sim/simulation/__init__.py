"""The Monte Carlo: engines (``fast``, ``des``), ``simulate`` (seeds, workers), results and
their summary statistics."""
