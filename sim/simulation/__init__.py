"""Simulation engines: the batch-1 Monte Carlo engines and the serving simulation."""
