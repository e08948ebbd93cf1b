"""The gecko's gait law (paper Eqs. 1-15) and its LeafSystems.

References: the paper's straight gait (Eq. 1) written out independently, and the foot orientations
computed from the constant-curvature arcs' tangents (not from Eq. 2's formula).
"""

import math

import numpy as np
import pytest
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import ConstantVectorSource

from drakebots.gecko.gait import GaitLawSource, GaitSchedule
from drakebots.gecko.geometry import (
    FixationOf,
    GaitLawDeg,
    GaitTiming,
    GeckoDimensions,
    GeckoShapeOf,
    HalfCycleOf,
    StraightGaitDeg,
)


@pytest.mark.parametrize("q1", [-90.0, -62.5, -40.0, 0.0, 35.0, 50.0, 90.0])
def test_gait_law_reduces_to_the_straight_gait_at_q2_zero(q1):
    """Eq. 14 at q2 = 0 is Eq. 1: [45 - a/2, 45 + a/2, a, 45 - a/2, 45 + a/2], a = q1; the
    fixation is [0 if a < 0 else 1, 1 if a < 0 else 0, 1 if a < 0 else 0, 0 if a < 0 else 1]."""
    a = q1
    expected = [45 - a / 2, 45 + a / 2, a, 45 - a / 2, 45 + a / 2]
    np.testing.assert_allclose(GaitLawDeg(q1, 0.0, clip_legs=False), expected, atol=1e-12)
    # The authors' clip (legs >= 0.001 deg) changes at most the straight legs, by 0.001 deg.
    np.testing.assert_allclose(GaitLawDeg(q1, 0.0), expected, atol=1.001e-3)
    alpha, fixation = StraightGaitDeg(a)
    np.testing.assert_allclose(alpha, expected, atol=1e-12)
    if a != 0:
        eq1 = [a >= 0, a < 0, a < 0, a >= 0]
        np.testing.assert_array_equal(fixation, eq1)
        np.testing.assert_array_equal(FixationOf(a), eq1)


def _FootOrientation(pose, alpha_deg):
    """Tip tangents of the four legs from the arcs (independent of Eq. 2's closed form)."""
    shape = GeckoShapeOf(pose, np.radians(alpha_deg), GeckoDimensions().lengths())
    return shape.foot_tangent


@pytest.mark.parametrize("q1", [50.0, 70.0, 90.0])
@pytest.mark.parametrize("q2", [-0.3, -0.1, 0.0, 0.2, 0.3])
def test_fixed_feet_keep_their_orientation_and_free_feet_turn_with_the_body(q1, q2):
    """Eqs. 4-13: going from pose alpha(+q1) to alpha(-q1) while the body turns by half a
    cycle's rotation, 1/2 d_eps = -2 c1 |q1| q2 (the law's own rotation model with c1 = 1), the
    fixed feet (front-left, hind-right: those of the +q1 pose, Eq. 1) keep their orientation and
    the free feet turn by the full cycle's rotation d_eps (Eq. 11). Then the other diagonal."""
    half_turn = math.radians(-2.0 * abs(q1) * q2)
    start = _FootOrientation((0.0, 0.0, 0.3), GaitLawDeg(q1, q2, clip_legs=False))
    middle = _FootOrientation((0.1, 0.0, 0.3 + half_turn), GaitLawDeg(-q1, q2, clip_legs=False))
    end = _FootOrientation((0.2, 0.0, 0.3 + 2 * half_turn), GaitLawDeg(q1, q2, clip_legs=False))

    def Change(a, b):
        return (b - a + math.pi) % (2 * math.pi) - math.pi

    fixed = FixationOf(q1)
    first, second = Change(start, middle), Change(middle, end)
    np.testing.assert_allclose(first[fixed], 0.0, atol=1e-12)
    np.testing.assert_allclose(first[~fixed], 2 * half_turn, atol=1e-12)
    np.testing.assert_allclose(second[~fixed], 0.0, atol=1e-12)
    np.testing.assert_allclose(second[fixed], 2 * half_turn, atol=1e-12)


