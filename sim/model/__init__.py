"""The mathematics of speculative decoding; imports nothing from ``sim`` but ``sim.errors``.

Modules: ``rates`` (conditional and cumulative rates, the pmf and moments of tokens per
cycle), ``samplers`` (acceptance coin flips as pure functions of uniforms),
``acceptance`` (per-request rate classes, Beta heterogeneity, mixes and their exact
expectations), ``closed_forms`` (Leviathan's accept length, the rate a target needs, best k),
``renewal`` (exact finite-request laws), ``metrics`` (conversions between acceptance
vocabularies), ``cycle`` (pass times, the SGLang chain cycle and what a cycle yields by
renewal-reward: tok/s, ceiling, the accept length a target needs), ``cycletime`` and
``layer_cycletime`` (the cycle-time models the engines draw durations from).

Trees (topk > 1): the ``tree`` folder (sim/model/tree/): the tree as data, SGLang's beam
tree and the best tree, rank-wise closed forms and samplers, rank profiles, requests over a
tree, the tree cycle, required and implied top-1 rates.
"""
