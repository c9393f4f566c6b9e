"""``specsim run``: the closed-form (and later Monte Carlo) answer for one scenario."""