@pytest.mark.parametrize("q1", [50.0, 90.0, -70.0])
@pytest.mark.parametrize("q2", [-0.5, -0.3, 0.3, 0.5])
def test_positive_steering_means_negative_rotation_in_the_law(q1, q2):
    """Eq. 14 (gecko-gait-pattern-generator.txt, section 2, c1 = 1), written out here in degrees
    (pi/4 = 45): legs 45 -+ (q1/2 + |q1| q2 / 2) + c1 q1 q2, torso q1 + |q1| q2 (Eq. 3), so
    positive q2 bends the torso more to the right (Eq. 4: a negative turn)."""
    c1 = 1.0
    shift = q1 / 2 + abs(q1) * q2 / 2
    eq14 = [
        45 - shift + c1 * q1 * q2,
        45 + shift + c1 * q1 * q2,
        q1 + abs(q1) * q2,
        45 - shift + c1 * q1 * q2,
        45 + shift + c1 * q1 * q2,
    ]
    np.testing.assert_allclose(GaitLawDeg(q1, q2, clip_legs=False), eq14, atol=1e-12)
    alpha_pos, alpha_neg = GaitLawDeg(q1, abs(q2)), GaitLawDeg(q1, -abs(q2))
    assert alpha_pos[2] > q1 > alpha_neg[2]


def test_leg_references_are_clipped_at_the_authors_minimum():
    alpha = GaitLawDeg(90.0, -0.5)
    assert np.all(alpha[[0, 1, 3, 4]] >= 0.001)
    assert GaitLawDeg(90.0, -0.5, clip_legs=False)[0] == pytest.approx(-22.5)


def test_half_cycles_alternate_sign_and_fixation():
    """Eq. 15: alpha_k = alpha(-q1_{k-1}, q2), f_k = not f_{k-1}."""
    previous = None
    for k in range(6):
        half = HalfCycleOf(k, 80.0, 0.3)
        np.testing.assert_allclose(half.alpha_deg, GaitLawDeg(half.sign * 80.0, 0.3))
        np.testing.assert_array_equal(half.next_stance, FixationOf(half.sign * 80.0))
        np.testing.assert_array_equal(half.stance, ~half.next_stance)
        if previous is not None:
            assert half.sign == -previous.sign
            np.testing.assert_array_equal(half.stance, previous.next_stance)
        previous = half


def test_schedule_timing():
    timing = GaitTiming()
    assert timing.half_cycle == pytest.approx(2.5) and timing.cycle == pytest.approx(5.0)
    schedule = GaitSchedule(timing)
    events = schedule.FixationEvents(0.0, 5.0)
    np.testing.assert_allclose(events, [2.25, 2.5, 4.75, 5.0])
    np.testing.assert_array_equal(schedule.Fixation(0.1), [True, False, False, True])
    np.testing.assert_array_equal(schedule.Fixation(2.3), [True, True, True, True])
    np.testing.assert_array_equal(schedule.Fixation(2.6), [False, True, True, False])


def test_gait_law_source_latches_the_gait_at_each_move():
    builder = DiagramBuilder()
    source = builder.AddSystem(GaitLawSource(GaitTiming()))
    gait = builder.AddSystem(ConstantVectorSource(np.array([70.0, 0.2])))
    builder.Connect(gait.get_output_port(), source.get_gait_input_port())
    diagram = builder.Build()
    assert source.num_input_ports() == 1 and source.num_output_ports() == 3
    simulator = Simulator(diagram)
    context = source.GetMyContextFromRoot(simulator.get_context())
    np.testing.assert_allclose(
        np.degrees(source.GetOutputPort("reference_angles").Eval(context)), GaitLawDeg(90, 0)
    )
    for t, sign in ((0.3, -1.0), (1.0, -1.0), (2.8, 1.0), (5.3, -1.0)):
        simulator.AdvanceTo(t)
        np.testing.assert_allclose(
            np.degrees(source.GetOutputPort("reference_angles").Eval(context)),
            GaitLawDeg(sign * 70.0, 0.2),
            atol=1e-9,
        )
    np.testing.assert_allclose(source.GetOutputPort("latched_gait").Eval(context), [70.0, 0.2])
    np.testing.assert_array_equal(source.GetOutputPort("fixation").Eval(context), [1, 0, 0, 1])
