"""``serving.model_error`` from the command line: a bad value is one line and exit 2."""

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


@pytest.mark.parametrize(
    ("setting", "field"),
    [("serving.model_error.gain=-1", "serving.model_error.gain"),
     ("serving.model_error.level=9", "serving.model_error.level"),
     ("serving.model_error.levels=0.1", "serving.model_error.levels")],
)  # fmt: skip
def test_a_bad_model_error_is_one_line_and_exit_2(setting, field):
    result = CliRunner().invoke(main, ["serve", str(SERVING), "--set", setting, "-q"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specsim: error: ") and field in lines[0]
