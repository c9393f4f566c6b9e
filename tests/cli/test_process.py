"""The ``specsim`` process entry point: the command line with fewer collector passes."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

from sim.cli import process


def test_the_process_collects_less_often_and_then_runs_the_command_line(monkeypatch):
    seen: dict[str, object] = {}

    def fake_main(prog_name: str) -> None:
        seen["prog_name"], seen["thresholds"] = prog_name, gc.get_threshold()

    before = gc.get_threshold()
    monkeypatch.setattr(process, "main", fake_main)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # what the process sets is undone
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS")
    try:
        process.run_process()
    finally:
        gc.set_threshold(*before)
    assert seen == {"prog_name": "specsim", "thresholds": process.GC_THRESHOLDS}
    assert process.GC_THRESHOLDS[0] > 700  # CPython's default young threshold


def test_the_process_skips_pydantic_plugin_discovery_unless_the_environment_says(monkeypatch):
    """pydantic's plugin search (every installed distribution's entry points) is skipped
    in the process; a value the environment gives is kept."""
    monkeypatch.setattr(process, "main", lambda prog_name: None)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # restored (to unset) afterwards
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS")
    before = gc.get_threshold()
    try:
        process.run_process()
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
        monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some-plugin")
        process.run_process()
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "some-plugin"
    finally:
        gc.set_threshold(*before)


def test_python_dash_m_sim_runs_the_process_entry_point():
    code = (
        "import runpy, gc, sys; sys.argv = ['specsim', '--version'];"
        " runpy.run_module('sim', run_name='__main__')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("specsim")


def test_importing_the_command_group_leaves_the_collector_alone():
    # what library users and CliRunner tests do: only run_process changes the thresholds
    code = (
        "import gc; t = gc.get_threshold(); import sim.cli.process; print(gc.get_threshold() == t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
