"""The mathematics of speculation (imports nothing from ``sim`` but errors)."""
