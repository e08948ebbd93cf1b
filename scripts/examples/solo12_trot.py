"""
A published quadruped: Solo-12 trots, planned and tracked in closed loop
========================================================================

Solo-12 (Open Dynamic Robot Initiative) as published in the PyPI package ``example-robot-data``
(BSD-3-Clause; ``pip install example-robot-data``), loaded with no edit from the 8-line robot
file ``published/solo12.yaml`` (its motors' real 2.7 N m). `OptimizeGait` plans a trot of 0.1 m
per 0.4 s cycle from the home pose (``gait="trot"``: diagonal legs in phase, the left-right
reflection half a cycle on), then Drake's simulator tracks it in closed loop for 3 cycles under
the whole-body QP controller: accepted when the base follows the plan, no fall, and the distance
per cycle is within 25 % of the plan's. The command line does the same:
``drakebots optimize gait scripts/examples/published/solo12.yaml --gait trot --period 0.4
--distance 0.1 --knots 21``. Not run by the gallery (about a minute on 2 cores).
"""

import argparse
import tempfile
from pathlib import Path

from drakebots.optimization.legged import GaitConfig, OptimizeGait
from drakebots.optimization.legged_report import PlotMotion

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
SOLO = str(HERE / "published" / "solo12.yaml")


def main(fast: bool = False, out: str | None = None) -> dict:
    config = GaitConfig(robot=SOLO, period=0.4, distance=0.1, knots=21, gait="trot")
    result = OptimizeGait(config)
    f = result.figures
    print(
        f"{'accepted' if result.success else result.reason}; solve {f['solve_time_s']:.1f} s; "
        f"planned {result.planned:.3f} m per 0.4 s cycle; Drake, closed loop, "
        f"{f.get('tracked_cycles', 0)} cycles: {f.get('tracked_distance_per_cycle', 0):.3f} m "
        f"per cycle, base off the plan by at most {f.get('tracked_base_error_max', 0):.3f} m, "
        f"{'fell' if f.get('tracked_fell', True) else 'no fall'}"
    )
    folder = result.Save(Path(out or tempfile.mkdtemp()) / "solo12_trot", force=True)
    print(f"replay: drakebots view {folder}")
    if not fast:
        PlotMotion(result)  # plan (dashed) and Drake's closed-loop run (solid)
    return {"result": result, "folder": str(folder)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Solo-12's trot, planned and tracked")
    parser.add_argument("--fast", action="store_true", help="no figure")
    parser.add_argument("--out", default=None, help="where solo12_trot/ goes (default: temp)")
    main(**vars(parser.parse_args()))
