#!/usr/bin/env python3
"""Renders each robot's picture (models/<robot>/picture.png) and the README's overview image.

    python scripts/render_pictures.py                 # every registered robot with a model folder
    python scripts/render_pictures.py beetle cow      # some
    python scripts/render_pictures.py --overview      # also the README's overview images:
                                                      # docs/images/robots.png (skeletons) and
                                                      # docs/images/small_robots.png (the others)

Each picture is the robot in its home pose, drawn by Meshcat in headless Chromium (the same
path as replay.html), so the pictures show exactly what a user sees.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from drakebots.models import ModelsDirectory
from drakebots.robots import GetRobot, KnownRobots
from drakebots.visualization.browser import ScreenshotHtml
from drakebots.visualization.replay import ReplayHtml

REPOSITORY = Path(__file__).resolve().parents[1]
SKELETONS = ["beetle", "monster", "lizard", "cow"]
SMALL_ROBOTS = ["hamr_vi", "gecko", "voxel_tripod"]


def HomePositions(robot) -> np.ndarray:
    from pydrake.multibody.plant import MultibodyPlant

    plant = MultibodyPlant(time_step=0.0)
    robot.AddTo(plant)
    plant.Finalize()
    return plant.GetPositions(plant.CreateDefaultContext())


def Render(name: str, png: Path, size=(900, 650)) -> Path:
    from drakebots.systems.simulate import Runner

    robot = GetRobot(name)
    q = HomePositions(robot)
    # The family's replay extras (e.g. HAMR-VI's lights for its millimetre scene).
    decorator, add_models = Runner(robot.family).ReplayExtras(None, robot)
    html = ReplayHtml(
        robot, np.array([0.0]), q[np.newaxis, :], decorator=decorator, add_models=add_models
    )
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "scene.html"
        page.write_text(html)
        return ScreenshotHtml(page, png, size=size)


def Overview(pictures: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.image import imread

    fig, axes = plt.subplots(1, len(pictures), figsize=(4.2 * len(pictures), 3.6))
    for ax, (name, path) in zip(np.atleast_1d(axes), pictures.items()):
        image = imread(path)
        h, w = image.shape[:2]
        ax.imshow(image[int(0.08 * h) : int(0.92 * h), int(0.1 * w) : int(0.9 * w)])
        ax.set_title(name, fontsize=13)
        ax.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*")
    parser.add_argument("--overview", action="store_true")
    args = parser.parse_args()
    names = args.names or [n for n in KnownRobots() if (ModelsDirectory() / n).is_dir()]
    pictures = {}
    for name in names:
        png = ModelsDirectory() / name / "picture.png"
        Render(name, png)
        pictures[name] = png
        print(f"wrote {png}")
    if args.overview:
        for group, image in ((SKELETONS, "robots.png"), (SMALL_ROBOTS, "small_robots.png")):
            paths = {n: ModelsDirectory() / n / "picture.png" for n in group}
            out = REPOSITORY / "docs" / "images" / image
            Overview(paths, out)
            print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
