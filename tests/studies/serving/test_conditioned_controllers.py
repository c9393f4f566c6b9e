"""controllers on a scenario that records its calibration figures: the document says its
draws were conditioned on them, as the other serving answers do."""

from pathlib import Path

from sim.parallel import LocalExecutor
from sim.scenario.load import load_scenario
from sim.scenario.validate import scenario_from_dict
from sim.studies.serving.controllers import Phase, controller_study
from sim.studies.serving.serve import serving_study

CALIBRATED = (
    Path(__file__).parents[3] / "scenarios" / "sweeps" / "llama31-8b-1xh100-eagle3-calibrated.toml"
)
PHASES = [
    Phase(12, 20.0, (("chat", 0.9), ("code", 0.1))),
    Phase(12, 80.0, (("chat", 0.1), ("code", 0.9))),
]


def test_controllers_condition_their_draws_on_the_recorded_figures():
    # the shipped calibrated scenario with a class mix in the file (a mix set after loading
    # would be a what-if acceptance, not conditioned)
    raw = load_scenario(CALIBRATED).model_dump(exclude_none=True)
    raw["acceptance"].pop("alpha")
    raw["acceptance"]["mix"] = [
        {"name": "chat", "weight": 0.7, "alpha": 0.8},
        {"name": "code", "weight": 0.3, "alpha": 0.95},
    ]
    raw["uncertainty"]["acceptance"] = {}
    raw["uncertainty"].pop("correlation")  # it correlated the alpha the mix replaces
    raw["workload"].update(output_tokens=96, requests=16)
    raw["simulation"]["replications"] = 3
    builder, evaluator = serving_study(
        scenario_from_dict(raw, source="mix"), draws=2, executor=LocalExecutor(1)
    )
    result = controller_study(builder, evaluator, PHASES, [1, 3])
    cond = result.intervals["conditioned_on"]
    assert cond["figures"] == 6 and cond["refitted"] == ["serving.kernel_slope"]
    assert result.intervals["highest_measured_batch"] == 32
