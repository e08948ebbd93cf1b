"""The whole-body tracking controller (drakebots.systems.whole_body) and the closed-loop
acceptance built on it (drakebots.optimization.legged_report).

References the code under test does not compute: Drake's own inverse dynamics
(plant.CalcInverseDynamics) and its mass matrix, bias and gravity terms; the robot's weight m g
(the ground carries it when nothing accelerates); the home pose of the robot file (a standing
robot stays there); a plan we write by hand (standing still, or the same with its base drifting
2 m sideways, which the open-loop check of x distance alone accepted).
"""

import types
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
QUADRUPED = HERE / "quadruped" / "quadruped.yaml"
HOPPER = HERE.parents[1] / "scripts" / "examples" / "hopper" / "hopper.yaml"


def Robot(path):
    from drakebots.robots import LoadRobot

    return LoadRobot(path)


def FixedBaseHopper(tmp_path):
    """The hopper's URDF on a fixed base, no contacts: its feet held by the world."""
    robot = tmp_path / "fixed.yaml"
    robot.write_text(
        f"name: fixed_hopper\nmodel: {HOPPER.with_suffix('.urdf')}\nbase: fixed\n"
        "home: {hip: 0.3, knee: -0.6}\n"
    )
    return Robot(robot)


def test_the_qp_is_drakes_inverse_dynamics_on_a_fixed_base(tmp_path):
    """With the state on the reference, the QP's vdot is the reference's and its u is Drake's
    inverse dynamics (CalcInverseDynamics with the plant's force elements: gravity, damping)."""
    from pydrake.multibody.tree import MultibodyForces

    from drakebots.systems.whole_body import (
        MakeControllerPlant,
        PlanReference,
        WholeBodyController,
    )

    robot = FixedBaseHopper(tmp_path)
    plant = MakeControllerPlant(robot)
    nq = plant.num_positions()
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = np.array([0.3, -0.6]) + rng.uniform(-0.3, 0.3, nq)
        v = rng.uniform(-2, 2, nq)
        vdot = rng.uniform(-20, 20, nq)
        reference = PlanReference.Standing(plant, q, np.zeros((0, 3)), 1.0)
        reference.q, reference.v, reference.vdot = np.array([q, q]), np.array([v, v]), vdot[None]
        controller = WholeBodyController(robot, reference, friction=0.8)
        vdot_qp, u, _ = controller.Solve(0.0, q, v)
        context = plant.CreateDefaultContext()
        plant.SetPositions(context, q)
        plant.SetVelocities(context, v)
        forces = MultibodyForces(plant)
        plant.CalcForceElementsContribution(context, forces)
        tau = plant.CalcInverseDynamics(context, vdot, forces)
        assert np.allclose(vdot_qp, vdot, atol=1e-4 * np.abs(vdot).max())
        assert np.allclose(u, tau, rtol=1e-4, atol=1e-4), (u, tau)
        # And the same from M vdot + C v - tau_g - damping (Drake's separate terms).
        M = plant.CalcMassMatrix(context)
        damping = np.array([0.05, 0.05]) * v
        expected = (
            M @ vdot
            + plant.CalcBiasTerm(context)
            - plant.CalcGravityGeneralizedForces(context)
            + damping
        )
        assert np.allclose(u, expected, rtol=1e-4, atol=1e-4)


def test_the_qp_standing_on_its_feet_satisfies_drakes_dynamics():
    """The quadruped at rest in its home pose: the QP's (vdot, u, f) satisfy Drake's inverse
    dynamics with the contact forces applied, the feet do not accelerate, the forces are in the
    friction pyramid and carry the weight."""
    from pydrake.multibody.tree import JacobianWrtVariable, MultibodyForces

    from drakebots.systems.whole_body import (
        MakeControllerPlant,
        PlanReference,
        WholeBodyController,
    )

    robot = Robot(QUADRUPED)
    plant = MakeControllerPlant(robot)
    context = plant.CreateDefaultContext()
    q, v = plant.GetPositions(context), np.zeros(plant.num_velocities())
    weight = plant.CalcTotalMass(context) * robot.gravity
    reference = PlanReference.Standing(plant, q, np.tile([0, 0, weight / 4], (4, 1)), 1.0)
    controller = WholeBodyController(robot, reference, friction=0.8)
    vdot, u, f = controller.Solve(0.0, q, v)
    forces = MultibodyForces(plant)
    plant.CalcForceElementsContribution(context, forces)
    world = plant.world_frame()
    for (body, point), fc in zip(robot.contacts, f):
        J = plant.CalcJacobianTranslationalVelocity(
            context,
            JacobianWrtVariable.kV,
            plant.GetBodyByName(body).body_frame(),
            point,
            world,
            world,
        )
        forces.mutable_generalized_forces()[:] += J.T @ fc
        assert np.linalg.norm(J @ vdot) < 1e-4
        assert abs(fc[0]) <= 0.8 * fc[2] + 1e-6 and abs(fc[1]) <= 0.8 * fc[2] + 1e-6
    tau = plant.CalcInverseDynamics(context, vdot, forces)
    assert np.allclose(tau, plant.MakeActuationMatrix() @ u, atol=1e-5)
    assert f[:, 2].sum() == pytest.approx(weight, rel=1e-3)
    assert np.all(np.abs(u) <= 20.0)


