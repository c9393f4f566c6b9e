"""``[simulation]``: Monte Carlo replications and the root seed."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated

from pydantic import Field

from sim.scenario.sections.bounds import MAX_REPLICATIONS
from sim.scenario.sections.section import Section


class SimulationSpec(Section):
    """Monte Carlo replications and the root seed."""

    replications: Annotated[int, Field(gt=0, le=MAX_REPLICATIONS)] = 20
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0
