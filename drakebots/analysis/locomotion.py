"""Locomotion metrics on trajectory arrays (hamr-contact-implicit.txt, Sec. V and VI-B).

NumPy only: positions of the body and the feet sampled in time, in any consistent units.
"""

from __future__ import annotations

import numpy as np


def DistancePerCycle(body_x: np.ndarray, times: np.ndarray, period: float) -> float:
    """Forward distance per stride: the body's x advance divided by the number of strides."""
    duration = float(times[-1] - times[0])
    if duration <= 0:
        return 0.0
    return float(body_x[-1] - body_x[0]) * period / duration


def NormalizedSlip(body_x: np.ndarray, feet_x: np.ndarray) -> float:
    """The normalized average slip of Eq. 23: the backward distance travelled by each foot in the
    world frame, averaged over the feet, divided by the forward distance of the body.

        s = 1 / (4 int v_x dt) sum_i int_{v_x^i < 0} |v_x^i| dt

    Args:
        body_x: (T,) body (or centre of mass) x positions.
        feet_x: (T, feet) world x positions of the feet at the same samples.

    Returns:
        s (dimensionless); inf when the body does not move forward.
    """
    forward = float(body_x[-1] - body_x[0])
    steps = np.diff(np.asarray(feet_x, float), axis=0)
    backward = np.sum(np.maximum(-steps, 0.0), axis=0)  # per foot
    if forward <= 0:
        return float("inf")
    return float(np.mean(backward) / forward)


def LoadedSlide(feet_world: np.ndarray, normal_forces: np.ndarray, threshold: float) -> float:
    """How far the feet slide along the ground while they carry load: the sum over feet and
    intervals of |horizontal displacement| where the foot's normal force exceeds `threshold`.

    Eq. 23's slip counts only backward foot motion; a loaded foot skidding forward (braking)
    escapes it, and both are motion a sticking foot would not have.

    Args:
        feet_world: (T, feet, 3) world positions of the feet.
        normal_forces: (T - 1, feet) normal force of each foot over each interval.
        threshold: the force above which a foot counts as loaded.
    """
    steps = np.linalg.norm(np.diff(np.asarray(feet_world, float)[:, :, :2], axis=0), axis=2)
    return float(np.sum(steps[np.asarray(normal_forces, float) > threshold]))


def HeadingDisplacements(x: np.ndarray, y: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Displacements between successive samples along the body's heading (the yaw at the
    interval's midpoint), (T - 1,): forward progress of a robot that turns, which world-x
    displacements undercount.

    Args:
        x, y: (T,) horizontal body positions; yaw: (T,) heading, rad.
    """
    x, y, yaw = (np.asarray(a, float) for a in (x, y, yaw))
    mid = 0.5 * (yaw[:-1] + yaw[1:])
    return np.diff(x) * np.cos(mid) + np.diff(y) * np.sin(mid)


def FeetInBodyFrame(
    base_position: np.ndarray, rotation_WB: np.ndarray, feet_world: np.ndarray
) -> np.ndarray:
    """p_BF = R_WB^T (p_WF - p_WB) for every sample and foot.

    Args:
        base_position: (T, 3); rotation_WB: (T, 3, 3); feet_world: (T, feet, 3).
    """
    relative = feet_world - base_position[:, None, :]
    return np.einsum("tji,tfj->tfi", rotation_WB, relative)


def ContactSchedule(heights: np.ndarray, tolerance: float) -> np.ndarray:
    """(T, feet) booleans: a foot is in contact when its height is below `tolerance`."""
    return np.asarray(heights) <= tolerance


def DutyFactors(in_contact: np.ndarray) -> np.ndarray:
    """Fraction of samples each foot spends in contact."""
    return np.mean(np.asarray(in_contact, float), axis=0)
