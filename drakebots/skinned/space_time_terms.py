"""The pieces the space-time program and its vectorised evaluation share (paper section 5.1).

`space_time.MakeSpaceTimeProgram` states Eq. (9) as a MathematicalProgram and
`space_time_nlp.SpaceTimeNlp` evaluates the same terms in one pass; both read these: the
per-coordinate scale of the tracking terms, the soft sole's patches and force law, and the smooth
motor load of the motor-limit rows. They live here, below both, so neither module imports the other
to reach them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from drakebots.skinned.skeleton_model import SkeletonModel


def CoordinateScale(
    model: SkeletonModel, length_scale: float, angle_scale: float = 1.0
) -> np.ndarray:
    """Per-coordinate scale of q: base translations in units of length_scale, angles in units
    of angle_scale (rad)."""
    s = np.full(model.nq, 1.0 / angle_scale)
    s[:3] = 1.0 / length_scale
    return s


def SolePatchPoints(model, j) -> np.ndarray:
    """Foot j's five sole patches (four corners, then the centre) in its link frame, (5, 3) m:
    the points of the frame-by-frame step's `RigidFrameDynamics`."""
    return np.vstack([model.sole_corners[j], model.sole_centers[j][None]])


def SoleStiffness(model, compression: float) -> float:
    """Normal stiffness per sole patch, N/m: the robot's weight over 20 patches compresses the
    sole by `compression` (as `RigidFrameDynamics`'s default)."""
    return model.total_mass * model.gravity / (20.0 * compression)


def SoleLaw(z, stiffness: float, width: float, unit: float):
    """The soft sole's normal force at a patch of height z (m, < 0: pressed in), in units of
    `unit` (N), and its first two derivatives in z: f = k w softplus(-z / w) / unit, i.e. k (-z)
    once pressed in by more than a few widths w, zero well above the ground, smooth between."""
    z = np.asarray(z, float)
    u = -z / width
    value = stiffness * width * np.logaddexp(0.0, u) / unit
    sigma = 0.5 * (1.0 + np.tanh(0.5 * u))
    d1 = -stiffness * sigma / unit
    d2 = stiffness * sigma * (1.0 - sigma) / (width * unit)
    return value, d1, d2


# Sharpness of the smooth maximum in `MotorLoad` (units of 1/U_m): it exceeds the true maximum
# by at most ln(2 m) / MOTOR_LOAD_SHARPNESS (0.08 U_m for 12 motors when all are equally loaded,
# far less when one dominates).
MOTOR_LOAD_SHARPNESS = 40.0


def MotorLoad(a: np.ndarray, J: np.ndarray | None = None, sharpness: float = MOTOR_LOAD_SHARPNESS):
    """A smooth upper bound of max_i |a_i| (a: motor torques in units of U_m) and its gradient
    from the rows J of ∂a: (1/s) ln Σ_i (e^{s a_i} + e^{-s a_i}) >= max |a_i|."""
    a = np.asarray(a, float)
    top = np.abs(a).max()
    up, down = np.exp(sharpness * (a - top)), np.exp(sharpness * (-a - top))
    total = up.sum() + down.sum()
    value = top + np.log(total) / sharpness
    if J is None:
        return value, None
    return value, ((up - down) / total) @ J
