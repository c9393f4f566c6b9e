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
    "keys": ["keys", "--all"],
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
        [sys.executable, "-m", "sim", "keys", "--all"], stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    proc.stdout = os.fdopen(read_end, "rb")
    proc.stdout.read(10)
    proc.stdout.close()  # the reader stops reading
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert err == b""


def _file_size_limit(limit: int):
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_full_disk_for_an_output_file_is_one_line_and_no_partial_file(tmp_path: Path):
    """RLIMIT_FSIZE stands in for a full disk: the calibrated scenario cannot be written
    whole, so it is not written at all."""
    out = tmp_path / "cal.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "calibrate", "--scenario", SEED, "--baseline-tok-s",
         "80", "--out", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300, preexec_fn=_file_size_limit(200),
    )  # fmt: skip
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"specsim: error: {out}: cannot write"), lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_full_disk_under_stdout_is_one_line(tmp_path: Path):
    target = tmp_path / "out.json"
    with open(target, "w") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "sim", "keys", "--json"],
            stdout=fh, stderr=subprocess.PIPE, text=True, timeout=300,
            preexec_fn=_file_size_limit(1000),
        )  # fmt: skip
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert lines == ["specsim: error: standard output: cannot write: file too large"]
