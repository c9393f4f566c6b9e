"""Questions asked of the model: analysis, root finding, acceptance search, any-lever solve,
comparisons, grids, sweeps and their store, what the hardware model says of a pass, for
trees their analysis (``tree_analysis``) and the chain-or-tree search (``tree_search``);
and the serving decisions: points at loads (serving_points, serving_runs), crossings and
crossover, best k per batch size, capacity under SLOs, search at a load, and adaptive
controllers replayed on phase-changing traces."""
