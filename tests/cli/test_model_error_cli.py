"""``serving.model_error`` from the command line: a bad value is one line and exit 2."""

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


@pytest.mark.parametrize(
    ("setting", "field"),
    [("serving.model_error.gain_ceiling=-1", "serving.model_error.gain_ceiling"),
     ("serving.model_error.level_per_sqrt_log_load=9",
      "serving.model_error.level_per_sqrt_log_load"),
     ("serving.model_error.gain_log_load_scale=0", "serving.model_error.gain_log_load_scale"),
     ("serving.model_error.levels=0.1", "serving.model_error.levels")],
)  # fmt: skip
def test_a_bad_model_error_is_one_line_and_exit_2(setting, field):
    result = CliRunner().invoke(main, ["serve", str(SERVING), "--set", setting, "-q"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specsim: error: ") and field in lines[0]


@pytest.mark.parametrize("key", ["level", "gain"])
def test_the_linear_forms_keys_are_refused_not_reinterpreted(key, tmp_path):
    """``level`` and ``gain`` held s of s d: a scenario file that still sets them is one
    line naming the file and the field, exit 2, and no figure written."""
    text = SERVING.read_text(encoding="utf-8") + f"\n[serving.model_error]\n{key} = 0.06\n"
    path = tmp_path / "old.toml"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "figures"
    result = CliRunner().invoke(main, ["serve", str(path), "-q", "--plot", str(out)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specsim: error: {path}")
    assert f"serving.model_error.{key}: removed" in lines[0]
    assert not out.exists()
