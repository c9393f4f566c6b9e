"""Start-up rows: what a command costs before it computes anything.

CPU of whole processes (children's rusage), interleaved rounds. ``specsim run`` on the seed
is compared with importing, in a bare interpreter, exactly the third-party modules that run
loaded (listed by running the command in-process first); ``specsim --help`` with
``python -c "import click"`` and with ``python -c pass``.

Bytecode: the dependencies are timed from the bytecode pip compiled when it installed
them, so specsim's own modules are too (``compileall``, what pip does for a regular
install and what Python writes on the first run unless ``PYTHONDONTWRITEBYTECODE`` is
set). The ratio with specsim compiled from source at every start (its bytecode cache
removed and not written) is reported beside it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from timing import cpu_of_command, interleaved

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"
SPECSIM = [sys.executable, "-m", "sim"]

_LIST_MODULES = """
import contextlib, io, sys
sys.argv = ["specsim", "run", {seed!r}, "-q"]
from sim.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
std = set(sys.stdlib_module_names) | {{"sim", "__main__", "__mp_main__"}}
names = sorted(m for m in sys.modules if m.split(".")[0] not in std
               and not m.split(".")[0].startswith("_") and sys.modules[m] is not None)
print(" ".join(names))
"""


def run_dependencies() -> list[str]:
    """The third-party modules ``specsim run`` on the seed has loaded when it exits."""
    out = subprocess.run(
        [sys.executable, "-c", _LIST_MODULES.format(seed=str(SEED))],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return out.stdout.split()


def compile_specsim() -> None:
    """Byte-compile specsim's modules (``sim/**/__pycache__``, git-ignored)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "sim")],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def drop_specsim_bytecode() -> None:
    """Remove specsim's bytecode cache, so its next start compiles it from source."""
    for cache in (REPO / "sim").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def _from_source() -> float:
    drop_specsim_bytecode()
    return cpu_of_command([*SPECSIM, "run", str(SEED), "-q"], {"PYTHONDONTWRITEBYTECODE": "1"})


def _compiled(*args: str) -> float:
    compile_specsim()
    return cpu_of_command([*SPECSIM, *args])


def _default_collector() -> float:
    """``specsim run`` on the seed through the command group with Python's default collector
    thresholds (``sim/cli/process.py`` raises them for the process)."""
    compile_specsim()
    code = "from sim.cli import main; main(prog_name='specsim')"
    return cpu_of_command([sys.executable, "-c", code, "run", str(SEED), "-q"])


def _bare_import(modules: list[str]) -> str:
    lines = [f"try:\n    import {m}\nexcept Exception:\n    pass" for m in modules]
    return "\n".join(lines)


def startup_rows(rounds: int) -> list[tuple[str, str, str, str]]:
    deps = run_dependencies()
    bare = _bare_import(deps)
    cases = {
        "pass": lambda: cpu_of_command([sys.executable, "-c", "pass"]),
        "click": lambda: cpu_of_command([sys.executable, "-c", "import click"]),
        "help": lambda: _compiled("--help"),
        "convert": lambda: _compiled("convert", "--alpha", "0.8", "--num-steps", "3"),
        "deps": lambda: cpu_of_command([sys.executable, "-c", bare]),
        "source": _from_source,
        "run": lambda: _compiled("run", str(SEED), "-q"),
        "default_gc": _default_collector,
    }
    t = interleaved(cases, rounds)
    compile_specsim()
    tops = sorted({m.split(".")[0] for m in deps})
    ratio_run = t["run"].median / t["deps"].median
    ratio_source = t["source"].median / t["deps"].median
    ratio_help = t["help"].median / t["click"].median
    return [
        (
            "specsim run seed: CPU / importing its dependencies bare",
            f"{ratio_run:.2f}",
            "<= 1.5",
            _ok(ratio_run <= 1.5),
        ),
        (
            f"  run {t['run'].median:.3f} s (min {t['run'].min:.3f}), bare imports "
            f"{t['deps'].median:.3f} s (min {t['deps'].min:.3f}; {len(deps)} modules of "
            f"{', '.join(tops)}); min ratio {t['run'].min / t['deps'].min:.2f}",
            "",
            "",
            "",
        ),
        (
            "  the same, specsim compiled from source at every start",
            f"{ratio_source:.2f}",
            "report",
            f"run {t['source'].median:.3f} s",
        ),
        (
            "  the same, Python's default garbage-collector thresholds",
            f"{t['default_gc'].median / t['deps'].median:.2f}",
            "report",
            f"run {t['default_gc'].median:.3f} s",
        ),
        (
            "specsim --help: CPU / python -c 'import click'",
            f"{ratio_help:.2f}",
            "<= 2",
            _ok(ratio_help <= 2),
        ),
        (
            "specsim --help: CPU / python -c pass",
            f"{t['help'].median / t['pass'].median:.2f}",
            "report",
            "",
        ),
        (
            f"  --help {t['help'].median:.3f} s, import click {t['click'].median:.3f} s, "
            f"pass {t['pass'].median:.3f} s",
            "",
            "",
            "",
        ),
        (
            "specsim convert --alpha 0.8 --num-steps 3: CPU / --help",
            f"{t['convert'].median / t['help'].median:.2f}",
            "report",
            "",
        ),
    ]


def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"
