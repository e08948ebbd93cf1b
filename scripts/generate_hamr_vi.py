#!/usr/bin/env python3
"""Regenerates HAMR-VI's model files from the facts in drakebots/hamr/model.py.

    python scripts/generate_hamr_vi.py          # writes models/hamr_vi/hamr_vi.sdf, scene.dmd.yaml
    python scripts/generate_hamr_vi.py --check    # exit 1 if a committed file is stale
    python scripts/generate_hamr_vi.py --picture  # also render models/hamr_vi/picture.png

The scene's default joint positions are the home pose, solved with the loop constraints
(drakebots.hamr.robot.SolveStandingPose) from the SDF this script writes first.
"""

import argparse
import sys

from drakebots.hamr import model as hamr_model
from drakebots.hamr import robot as hamr
from drakebots.models import ModelsDirectory


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    parser.add_argument(
        "--picture", action="store_true", help="render picture.png (needs headless Chromium)"
    )
    args = parser.parse_args()
    sdf_path = ModelsDirectory() / "hamr_vi" / "hamr_vi.sdf"
    sdf = hamr_model.MakeHamrSdf()
    if args.check:
        stale = [
            str(ModelsDirectory() / relative)
            for relative, text in hamr.GeneratedHamrFiles().items()
            if not (ModelsDirectory() / relative).is_file()
            or (ModelsDirectory() / relative).read_text() != text
        ]
        if stale:
            print("stale generated files:\n  " + "\n  ".join(stale), file=sys.stderr)
            return 1
        return 0
    sdf_path.parent.mkdir(parents=True, exist_ok=True)
    sdf_path.write_text(sdf)
    print(f"wrote {sdf_path}")
    # The scene's home pose is solved on the model just written.
    hamr._HomeJointPositions.cache_clear()
    for relative, text in hamr.GeneratedHamrFiles().items():
        path = ModelsDirectory() / relative
        path.write_text(text)
        print(f"wrote {path}")
    if args.picture:
        print(f"wrote {RenderPicture(ModelsDirectory() / 'hamr_vi' / 'picture.png')}")
    return 0


def RenderPicture(png):
    """The home pose drawn by Meshcat in headless Chromium (the replay.html path, with HAMR's
    millimetre lighting)."""
    import tempfile
    from pathlib import Path

    import numpy as np
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.robots import GetRobot
    from drakebots.visualization.browser import ScreenshotHtml
    from drakebots.visualization.replay import ReplayHtml

    robot = GetRobot("hamr_vi")
    plant = MultibodyPlant(time_step=0.0)
    robot.AddTo(plant)
    plant.Finalize()
    q = plant.GetDefaultPositions()
    html = ReplayHtml(robot, np.array([0.0]), q[np.newaxis, :], decorator=HamrReplayDecorator())
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "scene.html"
        page.write_text(html)
        return ScreenshotHtml(page, png, size=(900, 650))


if __name__ == "__main__":
    sys.exit(main())
