"""The package is a stack of floors: a folder imports only from folders below it.

Floors, lowest first (docs/architecture.md, "The floors"): the basement modules (errors, files,
tables, documents, parallel), then model, hardware, scenario, binding, simulation,
calibration, uncertainty, studies, validation, report, cli. No import circles, and no import inside
a function except the lazy imports of start-up time, which say so in a comment.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from types import MappingProxyType

import pytest

SIM = Path(__file__).resolve().parents[1] / "sim"

FLOORS = {
    "errors": 0,
    "files": 0,
    "tables": 0,
    "documents": 1,
    "model": 2,
    "hardware": 3,
    "scenario": 4,
    "parallel": 4,
    "binding": 5,
    "simulation": 6,
    "calibration": 7,
    "uncertainty": 8,
    "studies": 9,
    "validation": 10,
    "report": 11,
    "cli": 12,
    "__main__": 13,
}


@cache
def modules() -> MappingProxyType[str, Path]:
    """Every sim module's file by its dotted name (listed once a process: the tests share
    it, read-only)."""
    out = {}
    for path in sorted(SIM.rglob("*.py")):
        rel = path.relative_to(SIM.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = path
    return MappingProxyType(out)


def folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


@cache
def imports(path: Path) -> tuple[tuple[str, bool, int], ...]:
    """(imported sim module, inside a function?, line) for every import in a file (parsed
    once a process: the tests share it)."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                if child.module == "sim" or child.module.startswith("sim."):
                    found.append((child.module, in_function, child.lineno))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("sim"):
                        found.append((alias.name, in_function, child.lineno))
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            visit(child, inner)

    visit(tree, False)
    return tuple(found)


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def floor_of(module: str) -> int:
    f = folder(module)
    return FLOORS[f] if f else 0


@pytest.mark.parametrize("module", sorted(modules()))
def test_imports_go_down_the_floors(module):
    path = modules()[module]
    if folder(module) is None:  # sim/__init__.py, __main__.py: the package face
        return
    for imported, _, line in imports(path):
        f = folder(imported)
        if f is None or f == folder(module):
            continue
        assert FLOORS[f] <= FLOORS[folder(module)], (
            f"{module}:{line} imports {imported}: {f} is above {folder(module)}"
        )


def test_model_imports_nothing_from_sim_but_errors():
    for module, path in modules().items():
        if folder(module) != "model":
            continue
        for imported, _, line in imports(path):
            assert imported == "sim.errors" or folder(imported) == "model", (
                module,
                line,
            )


def test_hardware_knows_no_scenario():
    for module, path in modules().items():
        if folder(module) == "hardware":
            for imported, _, line in imports(path):
                assert folder(imported) in (None, "errors", "model", "hardware"), (
                    module,
                    line,
                )


def test_no_import_circles():
    """Top-level imports between sim modules form a DAG."""
    mods = modules()
    graph = {
        m: {i for i, in_fn, _ in imports(p) if not in_fn and i in mods and i != m}
        for m, p in mods.items()
    }
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                raise AssertionError(" -> ".join([*stack, m, n]))
            if n not in state:
                visit(n, [*stack, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_function_level_imports_are_only_for_start_up():
    """An import inside a function is allowed only with a comment saying it is lazy."""
    for module, path in modules().items():
        lines = path.read_text().splitlines()
        for imported, in_fn, line in imports(path):
            if not in_fn:
                continue
            window = "\n".join(lines[max(0, line - 30) : line])
            assert "lazy" in window, f"{module}:{line} imports {imported} inside a function"


def test_no_test_file_mirrors_a_missing_module():
    """tests/<floor>/test_<name>.py sits beside a sim/<floor>/ folder that exists."""
    tests = Path(__file__).resolve().parent
    for path in tests.rglob("test_*.py"):
        rel = path.relative_to(tests)
        if len(rel.parts) > 1:
            assert (SIM / rel.parts[0]).is_dir(), rel
