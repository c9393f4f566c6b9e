"""Questions asked of the model: analysis, root finding on Monte Carlo estimates
(``bisection``) and on the exact law (``exact_search``), acceptance search, any-lever solve,
comparisons, grids, sweeps and their store, what the hardware model says of a pass, and
for trees the chain-or-tree search (``tree_search``; a tree's own analysis is the binding's,
sim/binding/tree_analysis.py).

The serving decisions have their own folder, ``serving`` (sim/studies/serving/)."""
