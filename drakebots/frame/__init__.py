"""3-D frame (beam) finite elements for voxel lattices (NumPy/SciPy, no Drake systems).

- elements.py: element stiffness (Euler-Bernoulli or Timoshenko), geometric stiffness, mass.
- model.py: `Frame` (sparse assembly, supports, loads, linear actuators, static solves, modes).
- voxel.py: octahedral voxel lattices from an occupancy array (reference numbering and material).
- pom.py: the Planes-of-Motion kinematic model (voxel-planes-of-motion.txt sec. 2.2).
"""
