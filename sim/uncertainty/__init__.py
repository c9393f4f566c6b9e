"""How far an answer can move: perturb the scenario's uncertain inputs, bind each draw,
answer.

Modules: ``sampled_draws`` (the sampled model: each draw's pass times and acceptance, from
the uncertain inputs ``bind`` found, ``Bound.inputs``), ``tree_sampled`` (a tree rebuilt
and answered in every draw), ``answers`` (a batch-1 answer's 90% interval, its drivers and
the measurement to take next), ``interval`` (such an interval, read from the draws),
``drivers`` (each input's swing, the measurement to take next), ``lever_intervals`` (a
lever's value reaching a target, with its interval: ``search --solve``),
``tree_required_draws`` (the 90% interval of the top-1 rate
a tree configuration needs), ``model_error`` (the model-error term of a serving answer's
interval), ``perturb`` (a serving answer's uncertain inputs, drawn once from the bound
scenario as overrides, and each draw's scenario re-validated and bound). The serving
studies' own draws, which run the serving evaluator on the drawn scenarios, are the
studies' (sim/studies/serving/draws.py).
"""
