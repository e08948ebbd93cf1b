"""replay.html renders in a real browser: headless Chromium with software WebGL (SwiftShader)
draws the robot. The screenshot must not be uniform and must differ from an empty scene's."""

import subprocess

import numpy as np
import pytest

from tests.conftest import CHROMIUM

pytestmark = pytest.mark.browser


def Screenshot(html_path, png_path, tmp_path, size=(800, 600)):
    """Renders a local page with headless Chromium and returns the image as an array."""
    from matplotlib.image import imread

    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--screenshot={png_path}",
        f"--window-size={size[0]},{size[1]}",
        "--virtual-time-budget=10000",
        f"file://{html_path}",
    ]
    subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert png_path.is_file(), "Chromium wrote no screenshot"
    return imread(png_path)[..., :3]


def EmptySceneHtml(path):
    """A Meshcat page with nothing added (the reference background)."""
    from pydrake.geometry import Meshcat

    meshcat = Meshcat()
    path.write_text(meshcat.StaticHtml())


def test_replay_html_draws_the_robot(tmp_path):
    from drakebots.robots import GetRobot
    from drakebots.systems.quadruped_simulation import SimulateStanding, StandingConfig
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("beetle")
    log = SimulateStanding(robot, StandingConfig(duration=0.2), progress=False)
    replay = tmp_path / "replay.html"
    replay.write_text(ReplayHtml(robot, log.times, log.positions))
    assert "https://cdn" not in replay.read_text()[:2000]
    empty = tmp_path / "empty.html"
    EmptySceneHtml(empty)
    robot_image = Screenshot(replay, tmp_path / "robot.png", tmp_path)
    empty_image = Screenshot(empty, tmp_path / "empty.png", tmp_path)
    assert robot_image.std() > 0.02, "the replay page is uniform: nothing was drawn"
    difference = np.abs(robot_image - empty_image).max(axis=2)
    assert np.mean(difference > 0.1) > 0.02, "the replay looks like an empty scene"
    # The robot's dark motors and blue feet: pixels that the empty scene has nowhere.
    dark = robot_image.max(axis=2) < 0.3
    assert dark.sum() > 200, "no dark (motor) pixels: the robot is not drawn"
