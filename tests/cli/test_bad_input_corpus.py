"""The bad-input corpus: every command, every kind of bad input, one line and exit 2.

Each case builds its arguments in a fresh directory (holding a small valid scenario,
``good.toml``) and must fail with exit status 2, exactly one line on stderr
(``specsim: error: ...``), nothing on stdout, no traceback, and no new file or directory
left behind. Cases fail before any simulation runs, so the corpus is fast.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import MINIMAL

Case = Callable[[Path], list[str]]
CASES: list[tuple[str, Case, str]] = []  # (id, args builder, text the line must contain)


def case(name: str, needle: str = "") -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES.append((name, fn, needle))
        return fn

    return register


def scenario(tmp: Path, old: str, new: str, name: str = "bad.toml") -> str:
    assert old in MINIMAL, old
    path = tmp / name
    path.write_text(MINIMAL.replace(old, new), encoding="utf-8")
    return str(path)


def good(tmp: Path) -> str:
    return str(tmp / "good.toml")


# ------------------------------------------------------------------ scenario file fields
#: One recorded calibration figure but its metric and value (each case adds them).
CALIBRATED_ON = (
    '[[serving.calibrated_on]]\nload = 4.0\nload_kind = "concurrency"\nsource = "sweep.json"\n'
)
FIELD_EDITS = [
    # non-finite numbers where a number is meant
    ("decode-inf", "decode_ms = 10.0", "decode_ms = inf", "timing.decode_ms"),
    ("decode-nan", "decode_ms = 10.0", "decode_ms = nan", "timing.decode_ms"),
    ("verify-inf", "verify_ms = 20.0", "verify_ms = inf", "timing.verify_ms"),
    ("verify-nan", "verify_ms = 20.0", "verify_ms = nan", "timing.verify_ms"),
    ("draft-inf", "draft_step_ms = 1.0", "draft_step_ms = inf", "timing.draft_step_ms"),
    ("draft-neg-inf", "draft_step_ms = 1.0", "draft_step_ms = -inf", "timing.draft_step_ms"),
    ("extend-nan", "draft_extend_ms = 2.0", "draft_extend_ms = nan", "timing.draft_extend_ms"),
    ("overhead-inf", "cycle_overhead_ms = 0.5", "cycle_overhead_ms = inf", "cycle_overhead_ms"),
    ("target-inf", "tok_s = [100.0]", "tok_s = [inf]", "targets.tok_s"),
    ("target-nan", "tok_s = [100.0]", "tok_s = [nan]", "targets.tok_s"),
    ("target-huge", "tok_s = [100.0]", "tok_s = [1e300]", "targets.tok_s"),
    ("alpha-nan", "alpha = 0.7", "alpha = nan", "acceptance.alpha"),
    ("alpha-inf", "alpha = 0.7", "alpha = inf", "acceptance.alpha"),
    ("alpha-big", "alpha = 0.7", "alpha = 1.5", "acceptance.alpha"),
    (
        "mix-weight-inf",
        "[acceptance]\nalpha = 0.7",
        '[[acceptance.mix]]\nname = "a"\nweight = inf\nalpha = 0.5',
        "weight",
    ),
    (
        "mix-weight-nan",
        "[acceptance]\nalpha = 0.7",
        '[[acceptance.mix]]\nname = "a"\nweight = nan\nalpha = 0.5',
        "weight",
    ),
    (
        "mix-duplicate-names",
        "[acceptance]\nalpha = 0.7",
        '[[acceptance.mix]]\nname = "a"\nweight = 1.0\nalpha = 0.5\n'
        '[[acceptance.mix]]\nname = "a"\nweight = 1.0\nalpha = 0.6',
        "unique",
    ),
    ("std-too-large", "alpha = 0.7", "alpha = 0.7\nstd = 0.49", "std"),
    ("concentration-inf", "alpha = 0.7", "alpha = 0.7\nconcentration = inf", "concentration"),
    # sizes with a stated limit
    ("requests-1e9", "[targets]", "[workload]\nrequests = 1000000000\n[targets]", "requests"),
    ("replications-1e9", "[targets]", "[simulation]\nreplications = 1000000000\n[targets]", "repl"),
    ("tokens-1e12", "[targets]", "[workload]\noutput_tokens = 1000000000000\n[targets]", "tokens"),
    ("layers-1e9", "[timing]", "[model]\nlayers = 1000000000\n[timing]", "model.layers"),
    ("kernels-1e9", "[timing]", "[model]\nkernels_per_layer = 1000000000\n[timing]", "kernels"),
    ("state-negative", "[timing]", "[model]\nstate_bytes_per_request = -1.0\n[timing]", "state"),
    ("state-inf", "[timing]", "[model]\nstate_bytes_per_request = inf\n[timing]", "model.state"),
    ("conv-alone", "[timing]", "[model]\nconv_state_bytes_per_position = 1e6\n[timing]", "conv"),
    ("gpus-1e6", "[timing]", "[hardware]\ngpus = 1000000\n[timing]", "hardware.gpus"),
    ("num-steps-1000", "num_steps = 3", "num_steps = 1000", "speculation.num_steps"),
    ("per-position-100", "alpha = 0.7", "per_position = [" + "0.5, " * 100 + "0.5]", "per_pos"),
    ("targets-100", "tok_s = [100.0]", "tok_s = [" + "1.0, " * 100 + "1.0]", "targets.tok_s"),
    ("name-long", 'name = "tiny"', 'name = "' + "x" * 1000 + '"', "name"),
    ("seed-float", "[targets]", "[simulation]\nseed = 1.5\n[targets]", "simulation.seed"),
    ("seed-negative", "[targets]", "[simulation]\nseed = -1\n[targets]", "simulation.seed"),
    ("jitter-10", "decode_ms = 10.0", "decode_ms = 10.0\njitter_cv = 10.0", "jitter_cv"),
    ("jitter-1", "decode_ms = 10.0", "decode_ms = 10.0\njitter_cv = 1.0", "jitter_cv"),
    ("launch-inf", "[timing]", "[hardware]\nlaunch_us = inf\n[timing]", "launch_us"),
    # nesting
    ("nested-arrays", "tok_s = [100.0]", "tok_s = " + "[" * 5000 + "]" * 5000, "nested"),
    ("nested-tables", "tok_s = [100.0]", "tok_s = " + "{a = " * 3000 + "1" + "}" * 3000, ""),
    ("nested-shallow", "tok_s = [100.0]", "tok_s = [[[[[[[[[[1.0]]]]]]]]]]", "nested"),
    # unknown keys and presets: did you mean
    ("typo-key", "verify_ms = 20.0", "verfy_ms = 20.0", "did you mean 'verify_ms'"),
    ("typo-section", "[targets]", "[targts]", "did you mean 'targets'"),
    ("typo-interconnect", "[timing]", '[hardware]\ninterconnect = "nvlnk4"\n[timing]', "nvlink4"),
    ("typo-gpu", "[timing]", '[hardware]\ngpu = "h10"\n[timing]', "did you mean"),
    ("string-number", "num_steps = 3", 'num_steps = "3"', "integer"),
    ("bool-number", "num_steps = 3", "num_steps = true", "speculation.num_steps"),
    ("topk-huge", "num_steps = 3", "num_steps = 3\ntopk = 1000", "speculation.topk"),
    ("no-acceptance", "[acceptance]\nalpha = 0.7", "", "acceptance"),
    ("two-rates", "alpha = 0.7", "alpha = 0.7\nper_position = [0.5]", "exactly one"),
    # what a load-sweep calibration recorded ([[serving.calibrated_on]])
    (
        "calibrated-negative",
        "[targets]",
        f'{CALIBRATED_ON}metric = "tpot_ms"\nmeasured = -4.5\n[targets]',
        "serving.calibrated_on[0].measured",
    ),
    (
        "calibrated-metric",
        "[targets]",
        f'{CALIBRATED_ON}measured = 4.5\nmetric = "ttft_ms"\n[targets]',
        "serving.calibrated_on[0].metric",
    ),
    (
        "calibrated-half-draft",
        "[targets]",
        f'{CALIBRATED_ON}metric = "tpot_ms"\nmeasured = 4.5\nnum_steps = 3\n[targets]',
        "num_draft_tokens together",
    ),
    (
        "calibrated-half-job",
        "[targets]",
        f'{CALIBRATED_ON}metric = "tpot_ms"\nmeasured = 4.5\nworkers = 4\n[targets]',
        "output_lens together",
    ),
    (
        "calibrated-job-lengths",
        "[targets]",
        f'{CALIBRATED_ON}metric = "tpot_ms"\nmeasured = 4.5\nworkers = 4\n'
        "input_lens = [10, 20]\noutput_lens = [30]\n[targets]",
        "1 output_lens against 2 input_lens",
    ),
    (
        "calibrated-job-negative",
        "[targets]",
        f'{CALIBRATED_ON}metric = "tpot_ms"\nmeasured = 4.5\nworkers = 4\n'
        "input_lens = [10, -20]\noutput_lens = [30, 5]\n[targets]",
        "serving.calibrated_on[0].input_lens",
    ),
    # vLLM's --no-enable-prefix-caching is a boolean, not a word
    (
        "prefix-caching-word",
        "[targets]",
        '[serving]\nprefix_caching = "no"\n[targets]',
        "serving.prefix_caching",
    ),
    # vLLM's --block-size takes one of its BlockSize values
    (
        "kv-block-tokens-odd",
        "[targets]",
        "[serving]\nkv_block_tokens = 48\n[targets]",
        "serving.kv_block_tokens",
    ),
    (
        "calibrated-terms-alone",
        "[targets]",
        '[serving]\ncalibrated_terms = ["kernel_slope"]\n[targets]',
        "calibrated_terms needs the figures",
    ),
    (
        "calibrated-terms-unknown",
        "[targets]",
        f'[serving]\ncalibrated_terms = ["slope"]\n{CALIBRATED_ON}metric = "tpot_ms"\n'
        "measured = 4.5\n[targets]",
        "serving.calibrated_terms",
    ),
]
SCENARIO_COMMANDS = {
    "run": lambda p, t: ["run", p],
    "search": lambda p, t: ["search", p, "--num-steps", "2"],
    "sweep": lambda p, t: ["sweep", p, "--grid", "acceptance.alpha=0.5,0.6", "--out", f"{t}/o"],
    "compare": lambda p, t: ["compare", good(Path(t)), p],
    "hardware": lambda p, t: ["hardware", p],
    "validate": lambda p, t: ["validate", p],
    "calibrate": lambda p, t: ["calibrate", "--scenario", p, "--baseline-tok-s", "90"],
}

for _name, _old, _new, _needle in FIELD_EDITS:
    for _cmd, _build in SCENARIO_COMMANDS.items():
        # every edit through run; a spread of them through every other command
        if (
            _cmd != "run"
            and zlib.crc32((_name + _cmd).encode()) % 5
            and _name not in ("decode-inf", "typo-key")
        ):
            continue

        def _make(tmp: Path, old=_old, new=_new, build=_build) -> list[str]:
            return build(scenario(tmp, old, new), str(tmp))

        CASES.append((f"{_cmd}-{_name}", _make, _needle))


# ------------------------------------------------------------------ scenario files
@case("file-missing", "no such file")
def _(t):
    return ["run", str(t / "missing.toml")]


@case("file-directory", "directory")
def _(t):
    (t / "d.toml").mkdir()
    return ["run", str(t / "d.toml")]


@case("file-not-utf8", "UTF-8")
def _(t):
    (t / "b.toml").write_bytes(b'name = "\xff\xfe"\n')
    return ["run", str(t / "b.toml")]


@case("file-empty", "required key is missing")
def _(t):
    (t / "e.toml").write_text("")
    return ["run", str(t / "e.toml")]


@case("file-invalid-toml", "invalid TOML")
def _(t):
    (t / "i.toml").write_text("name = \n")
    return ["run", str(t / "i.toml")]


@case("file-huge", "MiB")
def _(t):
    (t / "h.toml").write_text(MINIMAL + "#" * (2 * 1024 * 1024) + "\n")
    return ["run", str(t / "h.toml")]


@case("file-symlink-loop", "loop")
def _(t):
    os.symlink(t / "loop.toml", t / "loop.toml")
    return ["run", str(t / "loop.toml")]


@case("file-fifo", "regular file")
def _(t):
    os.mkfifo(t / "fifo.toml")
    return ["run", str(t / "fifo.toml")]


@case("file-binary", "")
def _(t):
    (t / "bin.toml").write_bytes(bytes(range(256)))
    return ["run", str(t / "bin.toml")]


# ------------------------------------------------------------------ --set overrides
SETS = [
    ("set-injects-table", "acceptance.alpha=0.5\n[b]", "one TOML value"),
    ("set-injects-key", "acceptance.alpha=0.5\nname='x'", "one TOML value"),
    ("set-two-values", "acceptance.alpha=0.5 name='x'", "TOML"),
    ("set-inf", "timing.decode_ms=inf", "finite"),
    ("set-nan", "timing.verify_ms=nan", "finite"),
    ("set-neg-inf", "timing.draft_step_ms=-inf", "timing.draft_step_ms"),
    ("set-typo-key", "timing.verfy_ms=3", "did you mean 'verify_ms'"),
    ("set-typo-section", "acceptanse.alpha=0.5", "did you mean 'acceptance'"),
    ("set-empty-part", "a..b=1", "dotted key"),
    ("set-no-key", "=1", "dotted key"),
    ("set-no-equals", "acceptance.alpha", "KEY=VALUE"),
    ("set-deep-value", "targets.tok_s=" + "[" * 3000 + "]" * 3000, "nested"),
    ("set-long-value", "name=" + '"' + "x" * 20000 + '"', "longer"),
    ("set-requests-1e9", "workload.requests=1000000000", "workload.requests"),
    ("set-replications-0", "simulation.replications=0", "simulation.replications"),
    ("set-not-a-table", "acceptance.alpha.x=1", "not a table"),
    ("set-interconnect-typo", "hardware.interconnect=nvlnk4", "did you mean"),
    ("set-gpu-typo", "hardware.gpu=h10", "did you mean"),
    ("set-key-long", "a" * 300 + "=1", "too long"),
    ("set-alpha-string", "acceptance.alpha=high", "acceptance.alpha"),
    ("set-targets-empty", "targets.tok_s=[]", "targets.tok_s"),
    ("set-targets-negative", "targets.tok_s=-5", "targets.tok_s"),
    ("set-jitter-huge", "timing.jitter_cv=10", "jitter_cv"),
    ("set-control-char", 'name="a\x07b"', "control"),
    ("set-unclosed", "acceptance.alpha=[1,", "TOML"),
]
for _name, _text, _needle in SETS:
    for _cmd in ("run", "search", "validate", "hardware", "compare"):
        if _cmd != "run" and zlib.crc32((_name + _cmd).encode()) % 4:
            continue

        def _make(tmp: Path, text=_text, cmd=_cmd) -> list[str]:
            first = ["compare", good(tmp)] if cmd == "compare" else [cmd]
            return [*first, good(tmp), "--set", text]

        CASES.append((f"{_cmd}-{_name}", _make, _needle))


# ------------------------------------------------------------------ click usage errors
USAGE = [
    ("run-workers-0", ["run", "{good}", "--workers", "0"], "--workers"),
    ("run-workers-word", ["run", "{good}", "--workers", "many"], "--workers"),
    ("run-workers-huge", ["run", "{good}", "--workers", "100000"], "--workers"),
    ("run-unknown-option", ["run", "{good}", "--replicatons", "3"], "did you mean --replications"),
    ("run-no-scenario", ["run"], "SCENARIO"),
    ("run-engine", ["run", "{good}", "--engine", "gpu"], "--engine"),
    ("run-fidelity", ["run", "{good}", "--fidelity", "atoms"], "--fidelity"),
    ("run-seed-negative", ["run", "{good}", "--seed", "-1"], "--seed"),
    ("run-replications-0", ["run", "{good}", "--replications", "0"], "--replications"),
    ("run-requests-word", ["run", "{good}", "--requests", "lots"], "--requests"),
    ("run-requests-1e9", ["run", "{good}", "--requests", "1000000000"], "requests"),
    ("run-replications-1e9", ["run", "{good}", "--replications", "1000000000"], "replications"),
    ("run-format", ["run", "{good}", "--format", "jpg", "--plot", "{tmp}/p"], "--format"),
    ("run-target-negative", ["run", "{good}", "--target", "-5"], "--target"),
    ("run-set-missing-value", ["run", "{good}", "--set"], "--set"),
    ("no-such-command", ["rnu"], "did you mean run"),
    ("search-target-negative", ["search", "{good}", "--target", "-1"], "--target"),
    ("search-target-word", ["search", "{good}", "--target", "fast"], "--target"),
    ("search-target-nan", ["search", "{good}", "--target", "nan"], "--target"),
    ("search-target-inf", ["search", "{good}", "--target", "inf"], "--target"),
    ("sweep-no-grid", ["sweep", "{good}", "--out", "{tmp}/o"], "--grid"),
    ("sweep-no-out", ["sweep", "{good}", "--grid", "acceptance.alpha=0.5"], "--out"),
    (
        "sweep-executor",
        [
            "sweep",
            "{good}",
            "--grid",
            "acceptance.alpha=0.5",
            "--out",
            "{tmp}/o",
            "--executor",
            "ray",
        ],
        "--executor",
    ),
    ("compare-nothing", ["compare"], "SCENARIOS"),
    ("allreduce-missing", ["allreduce", "--interconnect", "nvlink4"], "--gpus"),
    (
        "allreduce-gpus-word",
        ["allreduce", "--interconnect", "nvlink4", "--gpus", "x", "--bytes", "8"],
        "--gpus",
    ),
    ("convert-alpha-word", ["convert", "--alpha", "x", "--num-steps", "3"], "--alpha"),
    ("calibrate-rel-word", ["calibrate", "--scenario", "{good}", "--rel-error", "x"], "--rel"),
    ("plot-format", ["plot", "{tmp}", "--format", "gif"], "--format"),
    ("hardware-unknown-option", ["hardware", "--lst"], "did you mean --list"),
    # an unparsable value names its key, not only the option
    (
        "set-value-names-its-key",
        ["run", "{good}", "--set", "timing.decode_ms=1.2.3"],
        "--set: timing.decode_ms: cannot parse value",
    ),
    (
        "grid-value-names-its-key",
        ["sweep", "{good}", "--grid", "timing.decode_ms=1.2.3,4", "--out", "{tmp}/o"],
        "--grid: timing.decode_ms: cannot parse value",
    ),
    (
        "set-long-value-names-its-key",
        ["run", "{good}", "--set", "name=" + "x" * 20000],
        "--set: name: value longer",
    ),
]
for _name, _args, _needle in USAGE:

    def _make(tmp: Path, args=_args) -> list[str]:
        return [a.format(good=good(tmp), tmp=tmp) for a in args]

    CASES.append((_name, _make, _needle))


# ------------------------------------------------------------------ output paths
def _blocker(t: Path) -> Path:
    (t / "a-file").write_text("not a directory\n")
    return t / "a-file"


OUTPUTS = {
    "under-file": lambda t: str(_blocker(t) / "sub"),
    "is-file": lambda t: str(_blocker(t)),
    "name-too-long": lambda t: str(t / ("n" * 300)),
    "symlink-loop": lambda t: (os.symlink(t / "lp", t / "lp"), str(t / "lp" / "x"))[1],
    "empty": lambda t: "",
}
OUTPUT_COMMANDS = {
    "run-plot": lambda t, o: ["run", good(t), "--plot", o],
    "search-plot": lambda t, o: ["search", good(t), "--num-steps", "2", "--plot", o],
    "compare-plot": lambda t, o: ["compare", good(t), "--plot", o],
    "sweep-out": lambda t, o: ["sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", o],
    "sweep-plot": lambda t, o: [
        "sweep",
        good(t),
        "--grid",
        "acceptance.alpha=0.5",
        "--out",
        f"{t}/o",
        "--plot",
        o,
    ],
    "plot-out": lambda t, o: ["plot", str(t / "doc.json"), "--out", o],
}
for _oname, _out in OUTPUTS.items():
    for _cname, _build in OUTPUT_COMMANDS.items():
        if _oname == "is-file" and _cname.endswith("plot-out"):
            continue

        def _make(tmp: Path, out=_out, build=_build) -> list[str]:
            (tmp / "doc.json").write_text('{"kind": "sweep", "rows": []}')
            return build(tmp, out(tmp))

        CASES.append((f"{_cname}-{_oname}", _make, "cannot write"))

CALIBRATE_OUTS = {
    "dir": lambda t: str(t),
    "device": lambda t: "/dev/null",
    "under-file": lambda t: str(_blocker(t) / "x.toml"),
    "name-too-long": lambda t: str(t / ("n" * 300 + ".toml")),
    "symlink-loop": lambda t: (os.symlink(t / "lp", t / "lp"), str(t / "lp"))[1],
    "missing-dir": lambda t: str(t / "no" / "such" / "dir" / "x.toml") if False else "/proc/x/y",
}
for _oname, _out in CALIBRATE_OUTS.items():

    def _make(tmp: Path, out=_out) -> list[str]:
        return ["calibrate", "--scenario", good(tmp), "--baseline-tok-s", "90", "--out", out(tmp)]

    CASES.append((f"calibrate-out-{_oname}", _make, "cannot write"))


# ------------------------------------------------------------------ grids
GRIDS = [
    ("grid-step-0", "acceptance.alpha=0:1:0", "step"),
    ("grid-no-key", "=1", "KEY"),
    ("grid-inf-bound", "acceptance.alpha=0:inf:0.1", "finite"),
    ("grid-nan-bound", "acceptance.alpha=nan:1:0.1", "finite"),
    ("grid-too-many", "acceptance.alpha=0:1:1e-9", "at most"),
    ("grid-repeated", "acceptance.alpha=0.5,0.5", "repeated"),
    ("grid-injects", "acceptance.alpha=0.5\n[x]", "--grid"),
    ("grid-out-of-range", "acceptance.alpha=0.5,2", "--grid"),
    ("grid-inf-value", "timing.decode_ms=10,inf", "finite"),
    ("grid-unknown-key", "timing.verfy_ms=1,2", "did you mean"),
    ("grid-empty-value", "acceptance.alpha=0.5,,0.6", "empty"),
    ("grid-stop-below", "acceptance.alpha=0.9:0.1", "below"),
    ("grid-word-bound", "acceptance.alpha=a:b", "number"),
    ("grid-num-steps-big", "speculation.num_steps=1:100", "speculation.num_steps"),
]
for _name, _grid, _needle in GRIDS:

    def _make(tmp: Path, grid=_grid) -> list[str]:
        return ["sweep", good(tmp), "--grid", grid, "--out", str(tmp / "o")]

    CASES.append((_name, _make, _needle))


@case("grid-twice", "twice")
def _(t):
    g = "acceptance.alpha=0.5,0.6"
    return ["sweep", good(t), "--grid", g, "--grid", g, "--out", str(t / "o")]


@case("grid-product-too-big", "limit")
def _(t):
    return [
        "sweep",
        good(t),
        "--grid",
        "acceptance.alpha=0:1:0.0001",
        "--grid",
        "timing.decode_ms=1:100",
        "--out",
        str(t / "o"),
    ]


@case("grid-too-long-to-run", "hours")
def _(t):
    return [
        "sweep", good(t), "--grid", "acceptance.alpha=0.1:0.9:0.01", "--grid",
        "workload.output_tokens=1000000", "--set", "workload.requests=100000",
        "--out", str(t / "o"),
    ]  # fmt: skip


@case("sweep-dask-no-scheduler", "scheduler")
def _(t):
    return [
        "sweep",
        good(t),
        "--grid",
        "acceptance.alpha=0.5",
        "--out",
        str(t / "o"),
        "--executor",
        "dask",
    ]


@case("sweep-dask-unreachable", "Dask scheduler")
def _(t):
    return [
        "sweep",
        good(t),
        "--grid",
        "acceptance.alpha=0.5",
        "--out",
        str(t / "o"),
        "--executor",
        "dask",
        "--scheduler",
        "tcp://127.0.0.1:9",
    ]


@case("sweep-scheduler-without-dask", "--scheduler: only the dask executor has a scheduler")
def _(t):
    # was ignored: the sweep ran on the local pool
    return [
        "sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", str(t / "o"),
        "--scheduler", "tcp://127.0.0.1:9",
    ]  # fmt: skip


@case("sweep-workers-with-dask", "--workers: the dask cluster's own workers run the points")
def _(t):
    # was ignored: the cluster's workers run the points
    return [
        "sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", str(t / "o"),
        "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9", "--workers", "3",
    ]  # fmt: skip


@case("search-draft-tokens-without-topk", "--draft-tokens: is for the tree search (--topk)")
def _(t):
    # was ignored: the chain search ran as if it were not given
    return ["search", good(t), "--num-steps", "2", "--draft-tokens", "4"]


@case("search-solve-with-topk", "--topk: is for the tree search; with --solve")
def _(t):
    # was ignored: --solve ran on the scenario's own draft
    return ["search", good(t), "--solve", "timing.verify_ms", "--topk", "1,2"]


@case("set-indexes-a-list", "targets.tok_s[0]: --set cannot index into a list")
def _(t):
    # errors name list entries 'targets.tok_s[0]', but --set said 'unknown key'
    return ["run", good(t), "--set", "targets.tok_s[0]=100"]


@case("grid-indexes-a-list", "targets.tok_s[0]: --grid cannot index into a list")
def _(t):
    # as --set: a list is varied whole, not by entry ('unknown key' before)
    return ["sweep", good(t), "--grid", "targets.tok_s[0]=100,200", "--out", str(t / "o")]


@case("sweep-csv-is-a-directory", "sweep.csv")
def _(t):
    (t / "o" / "sweep.csv").mkdir(parents=True)
    return ["sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", str(t / "o")]


@case("sweep-manifest-not-utf8", "manifest")
def _(t):
    (t / "o").mkdir()
    (t / "o" / "manifest.json").write_bytes(b"\xff\xfe{")
    return ["sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", str(t / "o")]


@case("sweep-points-is-file", "points")
def _(t):
    (t / "o").mkdir()
    (t / "o" / "points").write_text("x")
    return ["sweep", good(t), "--grid", "acceptance.alpha=0.5", "--out", str(t / "o")]


# ------------------------------------------------------------------ search
SEARCH = [
    ("search-num-steps-empty", ["--num-steps", ""], "--num-steps"),
    ("search-num-steps-zero", ["--num-steps", "0"], "--num-steps"),
    ("search-num-steps-word", ["--num-steps", "a"], "--num-steps"),
    ("search-num-steps-reversed", ["--num-steps", "4:1"], "--num-steps"),
    ("search-num-steps-float", ["--num-steps", "2.5"], "--num-steps"),
    ("search-num-steps-huge", ["--num-steps", "1:1000"], "--num-steps"),
    ("search-num-steps-inf", ["--num-steps", "1:inf"], "--num-steps"),
    ("search-quantile-2", ["--quantile", "2"], "--quantile"),
    ("search-quantile-nan", ["--quantile", "nan"], "--quantile"),
    ("search-solve-unknown", ["--solve", "timing.verfy_ms"], "--solve"),
    ("search-solve-and-k", ["--solve", "timing.verify_ms", "--num-steps", "2"], "--num-steps"),
]
for _name, _extra, _needle in SEARCH:

    def _make(tmp: Path, extra=_extra) -> list[str]:
        return ["search", good(tmp), *extra]

    CASES.append((_name, _make, _needle))


# ------------------------------------------------------------------ calibrate and importers
def _cal(t: Path, *extra: str) -> list[str]:
    return ["calibrate", "--scenario", good(t), *extra]


CALIBRATE = [
    ("cal-no-data", [], "nothing to calibrate"),
    ("cal-point-format", ["--point", "2:60"], "--point"),
    ("cal-point-words", ["--point", "a:b:c"], "--point"),
    ("cal-point-al-range", ["--point", "2:9:60"], "accept length"),
    ("cal-point-inf", ["--point", "2:2:inf"], "--point"),
    ("cal-point-nan", ["--point", "2:nan:60"], "--point"),
    ("cal-point-k0", ["--point", "0:1:60"], "num_steps"),
    ("cal-baseline-negative", ["--baseline-tok-s", "-1"], "--baseline-tok-s"),
    ("cal-baseline-inf", ["--baseline-tok-s", "inf"], "--baseline-tok-s"),
    ("cal-baseline-nan", ["--baseline-tok-s", "nan"], "--baseline-tok-s"),
    ("cal-rel-0", ["--baseline-tok-s", "90", "--rel-error", "0"], "--rel-error"),
    ("cal-rel-2", ["--baseline-tok-s", "90", "--rel-error", "2"], "--rel-error"),
    ("cal-rel-nan", ["--baseline-tok-s", "90", "--rel-error", "nan"], "--rel-error"),
    ("cal-fit-unknown", ["--baseline-tok-s", "90", "--fit", "verfy_ms"], "--fit"),
    ("cal-fit-empty", ["--baseline-tok-s", "90", "--fit", ","], "--fit"),
    ("cal-before-alone", ["--vllm-metrics-before", "x.txt"], "--vllm-metrics"),
    ("cal-metrics-missing", ["--vllm-metrics", "/nonexistent/m.txt"], "no such file"),
    ("cal-log-missing", ["--sglang-log", "/nonexistent/s.log"], "no such file"),
    ("cal-acceptance-model", ["--baseline-tok-s", "90", "--acceptance", "beta"], "--acceptance"),
    ("cal-num-steps-0", ["--sglang-log", "{log}", "--num-steps", "0"], "num_steps"),
]
for _name, _extra, _needle in CALIBRATE:

    def _make(tmp: Path, extra=_extra) -> list[str]:
        log = tmp / "s.log"
        log.write_text(
            "[2025-06-01 10:00:00] Decode batch, #running-req: 1, #token: 9, token usage: 0.01, "
            "accept len: 2.05, accept rate: 0.68, cuda graph: True, gen throughput "
            "(token/s): 61.23, #queue-req: 0,\n"
        )
        return _cal(tmp, *[e.format(log=log) for e in extra])

    CASES.append((_name, _make, _needle))

IMPORT_FILES = {
    "metrics-garbage": ("--vllm-metrics", "<html>not metrics</html>\n", "metrics"),
    "metrics-no-spec": ("--vllm-metrics", "# TYPE x counter\nx_total 1\n", "spec_decode"),
    "metrics-nan": ("--vllm-metrics", "vllm:spec_decode_num_drafts_total NaN\n", "finite"),
    "metrics-negative": ("--vllm-metrics", "vllm:spec_decode_num_drafts_total -3\n", ">= 0"),
    "metrics-empty": ("--vllm-metrics", "", "spec_decode"),
    "metrics-long-line": ("--vllm-metrics", 'x{a="' + "b" * 200000 + "\n", "line 1"),
    "log-empty": ("--sglang-log", "", "no speculative decode line"),
    "log-no-spec": ("--sglang-log", "Decode batch, #running-req: 1, #token: 5\n", "accept len"),
    "log-garbage": ("--sglang-log", "hello\nworld\n", "no speculative"),
    "log-huge-line": ("--sglang-log", "Decode batch, " + "k: v, " * 100000 + "\n", "speculative"),
    "bench-garbage": ("--vllm-bench", "{not json", "JSON"),
    "bench-array": ("--vllm-bench", "[1, 2]", "object"),
    "bench-no-spec": ("--vllm-bench", '{"backend": "vllm", "completed": 3}', "spec_decode"),
    "bench-nan": ("--vllm-bench", '{"spec_decode_acceptance_length": NaN}', ""),
    "sgl-bench-garbage": ("--sglang-bench", "{not json\n", "line 1"),
    "sgl-bench-missing-keys": ("--sglang-bench", '{"batch_size": 1}\n', "line 1"),
    "sgl-bench-bad-al": (
        "--sglang-bench",
        '{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 9.0,'
        ' "step_time": 0.01, "speed": 900.0, "completion_tokens": 512.0}\n',
        "acc_length",
    ),
    "server-args-none": ("--sglang-server-args", "nothing here\n", "server_args"),
    "server-args-broken": ("--sglang-server-args", "server_args=ServerArgs(tp_size=\n", "parse"),
}
for _name, (_flag, _text, _needle) in IMPORT_FILES.items():

    def _make(tmp: Path, flag=_flag, text=_text) -> list[str]:
        path = tmp / "input.txt"
        path.write_text(text)
        return _cal(tmp, flag, str(path))

    CASES.append((f"cal-{_name}", _make, _needle))


@case("cal-metrics-not-utf8", "")
def _(t):
    (t / "m.txt").write_bytes(b"\xff\xfe\x00garbage")
    return _cal(t, "--vllm-metrics", str(t / "m.txt"))


@case("cal-metrics-went-down", "went down")
def _(t):
    (t / "a.txt").write_text(
        "vllm:spec_decode_num_drafts_total 5\nvllm:spec_decode_num_draft_tokens_total 15\n"
        "vllm:spec_decode_num_accepted_tokens_total 5\n"
    )
    (t / "b.txt").write_text(
        "vllm:spec_decode_num_drafts_total 9\nvllm:spec_decode_num_draft_tokens_total 27\n"
        "vllm:spec_decode_num_accepted_tokens_total 9\n"
    )
    return _cal(t, "--vllm-metrics", str(t / "a.txt"), "--vllm-metrics-before", str(t / "b.txt"))


# ------------------------------------------------------------------ convert, hardware
CONVERT = [
    ("conv-needs-k", ["--alpha", "0.5"], "--num-steps"),
    ("conv-two", ["--alpha", "0.5", "--accept-length", "2", "--num-steps", "2"], "exactly one"),
    ("conv-list-word", ["--cumulative", "0.5,x"], "--cumulative"),
    ("conv-al-range", ["--accept-length", "9", "--num-steps", "2"], "accept"),
    ("conv-alpha-2", ["--alpha", "2", "--num-steps", "3"], "alpha"),
    ("conv-alpha-nan", ["--alpha", "nan", "--num-steps", "3"], "--alpha"),
    ("conv-alpha-inf", ["--alpha", "inf", "--num-steps", "3"], "--alpha"),
    ("conv-k-0", ["--alpha", "0.5", "--num-steps", "0"], "--num-steps"),
    ("conv-k-huge", ["--alpha", "0.5", "--num-steps", "100000000"], "--num-steps"),
    ("conv-per-position-big", ["--per-position", "1.5"], "per-position"),
    ("conv-empty-list", ["--cumulative", ""], "--cumulative"),
    ("conv-list-long", ["--per-position", ",".join(["0.5"] * 1000)], "--per-position"),
    ("conv-draft-rate-2", ["--draft-acceptance-rate", "2", "--num-steps", "3"], "rate"),
    ("conv-sglang-rate-nan", ["--sglang-accept-rate", "nan", "--num-steps", "3"], "rate"),
    ("conv-cumulative-rising", ["--cumulative", "0.5,0.9"], "cumulative"),
]
for _name, _extra, _needle in CONVERT:
    CASES.append((_name, lambda tmp, extra=_extra: ["convert", *extra], _needle))

HARDWARE = [
    ("hw-nothing", ["hardware"], "--list"),
    (
        "ar-gpus-0",
        ["allreduce", "--interconnect", "nvlink4", "--gpus", "0", "--bytes", "8"],
        "gpus",
    ),
    (
        "ar-bytes-neg",
        ["allreduce", "--interconnect", "nvlink4", "--gpus", "2", "--bytes", "-1"],
        "bytes",
    ),
    (
        "ar-typo",
        ["allreduce", "--interconnect", "nvlnk4", "--gpus", "2", "--bytes", "8"],
        "did you mean 'nvlink4'",
    ),
    (
        "ar-gpus-huge",
        ["allreduce", "--interconnect", "nvlink4", "--gpus", "100000000", "--bytes", "8"],
        "--gpus",
    ),
    (
        "ar-bytes-huge",
        ["allreduce", "--interconnect", "nvlink4", "--gpus", "2", "--bytes", str(10**30)],
        "--bytes",
    ),
]
for _name, _args, _needle in HARDWARE:
    CASES.append((_name, lambda tmp, args=_args: list(args), _needle))


# ------------------------------------------------------------------ plot
PLOT_DOCS = {
    "plot-not-json": ("{nope", "JSON"),
    "plot-array": ("[1, 2, 3]", "object"),
    "plot-no-kind": ('{"rows": []}', "kind"),
    "plot-kind-no-figures": ('{"kind": "calibrate"}', "no figures"),
    "plot-deep": ("[" * 100000 + "]" * 100000, "deep"),
    "plot-nan-json": ('{"kind": "run", "x": NaN}', ""),
    "plot-bad-sweep": ('{"kind": "sweep", "rows": "x"}', "rows"),
    "plot-unknown-kind": ('{"kind": "movie"}', "kind"),
    "plot-serve-empty": ('{"kind": "serve"}', "baseline"),
    "plot-sweep-no-rows": ('{"kind": "sweep"}', "rows"),
    "plot-run-cycle-text": ('{"kind": "run", "cycle_ms": {"draft": "x"}}', "not a valid run"),
}
for _name, (_text, _needle) in PLOT_DOCS.items():

    def _make(tmp: Path, text=_text) -> list[str]:
        (tmp / "doc.json").write_text(text)
        return ["plot", str(tmp / "doc.json"), "--out", str(tmp / "figs")]

    CASES.append((_name, _make, _needle))


@case("plot-missing", "no such file")
def _(t):
    return ["plot", str(t / "none.json")]


@case("plot-dir-without-sweep", "no such file")
def _(t):
    (t / "d").mkdir()
    return ["plot", str(t / "d")]


@case("plot-not-utf8", "UTF-8")
def _(t):
    (t / "doc.json").write_bytes(b"\xff\xfe{}")
    return ["plot", str(t / "doc.json"), "--out", str(t / "figs")]


# ------------------------------------------------------------------ serving era
# Commands that load a server (serve and the decision studies) and the trace readers. The
# shipped serving scenario is the base; every case fails before a simulation starts.
SERVING = str(
    Path(__file__).resolve().parents[2] / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
)
#: A scenario with ranks below the top-1 (tree-load can draft a tree on it).
LLAMA_TREE = str(Path(SERVING).parent / "llama31-8b-1xh100-eagle3.toml")
TRACE_HEADER = "arrival_s,input_tokens,output_tokens\n"
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
MOONCAKE = '{"timestamp": 0, "input_length": 1, "output_length": 1}\n'


def _serve_trace(text: str | bytes, name: str = "t.csv", *extra: str) -> Case:
    def build(t: Path) -> list[str]:
        path = t / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return ["serve", SERVING, "--trace", str(path), *extra]

    return build


SERVING_OPTIONS = [
    # extreme or degenerate numbers
    ("serve-rate-tiny", ["serve", SERVING, "--rate", "1e-300"], "--rate"),
    ("serve-rate-huge", ["serve", SERVING, "--rate", "1e300"], "--rate"),
    ("serve-rate-nan", ["serve", SERVING, "--rate", "nan"], "--rate"),
    ("serve-rate-inf", ["serve", SERVING, "--rate", "inf"], "--rate"),
    ("serve-users-1e9", ["serve", SERVING, "--concurrency", "1000000000"], "concurrency"),
    ("serve-set-users-1e9", ["serve", SERVING, "--set", "serving.concurrency=1000000000"], "conc"),
    (
        "serve-requests-1e6",
        ["serve", SERVING, "--concurrency", "1024", "--requests", "1000000"],
        "GiB",
    ),
    ("serve-two-loads", ["serve", SERVING, "--rate", "1", "--concurrency", "2"], "at most one"),
    ("serve-rate-scale-no-trace", ["serve", SERVING, "--rate-scale", "2"], "only apply to a trace"),
    ("serve-rate-scale-0", ["serve", SERVING, "--rate-scale", "0"], "--rate-scale"),
    ("serve-rate-scale-nan", ["serve", SERVING, "--rate-scale", "nan"], "--rate-scale"),
    ("serve-window-no-trace", ["serve", SERVING, "--trace-window", "0:10"], "only apply"),
    ("serve-trace-format-word", ["serve", SERVING, "--trace-format", "csv"], "--trace-format"),
    ("serve-kv-tiny", ["serve", SERVING, "--set", "serving.kv_capacity_tokens=10"], "KV cache"),
    ("serve-set-table-word", ["serve", SERVING, "--set", "serving.k_table=x"], "serving.k_table"),
    (
        "serve-set-prefix-caching-word",
        ["serve", SERVING, "--set", "serving.prefix_caching=yes"],
        "serving.prefix_caching",
    ),
    (
        "serve-set-kv-block-zero",
        ["serve", SERVING, "--set", "serving.kv_block_tokens=0"],
        "serving.kv_block_tokens",
    ),
    (
        "serve-kv-block-sglang",
        [
            "serve",
            SERVING,
            "--set",
            "server.engine=sglang",
            "--set",
            "serving.kv_block_tokens=64",
        ],
        "serving.kv_block_tokens",
    ),
    ("crossover-rate-tiny", ["crossover", SERVING, "--rate", "1e-300,1"], "--rate"),
    ("crossover-rate-nan", ["crossover", SERVING, "--rate", "nan,1"], "--rate"),
    # a size error names the option that made the work large, and what to lower
    (
        "crossover-conc-huge",
        ["crossover", SERVING, "--concurrency", "1:100000"],
        "--concurrency: 500,000 simulations",
    ),
    ("crossover-rate-many", ["crossover", SERVING, "--rate", "0.1:20000"], "--rate: 100,000 sim"),
    (
        "crossover-replications-huge",
        ["crossover", SERVING, "--replications", "100000"],
        "--replications: 100000 replications",
    ),
    ("best-k-conc-many", ["best-k", SERVING, "--concurrency", "1:50000"], "--concurrency: 250,0"),
    (
        "controllers-replications-huge",
        ["controllers", SERVING, "--replications", "100000"],
        "use fewer replications",
    ),
    (
        "tree-load-conc-huge",
        ["tree-load", LLAMA_TREE, "--tree", "5/4/8", "--concurrency", "1,2,100000"],
        "--concurrency: 20 replications x 100,100 requests",
    ),
    (
        "tree-load-conc-many",
        ["tree-load", LLAMA_TREE, "--tree", "5/4/8", "--concurrency", "1:3000"],
        "use fewer loads",
    ),
    ("crossover-one-load", ["crossover", SERVING, "--concurrency", "4"], "two loads"),
    (
        "crossover-dup-metric",
        ["crossover", SERVING, "--concurrency", "1,2", "--metric", "per_user_tok_s,per_user_tok_s"],
        "twice",
    ),
    ("crossover-unknown-metric", ["crossover", SERVING, "--metric", "speed"], "unknown metric"),
    (
        "crossover-both-loads",
        ["crossover", SERVING, "--rate", "1,2", "--concurrency", "1,2"],
        "at most one",
    ),
    ("best-k-conc-huge", ["best-k", SERVING, "--concurrency", "1:200000"], "100,000"),
    ("best-k-conc-word", ["best-k", SERVING, "--concurrency", "a,b"], "--concurrency"),
    ("best-k-slo-nan", ["best-k", SERVING, "--ttft-slo-ms", "nan"], "--ttft-slo-ms"),
    ("capacity-rtol-nan", ["capacity", SERVING, "--rtol", "nan"], "--rtol"),
    ("capacity-share-nan", ["capacity", SERVING, "--share", "nan"], "--share"),
    ("capacity-share-1", ["capacity", SERVING, "--share", "1"], "--share"),
    (
        "controllers-phase-huge",
        ["controllers", SERVING, "--phase", "1000000000,2,x=1"],
        "1,000,000",
    ),
    ("controllers-phase-rate-tiny", ["controllers", SERVING, "--phase", "10,1e-300,x=1"], "rate"),
    (
        "controllers-phase-dup-class",
        ["controllers", SERVING, "--phase", "10,2,x=0.5,x=0.5"],
        "twice",
    ),
    ("controllers-phase-words", ["controllers", SERVING, "--phase", "a,b"], "--phase"),
    ("search-rate-nan", ["search", SERVING, "--rate", "nan"], "--rate"),
    ("search-rate-subnormal", ["search", SERVING, "--rate", "1e-320"], "--rate"),
    ("search-rate-1e9", ["search", SERVING, "--rate", "1e9"], "--rate"),
    ("best-k-slo-subnormal", ["best-k", SERVING, "--ttft-slo-ms", "1e-320"], "--ttft-slo-ms"),
    ("capacity-slo-subnormal", ["capacity", SERVING, "--tpot-slo-ms", "1e-320"], "--tpot-slo"),
    ("tree-load-tree-word", ["tree-load", SERVING, "--tree", "a/b/c"], "--tree"),
    (
        "sweep-grid-subnormal-step",
        ["sweep", SERVING, "--grid", "acceptance.alpha=0:1:1e-320", "--out", "{tmp}/o"],
        "100,000",
    ),
    (
        "sweep-grid-huge-bounds",
        ["sweep", SERVING, "--grid", "timing.decode_ms=1e-300:1e300", "--out", "{tmp}/o"],
        "--grid",
    ),
]
for _name, _args, _needle in SERVING_OPTIONS:

    def _make(tmp: Path, args=_args) -> list[str]:
        return [a.format(tmp=tmp) for a in args]

    CASES.append((_name, _make, _needle))

TRACES = [
    ("trace-empty", "", "empty"),
    ("trace-header-only", TRACE_HEADER, "no requests"),
    ("trace-unknown-header", "when,who\n1,2\n", "unknown trace format"),
    ("trace-arrival-nan", TRACE_HEADER + "nan,1,1\n", "arrival_s (row 1)"),
    ("trace-arrival-1e15", TRACE_HEADER + "0,1,1\n1e15,1,1\n", "latest arrival"),
    ("trace-arrival-1e300", TRACE_HEADER + "1e300,1,1\n", "latest arrival"),
    ("trace-arrival-1e999", TRACE_HEADER + "1e999,1,1\n", "arrival_s (row 1)"),
    ("trace-arrival-negative", TRACE_HEADER + "-1,1,1\n", "arrival_s (row 1)"),
    ("trace-backwards", TRACE_HEADER + "5,1,1\n4,1,1\n", "backwards"),
    ("trace-output-0", TRACE_HEADER + "0,1,0\n", "output_tokens (row 1)"),
    ("trace-output-float", TRACE_HEADER + "0,1,1.5\n", "output_tokens (row 1)"),
    ("trace-output-huge", TRACE_HEADER + "0,1," + "9" * 30 + "\n", "output_tokens (row 1)"),
    ("trace-input-negative", TRACE_HEADER + "0,-4,1\n", "input_tokens (row 1)"),
    ("trace-field-128k", TRACE_HEADER + "0," + "1" * 140_000 + ",5\n", "64 KiB"),
    ("trace-field-5k", TRACE_HEADER + "0," + "1" * 5000 + ",5\n", "field"),
    ("trace-line-10mb", TRACE_HEADER + "0,5,5," + "x" * 10_000_000 + "\n", "64 KiB"),
    ("trace-unclosed-quote", TRACE_HEADER + '0,"5,5\n', "row 1"),
    ("trace-unknown-class", "arrival_s,input_tokens,output_tokens,class\n0,1,1,poetry\n", "poetry"),
    ("azure-bad-time", "TIMESTAMP,ContextTokens,GeneratedTokens\nnoon,1,1\n", "TIMESTAMP (row 1)"),
    (
        "azure-zero-generated",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,0\n",
        "GeneratedTokens (row 1)",
    ),
    (
        "azure-backwards",
        AZURE + "2023-11-16 18:15:46,1,1\n2023-11-15 18:15:46,1,1\n",
        "backwards",
    ),
    (
        "azure-years-long",
        AZURE + "1990-01-01 00:00:00,1,1\n2023-11-15 18:15:46,1,1\n",
        "latest arrival",
    ),
    (
        "burstgpt-words",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "soon,ChatGPT,1,1,2,API log\n",
        "Timestamp (row 1)",
    ),
    (
        "burstgpt-all-failed",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,10,0,10,API log\n",
        "no requests",
    ),
    ("mooncake-nan", '{"timestamp": NaN, "input_length": 1, "output_length": 1}\n', "row 1"),
    ("mooncake-missing", '{"timestamp": 0, "input_length": 1}\n', "output_length"),
    ("mooncake-array", MOONCAKE + "[1, 2]\n", "row 2"),
    ("mooncake-deep", '{"timestamp": 0, "hash_ids": ' + "[" * 5000 + "]" * 5000 + "}\n", "deeper"),
    (
        "mooncake-hash-words",
        '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": ["a"]}\n',
        "hash_ids",
    ),
    (
        "mooncake-huge-ms",
        '{"timestamp": 1e300, "input_length": 1, "output_length": 1}\n',
        "latest arrival",
    ),
    ("trace-not-utf8", b"arrival_s,input_tokens,output_tokens\n0,1,\xff\n", "UTF-8"),
    ("trace-binary", bytes(range(256)) * 4, ""),
    ("trace-nul", TRACE_HEADER + "0,1,1\x00\n", "row 1"),
]
for _name, _text, _needle in TRACES:
    CASES.append((_name, _serve_trace(_text), _needle))

CASES += [
    (
        "trace-window-empty",
        _serve_trace(TRACE_HEADER + "0,1,1\n", "t.csv", "--trace-window", "100:200"),
        "no request arrives",
    ),
    (
        "trace-window-reversed",
        _serve_trace(TRACE_HEADER + "0,1,1\n", "t.csv", "--trace-window", "9:3"),
        "--trace-window",
    ),
    (
        "trace-window-words",
        _serve_trace(TRACE_HEADER + "0,1,1\n", "t.csv", "--trace-window", "a:b"),
        "--trace-window",
    ),
    (
        "trace-window-nan",
        _serve_trace(TRACE_HEADER + "0,1,1\n", "t.csv", "--trace-window", "nan:5"),
        "--trace-window",
    ),
    (
        "trace-format-wrong",
        _serve_trace(TRACE_HEADER + "0,1,1\n", "t.csv", "--trace-format", "mooncake"),
        "row 1",
    ),
]


@case("trace-missing", "no such file")
def _(t):
    return ["serve", SERVING, "--trace", str(t / "none.csv")]


@case("trace-symlink-loop", "loop")
def _(t):
    os.symlink(t / "loop.csv", t / "loop.csv")
    return ["serve", SERVING, "--trace", str(t / "loop.csv")]


@case("trace-fifo", "regular file")
def _(t):
    os.mkfifo(t / "fifo.csv")
    return ["serve", SERVING, "--trace", str(t / "fifo.csv")]


@case("trace-directory", "directory")
def _(t):
    (t / "d.csv").mkdir()
    return ["serve", SERVING, "--trace", str(t / "d.csv")]


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc")
@case("trace-proc-mem", "regular file")
def _(t):
    return ["serve", SERVING, "--trace", "/proc/self/mem"]


@case("trace-dev-zero", "regular file")
def _(t):
    return ["serve", SERVING, "--trace", "/dev/zero"]


@case("trace-huge-file", "MiB")
def _(t):
    from sim.simulation.serving.traces import rows

    path = t / "big.csv"
    with open(path, "wb") as fh:  # sparse: no disk used
        fh.truncate(rows.MAX_TRACE_BYTES + 10)
    return ["serve", SERVING, "--trace", str(path)]


@case("trace-path-long", "...")
def _(t):
    return ["serve", SERVING, "--trace", str(t) + ("/" + "d" * 200) * 40 + "/x.csv"]


@case("validate-missing-trace", "no such file")
def _(t):
    text = Path(SERVING).read_text().replace("concurrency = 16", 'trace = "nope.csv"')
    (t / "s.toml").write_text(text)
    return ["validate", str(t / "s.toml")]


@case("validate-kv-too-small", "KV cache")
def _(t):
    text = Path(SERVING).read_text().replace("[serving]", "[serving]\nkv_capacity_tokens = 10")
    (t / "s.toml").write_text(text)
    return ["validate", str(t / "s.toml")]


# importer figures that cannot be measurements
def _metrics(drafts: float, tokens: float, accepted: float, per_pos: list[float]) -> str:
    lines = [
        f"vllm:spec_decode_num_drafts_total {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total {tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total {accepted}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {c}'
        for i, c in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"


DECODE = (
    "[2025-06-01 10:00:00] Decode batch, #running-req: 1, #token: 9, token usage: 0.01, "
    "accept len: {al}, accept rate: {rate}, cuda graph: True, gen throughput (token/s): {gen},"
    " #queue-req: 0,\n"
)
IMPOSSIBLE = {
    "vllm-accepted-above-drafted": ("--vllm-metrics", _metrics(10, 30, 40, []), "more accepted"),
    "vllm-fewer-tokens-than-drafts": ("--vllm-metrics", _metrics(10, 5, 4, []), "at least one"),
    "vllm-zero-drafts": ("--vllm-metrics", _metrics(0, 0, 0, []), "no drafts"),
    "vllm-rising-profile": ("--vllm-metrics", _metrics(10, 30, 15, [3, 5, 7]), "rising"),
    "vllm-position-above-drafts": ("--vllm-metrics", _metrics(10, 30, 25, [12, 8, 5]), "of 10"),
    "vllm-tpot-1e-9": (
        "--vllm-bench",
        '{"backend": "vllm", "completed": 3, "mean_tpot_ms": 1e-9, "max_concurrency": 1}',
        "mean_tpot_ms",
    ),
    "sglang-al-absurd": (
        "--sglang-log",
        DECODE.format(al="9" * 100 + ".0", rate=0.5, gen=60),
        "accept len",
    ),
    "sglang-rate-above-1": ("--sglang-log", DECODE.format(al=2.0, rate=7.5, gen=60), "rate"),
    "sglang-gen-huge": ("--sglang-log", DECODE.format(al=2.0, rate=0.5, gen="1e300"), "gen"),
    "sglang-topk-0": (
        "--sglang-server-args",
        "server_args=ServerArgs(speculative_algorithm='EAGLE3', speculative_num_steps=3, "
        "speculative_eagle_topk=0, speculative_num_draft_tokens=4)\n",
        "speculative_eagle_topk",
    ),
    "sglang-bench-topk-0": (
        "--sglang-bench",
        '{"batch_size": 1, "steps": 3, "topk": 0, "num_draft_tokens": 4, "acc_length": 2.0,'
        ' "step_time": 0.01, "speed": 90.0}\n',
        "topk",
    ),
    "sglang-bench-step-1e-12": (
        "--sglang-bench",
        '{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 2.0,'
        ' "step_time": 1e-12, "speed": 90.0}\n',
        "step_time",
    ),
}
for _name, (_flag, _text, _needle) in IMPOSSIBLE.items():

    def _make(tmp: Path, flag=_flag, text=_text) -> list[str]:
        (tmp / "input.txt").write_text(text)
        return _cal(tmp, flag, str(tmp / "input.txt"))

    CASES.append((f"cal-{_name}", _make, _needle))


def _sgl(verify: object, tokens: object, **extra: object) -> str:
    """One SGLang /generate response line with the given per-request counts."""
    import json

    meta = {"id": "r1", "completion_tokens": tokens, "spec_verify_ct": verify, **extra}
    return json.dumps({"text": "x", "meta_info": meta}) + "\n"


def _vllm_sd(**stats: object) -> str:
    """One vLLM response line with metrics.speculative_decoding ``stats`` over defaults."""
    import json

    sd = {"num_spec_steps": 2, "num_accepted_draft_tokens": 3, "num_draft_tokens": 6,
          "num_spec_tokens": 3, "acceptance_histogram": [0, 1, 1, 0], **stats}  # fmt: skip
    return json.dumps({"id": "c", "metrics": {"speculative_decoding": sd}}) + "\n"


# per-request speculative counts (sim/calibration/importers/per_request.py)
PER_REQUEST = {
    "empty": ("", "empty file"),
    "garbage": ("{not json\n", "JSON"),
    "array-of-numbers": ("[1, 2]", "item 0"),
    "no-spec-counts": ('{"text": "x", "meta_info": {"completion_tokens": 5}}\n', "speculative"),
    "nan": ('{"meta_info": {"spec_verify_ct": NaN, "completion_tokens": 3}}\n', "finite"),
    "verify-negative": (_sgl(-3, 10), "spec_verify_ct"),
    "verify-fraction": (_sgl(2.5, 10), "spec_verify_ct"),
    "verify-huge": (_sgl(10**300, 10), "spec_verify_ct"),
    "verify-0-with-tokens": (_sgl(0, 40), "spec_verify_ct 0"),
    "tokens-below-verify": (_sgl(10, 5), "completion_tokens"),
    "al-above-k-plus-1": (_sgl(3, 30, spec_num_proposed_drafts=9), "accept length"),
    "histogram-sum": (_sgl(3, 8, spec_correct_drafts_histogram=[1, 1]), "histogram"),
    "histogram-too-long": (_sgl(2, 5, spec_correct_drafts_histogram=[0, 0, 0, 0, 0, 2]), "list"),
    "tokens-above-histogram": (_sgl(2, 30, spec_correct_drafts_histogram=[1, 1]), "completion"),
    "log-json-broken": ('[2026-12-04 11:00:00] {"event": "request.finished", "out": {\n', "line 1"),
    "log-json-no-meta": ('[t] {"event": "request.finished", "out": {}}\n', "meta_info"),
    "log-text-float-count": (
        "[t] Finish: obj=X(), out={'meta_info': {'completion_tokens': 9.5, 'spec_verify_ct': 3}}\n",
        "completion_tokens",
    ),
    "one-request": (_sgl(4, 9), "at least 2"),
    "proposed-0": (_sgl(4, 9, spec_num_proposed_drafts=0), "drafts a verify step"),
    "all-accepted": (_sgl(2, 9, spec_num_proposed_drafts=6) * 2, "every one accepted"),
    "vllm-accepted-above-drafted": (_vllm_sd(num_accepted_draft_tokens=7), "accepted drafts"),
    "vllm-drafts-above-k": (_vllm_sd(num_draft_tokens=9), "num_spec_tokens"),
    "vllm-histogram-sum": (_vllm_sd(acceptance_histogram=[0, 1, 0, 0]), "histogram"),
    "vllm-k-0": (_vllm_sd(num_spec_tokens=0), "num_spec_tokens"),
    "vllm-steps-0-accepted": (_vllm_sd(num_spec_steps=0), "num_spec_steps 0"),
    "vllm-per-step-length": (
        _vllm_sd(per_step_accepted=[1, 2, 0], per_step_drafted=[3, 3, 3]),
        "per-step",
    ),
}
for _name, (_text, _needle) in PER_REQUEST.items():

    def _make(tmp: Path, text=_text) -> list[str]:
        (tmp / "req.jsonl").write_text(text)
        return _cal(tmp, "--per-request", str(tmp / "req.jsonl"))

    CASES.append((f"cal-per-request-{_name}", _make, _needle))

CASES += [
    (
        "cal-per-request-missing",
        lambda t: _cal(t, "--per-request", str(t / "none.jsonl")),
        "no such file",
    ),
    (
        "cal-per-request-format",
        lambda t: _cal(t, "--per-request", "x.jsonl", "--per-request-format", "trtllm"),
        "--per-request-format",
    ),
]

CASES += [
    ("cal-baseline-1e-300", lambda t: _cal(t, "--baseline-tok-s", "1e-300"), "baseline tok/s"),
    (
        "cal-point-1e-308",
        lambda t: _cal(t, "--baseline-tok-s", "80", "--point", "2:2:1e-308"),
        "--point",
    ),
    ("cal-point-1e300", lambda t: _cal(t, "--point", "2:2:1e300"), "--point"),
]


# ------------------------------------------------------------------ extremes over the serving era
# A generated corpus (1e-300, 1e300, nan, inf, -0 in every numeric option of serve,
# crossover, best-k, capacity, controllers, tree-load, sweep --grid, calibrate and init;
# malformed TOML; empty, huge and binary trace and bench files: 153 cases) was run, each in
# an empty directory with stdin closed and 15 s: these are the ones it found mishandled
# (a traceback, exit 0 with a file written, or no end in 15 s).
QUICKSTART = Path(__file__).resolve().parents[1] / "data" / "quickstart"
INIT = ["init", "--gpu", "H100", "--gpus", "4", "--engine", "vllm", "--out", "{tmp}/o.toml"]


def _sweep_rows(*rows: tuple[float, float]) -> str:
    return "".join(
        json.dumps({"backend": "vllm", "max_concurrency": b, "completed": 64,
                    "mean_tpot_ms": t, "mean_e2e_latency_ms": 1.0, "accept_length": None}) + "\n"
        for b, t in rows
    )  # fmt: skip


def _config(**edit: object) -> str:
    cfg = json.loads((QUICKSTART / "config.json").read_text())
    text = json.dumps({**cfg, **{k: v for k, v in edit.items() if not isinstance(v, str)}})
    for k, v in edit.items():  # a literal too large for json.dumps to write as a number
        if isinstance(v, str):
            text = text.replace(f'"{k}": {cfg[k]}', f'"{k}": {v}')
    return text


def _bench(**edit: object) -> str:
    return json.dumps({**json.loads((QUICKSTART / "bench_eagle3.json").read_text()), **edit})


def _with_file(text: str, args: list[str]) -> Case:
    def build(tmp: Path) -> list[str]:
        (tmp / "in.json").write_text(text)
        return [a.format(tmp=tmp, f=tmp / "in.json") for a in args]

    return build


LOAD_SWEEP = ["calibrate", "--scenario", "{tmp}/good.toml", "--baseline-tok-s", "88.5",
              "--load-sweep", "{f}"]  # fmt: skip
CASES += [
    ("capacity-share-1e-300", lambda t: ["capacity", SERVING, "--share", "1e-300"], "--share"),
    (
        "load-sweep-tpot-1e-300",
        _with_file(_sweep_rows((1, 1e-300), (8, 20.0), (32, 30.0)), LOAD_SWEEP),
        "line 1: TPOT (ms): 1e-300 is not a measurement",
    ),
    (
        "load-sweep-tpot-1e300",
        _with_file(_sweep_rows((1, 11.3), (8, 1e300), (32, 30.0)), LOAD_SWEEP),
        "line 2: TPOT (ms)",
    ),
    (
        "load-sweep-users-1e300",
        _with_file(_sweep_rows((1, 11.3), (1e300, 20.0), (32, 30.0)), LOAD_SWEEP),
        "line 2: concurrency",
    ),
    (
        "init-draft-params-nan",
        _with_file(
            "", [*INIT, "--config", str(QUICKSTART / "config.json"), "--draft-params", "nan"]
        ),
        "--draft-params",
    ),
    (
        "init-accept-length-nan",
        _with_file(
            "", [*INIT, "--config", str(QUICKSTART / "config.json"), "--accept-length", "nan"]
        ),
        "--accept-length",
    ),
    (
        "init-config-no-heads",
        _with_file(_config(num_attention_heads=0), [*INIT, "--config", "{f}"]),
        "num_attention_heads: must be an integer from 1",
    ),
    (
        "init-config-ffn-401-digits",
        _with_file(_config(intermediate_size="1" + "0" * 400), [*INIT, "--config", "{f}"]),
        "intermediate_size: must be an integer from 0 to 16,777,216, got an integer of 401",
    ),
    (
        "init-config-ffn-5001-digits",
        _with_file(_config(intermediate_size="1" + "0" * 5000), [*INIT, "--config", "{f}"]),
        "not JSON",
    ),
    (
        "init-bench-users-1e300",
        _with_file(
            _bench(max_concurrency=1e300),
            [*INIT, "--config", str(QUICKSTART / "config.json"), "--vllm-bench", "{f}"],
        ),
        "max_concurrency: 1e+300 is not a request count",
    ),
]

# A newcomer's mistakes with their own server's files: a model specsim does not derive, a
# bench result handed to the other engine's option.
SPEC = ["--drafter", "eagle3", "--num-steps", "3"]
_SGLANG_RUN = json.dumps(
    {"backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
     "max_concurrency": 1, "completed": 32, "total_input_tokens": 32768,
     "total_output_tokens": 8192, "mean_tpot_ms": 8.45, "accept_length": 2.83}
)  # fmt: skip
CASES += [
    (
        "init-config-encoder-decoder",
        _with_file(_config(is_encoder_decoder=True), [*INIT, "--config", "{f}"]),
        "in.json: is_encoder_decoder: true: an encoder-decoder model",
    ),
    (
        "init-config-mamba-hybrid",
        _with_file(
            json.dumps({**json.loads(_config()), "model_type": "jamba"}),
            [*INIT, "--config", "{f}"],
        ),
        "in.json: model_type: 'jamba'",
    ),
    (
        "init-config-reward-model",
        _with_file(
            _config(architectures=["LlamaForSequenceClassification"]),
            [*INIT, "--config", "{f}"],
        ),
        "in.json: architectures: 'LlamaForSequenceClassification'",
    ),
    (
        "init-vllm-bench-as-sglang-bench",
        _with_file(
            _bench(),
            [*INIT, *SPEC, "--config", str(QUICKSTART / "config.json"), "--sglang-bench", "{f}"],
        ),
        "in.json: line 1: model_id: a vllm bench serve result",
    ),
    (
        "calibrate-vllm-bench-as-sglang-bench",
        _with_file(
            json.dumps({k: v for k, v in json.loads(_bench()).items() if k != "model_id"}),
            ["calibrate", "--scenario", "{tmp}/good.toml", "--sglang-bench", "{f}"],
        ),
        "in.json: line 1: spec_decode_acceptance_rate: a vllm bench serve result",
    ),
    # an SGLang bench_serving speculative run, as json.dumps writes it (request_rate
    # Infinity): read as vLLM's, its TPOT would be fitted as plain decoding's
    (
        "init-sglang-bench-as-vllm-bench",
        _with_file(
            _SGLANG_RUN,
            [*INIT, *SPEC, "--config", str(QUICKSTART / "config.json"), "--vllm-bench", "{f}"],
        ),
        "in.json: accept_length: an sglang.bench_serving result",
    ),
    (
        "calibrate-sglang-bench-as-vllm-bench",
        _with_file(
            _SGLANG_RUN.replace("Infinity", "4.0"),
            ["calibrate", "--scenario", "{tmp}/good.toml", "--vllm-bench", "{f}"],
        ),
        "in.json: accept_length: an sglang.bench_serving result",
    ),
]

# An SGLang engineer's mistakes with a MoE model's files: another engine's or model's bench
# results, and expert layouts the config reader does not derive (they were read as every
# layer routed, or as a dense model).
INIT_SGLANG = [a if a != "vllm" else "sglang" for a in INIT]
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "head_dim": 128,
    "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 1536,
    "num_attention_heads": 64, "num_experts": 128, "num_experts_per_tok": 8,
    "num_hidden_layers": 94, "num_key_value_heads": 4, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "torch_dtype": "bfloat16", "vocab_size": 151936,
}  # fmt: skip
LLAMA4_TEXT = {
    "head_dim": 128, "hidden_size": 5120, "interleave_moe_layer_step": 2,
    "intermediate_size": 8192, "intermediate_size_mlp": 16384, "model_type": "llama4_text",
    "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
    "num_key_value_heads": 8, "num_local_experts": 128, "torch_dtype": "bfloat16",
    "vocab_size": 202048,
}  # fmt: skip
#: a Qwen3 MoE config with the Llama-3.1-70B quick start's vLLM bench file
QWEN_WITH_LLAMA_BENCH = [*SPEC, "--draft-params", "1e9", "--config", "{f}",
                         "--vllm-bench", str(QUICKSTART / "bench_eagle3.json")]  # fmt: skip
CASES += [
    (
        "init-sglang-engine-vllm-bench",
        _with_file(json.dumps(QWEN3_MOE), [*INIT_SGLANG, *QWEN_WITH_LLAMA_BENCH]),
        "error: --engine: sglang, but vllm bench",
    ),
    (
        "init-bench-of-another-model",
        _with_file(json.dumps(QWEN3_MOE), [*INIT, *QWEN_WITH_LLAMA_BENCH]),
        "model: meta-llama/Llama-3.1-70B-Instruct is not the model of",
    ),
    (
        "init-config-interleaved-moe",
        _with_file(
            json.dumps(
                {
                    "architectures": ["Llama4ForConditionalGeneration"],
                    "model_type": "llama4",
                    "text_config": LLAMA4_TEXT,
                }
            ),
            [*INIT_SGLANG, "--config", "{f}"],
        ),
        "in.json: interleave_moe_layer_step: 2: one layer in 2 is routed",
    ),
    (
        "init-config-mlp-only-layers",
        _with_file(
            json.dumps({**QWEN3_MOE, "mlp_only_layers": [0, 1]}), [*INIT_SGLANG, "--config", "{f}"]
        ),
        "in.json: mlp_only_layers: 2 dense layers among the routed ones",
    ),
    # a load sweep alone on the scenario init wrote: the batch-1 fit it runs over has nothing
    (
        "calibrate-load-sweep-alone",
        _with_file(
            _sweep_rows((1, 11.3), (8, 20.0), (32, 30.0)),
            ["calibrate", "--scenario", "{tmp}/good.toml", "--load-sweep", "{f}"],
        ),
        "--load-sweep: the batched terms are fitted over a batch-1 fit",
    ),
    (
        "init-config-unread-expert-count",
        _with_file(
            json.dumps({**json.loads(_config()), "moe_num_experts": 64}),
            [*INIT_SGLANG, "--config", "{f}"],
        ),
        "in.json: moe_num_experts: 64: a mixture-of-experts field",
    ),
]


# ------------------------------------------------------------------ the test
def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} | {
        str(p.relative_to(root)) for p in root.rglob(".*")
    }


@pytest.mark.parametrize(("name", "build", "needle"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, name: str, build: Case, needle: str):
    (tmp_path / "good.toml").write_text(
        MINIMAL.replace(
            "[targets]", "[workload]\nrequests = 4\n[simulation]\nreplications = 2\n[targets]"
        )
    )
    args = build(tmp_path)
    before = _tree(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("specsim: error: "), lines[0]
    assert len(lines[0].encode()) <= 4096, len(lines[0])
    assert needle in lines[0], lines[0]
    assert result.stdout.strip() == "", result.stdout
    assert _tree(tmp_path) == before, sorted(_tree(tmp_path) - before)


def test_the_corpus_is_large():
    assert len(CASES) >= 450
