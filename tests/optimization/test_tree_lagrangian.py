"""The analytic Lagrangian kernel against Drake and against central finite differences.

Every quantity TreeLagrangian computes is compared with an independent reference: the mass matrix,
kinetic and potential energy, Coriolis term and Jacobians with Drake's own MultibodyPlant
functions; every derivative (dT/dq, d(Mv)/dq, d2T/dq2, d2V/dq2, point and loop Hessians) with
central differences of the quantity it differentiates.
"""

import numpy as np
import pytest
from pydrake.multibody.tree import BodyIndex, JacobianWrtVariable

from drakebots.optimization.tree_lagrangian import RelativePositionConstraints, TreeLagrangian
from tests.optimization._trees import MakeRandomTree

EPS = 1e-6


def CentralDifference(f, x, eps=EPS):
    columns = []
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = eps
        columns.append((np.atleast_1d(f(x + e)) - np.atleast_1d(f(x - e))) / (2 * eps))
    return np.array(columns).T


@pytest.fixture(scope="module", params=[True, False], ids=["rpy_floating", "welded"])
def tree(request):
    plant, loops = MakeRandomTree(seed=3, floating=request.param)
    lagrangian = TreeLagrangian(plant)
    rng = np.random.default_rng(7)
    n = plant.num_positions()
    q = rng.uniform(-0.8, 0.8, n)
    qdot = rng.uniform(-1.0, 1.0, n)
    return plant, loops, lagrangian, q, qdot


def _NPlus(plant, context, q):
    """v = N+(q) qdot as a matrix (identity for 1-dof joints, not for the RPY base)."""
    n = plant.num_positions()
    plant.SetPositions(context, q)
    return np.column_stack([plant.MapQDotToVelocity(context, e) for e in np.eye(n)])


def test_mass_matrix_and_energies_match_drake(tree):
    plant, _, lagrangian, q, qdot = tree
    context = plant.CreateDefaultContext()
    Np = _NPlus(plant, context, q)
    plant.SetVelocities(context, Np @ qdot)
    terms = lagrangian.Terms(lagrangian.CalcKinematics(q), qdot)
    M_drake = Np.T @ plant.CalcMassMatrix(context) @ Np
    np.testing.assert_allclose(terms.M, M_drake, atol=1e-12 * np.abs(M_drake).max())
    np.testing.assert_allclose(terms.Mv, M_drake @ qdot, atol=1e-12)
    assert terms.kinetic_energy == pytest.approx(plant.CalcKineticEnergy(context), rel=1e-12)
    assert terms.potential_energy == pytest.approx(plant.CalcPotentialEnergy(context), rel=1e-12)


def test_coriolis_identity_matches_drake_bias_term():
    """C(q, v) v = d(Mv)/dq v - dT/dq (Lagrange's equations), against CalcBiasTerm (v = qdot)."""
    plant, _ = MakeRandomTree(seed=5, floating=False)
    lagrangian = TreeLagrangian(plant)
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, plant.num_positions())
    v = rng.uniform(-1, 1, plant.num_velocities())
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    plant.SetVelocities(context, v)
    terms = lagrangian.Terms(lagrangian.CalcKinematics(q), v)
    np.testing.assert_allclose(terms.P @ v - terms.T_q, plant.CalcBiasTerm(context), atol=1e-12)
    # The gravity part of -dV/dq is Drake's generalized gravity force.
    spring = lagrangian.stiffness * (q - lagrangian.nominal_positions)
    np.testing.assert_allclose(
        -terms.V_q + spring, plant.CalcGravityGeneralizedForces(context), atol=1e-12
    )


def test_derivatives_match_central_differences(tree):
    plant, _, lag, q, qdot = tree
    context = plant.CreateDefaultContext()
    terms = lag.Terms(lag.CalcKinematics(q), qdot)

    def DrakeKinetic(qq):
        plant.SetPositions(context, qq)
        plant.SetVelocities(context, _NPlus(plant, context, qq) @ qdot)
        return plant.CalcKineticEnergy(context)

    def DrakePotential(qq):
        plant.SetPositions(context, qq)
        return plant.CalcPotentialEnergy(context)

    def TermsAt(qq, vv=qdot):
        return lag.Terms(lag.CalcKinematics(qq), vv)

    np.testing.assert_allclose(terms.T_q, CentralDifference(DrakeKinetic, q).ravel(), atol=1e-8)
    np.testing.assert_allclose(terms.V_q, CentralDifference(DrakePotential, q).ravel(), atol=1e-7)
    np.testing.assert_allclose(terms.P, CentralDifference(lambda x: TermsAt(x).Mv, q), atol=1e-8)
    np.testing.assert_allclose(
        terms.T_qq, CentralDifference(lambda x: TermsAt(x).T_q, q), atol=1e-8
    )
    np.testing.assert_allclose(
        terms.P.T, CentralDifference(lambda v: TermsAt(q, v).T_q, qdot), atol=1e-8
    )
    np.testing.assert_allclose(
        terms.V_qq, CentralDifference(lambda x: TermsAt(x).V_q, q), atol=1e-6
    )
    np.testing.assert_allclose(terms.T_qq, terms.T_qq.T, atol=1e-14)


