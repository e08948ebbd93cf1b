"""
Your own voxel lattice: an L under one actuator, FEM against POM
================================================================

An L-shaped layer of 12 octahedral voxels (two voxels wide, so its squares close loops) is built
from an occupancy array, one clamped linear actuator at the corner extends by 1 mm, and the frame
FEM (`drakebots.voxel.Fem`) solves it. The Planes-of-Motion model (`drakebots.voxel.PomModel`),
driven by the FEM's displacement of the actuator's node, predicts every node; with pinned joints
(the POM's own idealisation) it agrees with the FEM to 1e-6 of the motion, with the rigid joints
of the paper's FEM to within 15 %. Run it: ``python scripts/examples/fast_voxel_l_shape.py``.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np

from drakebots.voxel import Fem, FemConfig, PomModel, VoxelLattice
from drakebots.voxel.pom import Control


def main(fast: bool = False, out: str | None = None) -> dict:
    occupancy = np.zeros((4, 4, 1), dtype=bool)
    occupancy[:2, :, 0] = occupancy[:, :2, 0] = True  # the L: two 2-voxel-wide arms
    folder = Path(out or tempfile.mkdtemp())
    np.save(folder / "l_shape.npy", occupancy)
    facts = {"num_voxels": VoxelLattice(occupancy).num_voxels}
    for joints in ("pinned", "rigid"):
        fem = Fem(
            FemConfig(
                occupancy=str(folder / "l_shape.npy"),
                actuate=["node=0:0:0/3,axis=y,stroke=1mm"],  # the corner voxel's node 3, along y
                joints=joints,
            )
        )
        lattice, u, actuator = fem.lattice, fem.translations, fem.actuators[0]
        axis = lattice.nodes[actuator.node_b] - lattice.nodes[actuator.node_a]
        axis /= np.linalg.norm(axis)
        pom = PomModel(lattice, [Control(actuator.node_a, int(np.argmax(np.abs(axis))))])
        predicted = pom.Forward(np.array([u[actuator.node_a] @ axis]))
        error = np.linalg.norm(predicted - u, axis=1).max() / np.linalg.norm(u, axis=1).max()
        facts[joints] = {
            "stroke_m": float((u[actuator.node_b] - u[actuator.node_a]) @ axis),
            "pom_relative_error": float(error),
            "moving_nodes": int(np.sum(np.linalg.norm(predicted, axis=1) > 0)),
        }
        print(
            f"{joints} joints: stroke {facts[joints]['stroke_m'] * 1e3:.4f} mm, POM vs FEM max "
            f"error {100 * error:.3g} % of the largest motion ({fem.figures['plane_of_motion']})"
        )
    return facts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="an L-shaped voxel lattice: FEM vs POM")
    parser.add_argument("--fast", action="store_true", help="(already fast: no effect)")
    parser.add_argument("--out", default=None, help="folder for the occupancy file")
    main(**vars(parser.parse_args()))
