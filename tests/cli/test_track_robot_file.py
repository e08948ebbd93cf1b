"""`drakebots track PLAN_DIR` of a robot file's plan (drakebots.cli.track, the general path:
legged_track.TrackPlanFolder): the hopper's 10 cm jump planned, then tracked in closed loop from
its folder. References: the plan's contact heights by Drake's kinematics (flight knots), the
plan's own goal (10 cm), and the files a results folder must hold."""

import json
from pathlib import Path

import numpy as np
import pytest

from drakebots.cli import main as cli_main

HOPPER = Path(__file__).resolve().parents[2] / "scripts" / "examples" / "hopper" / "hopper.yaml"


@pytest.fixture(scope="module")
def jump_folder(tmp_path_factory):
    from drakebots.optimization.legged import JumpConfig, OptimizeJump

    result = OptimizeJump(JumpConfig(robot=str(HOPPER), height=0.1, duration=0.4))
    assert result.success, result.reason
    return result.Save(tmp_path_factory.mktemp("plan") / "hopper_jump", force=True)


def FlightKnots(q) -> int:
    """Knots with both of the hopper's foot contacts above 1e-3 of its home height (Drake's
    kinematics of the URDF)."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.robots import LoadRobot

    robot = LoadRobot(HOPPER)
    plant = MultibodyPlant(0.0)
    robot.AddTo(plant)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    home_z = plant.GetPositions(context)[1]
    count = 0
    for qk in q:
        plant.SetPositions(context, qk)
        heights = [
            plant.CalcPointsPositions(
                context, plant.GetBodyByName(body).body_frame(), point, plant.world_frame()
            )[2, 0]
            for body, point in robot.contacts
        ]
        count += min(heights) > 1e-3 * home_z
    return count


def test_track_follows_a_robot_files_jump(jump_folder, tmp_path, capsys):
    out = tmp_path / "tracked"
    assert cli_main(["track", str(jump_folder), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verb"] == "track" and summary["success"] is True
    for key in ("tracked_cycles", "tracked_base_error_max", "tracked_apex", "flight_knots"):
        assert isinstance(summary[key], int | float) and np.isfinite(summary[key]), key
    assert summary["tracked_fell"] is False
    assert summary["tracked_cycles"] == 1
    assert summary["tracked_apex"] == pytest.approx(0.1, rel=0.25)
    q = np.load(jump_folder / "solution.npz")["q"]
    assert summary["flight_knots"] == FlightKnots(q) > 0
    for name in ("replay.html", "plan.png", "log.npz", "solution.npz"):
        assert (out / name).is_file(), name
    assert "tracked_apex" in capsys.readouterr().out


def test_track_refuses_bad_cycles_and_writes_nothing(jump_folder, tmp_path):
    out = tmp_path / "tracked"
    assert cli_main(["track", str(jump_folder), "--cycles", "0", "--out", str(out)]) == 2
    assert not out.exists()
