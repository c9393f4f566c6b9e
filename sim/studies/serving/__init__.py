"""The serving decisions: a server under load and what to configure on it.

Modules: ``serve`` (a scenario's server under load in one call, and the study evaluator),
``paired_metrics`` (loads, the metrics at a load, paired gains and differences),
``scenario_plans`` (plan builders), ``point_tasks`` (a point as a worker's task),
``evaluator`` (the memoizing point evaluator), ``break_even`` (where a
paired gain crosses 1 along a load axis, with its 95% interval), ``crossover`` (up to which
load speculation pays, per metric and k, from ``crossover_result``, what it answers, and
``crossover_intervals``, a crossing's 90% interval from inputs and model), ``best_k`` (the
best k per batch size as engine configuration, from ``best_k_selection``, ``best_k_forms``,
``best_k_check`` and ``best_k_result``), ``capacity`` (the highest rate meeting SLOs, from
``capacity_search``, one policy's search; ``capacity_ladder``, each draw's capacity on its
rate ladder, with ``capacity_completion`` and ``capacity_draw_starts``;
``capacity_intervals``, the 90% intervals; ``capacity_result``, what it answers;
``capacity_notes``, its assumption lines) and ``capacity_ratio`` (its paired ratio),
``search`` (the acceptance a drafter needs at a load), ``controllers`` (adaptive
controllers replayed on phase-changing workloads, from ``controller_phases``,
``controller_policies`` and ``controller_replay``), ``tree_load`` (chain against tree as
concurrency grows, from ``tree_load_drafts``, the drafts asked; ``tree_load_runs``, the
nominal runs; ``tree_load_crossings``, the intervals and crossings; ``tree_load_result``,
what it answers; ``tree_load_notes``, its assumption lines), ``draws`` (90% intervals from
inputs and model).
"""
