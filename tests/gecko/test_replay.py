"""The gecko's replay extras: suction markers under the feet, targets and obstacles, toggled per
frame (a real Meshcat; nothing is asserted about pixels here, see test_replay_browser.py)."""

import numpy as np
from pydrake.geometry import Meshcat

from drakebots.gecko.geometry import FEET
from drakebots.gecko.replay import GeckoReplayDecorator
from drakebots.robots import GetRobot
from drakebots.visualization.replay import FrameCamera, MakeReplayScene, RecordTrajectory


def test_suction_markers_follow_the_feet_and_toggle():
    robot = GetRobot("gecko")
    meshcat = Meshcat()
    scene = MakeReplayScene(robot, meshcat)
    plant_context = scene.plant.GetMyContextFromRoot(scene.context)
    q = scene.plant.GetPositions(plant_context)
    times = np.linspace(0.0, 1.0, 11)
    positions = np.tile(q, (len(times), 1))
    fixation = np.zeros((len(times), 4))
    fixation[:5] = [1, 0, 0, 1]
    fixation[5:] = [0, 1, 1, 0]
    decorator = GeckoReplayDecorator(
        fixation,
        targets=np.array([[0.3, 0.1]]),
        obstacles=[(0.2, -0.2, 0.05)],
        track=np.zeros((len(times), 3)),
    )
    FrameCamera(scene, positions[0])
    frames = RecordTrajectory(scene, times, positions, decorator=decorator)
    assert frames == 31
    for foot in FEET:
        # Children of the foot's own path: they move with the foot.
        assert meshcat.HasPath(f"robot/gecko/{foot}_foot/suction_fixed")
        assert meshcat.HasPath(f"robot/gecko/{foot}_foot/suction_free")
    assert meshcat.HasPath("course/target_0") and meshcat.HasPath("course/obstacle_0")
    assert len(meshcat.StaticHtml()) > 10000
