"""`drakebots.Simulate` from Python (issue 46, "Every workflow a Python call"): one robot of each
family on a short run. Its `figures` equal what `drakebots simulate` writes into summary.json for
the same config, its `Save` writes the CLI's files, and the physics checks on their own: a
skeleton or a voxel robot at rest carries its weight (mean ground force = m g), HAMR-VI's loops
stay closed, the gecko stays on its stance at rest.
"""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import drakebots
from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.results import ToJson
from drakebots.robots.base import DescribeRobot

# Figures that measure the machine (wall time), not the simulated physics.
MACHINE_FIGURES = {"wall_time_s", "real_time_rate", "step_wall_time_mean"}

CONFIGS = {
    "skinned_quadruped": drakebots.SimulateConfig(robot="beetle", duration=0.3),
    "hamr": drakebots.SimulateConfig(robot="hamr_vi", duration=0.01),
    "voxel": drakebots.SimulateConfig(robot="voxel_tripod", duration=0.6, gait="stand"),
    "gecko": drakebots.SimulateConfig(robot="gecko", duration=0.5),
    # A robot file (issue 47): the hopper, a user robot of kind model.
    "user": drakebots.SimulateConfig(
        robot=str(Path(__file__).resolve().parents[1] / "scripts/examples/hopper/hopper.yaml"),
        duration=0.3,
    ),
}


def _Flags(config) -> list[str]:
    """The command line of a config: the robot, then every field that differs from the default."""
    argv = ["simulate", config.robot]
    defaults = drakebots.SimulateConfig()
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.name != "robot" and value != getattr(defaults, field.name):
            argv += [f"--{field.name.replace('_', '-')}", str(value)]
    return argv


def _Physical(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if k not in MACHINE_FIGURES}


def _AssertSame(written, computed, where="figures"):
    """Equal to the last bits JSON keeps (nested dicts and lists, strings, bools, numbers)."""
    if isinstance(computed, dict):
        assert isinstance(written, dict) and sorted(written) == sorted(computed), where
        for key in computed:
            _AssertSame(written[key], computed[key], f"{where}.{key}")
    elif isinstance(computed, list):
        assert isinstance(written, list) and len(written) == len(computed), where
        for k, (a, b) in enumerate(zip(written, computed)):
            _AssertSame(a, b, f"{where}[{k}]")
    elif isinstance(computed, float):
        assert written == pytest.approx(computed, rel=1e-12, abs=1e-15), where
    else:
        assert written == computed, where


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def run(request):
    """(config, Python result) of each family's short run."""
    config = CONFIGS[request.param]
    return config, drakebots.Simulate(config)


def test_import_drakebots_stays_light():
    """`import drakebots` imports no workflow until one is asked for."""
    import subprocess

    code = "import sys, drakebots; print('drakebots.systems.simulate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert drakebots.Simulate.__module__ == "drakebots.systems.simulate"


def test_figures_equal_the_cli_summary(run, tmp_path):
    config, result = run
    assert result.success, result.reason
    out = tmp_path / "cli"
    assert main([*_Flags(config), "--no-progress", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["robot"] == result.robot.name and summary["family"] == result.robot.family
    assert summary["inputs"] == dataclasses.asdict(config)
    computed = json.loads(ToJson(_Physical(result.figures)))  # numpy values as JSON has them
    _AssertSame(_Physical(summary["figures"]), computed)
    # Save writes the CLI's folder (summary.json from the same figures).
    saved = result.Save(tmp_path / "api")
    assert sorted(p.name for p in saved.iterdir()) == sorted(p.name for p in out.iterdir())
    again = json.loads((saved / "summary.json").read_text())
    assert again["figures"]["wall_time_s"] == pytest.approx(result.figures["wall_time_s"])
    assert again["command"] == ""  # a library call reads no argv


def test_the_run_is_physical(run):
    config, result = run
    log = result.log
    assert np.all(np.isfinite(log.positions)) and np.all(np.isfinite(log.velocities))
    info = DescribeRobot(result.robot)
    weight = info["total_mass"] * info["gravity"]
    settled = log.times >= 0.5 * log.times[-1]
    if config.robot in ("beetle", "voxel_tripod") or result.robot.family == "user":
        # At rest on the ground, the ground carries the weight: sum of normal forces = m g.
        assert np.mean(log.contact[settled, 2]) == pytest.approx(weight, rel=1e-3)
    elif config.robot == "hamr_vi":
        # The 24 four-bar loops stay closed (the limit the runner checks, 1e-3 mm) and the body
        # stays in its band while standing.
        assert result.figures["loop_residual_max_mm"] < 1e-3
        assert result.figures["base_height_within_10_percent"]
    else:  # gecko: its suction welds carry part of the weight; at rest it stays at rest.
        assert np.max(np.abs(log.base_height - result.robot.nominal_base_height)) < 0.01
        assert np.max(np.abs(log.velocities[settled])) < 1e-2


def test_bad_input_raises_before_any_work():
    with pytest.raises(InputError, match="unknown robot"):
        drakebots.Simulate(drakebots.SimulateConfig(robot="dragon"))
    with pytest.raises(InputError, match="--duration"):
        drakebots.Simulate(drakebots.SimulateConfig(robot="beetle", duration=-1.0))
    with pytest.raises(InputError, match="--gait does not apply"):
        drakebots.Simulate(drakebots.SimulateConfig(robot="beetle", gait="trot"))


def test_config_loads_from_yaml_and_reports_progress(tmp_path):
    from drakebots.workflow import LoadConfig

    path = tmp_path / "scenario.yaml"
    path.write_text("robot: cow\nduration: 0.05\n")
    config = LoadConfig(drakebots.SimulateConfig, path)
    assert config == drakebots.SimulateConfig(robot="cow", duration=0.05)
    events = []
    result = drakebots.Simulate(config, progress=events.append)
    assert result.success
    steps = [e for e in events if e.step is not None]
    assert steps and steps[-1].step == steps[-1].total


def test_cli_config_file_with_flags_overriding_it(tmp_path, capsys):
    """`drakebots simulate --config FILE --duration D`: the file's values, the flags on top."""
    path = tmp_path / "scenario.yaml"
    path.write_text("robot: cow\nduration: 5.0\nground_friction: 0.6\n")
    out = tmp_path / "run"
    assert main(["simulate", "--config", str(path), "--duration", "0.05", "--out", str(out)]) == 0
    inputs = json.loads((out / "summary.json").read_text())["inputs"]
    assert inputs == dataclasses.asdict(
        drakebots.SimulateConfig(robot="cow", duration=0.05, ground_friction=0.6)
    )
    # A robot name given with --config replaces the file's; a file without a robot is exit 2.
    path.write_text("duration: 0.05\n")
    assert main(["simulate", "--config", str(path), "--out", str(tmp_path / "x")]) == 2
    assert "key 'robot' is required" in capsys.readouterr().err
    assert main(["simulate", "beetle", "--config", str(path), "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["robot"] == "beetle"
