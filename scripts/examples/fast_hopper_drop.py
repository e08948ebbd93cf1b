"""
Your own robot file: the hopper dropped onto the ground
=======================================================

``hopper/hopper.yaml`` describes a planar one-legged hopper (its URDF, an x-z-pitch base, two foot
contacts, a crouched home pose). `drakebots.Simulate` drops it 3 cm onto the ground in Drake, its
hip and knee servos holding the home pose, and the results folder holds summary.json, log.npz,
plots and replay.html. At rest the ground carries its weight. The same from the command line:
``drakebots simulate scripts/examples/hopper/hopper.yaml --drop-height 0.03 --duration 1``.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

from drakebots import Simulate, SimulateConfig

# This script's folder (the guide's gallery runs it in that folder, with no __file__).
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
HOPPER = HERE / "hopper" / "hopper.yaml"


def main(fast: bool = False, out: str | None = None) -> dict:
    config = SimulateConfig(robot=str(HOPPER), duration=0.6 if fast else 1.5, drop_height=0.03)
    result = Simulate(config)
    folder = result.Save(Path(out or tempfile.mkdtemp()) / "hopper_drop", force=True)
    figures, log = result.figures, result.log
    print(
        f"{'landed' if result.success else 'fell: ' + str(result.reason)}; base height "
        f"{log.base_height[0]:.3f} -> {log.base_height[-1]:.3f} m (home "
        f"{figures['nominal_base_height']:.3f}); ground force {figures['ground_force_end']:.2f} N "
        f"for a weight of {figures['weight']:.2f} N; results in {folder}"
    )
    return {
        "success": result.success,
        "folder": str(folder),
        "ground_force": figures["ground_force_end"],
        "weight": figures["weight"],
        "speed_end": float(np.linalg.norm(log.velocities[-1])),
        "base_height": (float(log.base_height[0]), float(log.base_height[-1])),
        "home_height": figures["nominal_base_height"],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the hopper dropped from its robot file")
    parser.add_argument("--fast", action="store_true", help="0.6 s instead of 1.5 s")
    parser.add_argument("--out", default=None, help="where hopper_drop/ goes (default: temp)")
    main(**vars(parser.parse_args()))
