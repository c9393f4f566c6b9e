"""specsim: a discrete-event simulator of LLM speculative decoding.

The library API is plain functions over frozen config objects; the ``specsim`` command
(``sim.cli``) is a thin layer over it.
"""

__version__ = "0.1.0"
