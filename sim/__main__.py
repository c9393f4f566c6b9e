"""``python -m sim``: the same process as the ``specsim`` console script."""

from sim.cli.process import run_process

run_process()
