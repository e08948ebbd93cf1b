"""replay.html renders in a real browser: headless Chromium with software WebGL (SwiftShader)
draws the robot. The screenshot must not be uniform and must differ from an empty scene's."""

import numpy as np
import pytest

from drakebots.visualization.browser import ScreenshotHtml

pytestmark = pytest.mark.browser


def Screenshot(html_path, png_path):
    from matplotlib.image import imread

    return imread(ScreenshotHtml(html_path, png_path, size=(800, 600)))[..., :3]


def EmptySceneHtml(path):
    """A Meshcat page with nothing added (the reference background)."""
    from pydrake.geometry import Meshcat

    meshcat = Meshcat()
    path.write_text(meshcat.StaticHtml())


def test_replay_html_draws_the_robot(tmp_path):
    from drakebots.robots import GetRobot
    from drakebots.skinned.skeleton_simulation import SimulateStanding, StandingConfig
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("beetle")
    log = SimulateStanding(robot, StandingConfig(duration=0.2), progress=False)
    replay = tmp_path / "replay.html"
    replay.write_text(ReplayHtml(robot, log.times, log.positions))
    empty = tmp_path / "empty.html"
    EmptySceneHtml(empty)
    robot_image = Screenshot(replay, tmp_path / "robot.png")
    empty_image = Screenshot(empty, tmp_path / "empty.png")
    assert robot_image.std() > 0.02, "the replay page is uniform: nothing was drawn"
    difference = np.abs(robot_image - empty_image).max(axis=2)
    assert np.mean(difference > 0.1) > 0.02, "the replay looks like an empty scene"
    # The robot's dark motors: pixels that the empty scene has nowhere.
    dark = robot_image.max(axis=2) < 0.3
    assert dark.sum() > 200, "no dark (motor) pixels: the robot is not drawn"
