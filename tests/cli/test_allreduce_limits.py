"""``specsim allreduce`` and the scenarios refuse what is no collective or no one domain."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.hardware.interconnects import PRESETS
from tests.conftest import SEED


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_zero_bytes_is_refused_in_one_line():
    result = run_cli("allreduce", "--interconnect", "nvlink4", "--gpus", "8", "--bytes", "0")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--bytes" in lines[0]


@pytest.mark.parametrize(
    ("name", "limit"), [("nvlink3", 16), ("nvlink4", 256), ("nvlink5", 576), ("xgmi-mi300x", 8)]
)
def test_gpus_beyond_one_domain_are_refused_naming_the_limit_and_source(name, limit):
    ok = run_cli("allreduce", "--interconnect", name, "--gpus", str(limit), "--bytes", "43008")
    assert ok.exit_code == 0, ok.output
    result = run_cli("allreduce", "--interconnect", name, "--gpus", str(limit + 1), "--bytes", "8")
    assert result.exit_code == 2
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    assert "--gpus" in line and f"at most {limit}" in line and "https://" in line


def test_beyond_one_server_is_a_note_not_silence():
    result = run_cli("allreduce", "--interconnect", "nvlink4", "--gpus", "16", "--bytes", "43008")
    assert result.exit_code == 0
    assert "note: 16 GPUs on nvlink4 span more than one 8-GPU server" in result.output
    doc = json.loads(
        run_cli(
            "allreduce", "--interconnect", "nvlink4", "--gpus", "16", "--bytes", "8", "--json"
        ).output
    )
    assert "256" in doc["note"]
    eight = json.loads(
        run_cli(
            "allreduce", "--interconnect", "nvlink4", "--gpus", "8", "--bytes", "8", "--json"
        ).output
    )
    assert "note" not in eight


def test_scenario_beyond_its_domain_names_the_field():
    result = run_cli(
        "hardware",
        str(SEED),
        "--set",
        "hardware.interconnect=nvlink4",
        "--set",
        "hardware.gpus=1024",
    )
    assert result.exit_code == 2
    assert "hardware.gpus: 1024 GPUs exceed one nvlink4 domain" in result.output


def test_hardware_table_marks_presets_whose_domain_is_too_small():
    doc = json.loads(run_cli("hardware", str(SEED), "--set", "hardware.gpus=16", "--json").output)
    rows = doc["verify_on_presets"]
    assert set(rows) == set(PRESETS)
    assert "at most 8" in rows["xgmi-mi300x"]["not_available"]
    assert "graphed" in rows["nvlink3"]
    assert "span more than one 8-GPU server" in doc["note"]


def test_graphed_says_what_it_changes():
    """'--graphed: Inside a CUDA graph (no eager NCCL cost)' read as if the default priced an
    eager call's cost; every preset gives the same time either way (an eager call's extra is
    host time, which `specsim hardware` counts as launch work), and the help says so."""
    args = ("allreduce", "--interconnect", "pcie-gen4", "--gpus", "8", "--bytes", "43008")
    assert run_cli(*args).output == run_cli(*args, "--graphed").output
    help_text = " ".join(run_cli("allreduce", "--help").output.split())
    assert "0 in every preset" in help_text and "specsim hardware" in help_text
