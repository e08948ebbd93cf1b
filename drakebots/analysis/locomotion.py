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
