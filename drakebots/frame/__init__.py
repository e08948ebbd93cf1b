"""3-D frame (beam) finite elements (NumPy/SciPy, no Drake systems); no robot family.

- elements.py: element stiffness (Euler-Bernoulli or Timoshenko), geometric stiffness, mass.
- model.py: `Frame` (sparse assembly, supports, loads, linear actuators, static solves, modes).
- cholesky.py: the multifrontal Cholesky factorisation the static solves use by default.

The voxel lattices built on it (lattices, Planes of Motion, the tripod) live in drakebots.voxel.
"""
