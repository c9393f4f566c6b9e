"""The sections of a scenario file, one module a section (the whole file:
sim/scenario/schema.py)."""
