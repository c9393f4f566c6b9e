"""The scenario file and what it means: schema (pydantic only), overrides, loading, the
scenario half of the pass decomposition, the one binding to model objects, TOML output."""