def test_a_standing_quadruped_holds_its_pose_for_2_s_under_a_push():
    """30 N sideways (a third of its weight) on the body for 0.2 s: the base is back within
    2 cm and 0.02 rad of home after 2 s (the feet may have slipped: the base and joint tasks then
    share the difference) and never strays more than 5 cm."""
    from drakebots.systems.whole_body import MakeControllerPlant, PlanReference, RunTracking

    robot = Robot(QUADRUPED)
    plant = MakeControllerPlant(robot)
    context = plant.CreateDefaultContext()
    home = plant.GetPositions(context)
    weight = plant.CalcTotalMass(context) * robot.gravity
    reference = PlanReference.Standing(plant, home, np.tile([0, 0, weight / 4], (4, 1)), 2.0)
    run = RunTracking(
        robot,
        reference,
        q0=home,
        v0=np.zeros(plant.num_velocities()),
        duration=2.0,
        push=(0.5, 0.7, [0.0, 30.0, 0.0], "body"),
    )
    print(f"standing quadruped: {run.ms_per_tick:.2f} ms per tick, {run.ticks} ticks")
    assert run.qp_failures == 0
    # RpyFloatingJoint positions: roll, pitch, yaw, x, y, z.
    error = run.q[:, :6] - home[:6]
    pushed = (run.times > 0.5) & (run.times < 1.0)
    assert np.abs(error[pushed, 4]).max() > 1e-3  # the push moved it
    assert np.abs(error[:, 3:]).max() < 0.05
    print("base error at 2 s (roll, pitch, yaw, x, y, z):", np.round(error[-1], 4))
    assert np.abs(error[-1, 3:]).max() < 0.02
    assert np.abs(error[-1, :3]).max() < 0.02


def StandingPlan(model, *, knots=11, period=0.5, drift_y=0.0):
    """A hand-written 'gait': standing still at home over one period, the base's y moving by
    drift_y (the lie: no force pushes it there), the weight shared by the feet."""
    q = np.tile(model.home, (knots, 1))
    y = model.orientation_indices[0] + 4
    q[:, y] += np.linspace(0.0, drift_y, knots)
    nc = len(model.contact_names)
    forces = np.tile([0.0, 0.0, model.weight / nc], (knots - 1, nc, 1))
    times = np.linspace(0.0, period, knots)
    return types.SimpleNamespace(
        times=times,
        h=times[1],
        q=q,
        qdot=np.diff(q, axis=0) / times[1],
        contact_forces=forces,
        phi=np.zeros((knots, nc)),
    )


@pytest.mark.parametrize("drift_y", [0.0, 2.0])
def test_the_acceptance_refuses_a_plan_the_robot_does_not_follow(drift_y):
    """Standing still is tracked and accepted; the same plan with its base sliding 2 m sideways
    per cycle (which the old open-loop check, x distance alone, let through) is refused, and the
    reason names the base position at a cycle end."""
    from drakebots.optimization.legged import GaitConfig, MakeRobotTrajoptModel
    from drakebots.optimization.legged_report import Resimulate, TrackingChecks

    model = MakeRobotTrajoptModel(Robot(QUADRUPED))
    traj = StandingPlan(model, drift_y=drift_y)
    config = GaitConfig(robot=str(QUADRUPED), period=0.5, distance=0.0)
    resim = Resimulate(model, "gait", traj, config)
    figures = {}
    reasons = TrackingChecks("gait", figures, resim, config.solver)
    for key in (
        "tracked_cycles",
        "tracked_distance_per_cycle",
        "tracked_base_error_max",
        "tracked_fell",
    ):
        assert key in figures
    assert figures["tracked_cycles"] == 3
    assert resim["times"][-1] == pytest.approx(1.5, abs=1e-3)
    if drift_y == 0.0:
        assert reasons == [], reasons
        assert figures["tracked_base_error_max"] < 0.01
        assert figures["tracked_fell"] is False
    else:
        assert any("base position" in r and "cycle end" in r for r in reasons), reasons
        # The plan is 2 m sideways at every cycle end (its y is not shifted per cycle); the
        # robot, with nothing pushing it there, ends far from it (tolerance: 0.04 m here).
        assert figures["tracked_base_error_max"] > 0.5
        assert figures["tracked_base_error_tolerance"] == pytest.approx(
            0.1 * model.home[model.z_index]
        )


def test_a_plan_above_the_ground_runs_on_it_and_says_so():
    """The standing plan lifted 3 cm (every contact 3 cm up at every knot, as the Solo-12 trot
    that fell through empty space): the run starts with the base 3 cm lower, on the ground, and
    tracked_start_shift says -0.03 m."""
    from drakebots.optimization.legged import GaitConfig, MakeRobotTrajoptModel
    from drakebots.optimization.legged_report import Resimulate, TrackingChecks

    model = MakeRobotTrajoptModel(Robot(QUADRUPED))
    traj = StandingPlan(model)
    traj.q[:, model.z_index] += 0.03
    traj.phi += 0.03
    config = GaitConfig(robot=str(QUADRUPED), period=0.5, distance=0.0)
    resim = Resimulate(model, "gait", traj, config)
    figures = {}
    assert TrackingChecks("gait", figures, resim, config.solver) == []
    assert figures["tracked_start_shift"] == pytest.approx(-0.03, abs=1e-9)
    assert resim["q"][0, model.z_index] == pytest.approx(model.home[model.z_index], abs=1e-9)
    assert abs(resim["q"][-1, model.z_index] - model.home[model.z_index]) < 5e-3
