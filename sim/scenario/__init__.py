"""The scenario file: schema (pydantic only), overrides, loading, keys, TOML output.
``Scenario`` is plain validated data; what it means is sim/binding/."""
