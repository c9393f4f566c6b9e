"""The benchmarks still import what they name from the package: `make bench` is not part of
`make test`, so a name moved between modules would otherwise break it unseen (it did once:
``with_overrides`` moved from sim/scenario/load.py to sim/scenario/overrides.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _package_imports(path: Path) -> list[tuple[str, str]]:
    """Every (module, name) the file imports from ``sim`` (at any depth of its code; code
    held in strings, e.g. an old commit's API for an A/B run, is not parsed)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sim":
            out.extend((node.module, a.name) for a in node.names)
    return out


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_bench_names_resolve(path: Path) -> None:
    missing = []
    for module, name in _package_imports(path):
        mod = importlib.import_module(module)
        submodule = hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{name}")
        if not hasattr(mod, name) and not submodule:
            missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports names the package no longer has: {missing}"
