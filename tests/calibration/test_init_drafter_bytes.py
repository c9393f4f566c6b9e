"""A drafter stored in another dtype than its target (a bf16 EAGLE-3 drafter beside an FP8
target): ``specsim init --draft-config`` carries the drafter's own bytes a weight into
``model.draft_bytes_per_param``, labelled derived with the file; the hardware model prices
the drafter's weight reads and its stored weights at them, the target's when absent
(labelled default); a bad value is one line naming the file and field, exit 2.
Real files: tests/data/configs/README.md."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.binding.decompose import scenario_hardware
from sim.binding.kv_capacity import server_memory
from sim.binding.provenance import assumptions
from sim.calibration.init_request import InitRequest
from sim.calibration.init_scenario import init_scenario
from sim.cli import main
from sim.hardware.gpus import gpu_preset
from sim.scenario.overrides import with_overrides

DATA = Path(__file__).parents[1] / "data" / "configs"
TARGET = DATA / "qwen3-30b-a3b.json"
DRAFTER = DATA / "qwen3-30b-a3b-eagle3.json"
#: The drafter's weights a pass (tests/calibration/test_init_eagle3.py sums them by hand).
DRAFT_PARAMS = 182_976_512
FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic"}


def _fp8_target(tmp_path: Path) -> Path:
    """The Qwen3-30B-A3B config as an FP8 checkpoint states it (quantization_config)."""
    path = tmp_path / "fp8.json"
    path.write_text(json.dumps({**json.loads(TARGET.read_text()), "quantization_config": FP8}))
    return path


#: That FP8 target's bytes a weight of what every pass reads: its attention at 1 B, its
#: routers (48 x 2048 x 128) and LM head (151,936 x 2048) at bfloat16's 2 B (vLLM's FP8
#: loader quantizes neither).
ATTENTION = 48 * (2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128)
ROUTERS, HEAD = 48 * 2048 * 128, 151936 * 2048
FP8_TARGET_BYTES = (ATTENTION + 2 * (ROUTERS + HEAD)) / (ATTENTION + ROUTERS + HEAD)
#: The EAGLE-3 drafter's config read as an FP8 checkpoint: its one layer at 1 B, the LM head
#: of its config's vocab_size at 2 B.
DRAFT_LAYER = 2 * 2048 * 32 * 128 + 2 * 2048 * 4 * 128 + 3 * 2048 * 12288
FP8_DRAFTER_BYTES = (DRAFT_LAYER + 2 * HEAD) / (DRAFT_LAYER + HEAD)


def _req(config: Path, draft: Path = DRAFTER, **change) -> InitRequest:
    base = InitRequest(str(config), "H100", "vllm", gpus=2, drafter="eagle3", num_steps=3,
                       accept_length=2.6, draft_config=str(draft))  # fmt: skip
    return replace(base, **change)


def test_a_bf16_drafter_on_an_fp8_target_keeps_its_own_bytes(tmp_path: Path) -> None:
    init = init_scenario(_req(_fp8_target(tmp_path)))
    m = init.scenario.model
    assert m.weight_bytes_per_param == pytest.approx(FP8_TARGET_BYTES, rel=1e-12)
    assert m.draft_bytes_per_param == 2.0
    why = init.comments["model.draft_bytes_per_param"]
    assert why.startswith("derived:") and f"{DRAFTER}: torch_dtype = bfloat16" in why
    rows = {a.field: a for a in assumptions(bind(init.scenario))}
    row = rows["model.draft_bytes_per_param"]
    assert (row.value, row.origin) == (2.0, "derived") and str(DRAFTER) in row.reason


def test_the_drafter_pass_reads_its_weights_at_its_own_bytes(tmp_path: Path) -> None:
    """Batch-1 roofline (sim/hardware/roofline.py): the drafter's compute is its bytes over
    the two ranks' bandwidth, memory-bound (2 FLOPs a byte at 1 B, far below the H100's
    ~295), so at 2 B it is exactly twice its 1 B time."""
    scenario = init_scenario(_req(_fp8_target(tmp_path))).scenario
    bandwidth = gpu_preset("H100").memory_bandwidth_gbps * 1e9 * 2  # bytes/s, two ranks
    for bpp in (2.0, 1.0):
        s = with_overrides(scenario, {"model.draft_bytes_per_param": bpp}, source="test")
        ms, origin = scenario_hardware(s).compute_ms("draft_step", 1)
        assert origin == "derived"
        assert ms == pytest.approx(DRAFT_PARAMS * bpp / bandwidth * 1e3, rel=1e-12)


def test_the_drafter_is_stored_at_its_own_bytes(tmp_path: Path) -> None:
    scenario = init_scenario(_req(_fp8_target(tmp_path))).scenario
    assert server_memory(scenario).drafter_bytes == DRAFT_PARAMS * 2.0
    target_width = with_overrides(scenario, {"model.draft_bytes_per_param": None}, source="t")
    want = DRAFT_PARAMS * FP8_TARGET_BYTES
    assert server_memory(target_width).drafter_bytes == pytest.approx(want, rel=1e-12)


def test_a_drafter_config_without_a_dtype_is_read_at_the_targets_said_so(
    tmp_path: Path,
) -> None:
    raw = json.loads(DRAFTER.read_text())
    del raw["torch_dtype"]
    path = tmp_path / "no-dtype.json"
    path.write_text(json.dumps(raw))
    init = init_scenario(_req(_fp8_target(tmp_path), path))
    assert init.scenario.model.draft_bytes_per_param is None
    assert "model.draft_bytes_per_param" not in init.comments
    assert (
        "states no torch_dtype nor quantization_config: the target's"
        in (init.comments["model.draft_params"])
    )
    row = {a.field: a for a in assumptions(bind(init.scenario))}["model.draft_bytes_per_param"]
    assert row.origin == "default"
    assert row.value == pytest.approx(FP8_TARGET_BYTES, rel=1e-12)
    assert "the target's model.weight_bytes_per_param" in row.reason


def test_a_quantized_drafter_reads_its_quantization(tmp_path: Path) -> None:
    raw = {**json.loads(DRAFTER.read_text()), "quantization_config": FP8}
    path = tmp_path / "fp8-drafter.json"
    path.write_text(json.dumps(raw))
    init = init_scenario(_req(TARGET, path))
    m = init.scenario.model
    assert m.weight_bytes_per_param == 2.0
    # its config's layer at 1 B, its LM head (vocab_size 151,936 x 2048) at bfloat16's 2 B
    assert m.draft_bytes_per_param == pytest.approx(FP8_DRAFTER_BYTES, rel=1e-12)
    assert "fp8" in init.comments["model.draft_bytes_per_param"]


def test_a_draft_models_own_dtype_is_carried(tmp_path: Path) -> None:
    """A separate draft model (``--drafter draft_model``) in fp32 beside a bf16 target."""
    path = tmp_path / "draft-model.json"
    raw = {**json.loads(TARGET.read_text()), "num_hidden_layers": 2, "torch_dtype": "float32"}
    path.write_text(json.dumps(raw))
    init = init_scenario(_req(TARGET, path, drafter="draft_model"))
    assert init.scenario.model.draft_bytes_per_param == 4.0
    assert f"{path}: torch_dtype = float32" in init.comments["model.draft_bytes_per_param"]


def test_the_written_scenario_reads_back_with_the_drafters_bytes(tmp_path: Path) -> None:
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(_fp8_target(tmp_path)), "--gpu", "H100", "--gpus", "2",
            "--engine", "vllm", "--drafter", "eagle3", "-k", "3", "--draft-config",
            str(DRAFTER), "--accept-length", "2.6", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = " ".join(result.output.split())  # the first screen wraps its lines
    assert f"drafter 0.183B at 2 B a weight (target {FP8_TARGET_BYTES:g} B)" in summary
    text = out.read_text()
    assert "draft_bytes_per_param = 2.0" in text and 'origin = "derived"' in text


@pytest.mark.parametrize(
    ("value", "words"),
    [("0.0", "greater than 0"), ("17.0", "less than or equal to 16"), ('"bf16"', "number")],
)
def test_a_bad_draft_bytes_is_one_line_naming_file_and_field(
    tmp_path: Path, value: str, words: str
) -> None:
    out = tmp_path / "s.toml"
    args = ["init", "--config", str(_fp8_target(tmp_path)), "--gpu", "H100", "--gpus", "2",
            "--engine", "vllm", "--drafter", "eagle3", "-k", "3", "--draft-config",
            str(DRAFTER), "--accept-length", "2.6", "--out", str(out), "-q"]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(
        out.read_text().replace("draft_bytes_per_param = 2.0", f"draft_bytes_per_param = {value}")
    )
    result = CliRunner().invoke(main, ["run", str(bad)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"specsim: error: {bad}: model.draft_bytes_per_param: "
    )
    assert words in lines[0]


def test_a_target_without_a_dtype_is_told_what_init_reads(tmp_path: Path) -> None:
    """No flag is named that init does not have: the dtypes it reads are."""
    raw = json.loads(TARGET.read_text())
    del raw["torch_dtype"]
    path = tmp_path / "no-dtype.json"
    path.write_text(json.dumps(raw))
    args = ["init", "--config", str(path), "--gpu", "H100", "--gpus", "2", "--engine", "vllm",
            "--out", str(tmp_path / "s.toml")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output.startswith(f"specsim: error: {path}: torch_dtype: missing torch_dtype")
    assert "reads bfloat16, float16, float32, float8_e4m3fn" in result.output
    assert "--weight-bytes-per-param" not in result.output
    assert not (tmp_path / "s.toml").exists()


def test_a_speculators_drafter_quantized_beside_its_layers_reads_it(tmp_path: Path) -> None:
    """speculators' layout: the checkpoint's quantization sits at the top level, beside
    ``transformer_layer_config``, as its dtype may."""
    flat = json.loads(DRAFTER.read_text())
    nested = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": flat.pop("draft_vocab_size"),
        "quantization_config": FP8,
        "transformer_layer_config": {**flat, "architectures": ["LlamaForCausalLM"]},
    }
    path = tmp_path / "speculator.json"
    path.write_text(json.dumps(nested))
    init = init_scenario(_req(TARGET, path))
    assert init.scenario.model.draft_params == DRAFT_PARAMS
    # its layer at FP8, not its layers' bfloat16
    assert init.scenario.model.draft_bytes_per_param == pytest.approx(FP8_DRAFTER_BYTES, rel=1e-12)
