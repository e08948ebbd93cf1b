"""The plan playback in Drake's own simulator (drakebots.skinned.playback), the independent
check every `drakebots design` run reports: its contact forces and masses against Newton's laws,
and its open-loop mode (pd_scale 0) applying the plan's torques and nothing else."""

import numpy as np
import pytest

from drakebots.robots import GetRobot
from drakebots.skinned.playback import PlaybackFrames
from drakebots.skinned.skeleton_model import SkeletonModel

DT = 0.005


@pytest.fixture(scope="module")
def beetle():
    return GetRobot("beetle"), SkeletonModel("beetle")


def _Hold(model, seconds: float):
    q = np.tile(model.q_home, (int(round(seconds / DT)) + 1, 1))
    return q, np.zeros((len(q) - 1, model.nu))


def test_standing_robot_feet_carry_its_weight_with_the_skins(beetle):
    """Held at home by its servos for 1 s the skeleton stands still and the ground carries the
    whole robot's weight, skin included (the skin's mass is welded to the links as the plan's
    model has it): sum of the feet's normal forces = m g, from Drake's contact results."""
    robot, model = beetle
    assert model.skin_load.total > 0.5  # the beetle's 1.1 kg skin is part of the check
    q, tau = _Hold(model, 1.0)
    figures, res = PlaybackFrames(robot, model, q, tau, DT)
    weight = model.total_mass * model.gravity
    fz = res.foot_forces[:, :, 2].sum(axis=1)
    np.testing.assert_allclose(fz[-20:], weight, rtol=1e-3)
    assert figures["max_torso_position_error_m"] < 1e-3
    assert figures["torso_within_2cm_s"] == pytest.approx(1.0)
    assert figures["torso_pose_held_s"] == pytest.approx(1.0)
    assert figures["frames_without_ground_contact"] == 0
    # The centre of pressure lies inside the four feet (their convex hull's bounding box).
    feet = model.AllFeet(model.q_home)[0]
    cop = res.cop[-1]
    assert feet[:, 0].min() < cop[0] < feet[:, 0].max()
    assert feet[:, 1].min() < cop[1] < feet[:, 1].max()


@pytest.mark.parametrize("axis, name", [(3, "yaw"), (4, "pitch"), (5, "roll")])
def test_a_torso_turned_off_its_plan_is_not_held_though_its_position_is(beetle, axis, name):
    """The held time counts the whole torso pose: a standing robot whose plan turns its torso
    6 deg about one axis from frame 40 on (the robot, held at home, does not turn) stays within
    2 cm of the plan's position throughout, and its pose is held until frame 40 exactly (the
    plan's own turn, 6 > TORSO_TOLERANCE_DEG = 5); turned 4 deg, it is held throughout."""
    from drakebots.skinned.playback import TORSO_TOLERANCE_DEG

    robot, model = beetle
    for turn_deg, held in [(6.0, 40 * DT), (4.0, 0.3)]:
        assert (turn_deg > TORSO_TOLERANCE_DEG) == (held < 0.3)
        q, tau = _Hold(model, 0.3)
        q[40:, axis] += np.radians(turn_deg)
        figures, _ = PlaybackFrames(robot, model, q, tau, DT)
        assert figures["torso_within_2cm_s"] == pytest.approx(0.3), name
        assert figures["torso_pose_held_s"] == pytest.approx(held), (name, turn_deg)
        rpy = figures["max_torso_rpy_error_deg"]  # roll, pitch, yaw: the plan's 5, 4, 3
        assert rpy[5 - axis] == pytest.approx(turn_deg, abs=0.05), (name, rpy)


def test_open_loop_applies_the_torques_alone(beetle):
    """pd_scale 0 is the torques alone: the plant's net actuation equals the feed-forward at
    every frame; with the servos' PD on, the same push on one hip is fought by a correction.
    (A hip yaw: a knee's push is taken by the ground under its planted foot.)"""
    robot, model = beetle
    q, tau = _Hold(model, 0.3)
    hip = model.actuator_names.index("front_left_hip_yaw")
    tau[:, hip] = 0.3 * model.effort_limits[hip]
    open_loop, res = PlaybackFrames(robot, model, q, tau, DT, pd_scale=0.0)
    np.testing.assert_array_equal(res.actuation[1:], tau)
    assert open_loop["max_pd_correction_nm"] == 0.0
    # Unopposed, the push swings the leg (measured 69 deg in 0.3 s); held by its servo, the hip
    # gives way by a fraction of a degree (0.26).
    closed_loop, _ = PlaybackFrames(robot, model, q, tau, DT, pd_scale=1.0)
    assert closed_loop["max_pd_correction_nm"] > 0.05 * model.effort_limits[hip]
    assert open_loop["max_joint_error_deg"] > 20.0
    assert closed_loop["max_joint_error_deg"] < 1.0


def test_the_playback_stands_on_the_ground_friction_it_is_given(beetle):
    """The playback's ground has the μ it is given (a design passes its motion's): a hip pushed
    open loop drags its foot; every loaded foot's ground force obeys Coulomb's law
    |f_t| <= μ f_n at μ = 0.1 and the dragged foot slides at that bound, while on the default
    ground (μ = 0.8) the same push needs more than 0.1 f_n somewhere: the check is on μ."""
    robot, model = beetle
    q, tau = _Hold(model, 0.3)
    hip = model.actuator_names.index("front_left_hip_yaw")
    tau[:, hip] = 0.5 * model.effort_limits[hip]

    def Ratios(**friction):
        _, res = PlaybackFrames(robot, model, q, tau, DT, pd_scale=0.0, **friction)
        f = res.foot_forces[1:]
        loaded = f[..., 2] > 0.05 * model.total_mass * model.gravity
        return np.linalg.norm(f[..., :2], axis=2)[loaded] / f[..., 2][loaded]

    slippery = Ratios(friction=0.1)
    assert slippery.max() <= 0.1 * (1 + 1e-3)  # (SAP's regularised cone: to its tolerance)
    assert slippery.max() >= 0.1 * 0.98  # the dragged foot slides: its force on the cone
    assert Ratios().max() > 0.15


def test_the_playback_drives_the_motors_to_the_limits_the_plan_was_made_with(beetle):
    """A plan made with stronger motors than the model file's (`drakebots design --motor-limit`)
    is played back with those: the plant clamps a motor's net torque at the limit it is given
    (1.5 U_file on a hip reaches the hip whole with 2 U_file motors, and is cut to U_file with
    the file's own), and the figures' torque ratio is against the same limits."""
    robot, model = beetle
    q, tau = _Hold(model, 0.05)
    hip = model.actuator_names.index("front_left_hip_yaw")
    limit = model.effort_limits[hip]
    tau[:, hip] = 1.5 * limit
    clamped, res = PlaybackFrames(robot, model, q, tau, DT, pd_scale=0.0)
    np.testing.assert_allclose(res.actuation[1:, hip], limit, rtol=1e-12)
    assert clamped["max_net_torque_ratio"] == pytest.approx(1.0)
    stronger = 2.0 * model.effort_limits
    figures, res = PlaybackFrames(robot, model, q, tau, DT, pd_scale=0.0, effort_limits=stronger)
    np.testing.assert_array_equal(res.actuation[1:], tau)
    assert figures["max_net_torque_ratio"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="effort_limits"):
        PlaybackFrames(robot, model, q, tau, DT, effort_limits=stronger[:-1])
