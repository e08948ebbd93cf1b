"""BatchInverseDynamics against Drake: values (CalcInverseDynamics), partials (Drake's AutoDiff
and central differences), and its refusals."""

import numpy as np
import pytest
from pydrake.autodiffutils import AutoDiffXd, ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.math import RigidTransform, RollPitchYaw
from pydrake.multibody.math import SpatialForce, SpatialForce_
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    BallRpyJoint,
    FixedOffsetFrame,
    JacobianWrtVariable,
    MultibodyForces,
    MultibodyForces_,
    PrismaticJoint,
    RevoluteJoint,
)

from drakebots.optimization.tree_inverse_dynamics import BatchInverseDynamics
from drakebots.skinned.skeleton_model import SkeletonModel

from ._trees import MakeRandomTree, RandomInertia


def _WeldedTree():
    """The shared random tree: its base welded to the world off the origin, two branches of
    revolute and prismatic joints with random joint frames and damping."""
    plant, _ = MakeRandomTree(3, floating=False, springs=False)
    return plant


def _TreeWithWeldedLink(seed=4):
    """A slider, a hinge, a body welded to the hinge's link and a joint hanging from it."""
    rng = np.random.default_rng(seed)
    plant = MultibodyPlant(0.0)
    world = plant.world_body()
    a = plant.AddRigidBody("a", RandomInertia(rng))
    b = plant.AddRigidBody("b", RandomInertia(rng))
    c = plant.AddRigidBody("c", RandomInertia(rng))
    lump = plant.AddRigidBody("lump", RandomInertia(rng))

    def X():
        return RigidTransform(RollPitchYaw(rng.uniform(-1, 1, 3)), rng.uniform(-0.3, 0.3, 3))

    F = plant.AddFrame(FixedOffsetFrame("F", world.body_frame(), X()))
    plant.AddJoint(PrismaticJoint("slide", F, a.body_frame(), [0.0, 0.6, 0.8], damping=0.3))
    M = plant.AddFrame(FixedOffsetFrame("M", b.body_frame(), X()))
    plant.AddJoint(RevoluteJoint("hinge", a.body_frame(), M, [1.0, 0.0, 0.0], damping=0.05))
    plant.WeldFrames(b.body_frame(), lump.body_frame(), X())
    plant.AddJoint(RevoluteJoint("tip", lump.body_frame(), c.body_frame(), [0.0, 0.0, 1.0]))
    plant.Finalize()
    return plant


def _DrakeInverseDynamics(plant, q, v, a, wrenches):
    """Drake's RNEA with gravity, damping and wrenches [(body, p_BQ, W world at Q)]."""
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    plant.SetVelocities(context, v)
    forces = MultibodyForces(plant)
    plant.CalcForceElementsContribution(context, forces)
    for body, p_BQ, W in wrenches:
        R = plant.EvalBodyPoseInWorld(context, body).rotation()
        body.AddInForce(
            context, R.multiply(p_BQ), SpatialForce(W[:3], W[3:]), plant.world_frame(), forces
        )
    return plant.CalcInverseDynamics(context, a, forces)


def _RandomStates(plant, K, seed):
    """The plant's batch dynamics, K random states (q, v, a) and the random generator."""
    rng = np.random.default_rng(seed)
    n = plant.num_positions()
    q, v, a = (rng.uniform(-1.5, 1.5, (K, n)) for _ in range(3))
    return BatchInverseDynamics(plant), q, v, a, rng


@pytest.mark.parametrize("make", [_WeldedTree, _TreeWithWeldedLink])
def test_values_match_drake_calc_inverse_dynamics(make):
    plant = make()
    K = 6
    tid, q, v, a, rng = _RandomStates(plant, K, 0)
    instance = plant.GetModelInstanceByName("DefaultModelInstance")
    body = plant.get_body(plant.GetBodyIndices(instance)[-1])
    slot, X_SB = tid.BodySlot(body.index())
    p_BQ = rng.uniform(-0.2, 0.2, 3)
    W = rng.normal(size=(K, 6))
    tau = tid.InverseDynamics(q, v, a, world_wrenches=[(slot, X_SB.multiply(p_BQ), W)])
    for k in range(K):
        reference = _DrakeInverseDynamics(plant, q[k], v[k], a[k], [(body, p_BQ, W[k])])
        np.testing.assert_allclose(tau[k], reference, rtol=1e-12, atol=1e-12)


