"""Voxel lattice robots (voxel-planes-of-motion.txt): everything of their family.

- lattice: octahedral voxel lattices from an occupancy array, as beam frames (drakebots.frame).
- pom: the Planes-of-Motion kinematic model, forward and inverse.
- observations: the paper's sec. 2.1 measures on a solved lattice.
- tripod, tripod_model: the tripod-gait robot (lattice, actuators, gait, FEM check) and its
  Drake model files.
- robot: `AddVoxelTripod(plant)` and the registry's `MakeRobot`.
- statics, simulation: the Drake model's static response and its gait simulation.
- plots: displacement patterns, dissipation, POM against FEM, lattice replays.
- actuators: actuator specs ("node=0:0:0/3,axis=y,stroke=2mm") and occupancy files, validated.
- workflows: `Fem`, `Pom` and `Compare` (config in, result out; `drakebots voxel fem|pom|compare`
  call them).

Units: SI (m, N, Pa).
"""

from drakebots.voxel.lattice import CubicLattice, VoxelLattice
from drakebots.voxel.pom import PomModel
from drakebots.voxel.workflows import (
    Compare,
    CompareConfig,
    CompareResult,
    Fem,
    FemConfig,
    FemResult,
    Pom,
    PomConfig,
    PomResult,
)

__all__ = [
    "Compare",
    "CompareConfig",
    "CompareResult",
    "CubicLattice",
    "Fem",
    "FemConfig",
    "FemResult",
    "Pom",
    "PomConfig",
    "PomModel",
    "PomResult",
    "VoxelLattice",
]
