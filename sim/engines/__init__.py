"""Monte Carlo engines: ``fast`` (vectorized NumPy) and ``des`` (SimPy, the model of record).

Both simulate the same model (sim/engines/common.py) from the same pure functions
(sim/acceptance.py for the coin flips, sim/cycletime.py for durations) and return an
``EngineOutput``; sim/montecarlo.py seeds them and assembles the result.
"""
