"""The authors' geometric quasi-static model (reference README), as a MathematicalProgram.

References: finite differences for the hand-written Jacobian, the paper's Eq. 2 for the foot
orientations, an independent solve with scipy's SLSQP (the authors' solver) for the optimum,
and the rigid transform between two exact poses for the straight gait's step.
"""

import math

import numpy as np
import pytest
import scipy.optimize

from drakebots.gecko.experiments import MeasureCycleGeometric, RelativeMotion
from drakebots.gecko.geometric import (
    FootPositionsAndJacobian,
    GeometricGait,
    GeometricModelParams,
    GeometricPoseSolver,
    PackZ,
    PhiRows,
)
from drakebots.gecko.geometry import (
    FootOrientationsEq2,
    GaitLawDeg,
    GeckoDimensions,
    GeckoShapeOf,
)

LENGTHS = GeckoDimensions().lengths()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_foot_jacobian_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    z = PackZ(rng.uniform(-0.2, 0.2, 3), rng.uniform(-2.5, 2.5, 5), LENGTHS * rng.uniform(0.9, 1.1))
    if seed == 2:
        z[3:8] = rng.uniform(-1e-6, 1e-6, 5)  # straight limbs: the sinc branch
    feet = [0, 1, 2, 3]
    p, J = FootPositionsAndJacobian(z, feet)
    np.testing.assert_allclose(p, GeckoShapeOf(z[:3], z[3:8], z[8:]).feet.ravel(), atol=1e-15)
    numeric = np.zeros_like(J)
    h = 1e-6
    for k in range(13):
        dz = np.zeros(13)
        dz[k] = h
        numeric[:, k] = (
            FootPositionsAndJacobian(z + dz, feet)[0] - FootPositionsAndJacobian(z - dz, feet)[0]
        ) / (2 * h)
    np.testing.assert_allclose(J, numeric, atol=1e-8)


def test_foot_orientations_are_linear_and_equal_eq2():
    rng = np.random.default_rng(3)
    A, c = PhiRows()
    for _ in range(5):
        z = PackZ(rng.uniform(-1, 1, 3), rng.uniform(-2.5, 2.5, 5), LENGTHS)
        difference = A @ z + c - FootOrientationsEq2(z[2], z[3:8])
        wrapped = (difference + math.pi) % (2 * math.pi) - math.pi  # equal up to whole turns
        np.testing.assert_allclose(wrapped, 0.0, atol=1e-12)


def _SlsqpPose(alpha_ref, fixed, positions, phi0, guess, params):
    """The same problem solved independently with scipy's SLSQP (the authors' solver)."""
    A, c = PhiRows()
    leg = GeckoDimensions().leg_length
    index = np.flatnonzero(fixed)

    def cost(z):
        return (
            params.f_l * np.sum(((z[8:] - LENGTHS) / leg) ** 2)
            + params.f_o * np.sum((A[index] @ z + c[index] - phi0[index]) ** 2)
            + params.f_a * np.sum((z[3:8] - alpha_ref) ** 2)
        )

    def feet(z):
        return FootPositionsAndJacobian(z, list(index))[0] - positions[index].ravel()

    bounds = [(None, None)] * 8 + [(0.9 * L, 1.1 * L) for L in LENGTHS]
    result = scipy.optimize.minimize(
        cost,
        guess,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "eq", "fun": feet}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert result.success, result.message
    return result.x, result.fun


