"""
Your own robot: a two-legged gait by contact-implicit optimization
==================================================================

``walker/walker.yaml`` is a planar biped of our own (11 kg, hip and knee motors on each leg, point
feet; its URDF beside it). `OptimizeGait` plans a periodic gait of 0.3 m per 0.6 s cycle from the
robot file alone, and Drake's simulator runs the plan (its inputs as feedforward, the joints'
PD tracking the planned angles) to check it. From the standing pose the plan found strides on
the left leg (with a short hop) while the right swings through, then lands on both: a skip, not
yet an alternating walk. The command line does the same:
``drakebots optimize gait scripts/examples/walker/walker.yaml --period 0.6 --distance 0.3
--effort-fraction 1``.
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
    # The whole effort range: at 0.8 of it this plan re-simulates 52 % short (docs).
    config = GaitConfig(robot=WALKER, period=0.6, distance=0.3, effort_fraction=1.0)
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
