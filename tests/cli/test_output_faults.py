"""A stdout that cannot take the output, on the real process: a full device is one line
and exit 2 on every kind of command, a reader that stopped reading (a closed pipe) is the
quiet exit 1 (as ``yes | head`` ends), neither with a traceback."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")

COMMANDS = {
    "keys": ["keys"],
    "help": ["--help"],
    "validate": ["validate", SEED],
    "convert": ["convert", "--alpha", "0.7", "--num-steps", "3"],
}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_full_stdout_is_one_line_and_exit_2(name: str):
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "sim", *COMMANDS[name]],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2, out.stderr
    assert lines == ["specsim: error: standard output: cannot write: no space left on device"]


@pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"), reason="pipe size is Linux's")
def test_a_closed_pipe_is_the_quiet_exit():
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the 14 KB of keys cannot all fit
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim", "keys"], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    proc.stdout = os.fdopen(read_end, "rb")
    proc.stdout.read(10)
    proc.stdout.close()  # the reader stops reading
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert err == b""
