"""The mathematics of speculative decoding; imports nothing from ``sim`` but ``sim.errors``.

Modules: ``rates`` (conditional and cumulative rates, the pmf and moments of tokens per
cycle), ``samplers`` (acceptance coin flips as pure functions of uniforms),
``acceptance`` (per-request rate classes, Beta heterogeneity, mixes and their exact
expectations), ``closed_forms`` (renewal-reward throughput, ceilings, required acceptance),
``renewal`` (exact finite-request laws), ``metrics`` (conversions between acceptance
vocabularies), ``cycle`` (pass times and the SGLang chain cycle), ``cycletime`` and
``layer_cycletime`` (the cycle-time models the engines draw durations from).

Trees (topk > 1): ``tree`` (the tree as data), ``tree_build`` (SGLang's beam tree and the
best tree), ``tree_pool`` (the beam run as arrays), ``tree_theory`` (rank-wise closed
forms), ``tree_samplers`` (per-depth categorical draws), ``tree_rates`` and
``tree_presets`` (rank profiles), ``tree_acceptance`` (requests over a tree), ``tree_cost``
(the tree cycle), ``tree_required`` and ``tree_metrics`` (required and implied top-1 rates).
"""
