"""The gecko's replay extras: suction markers under the feet, targets and obstacles, toggled per
frame (a real Meshcat; nothing is asserted about pixels here, see test_replay_browser.py)."""

import numpy as np
from pydrake.geometry import Meshcat

from drakebots.gecko.geometry import FEET
from drakebots.gecko.replay import GeckoReplayDecorator
from drakebots.robots import GetRobot
from drakebots.visualization.replay import (
    FrameCamera,
    MakeReplayScene,
    RecordTrajectory,
    ReplayDecorator,
)


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
    seen = {}

    class Recorder:
        """Forwards to the real animation and keeps each frame's visibility settings."""

        def __init__(self, animation):
            self.animation = animation

        def SetProperty(self, frame, path, name, value):
            seen.setdefault(frame, {})[path, name] = value
            self.animation.SetProperty(frame, path, name, value)

    spy = ReplayDecorator(
        setup=decorator.setup,
        frame=lambda meshcat, animation, f, s: decorator.frame(meshcat, Recorder(animation), f, s),
    )
    frames = RecordTrajectory(scene, times, positions, decorator=spy)
    assert frames == 31  # 1 s at 30 frames per second, both ends
    # Each frame shows the suction state of the log at its own time (frame / 30 s; the nearest
    # sample, 0.1 s apart): the fixed marker on the fixed feet, the free marker on the others.
    assert sorted(seen) == list(range(31))
    for frame in range(31):
        expected = fixation[int(np.floor(frame / 30.0 / 0.1 + 0.5))]
        for j, foot in enumerate(FEET):
            fixed = seen[frame][f"robot/gecko/{foot}_foot/suction_fixed", "visible"]
            free = seen[frame][f"robot/gecko/{foot}_foot/suction_free", "visible"]
            assert (fixed, free) == (bool(expected[j]), not expected[j]), (frame, foot)
    for foot in FEET:
        # Children of the foot's own path: they move with the foot.
        assert meshcat.HasPath(f"robot/gecko/{foot}_foot/suction_fixed")
        assert meshcat.HasPath(f"robot/gecko/{foot}_foot/suction_free")
    assert meshcat.HasPath("course/target_0") and meshcat.HasPath("course/obstacle_0")
    assert len(meshcat.StaticHtml()) > 10000
