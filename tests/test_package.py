"""The package face: ``sim.__all__`` lists the public API, and the README's Python example
uses only it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import sim

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_public_name_resolves():
    for name in sim.__all__:
        assert getattr(sim, name) is not None, name


def test_readme_python_example_uses_the_public_api():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README shows a Python example"
    used = {
        node.attr
        for block in blocks
        for node in ast.walk(ast.parse(block))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "sim"
    }
    assert used and used <= set(sim.__all__), used - set(sim.__all__)


def test_importing_sim_is_cheap():
    """``import sim`` loads no submodule until a public name is used (PEP 562)."""
    import subprocess
    import sys

    code = "import sys, sim; print(sorted(m for m in sys.modules if m.startswith('sim.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stdout


_LOADED = """
import contextlib, io, sys
sys.argv = ["specsim", *{argv!r}]
from sim.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
print(" ".join(sorted(sys.modules)))
"""


def _loaded_by(argv: list[str]) -> set[str]:
    import subprocess
    import sys

    code = _LOADED.format(argv=argv)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_imports_only_click():
    """Start-up: ``specsim --help`` loads no numerical library (commands import lazily)."""
    loaded = _loaded_by(["--help"])
    assert not {"numpy", "scipy", "pydantic", "matplotlib", "simpy"} & loaded
    # and no command module: each is imported when its command is invoked
    from sim.cli import COMMANDS

    assert not {module for module, _, _ in COMMANDS.values()} & loaded


def test_run_imports_what_it_uses(seed_path):
    """Start-up: ``specsim run`` loads neither SimPy (the des engine), matplotlib (--plot)
    nor scipy.stats (about 1 s: the 90% intervals' Sobol points come from sim/model/sobol.py)."""
    loaded = _loaded_by(["run", str(seed_path), "-q"])
    assert "numpy" in loaded and "sim.model.sobol" in loaded
    assert not {"simpy", "matplotlib", "scipy.stats"} & loaded
    assert "sim.cli.run" in loaded and "sim.cli.serve" not in loaded
    # a chain scenario in one process: no tree analysis, layer pass, serving costs or pool
    lazy = {
        "sim.binding.tree_analysis",
        "sim.report.tree",
        "sim.model.tree.required",
        "sim.hardware.layer",
        "sim.hardware.batched",
        "sim.model.batched_cost",
        "sim.model.pass_curves",
        "sim.model.decode_curve",
        "multiprocessing",
        # the draft-policy and tree modules (validators import them for a tree or a k
        # table), the roofline (the seed's passes are measured), the exact renewal law
        # (--method exact/auto only)
        "sim.model.policy",
        "sim.model.drafts",
        "sim.model.tree",
        "sim.model.tree.acceptance",
        "sim.model.tree.presets",
        "sim.model.tree.rates",
        "sim.hardware.roofline",
        "sim.hardware.experts",
        "sim.model.renewal",
        "sim.simulation.exact",
        "sim.simulation.stream",  # a streamed run only
    }
    assert not lazy & loaded, lazy & loaded


def test_serve_imports_no_scipy_stats() -> None:
    """Start-up: ``specsim serve`` takes the t quantile, the normal quantile and the
    lognormal cdf from scipy.special, not scipy.stats (about 0.5 s to import)."""
    from tests.conftest import ROOT

    serving = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
    # 4 requests and 2 draws load the same modules as 20 requests and 8 draws (checked)
    args = ["serve", str(serving), "-q", "--requests", "4", "--replications", "2", "--draws", "2"]
    loaded = _loaded_by(args)
    assert "sim.cli.serve" in loaded and "sim.simulation.serving.engine" in loaded
    assert "scipy.stats" not in loaded


def test_the_public_api_covers_serving() -> None:
    """``sim.__all__`` lists the serving entry points, each importable by its name (the
    README's examples that call them run in tests/test_docs_examples.py)."""
    serving = {"serve", "serving_study", "Load", "crossover", "best_k", "capacity"}
    serving |= {"search_at_load", "tree_load_study", "controller_study", "simulate_serving"}
    assert serving <= set(sim.__all__)
    for name in serving:
        assert callable(getattr(sim, name)), name
    readme = README.read_text()
    assert "sim.serve(" in readme and "sim.crossover(" in readme
