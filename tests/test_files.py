"""sim/files.py: outputs checked before a run, replaced only when regular, written whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.errors import SpecsimError
from sim.files import atomic_write_text, check_output_dir, check_output_file, read_bounded_text
from tests.conftest import MINIMAL


def test_a_symlink_target_is_followed_and_the_link_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text("old\n")
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_dangling_symlink_creates_the_file_it_names(tmp_path: Path) -> None:
    link = tmp_path / "link.toml"
    link.symlink_to(tmp_path / "made.toml")
    atomic_write_text(link, "x\n")
    assert (tmp_path / "made.toml").read_text() == "x\n" and link.is_symlink()


@pytest.mark.parametrize("special", ["/dev/null", "/dev/zero"])
def test_special_files_are_refused_never_replaced(special: str) -> None:
    with pytest.raises(SpecsimError, match="not a regular file"):
        atomic_write_text(special, "x")
    assert Path(special).is_char_device()


def test_a_fifo_is_refused_for_reading_and_writing(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SpecsimError, match="not a regular file"):
        read_bounded_text(fifo)  # would block if it were opened
    with pytest.raises(SpecsimError, match="not a regular file"):
        check_output_file(fifo)


def test_checks_create_nothing(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "a" / "b")
    check_output_file(tmp_path / "c" / "d.toml")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_removes_the_directories_it_made(tmp_path: Path, monkeypatch) -> None:
    import errno

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(SpecsimError, match="no space left"):
        atomic_write_text(tmp_path / "new" / "dir" / "x.png", b"png")
    assert list(tmp_path.iterdir()) == []


def test_set_a_single_target_for_a_list_key(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(MINIMAL)
    result = CliRunner().invoke(main, ["validate", str(path), "--set", "targets.tok_s=120"])
    assert result.exit_code == 0, result.output


def test_one_token_requests_with_the_largest_jitter_stay_finite(tmp_path: Path) -> None:
    """jitter_cv < 1 keeps E[1/T] finite (gamma shape > 1); both engines answer in JSON."""
    path = tmp_path / "s.toml"
    sizes = "[workload]\noutput_tokens = 1\nrequests = 50\n[simulation]\nreplications = 2\n"
    path.write_text(MINIMAL.replace("[targets]", sizes + "[targets]").replace(
        "decode_ms = 10.0", "decode_ms = 10.0\njitter_cv = 0.99"))  # fmt: skip
    for engine in ("fast", "des"):
        result = CliRunner().invoke(main, ["run", str(path), "--json", "--engine", engine])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["kind"] == "run"


@pytest.mark.parametrize("name", ["azure_llm_trace_2023_conv.csv", "mooncake_trace.jsonl"])
def test_a_byte_order_mark_is_dropped_before_parsing(tmp_path: Path, name: str) -> None:
    """Files saved by spreadsheet tools start with U+FEFF; the header (CSV) or the first
    object (JSON lines) must still be found: the trace reads exactly as without it."""
    from sim.simulation.serving.traces import read_trace

    plain = Path(__file__).parent / "data" / "formats" / name
    marked = tmp_path / name
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert read_bounded_text(marked) == read_bounded_text(plain)
    got, want = read_trace(marked).trace, read_trace(plain).trace
    for name in ("arrival_ms", "input_tokens", "output_tokens", "request_class"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
