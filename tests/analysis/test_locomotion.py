"""Locomotion metrics against hand-computed values (Eq. 23 of hamr-contact-implicit.txt)."""

import numpy as np
import pytest

from drakebots.analysis.locomotion import (
    ContactSchedule,
    DistancePerCycle,
    DutyFactors,
    FeetInBodyFrame,
    NormalizedSlip,
)


def test_slip_is_backward_foot_travel_over_body_travel():
    # The body advances 10 mm; foot 0 slides back 1 mm then forward, foot 1 never slides back,
    # feet 2 and 3 slide back 0.5 mm each: mean backward travel (1 + 0 + 0.5 + 0.5) / 4 = 0.5.
    body = np.linspace(0.0, 10.0, 6)
    feet = np.zeros((6, 4))
    feet[:, 0] = [0, -1, -1, 4, 9, 10]
    feet[:, 1] = [0, 2, 4, 6, 8, 10]
    feet[:, 2] = [0, 0, -0.5, 3, 6, 9.5]
    feet[:, 3] = [0, 5, 4.5, 4.5, 8, 10]
    assert NormalizedSlip(body, feet) == pytest.approx(0.5 / 10.0)
    # A foot planted on the ground (no slip) while the body moves contributes nothing.
    assert NormalizedSlip(body, np.zeros((6, 4))) == 0.0
    assert NormalizedSlip(np.zeros(6), feet) == float("inf")


def test_distance_per_cycle_and_duty_factor():
    times = np.linspace(0.0, 300.0, 31)  # three 100 ms strides
    x = 8.0 * times / 100.0
    assert DistancePerCycle(x, times, 100.0) == pytest.approx(8.0)
    heights = np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.5]])
    touching = ContactSchedule(heights, 1e-3)
    np.testing.assert_allclose(DutyFactors(touching), [0.75, 0.5])


def test_feet_in_body_frame_inverts_the_body_pose():
    angle = 0.3
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    base = np.array([[1.0, 2.0, 3.0]])
    p_body = np.array([[[0.5, -0.2, -1.0], [1.0, 1.0, 0.0]]])
    world = base[:, None, :] + np.einsum("ij,tfj->tfi", R, p_body)
    np.testing.assert_allclose(FeetInBodyFrame(base, R[None], world), p_body, atol=1e-14)
