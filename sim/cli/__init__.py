"""The ``specsim`` command: thin click commands over the library API.

Each command module parses its options, calls one library function and prints or writes
the result; its library imports happen inside the command (start-up: ``specsim --help``
imports no simulation code). ``SpecsimError`` (bad input) becomes one line on stderr and
exit status 2 (sim/cli/group.py). Commands are registered here, explicitly.
"""

from __future__ import annotations

from sim.cli import (
    best_k,
    calibrate,
    capacity,
    compare,
    controllers,
    convert,
    crossover,
    hardware,
    keys,
    plot,
    run,
    search,
    serve,
    sweep,
    tree_load,
    validate,
)
from sim.cli.group import main

for _command in (
    run.run,
    serve.serve,
    crossover.crossover,
    best_k.best_k,
    capacity.capacity,
    controllers.controllers,
    tree_load.tree_load,
    search.search,
    sweep.sweep,
    compare.compare,
    plot.plot,
    hardware.hardware,
    hardware.allreduce,
    calibrate.calibrate_command,
    convert.convert,
    validate.validate,
    keys.keys,
):
    main.add_command(_command)
del _command

__all__ = ["main"]
