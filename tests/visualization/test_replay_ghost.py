"""A replay with the plan beside Drake's run (drakebots.visualization.replay, the ghost): a second
copy of the robot under /drake/plan in the same Meshcat, made transparent, recorded with the run."""

from pathlib import Path

import numpy as np

HOPPER = Path(__file__).resolve().parents[2] / "scripts" / "examples" / "hopper" / "hopper.yaml"


def test_the_plan_is_drawn_beside_the_run():
    from drakebots.robots import LoadRobot
    from drakebots.visualization.meshcat import LocalMeshcat
    from drakebots.visualization.replay import RecordReplay, ReplayHtml

    robot = LoadRobot(HOPPER)
    times = np.linspace(0.0, 0.5, 11)
    run = np.tile([0.0, 0.55, 0.0, 0.3, -0.6], (11, 1))
    run[:, 0] = np.linspace(0.0, 0.2, 11)
    plan = run.copy()
    plan[:, 0] += 0.1
    meshcat = LocalMeshcat()
    _, frames = RecordReplay(meshcat, robot, times, run, ghost=(times, plan))
    # 0.5 s at 30 frames per second, both ends.
    assert frames == 16
    assert meshcat.HasPath("/drake/robot") and meshcat.HasPath("/drake/plan")
    del meshcat
    # The page records both copies: longer than the run's alone by the ghost's frames.
    alone, both = ReplayHtml(robot, times, run), ReplayHtml(robot, times, run, ghost=(times, plan))
    assert len(both) > len(alone) + 1000