def test_point_jacobian_matches_drake_and_hessian_matches_differences(tree):
    plant, loops, lag, q, _ = tree
    body_index, p_BP = loops[0][0], loops[0][1]
    kin = lag.CalcKinematics(q)
    p_WP = lag.PointPosition(kin, body_index, p_BP)
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    frame = plant.get_body(BodyIndex(body_index)).body_frame()
    J_drake = plant.CalcJacobianTranslationalVelocity(
        context, JacobianWrtVariable.kQDot, frame, p_BP, plant.world_frame(), plant.world_frame()
    )
    np.testing.assert_allclose(lag.PointJacobian(kin, body_index, p_WP), J_drake, atol=1e-13)
    f = np.array([0.3, -1.2, 0.7])

    def JTf(qq):
        k = lag.CalcKinematics(qq)
        return lag.PointJacobian(k, body_index, lag.PointPosition(k, body_index, p_BP)).T @ f

    np.testing.assert_allclose(
        lag.PointHessianTimes(kin, body_index, p_WP, f), CentralDifference(JTf, q), atol=1e-8
    )


def test_summed_point_hessians_match_differences(tree):
    """PointsHessianTimes: d/dq sum_c J_c(q)^T f_c over points on different bodies (the
    contact term of the DEL Jacobian, in one pass) against central differences."""
    _, loops, lag, q, _ = tree
    rng = np.random.default_rng(5)
    points = [(b, p) for b1, p1, b2, p2 in loops for b, p in ((b1, p1), (b2, p2))]
    bodies = np.array([b for b, _ in points])
    assert len(set(bodies.tolist())) >= 3
    forces = rng.normal(size=(len(points), 3))

    def Sum(qq):
        k = lag.CalcKinematics(qq)
        return sum(
            lag.PointJacobian(k, b, lag.PointPosition(k, b, p)).T @ f
            for (b, p), f in zip(points, forces)
        )

    kin = lag.CalcKinematics(q)
    p_WP = np.array([lag.PointPosition(kin, b, p) for b, p in points])
    H = lag.PointsHessianTimes(kin, bodies, p_WP, forces)
    np.testing.assert_allclose(H, CentralDifference(Sum, q), atol=1e-8)
    np.testing.assert_allclose(H, H.T, atol=1e-13)


def test_loop_constraint_jacobian_and_hessian_match_differences(tree):
    _, loops, lag, q, _ = tree
    rng = np.random.default_rng(2)
    Pi = np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :2]
    constraints = RelativePositionConstraints(
        lag, [(b1, p1, b2, p2, Pi) for b1, p1, b2, p2 in loops]
    )
    kin = lag.CalcKinematics(q)
    np.testing.assert_allclose(
        constraints.Jacobian(kin),
        CentralDifference(lambda x: constraints.Evaluate(lag.CalcKinematics(x)), q),
        atol=1e-8,
    )
    lam = rng.normal(size=constraints.num_constraints)
    H = constraints.JacobianTransposeTimesDerivative(kin, lam)
    np.testing.assert_allclose(
        H,
        CentralDifference(lambda x: constraints.Jacobian(lag.CalcKinematics(x)).T @ lam, q),
        atol=1e-8,
    )
    np.testing.assert_allclose(H, H.T, atol=1e-13)


def test_unsupported_joint_is_a_clear_error():
    from pydrake.multibody.plant import MultibodyPlant
    from pydrake.multibody.tree import SpatialInertia

    plant = MultibodyPlant(0.0)
    plant.AddRigidBody("free", SpatialInertia.SolidSphereWithMass(1.0, 0.1))
    plant.Finalize()  # a quaternion floating joint
    with pytest.raises(ValueError, match="not supported"):
        TreeLagrangian(plant)
