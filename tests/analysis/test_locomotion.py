"""Locomotion metrics against hand-computed values (Eq. 23 of hamr-contact-implicit.txt)."""

import numpy as np
import pytest

from drakebots.analysis.locomotion import (
    ContactSchedule,
    DistancePerCycle,
    DutyFactors,
    FeetInBodyFrame,
    HeadingDisplacements,
    LoadedSlide,
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


def test_loaded_slide_counts_loaded_feet_sliding_any_way():
    """Foot 0 skids 3 mm forward then 4 mm sideways under load, then swings 10 mm unloaded;
    foot 1 stays put under load: 7 mm slid while loaded."""
    feet = np.zeros((4, 2, 3))
    feet[1, 0] = [3.0, 0.0, 0.0]
    feet[2, 0] = [3.0, 4.0, 0.0]
    feet[3, 0] = [13.0, 4.0, 1.0]
    normal = np.array([[5.0, 5.0], [5.0, 5.0], [0.0, 5.0]])
    assert LoadedSlide(feet, normal, 0.1) == pytest.approx(7.0)
    assert LoadedSlide(feet, np.zeros((3, 2)), 0.1) == 0.0


def test_heading_displacements_follow_a_turning_body():
    """A body driving 1 mm per sample along a circle of radius 10 mm, its heading tangent to the
    path: each step along the heading is the chord (2 R sin(dtheta / 2)), whatever the
    direction; world x steps shrink and turn negative."""
    R, step = 10.0, 0.1
    theta = step * np.arange(40)
    x, y = R * np.sin(theta), R * (1 - np.cos(theta))
    along = HeadingDisplacements(x, y, theta)
    np.testing.assert_allclose(along, 2 * R * np.sin(step / 2), rtol=1e-12)
    assert np.diff(x).min() < 0
