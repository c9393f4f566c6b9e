"""Questions asked of the model: analysis, root finding, acceptance search, any-lever solve,
comparisons, grids, sweeps and their store, what the hardware model says of a pass, and
for trees their analysis (``tree_analysis``) and the chain-or-tree search (``tree_search``)."""
