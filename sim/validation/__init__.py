"""docs/validation.md: published cases (calibrated on some figures, scored on others),
closed-form checks and the figures they use (``python -m sim.validation``)."""
