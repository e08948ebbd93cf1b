"""
Your own robot: a hopping gait and a jump by contact-implicit optimization
==========================================================================

``hopper/hopper.yaml`` is a planar one-legged hopper of our own (its URDF beside it). The general
contact-implicit workflow (`drakebots.optimization.legged`) plans a periodic gait, 0.2 m per
0.5 s cycle, and a 10 cm jump: contacts, friction and actuators come from the robot file; the
plan must be truly complementary and Drake's simulator must follow it in closed loop (the
whole-body tracking controller, 3 cycles: the base near the plan at every cycle end, no fall).
From the command line: ``drakebots optimize gait scripts/examples/hopper/hopper.yaml --period
0.5 --distance 0.2`` and ``drakebots optimize jump ... --height 0.1``.
"""

import argparse
import tempfile
from pathlib import Path

from drakebots.optimization.legged import GaitConfig, JumpConfig, OptimizeGait, OptimizeJump
from drakebots.optimization.legged_report import PlotMotion

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
HOPPER = str(HERE / "hopper" / "hopper.yaml")


def main(fast: bool = False, out: str | None = None) -> dict:
    out = Path(out or tempfile.mkdtemp())
    # 61 knots: the 31-knot plan's hop is not one Drake's simulator follows (closed loop, its
    # base 0.31 m off the plan after 3 cycles; the 61-knot plan's 0.10 m).
    gait = OptimizeGait(GaitConfig(robot=HOPPER, period=0.5, distance=0.2, knots=61))
    jump = OptimizeJump(JumpConfig(robot=HOPPER, height=0.1, duration=0.4))
    for name, result in (("gait", gait), ("jump", jump)):
        f = result.figures
        print(
            f"{name}: {'accepted' if result.success else result.reason}; {f['solve_time_s']:.1f} s"
            f"; {result.measure} {result.planned:.3f} m planned, {result.resimulated or 0:.3f} m "
            f"in Drake; true complementarity {f['true_complementarity']:.1e}"
        )
        result.Save(out / f"hopper_{name}", force=True)
    if not fast:
        PlotMotion(gait)  # the gallery shows this figure
    return {"gait": gait, "jump": jump, "folder": str(out)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the hopper's gait and jump, planned")
    parser.add_argument("--fast", action="store_true", help="no figure")
    parser.add_argument("--out", default=None, help="where the results go (default: temp)")
    main(**vars(parser.parse_args()))