@pytest.mark.parametrize("q", [(80.0, -0.5), (60.0, 0.3)])
def test_snopt_pose_is_the_optimum_slsqp_finds(q):
    """One move of a turning gait: the fixed feet hold (equality constraints), the pose equals an
    independent SLSQP solve of the objective, and the free feet moved."""
    params = GeometricModelParams()
    start_alpha = np.radians(GaitLawDeg(q[0], q[1]))
    start = GeckoShapeOf((0.0, 0.0, 0.0), start_alpha, LENGTHS)
    fixed = np.array([True, False, False, True])
    target_alpha = np.radians(GaitLawDeg(-q[0], q[1]))
    guess = PackZ((0.0, 0.0, 0.0), start_alpha, LENGTHS)
    solver = GeometricPoseSolver(fixed, params=params)
    solution = solver.Solve(target_alpha, start.feet, start.phi, guess)
    assert solution.success, solution.solver_status
    assert solution.constraint_violation < 1e-9
    z_ref, cost_ref = _SlsqpPose(target_alpha, fixed, start.feet, start.phi, guess, params)
    assert solution.cost == pytest.approx(cost_ref, rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(solution.z, z_ref, atol=1e-5)
    # Cost recomputed from its definition (not the solver's number).
    A, c = PhiRows()
    z = solution.z
    direct = (
        params.f_l * np.sum(((z[8:] - LENGTHS) / 0.091) ** 2)
        + params.f_o * np.sum((A[fixed] @ z + c[fixed] - start.phi[fixed]) ** 2)
        + params.f_a * np.sum((z[3:8] - target_alpha) ** 2)
    )
    assert solution.cost == pytest.approx(direct, rel=1e-9)
    moved = np.linalg.norm(solution.shape.feet - start.feet, axis=1)
    assert np.all(moved[fixed] < 1e-9) and np.all(moved[~fixed] > 0.01)
    assert np.all(z[8:] >= 0.9 * LENGTHS - 1e-9) and np.all(z[8:] <= 1.1 * LENGTHS + 1e-9)


def _RigidStep(a_shape, b_shape, feet):
    """The planar rigid motion that carries pose b's feet onto pose a's feet (two points)."""
    pa, pb = a_shape.feet[feet], b_shape.feet[feet]
    da, db = pa[1] - pa[0], pb[1] - pb[0]
    assert np.linalg.norm(da) == pytest.approx(np.linalg.norm(db), abs=1e-12)
    angle = math.atan2(da[1], da[0]) - math.atan2(db[1], db[0])
    c, s = math.cos(angle), math.sin(angle)
    R = np.array([[c, -s], [s, c]])
    return angle, pa[0] - R @ pb[0]


def test_straight_gait_is_exactly_feasible_and_steps_the_rigid_distance():
    """q2 = 0: the straight gait keeps fixed feet in place and orientation with zero deviation,
    and each half cycle moves the robot by the rigid motion that maps the stance feet of the
    new pose onto those of the old one."""
    q1 = 70.0
    measurement = MeasureCycleGeometric(q1, 0.0, warmup=0, substeps=1)
    assert not measurement.failures
    np.testing.assert_allclose(measurement.alphas[1], np.radians(GaitLawDeg(-q1, 0.0)), atol=1e-7)
    np.testing.assert_allclose(measurement.lengths, np.tile(LENGTHS, (3, 1)), atol=1e-9)
    plus = GeckoShapeOf((0, 0, 0), np.radians(GaitLawDeg(q1, 0.0)), LENGTHS)
    minus = GeckoShapeOf((0, 0, 0), np.radians(GaitLawDeg(-q1, 0.0)), LENGTHS)
    angle, shift = _RigidStep(plus, minus, [0, 3])  # front-left and hind-right stay fixed
    assert angle == pytest.approx(0.0, abs=1e-12)
    half = RelativeMotion(measurement.poses[0], measurement.poses[1])
    np.testing.assert_allclose(half[1:], shift, atol=1e-7)
    assert measurement.motion[1] == pytest.approx(2 * shift[0], abs=1e-7)
    assert measurement.motion[0] == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("q2", [-0.3, 0.3])
def test_turning_direction_and_fixed_feet_over_cycles(q2):
    """Positive steering turns clockwise (negative d_eps, paper section 3.1); through two cycles
    every solve succeeds and the fixed feet never move."""
    gait = GeometricGait(substeps=2)
    gait.Reset(alpha_deg=GaitLawDeg(80.0, q2))
    gait.Cycles(80.0, q2, 2)
    trace = gait.Trace()
    assert not trace.failures
    assert trace.worst_violation < 1e-9
    motion = RelativeMotion(trace.z[trace.cycle_end[0], :3], trace.z[trace.cycle_end[1], :3])
    assert np.sign(motion[0]) == -np.sign(q2)
    assert motion[1] > 0.05
