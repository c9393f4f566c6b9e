"""Questions asked of the model: analysis, root finding, acceptance search, any-lever solve,
comparisons, grids, sweeps and their store, and what the hardware model says of a pass."""
