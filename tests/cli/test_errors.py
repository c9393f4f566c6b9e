"""Every bad input gives exit status 2 and one line naming the file and field, no traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import MINIMAL


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def assert_one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_missing_file(tmp_path):
    missing = str(tmp_path / "nope.toml")
    assert_one_line_error(run_cli("run", missing), missing, "no such file")


def test_invalid_toml(write_scenario):
    path = write_scenario("name = \n")
    assert_one_line_error(run_cli("run", str(path)), str(path), "invalid TOML")


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("[targets]", "[targets]\ncolour = 1", "targets.colour", "unknown key"),
        ("[acceptance]\nalpha = 0.7", "[acceptance]\nalpha = 1.5", "acceptance.alpha", "1"),
        ("[acceptance]\nalpha = 0.7", "[acceptance]\nalpha = -0.1", "acceptance.alpha", "0"),
        ("num_steps = 3", 'num_steps = "3"', "speculation.num_steps", "integer"),
        ("num_steps = 3", "num_steps = -1", "speculation.num_steps", "0"),
        ("verify_ms = 20.0", "verify_ms = 0.0", "timing.verify_ms", "greater than 0"),
        ("decode_ms = 10.0", "decode_ms = -3.0", "timing.decode_ms", "greater than 0"),
        ("tok_s = [100.0]", "tok_s = []", "targets.tok_s", "at least 1"),
        ("decode_ms = 10.0\n", "", "timing.decode_ms", "missing"),
        ("num_steps = 3", "num_steps = 3\ntopk = 4", "speculation.num_draft_tokens", "required"),
        (
            "num_steps = 3",
            "num_steps = 3\ntopk = 2\nnum_draft_tokens = 12",
            "speculation.num_draft_tokens",
            "must be in 2..11",
        ),
        (
            "num_steps = 3",
            "num_steps = 3\ntopk = 2\nnum_draft_tokens = 6",
            "acceptance.rank_rates",
            "rank-wise rates",
        ),
        (
            "num_steps = 3\n[acceptance]\nalpha = 0.7",
            "num_steps = 3\ntopk = 2\nnum_draft_tokens = 6\n[acceptance]\nrank_rates = [0.7, 0.4]",
            "acceptance.rank_rates",
            "sum to 1.1",
        ),
        (
            "num_steps = 3\n[acceptance]\nalpha = 0.7",
            "num_steps = 3\ntopk = 3\nnum_draft_tokens = 6\n[acceptance]\nrank_rates = [0.7, 0.1]",
            "acceptance.rank_rates",
            "rank_extend",
        ),
        (
            "[acceptance]\nalpha = 0.7",
            '[acceptance]\nalpha = 0.7\nrank_profile = "eagle-9"',
            "acceptance.rank_profile",
            "unknown rank profile",
        ),
        ("[acceptance]\nalpha = 0.7", "[acceptance]", "acceptance", "exactly one"),
    ],
)
def test_bad_field_names_file_and_field(write_scenario, old, new, field, words):
    assert old in MINIMAL
    path = write_scenario(MINIMAL.replace(old, new))
    result = run_cli("run", str(path))
    assert_one_line_error(result, str(path), field, words)


@pytest.mark.parametrize(
    ("table", "field", "words"),
    [
        ("timing.verify_ms = { stderr = -0.5 }", "uncertainty.timing.verify_ms.stderr", "0"),
        ("timing.verify_ms = { range = [21.0, 19.0] }", "uncertainty.timing.verify_ms", "above"),
        (
            "timing.verify_cuda_graph = { range = [0, 1] }",
            "uncertainty.timing.verify_cuda_graph",
            "not a numeric field",
        ),
        ("timing.verify_ms = { range = [21.0, 25.0] }", "uncertainty.timing.verify_ms", "contain"),
        (
            "timing.verify_ms = { stderr = 1.0, range = [19.0, 21.0] }",
            "uncertainty.timing",
            "not both",
        ),
        ("timing.verify_msec = { stderr = 1.0 }", "uncertainty.timing.verify_msec", "no field"),
        ("timing.verify_tokens = { stderr = 1.0 }", "uncertainty.timing.verify_tokens", "no value"),
        ("timing.verify_ms = { stdev = 1.0 }", "uncertainty.timing.verify_ms.stdev", "unknown key"),
        ("timming.verify_ms = { stderr = 1.0 }", "uncertainty.timming", "unknown key"),
        ('timing.verify_ms = { stderr = 1.0, origin = "guessed" }', "origin", "measured"),
        ("acceptance.alpha = { stderr = [0.1, 0.2] }", "uncertainty.acceptance.alpha", "single"),
        (
            'correlation = { fields = ["timing.verify_ms", "timing.decode_ms"], '
            "matrix = [[1.0, 0.5], [0.5, 1.0]] }",
            "uncertainty.correlation.fields",
            "no stderr",
        ),
    ],
)
def test_bad_uncertainty_is_one_line(write_scenario, table, field, words):
    """Bad [uncertainty] syntax: one line naming the file and the dotted field, exit 2."""
    path = write_scenario(MINIMAL + "[uncertainty]\n" + table + "\n")
    assert_one_line_error(run_cli("run", str(path)), str(path), field, words)


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("acceptance.alpha=2", "acceptance.alpha"),
        ("speculation.num_steps=-2", "speculation.num_steps"),
        ("timing.verify_ms=0", "timing.verify_ms"),
        ("timing.no_such=1", "timing.no_such"),
        ("targets.tok_s=[]", "targets.tok_s"),
        ("acceptance.alpha=[1,", ""),
    ],
)
def test_bad_overrides(write_scenario, setting, field):
    result = run_cli("run", str(write_scenario()), "--set", setting)
    assert_one_line_error(result, "--set", field)


def test_validate_reports_each_file(write_scenario, tmp_path):
    good = write_scenario()
    bad = write_scenario(MINIMAL.replace("alpha = 0.7", "alpha = 7"), name="bad.toml")
    result = run_cli("validate", str(good), str(bad))
    assert result.exit_code == 2
    assert f"{good}: ok" in result.output
    assert f"{bad}: acceptance.alpha" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["convert", "--alpha", "0.5"],  # needs --num-steps
        ["convert", "--alpha", "0.5", "--accept-length", "2", "--num-steps", "2"],
        ["convert", "--cumulative", "0.5,x"],
        ["convert", "--accept-length", "9", "--num-steps", "2"],
    ],
)
def test_bad_convert_inputs(args):
    assert_one_line_error(run_cli(*args))


def test_cli_choices_match_the_library_registries():
    """The CLI lists engines and fidelities without importing the library (start-up)."""
    from sim.binding.drawn_cycle_times import FIDELITIES
    from sim.cli.options import ENGINE_NAMES, FIDELITY_NAMES
    from sim.simulation.engines import ENGINES

    assert set(ENGINE_NAMES) == set(ENGINES)
    assert set(FIDELITY_NAMES) == set(FIDELITIES)


def test_help_and_convert_import_no_heavy_module():
    """``specsim --help`` and ``convert --alpha`` import neither matplotlib, scipy, Dask,
    pydantic nor the calibration stack (each command imports what it uses)."""
    import subprocess
    import sys

    for argv in (["--help"], ["convert", "--alpha", "0.8", "--num-steps", "3"]):
        code = (
            "import sys\n"
            f"sys.argv = ['specsim', *{argv!r}]\n"
            "from sim.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = ('matplotlib', 'scipy', 'dask', 'distributed', 'pydantic',"
            " 'sim.calibration.calibrate', 'sim.calibration.lsq')\n"
            "print(sorted({m for m in sys.modules if m.startswith(heavy)}), file=sys.stderr)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stderr.strip().endswith("[]"), (argv, out.stderr[-400:])


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["search", "--num-steps", "2"],
        ["compare", "SCENARIO"],
        ["sweep", "--grid", "speculation.num_steps=2,3", "--out", "OUT"],
    ],
)
def test_a_field_found_wanting_after_loading_names_the_file(command, tmp_path):
    """The layer-level pass of an ungraphed verify needs model.kernels_per_layer, which the
    mix scenario without it does not give: found after loading, deep in the study, and
    still named with the file in every command that simulates."""
    from tests.helpers import mix_without_kernel_count

    mix = str(mix_without_kernel_count(tmp_path))
    name, *rest = command
    rest = [mix if a == "SCENARIO" else str(tmp_path / "out") if a == "OUT" else a for a in rest]
    args = [name, mix, *rest, "--fidelity", "layer", "--replications", "1", "--requests", "3"]
    assert_one_line_error(run_cli(*args, "-q"), mix, "model.kernels_per_layer")
    assert not (tmp_path / "out").exists()


def test_an_error_about_an_extrapolated_verify_says_what_was_given():
    """A verify of 1e-300 ms over the scenario's 6 tokens extrapolates to a negative time
    over 1 token: the error starts from the value the user gave."""
    from tests.conftest import ROOT

    llama = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    result = run_cli("run", llama, "--set", "timing.verify_ms=1e-300")
    assert_one_line_error(
        result, "(--set): timing.verify_ms: 1e-300 ms over 6 tokens at", "(over 1 token) is less"
    )


@pytest.mark.parametrize(
    ("assignment", "field"),
    [
        ("uncertainty.acceptance.alpha={stderr=-1}", "uncertainty.acceptance.alpha.stderr: "),
        ("targets.tok_s=[1e308]", "targets.tok_s[0]: "),
        ("nosuch.x=1", "nosuch: unknown key"),
    ],
)
def test_set_errors_are_tagged_and_name_only_schema_fields(assignment, field):
    """A value set by --set is reported as '(--set)' whether the error names the key set,
    an entry inside it or a table above it, and the field is the scenario's dotted path
    (not a union member pydantic tried, such as 'constrained-float'), one problem counted
    once (a float tried against a number-or-list field fails twice)."""
    from tests.conftest import ROOT

    llama = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    result = run_cli("run", llama, "--set", assignment)
    assert_one_line_error(result, f"{llama} (--set): {field}")
    assert "constrained" not in result.output and "more error" not in result.output


def test_a_misspelt_required_key_is_named_as_the_typo(write_scenario):
    """'nmae' for 'name' is both an unknown key and a missing one: the line names the typo
    with its suggestion (it said 'name: required key is missing')."""
    path = write_scenario(MINIMAL.replace('name = "tiny"', 'nmae = "tiny"'))
    result = run_cli("run", str(path))
    assert_one_line_error(result, str(path), "nmae: unknown key; did you mean 'name'?")


#: A serving file whose [workload] fails a cross-field check (lognormal prompts without
#: their spread), and one whose [serving] does (captured batch sizes out of order): the
#: error's field is the section, which every option setting a field of it touches.
BAD_SERVING_FILES = {
    "workload": (
        "input_sigma = 0.6\n",
        "",
        "workload: lengths = 'lognormal' with input_tokens needs input_sigma",
    ),
    "serving": (
        'batching = "prefill_first"\n',
        'batching = "prefill_first"\ngraph_batches = [8, 4]\n',
        "serving: graph_batches [8, 4]: batch sizes in ascending order, each once",
    ),
}


def _bad_serving_file(tmp_path, section: str) -> str:
    from tests.conftest import ROOT

    old, new, _ = BAD_SERVING_FILES[section]
    text = (ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml").read_text("utf-8")
    assert old in text
    path = tmp_path / f"bad-{section}.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("section", "args"),
    [
        ("workload", ["serve", "--requests", "20"]),
        ("workload", ["serve", "--set", "workload.requests=20"]),
        ("workload", ["search", "--requests", "20"]),
        ("workload", ["compare", "--requests", "20"]),
        ("workload", ["tree-load", "--requests", "20"]),
        ("workload", ["crossover", "--requests", "20"]),
        ("serving", ["serve", "--concurrency", "4"]),
        ("serving", ["serve", "--rate", "1"]),
        ("serving", ["serve", "--set", "serving.concurrency=4"]),
    ],
)
def test_a_problem_of_the_file_names_the_file_whatever_the_options(tmp_path, section, args):
    """An option (or --set) that sets a field of a section whose own check fails in the
    file: the file alone fails the same way, so the line names the file and the field, not
    the option (it said '--requests (--set): workload: ...')."""
    path = _bad_serving_file(tmp_path, section)
    command, *rest = args
    result = run_cli(command, path, *rest, "-q")
    assert_one_line_error(result, f"specsim: error: {path}: {BAD_SERVING_FILES[section][2]}")
    assert "(--set)" not in result.output


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--requests", "2000000"], "--requests (--set): workload.requests: "),
        (["--set", "workload.lengths=ordered"], "{path} (--set): workload: lengths = 'ordered'"),
        (["--concurrency", "2000000"], "--concurrency (--set): serving.concurrency: "),
    ],
)
def test_a_problem_of_the_command_line_still_names_it(args, start):
    """The same sections set wrong by the command line on a valid file: the option (or the
    file's --set) is named, as before."""
    from tests.conftest import ROOT

    path = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
    result = run_cli("serve", path, *args, "-q")
    assert_one_line_error(result, "specsim: error: " + start.format(path=path))


def _launch_us_stated(tmp_path) -> str:
    """The seed with hardware.launch_us stated beside its measured ungraphed verify (which
    fixes that cost): a problem the hardware model finds when binding, in the file."""
    from tests.conftest import SEED

    text = SEED.read_text("utf-8")
    assert text.count("[hardware]\n") == 1
    path = tmp_path / "launch.toml"
    path.write_text(text.replace("[hardware]\n", "[hardware]\nlaunch_us = 10.0\n"), "utf-8")
    return str(path)


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["hardware"],
        ["search", "--num-steps", "2"],
        ["compare"],
        ["validate"],
        ["serve"],
        ["crossover"],
    ],
)
def test_a_problem_binding_finds_in_the_file_names_the_file_whatever_is_set(tmp_path, args):
    """A --set of an unrelated timing field on a file the hardware model refuses: the file
    bound alone has the same problem, so the line names the file, not 'FILE (--set)' (a
    problem the --set value makes keeps its tag:
    test_an_error_about_an_extrapolated_verify_says_what_was_given)."""
    path = _launch_us_stated(tmp_path)
    command, *rest = args
    result = run_cli(command, path, *rest, "--set", "timing.jitter_cv=0.1")
    assert_one_line_error(result, f"specsim: error: {path}: hardware.launch_us: stated as 10 us")