def test_partials_match_drake_autodiff_and_central_differences():
    plant = _TreeWithWeldedLink()
    n, K = plant.num_positions(), 3
    tid, q, v, a, rng = _RandomStates(plant, K, 1)
    body = plant.GetBodyByName("c")
    slot, X_SB = tid.BodySlot(body.index())
    p_BQ = np.array([0.1, -0.05, 0.2])
    W = rng.normal(size=(K, 6))
    wrench = [(slot, X_SB.multiply(p_BQ), W)]
    tau, dq, dv, da, dw = tid.Partials(q, v, a, world_wrenches=wrench)
    # Drake's AutoDiff over [q, v, a, W].
    plant_ad = plant.ToAutoDiffXd()
    context = plant_ad.CreateDefaultContext()
    body_ad = plant_ad.GetBodyByName("c")
    for k in range(K):
        x = InitializeAutoDiff(np.concatenate([q[k], v[k], a[k], W[k]])).ravel()
        plant_ad.SetPositions(context, x[:n])
        plant_ad.SetVelocities(context, x[n : 2 * n])
        forces = MultibodyForces_[AutoDiffXd](plant_ad)
        plant_ad.CalcForceElementsContribution(context, forces)
        R = plant_ad.EvalBodyPoseInWorld(context, body_ad).rotation()
        p = InitializeAutoDiff(p_BQ, np.zeros((3, len(x)))).ravel()
        w = x[3 * n :]
        force = SpatialForce_[AutoDiffXd](w[:3], w[3:])
        body_ad.AddInForce(context, R.multiply(p), force, plant_ad.world_frame(), forces)
        t = plant_ad.CalcInverseDynamics(context, x[2 * n : 3 * n], forces)
        G = ExtractGradient(t)
        np.testing.assert_allclose(tau[k], ExtractValue(t).ravel(), rtol=1e-12, atol=1e-12)
        blocks = (G[:, :n], G[:, n : 2 * n], G[:, 2 * n : 3 * n], G[:, 3 * n :])
        for ours, theirs in zip((dq[k], dv[k], da[k], dw[k]), blocks):
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    # Central differences of the values: an independent check of the complex step.
    eps = 1e-6
    state = [q[:1], v[:1], a[:1]]
    one = [(slot, X_SB.multiply(p_BQ), W[:1])]
    for which, partial in enumerate((dq, dv, da)):
        for j in range(n):
            plus, minus = [x.copy() for x in state], [x.copy() for x in state]
            plus[which][0, j] += eps
            minus[which][0, j] -= eps
            fd = (
                tid.InverseDynamics(*plus, world_wrenches=one)
                - tid.InverseDynamics(*minus, world_wrenches=one)
            )[0] / (2 * eps)
            np.testing.assert_allclose(partial[0][:, j], fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("robot", ["beetle", "lizard"])
def test_skeleton_batch_equals_drake_per_knot(robot):
    """The space-time step's batched inverse dynamics (feet's world wrenches at the sole
    centres, skin loads on links, skin mass welded to links, doubled masses) equal Drake's
    CalcInverseDynamics and its AutoDiff partials knot by knot."""
    model = SkeletonModel(robot, mass_scale=2.0)
    rng = np.random.default_rng(2)
    n, K = model.nq, 4
    q = model.q_home + 0.3 * rng.normal(size=(K, n))
    v, a = rng.normal(size=(K, n)), rng.normal(size=(K, n))
    feet = rng.normal(size=(K, 4, 6))
    loads = [("torso", rng.normal(size=(K, 6))), ("front_left_foot", rng.normal(size=(K, 6)))]
    batch = model.InverseDynamicsBatch(q, v, a, feet, loads, partials=True)
    values = model.InverseDynamicsBatch(q, v, a, feet, loads, partials=False)
    for k in range(K):
        per_knot = [(name, W[k]) for name, W in loads]
        tau, G = model.InverseDynamicsWithGradient(q[k], v[k], a[k], feet[k], per_knot)
        np.testing.assert_allclose(values[k], tau, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(batch[0][k], tau, rtol=1e-12, atol=1e-9)
        for m, ours in enumerate(batch[1:]):
            theirs = G[:, m * n : (m + 1) * n] if m < 3 else G[:, 3 * n :]
            np.testing.assert_allclose(ours[k], theirs, rtol=1e-10, atol=1e-8)


def test_unsupported_joints_and_force_elements_are_clear_errors():
    plant = MultibodyPlant(0.0)
    body = plant.AddRigidBody("ball", RandomInertia(np.random.default_rng(0)))
    plant.AddJoint(BallRpyJoint("ball_joint", plant.world_frame(), body.body_frame()))
    plant.Finalize()
    with pytest.raises(ValueError, match="ball_joint.*revolute, prismatic and weld"):
        BatchInverseDynamics(plant)
    spring_plant, _ = MakeRandomTree(0, floating=False, springs=True)
    with pytest.raises(ValueError, match="RevoluteSpring.*not modelled"):
        BatchInverseDynamics(spring_plant)


@pytest.mark.parametrize("make", [_WeldedTree, _TreeWithWeldedLink])
def test_batched_kinematics_match_drakes_points_and_jacobians(make):
    """Poses, Points, JacobianTransposeTimes and ComJacobianTransposeTimes against Drake's
    CalcPointsPositions, translational Jacobian and centre-of-mass Jacobian."""
    plant = make()
    K = 4
    tid, q, _, _, rng = _RandomStates(plant, K, 3)
    poses = tid.Poses(q)
    context = plant.CreateDefaultContext()
    W = plant.world_frame()
    f_com = rng.normal(size=(K, 3))
    com_term = tid.ComJacobianTransposeTimes(poses, f_com)
    instance = plant.GetModelInstanceByName("DefaultModelInstance")
    for index in plant.GetBodyIndices(instance):
        body = plant.get_body(index)
        try:
            slot, X_SB = tid.BodySlot(index)
        except ValueError:  # welded to the world: no coordinate moves it
            continue
        p_BP = rng.uniform(-0.2, 0.2, (3, 3))
        points = tid.Points(poses, slot, np.array([X_SB.multiply(p) for p in p_BP]))
        f = rng.normal(size=(K, 3, 3))
        ours = tid.JacobianTransposeTimes(poses, slot, points, f)
        for k in range(K):
            plant.SetPositions(context, q[k])
            frame = body.body_frame()
            reference = plant.CalcPointsPositions(context, frame, p_BP.T, W).T
            np.testing.assert_allclose(points[k], reference, atol=1e-12)
            J = plant.CalcJacobianTranslationalVelocity(
                context, JacobianWrtVariable.kV, frame, p_BP.T, W, W
            ).reshape(3, 3, -1)
            np.testing.assert_allclose(ours[k], np.einsum("pin,pi->n", J, f[k]), atol=1e-12)
    for k in range(K):
        plant.SetPositions(context, q[k])
        J_com = plant.CalcJacobianCenterOfMassTranslationalVelocity(
            context, JacobianWrtVariable.kV, W, W
        )
        np.testing.assert_allclose(com_term[k], J_com.T @ f_com[k], atol=1e-12)
