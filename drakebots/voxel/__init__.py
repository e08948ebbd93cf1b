"""Voxel lattice robots (voxel-planes-of-motion.txt): everything of their family.

- lattice: octahedral voxel lattices from an occupancy array, as beam frames (drakebots.frame).
- pom: the Planes-of-Motion kinematic model, forward and inverse.
- observations: the paper's sec. 2.1 measures on a solved lattice.
- tripod, tripod_model: the tripod-gait robot (lattice, actuators, gait, FEM check) and its
  Drake model files.
- robot: `AddVoxelTripod(plant)` and the registry's `MakeRobot`.
- statics, simulation: the Drake model's static response and its gait simulation.
- plots: displacement patterns, dissipation, POM against FEM, lattice replays.

Units: SI (m, N, Pa).
"""

from drakebots.voxel.lattice import CubicLattice, VoxelLattice
from drakebots.voxel.pom import PomModel

__all__ = ["CubicLattice", "PomModel", "VoxelLattice"]
