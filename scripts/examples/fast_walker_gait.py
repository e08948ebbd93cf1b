"""
Your own robot: a two-legged walk by contact-implicit optimization
==================================================================

``walker/walker.yaml`` is a planar biped of our own (11 kg, hip and knee motors on each leg, point
feet; its URDF beside it). `OptimizeGait` plans a walk of 0.3 m per 0.8 s stride from the robot
file alone: `mirror` makes the gait symmetric (half a stride on, each leg does what the other
did), so the legs alternate. Drake's simulator runs the plan in closed loop (the whole-body
tracking controller of drakebots.systems.whole_body, 3 strides) to check it. The command line
does the same:
``drakebots optimize gait scripts/examples/walker/walker.yaml --period 0.8 --distance 0.3
--mirror left_hip:right_hip,left_knee:right_knee``.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

from drakebots.optimization.legged import GaitConfig, OptimizeGait
from drakebots.optimization.legged_report import PlotMotion

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
WALKER = str(HERE / "walker" / "walker.yaml")


def main(fast: bool = False, out: str | None = None) -> dict:
    mirror = [["left_hip", "right_hip"], ["left_knee", "right_knee"]]
    config = GaitConfig(robot=WALKER, period=0.8, distance=0.3, mirror=mirror)
    result = OptimizeGait(config)
    f = result.figures
    touching = result.contact_forces[:, :, 2] > 1.0  # (intervals, feet): which feet stand
    print(
        f"{'accepted' if result.success else result.reason}; {f['solve_time_s']:.1f} s; "
        f"{result.planned:.3f} m per cycle planned, {result.resimulated or 0:.3f} m in Drake; "
        f"true complementarity {f['true_complementarity']:.1e}; knots on one foot "
        f"{np.sum(touching.sum(axis=1) == 1)}, on both {np.sum(touching.all(axis=1))}"
    )
    folder = result.Save(Path(out or tempfile.mkdtemp()) / "walker_gait", force=True)
    if not fast:
        PlotMotion(result)  # the gallery shows this figure
    return {"result": result, "folder": str(folder)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the walker's gait, planned")
    parser.add_argument("--fast", action="store_true", help="no figure")
    parser.add_argument("--out", default=None, help="where walker_gait/ goes (default: temp)")
    main(**vars(parser.parse_args()))
