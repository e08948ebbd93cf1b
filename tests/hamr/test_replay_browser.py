"""HAMR-VI's replay renders in headless Chromium: the robot is drawn, and the millimetre scene is
lit (Meshcat's default lights are placed for metres; drakebots.hamr.replay moves
them). Without the decorator the ground renders at a mean grey of about 0.13; lit, about 0.5."""

import numpy as np
import pytest

from drakebots.visualization.browser import ScreenshotHtml

pytestmark = pytest.mark.browser


def Render(tmp_path, name, decorator):
    from matplotlib.image import imread
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("hamr_vi")
    plant = MultibodyPlant(time_step=0.0)
    robot.AddTo(plant)
    plant.Finalize()
    q = plant.GetDefaultPositions()
    page = tmp_path / f"{name}.html"
    page.write_text(ReplayHtml(robot, np.array([0.0]), q[np.newaxis, :], decorator=decorator))
    png = ScreenshotHtml(page, tmp_path / f"{name}.png", size=(800, 600), budget_ms=3000)
    return imread(png)[..., :3]


def test_hamr_replay_is_drawn_and_lit(tmp_path):
    from drakebots.hamr.replay import HamrReplayDecorator

    lit = Render(tmp_path, "lit", HamrReplayDecorator())
    assert lit.std() > 0.02, "the replay page is uniform: nothing was drawn"
    # The legs are near black: many dark pixels.
    assert (lit.max(axis=2) < 0.2).sum() > 300, "no dark leg pixels: the robot is not drawn"
    # The bottom of the picture is ground: lit, it is a mid grey, not the near-black that
    # Meshcat's metre-scale lights leave in a millimetre scene.
    assert lit[500:, :, :].mean() > 0.3, lit[500:, :, :].mean()
