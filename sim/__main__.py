"""``python -m sim``: the same command group as the ``specsim`` console script."""

from sim.cli import main

main(prog_name="specsim")
