"""drakebots.gecko's workflows from Python (issue 46, "Every workflow a Python call"):
VelocitySpace and Navigate on their smallest settings (the geometric model: a 3x3 grid, a
one-target walk), each against what `drakebots gecko ...` writes into summary.json for the same
config, plus an independent check of what it computed."""

import dataclasses
import json
import math

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.gecko import Navigate, NavigateConfig, VelocitySpace, VelocitySpaceConfig
from drakebots.results import ToJson

# Wall-clock figures differ between two runs of the same config.
TIMINGS = {
    "grid_seconds",
    "seconds_per_point",
    "geometric_grid_seconds",
    "wall_time_s",
    "real_time_rate",
    "decision_ms_mean",
    "decision_ms_max",
}


def Comparable(figures: dict) -> dict:
    """The figures as summary.json holds them (JSON types), without wall-clock times."""
    return {k: v for k, v in json.loads(ToJson(figures)).items() if k not in TIMINGS}


def WriteConfig(path, config) -> str:
    """A --config YAML file of a config dataclass (JSON is YAML)."""
    path.write_text(json.dumps(dataclasses.asdict(config)))
    return str(path)


GRID = VelocitySpaceConfig(model="geometric", q1=[50.0, 70.0, 90.0], q2=[-0.5, 0.0, 0.5])


@pytest.fixture(scope="module")
def space():
    return VelocitySpace(GRID)


def test_velocity_space_figures_match_the_cli(space, tmp_path):
    out = tmp_path / "space"
    config = WriteConfig(tmp_path / "space.yaml", GRID)
    assert main(["gecko", "velocity-space", "--config", config, "--out", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert space.success and summary["success"] is True
    assert Comparable(space.figures) == Comparable(summary["figures"])
    assert summary["inputs"]["q1_deg"] == GRID.q1 and summary["inputs"]["model"] == "geometric"
    saved = json.loads((out / "fit.json").read_text())
    np.testing.assert_allclose(saved["coefficients"], space.fit.coefficients, rtol=1e-12)


def test_velocity_space_fit_is_the_least_squares_fit_of_its_samples(space):
    """The Eq. 16 coefficients reproduce the samples in the least-squares sense (the residual is
    orthogonal to the six monomials), their residual is the reported one, and the symmetric gait
    (q2 = 0) walks straight."""
    from drakebots.gecko.planner import Terms

    terms = Terms(space.q1_deg, space.q2)  # (9, 6)
    assert terms.shape == (9, 6) and space.motion.shape == (9, 3)
    residual = space.motion - terms @ space.fit.coefficients.T
    scale = np.abs(terms).max(axis=0) * np.abs(space.motion).max(axis=0)[:, None]
    assert np.all(np.abs(terms.T @ residual).T <= 1e-9 * scale)
    np.testing.assert_allclose(
        [math.degrees(np.sqrt(np.mean(residual[:, 0] ** 2)))],
        [space.figures["residual_rms"]["d_eps_deg"]],
        rtol=1e-9,
    )
    straight = space.q2 == 0.0
    assert np.all(np.abs(np.degrees(space.motion[straight, 0])) < 0.05)  # no turn
    assert np.all(np.abs(space.motion[straight, 2]) < 1e-3)  # no sideways drift, m
    assert np.all(space.motion[:, 1] > 0.05)  # every grid point walks forward > 5 cm a cycle


def test_bad_configs_raise_before_any_work():
    with pytest.raises(InputError, match="q1"):
        VelocitySpace(dataclasses.replace(GRID, q1=[30.0, 60.0, 90.0]))
    with pytest.raises(InputError, match="at least 3"):
        VelocitySpace(dataclasses.replace(GRID, q2=[-0.5, 0.5]))
    with pytest.raises(InputError, match="--fit"):
        Navigate(NavigateConfig(model="geometric", fit="/nonexistent/fit"))
    with pytest.raises(InputError, match="one of them"):
        Navigate(NavigateConfig(targets=[[0.3, 0.0]], course="gecko_slalom.yaml"))


WALK = NavigateConfig(targets=[[0.25, 0.05]], model="geometric")


def test_navigate_figures_match_the_cli(tmp_path):
    events = []
    result = Navigate(WALK, progress=events.append)
    out = tmp_path / "walk"
    config = WriteConfig(tmp_path / "walk.yaml", WALK)
    assert main(["gecko", "navigate", "--config", config, "--out", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert result.success and summary["success"] is True
    assert Comparable(result.figures) == Comparable(summary["figures"])
    assert summary["inputs"]["targets_m"] == [[0.25, 0.05]]
    # One progress line per decision, none printed.
    assert len([e for e in events if e.message]) == result.figures["steps_total"]
    # Independent of the planner's bookkeeping: the recorded track ends within the target
    # radius (5 cm), and no path is shorter than the straight line to the target's edge.
    target = np.array([0.25, 0.05])
    end = result.track_poses[-1, :2]
    assert np.linalg.norm(end - target) <= 0.05 + 1e-9
    steps = np.diff(result.track_poses[:, :2], axis=0)
    assert np.sum(np.linalg.norm(steps, axis=1)) >= np.linalg.norm(target) - 0.05
    assert set(result.feet_tracks) >= {"torso_tip", "torso_end"}


def test_navigate_flags_override_the_config_file(tmp_path):
    """--config gives the targets and the model; --max-steps 1 overrides the budget: the target
    is missed (exit 1), as Navigate says with the same override."""
    result = Navigate(dataclasses.replace(WALK, max_steps=1))
    assert not result.success and "not reached within 1 steps" in result.reason
    out = tmp_path / "missed"
    config = WriteConfig(tmp_path / "walk.yaml", WALK)
    code = main(["gecko", "navigate", "--config", config, "--max-steps", "1", "--out", str(out),
                 "--no-progress"])  # fmt: skip
    assert code == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["max_steps_per_target"] == 1 and summary["success"] is False
    assert Comparable(result.figures) == Comparable(summary["figures"])
