"""Motion optimization of the skinned quad-robots (issue 6): inputs, model, QPCC, Gauss-Newton.

References are independent of the code under test: finite differences for every exact gradient,
Drake's own forward dynamics for the QPCC's condensed step, a closed-form constrained least
squares for the Gauss-Newton solver, plane geometry for support polygons.
"""

import dataclasses

import numpy as np
import pytest
from pydrake.multibody.plant import MultibodyPlant

from drakebots.analysis.support import CenterOfPressure, SupportPolygon
from drakebots.errors import InputError
from drakebots.optimization.gauss_newton import LeastSquaresNlp, SolveGaussNewton
from drakebots.skinned import motions
from drakebots.skinned.motion import FootTrack, SampleMotion
from drakebots.skinned.qpcc import FrameQpcc, QpccConfig, RigidFrameDynamics
from drakebots.skinned.robot import AddSkinnedQuadruped
from drakebots.skinned.skeleton_model import SkeletonModel


@pytest.fixture(scope="module")
def beetle():
    return SkeletonModel("beetle")


def _RandomState(model, seed=0):
    rng = np.random.default_rng(seed)
    q = model.q_home.copy()
    q[3:6] = rng.normal(scale=0.1, size=3)
    q[6:] += rng.normal(scale=0.15, size=model.nq - 6)
    return q, rng.normal(scale=0.3, size=model.nv), rng


def test_support_polygon_margin_of_a_square():
    square = SupportPolygon([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]])
    assert len(square.vertices) == 4
    assert square.Margin([0.5, 0.5]) == pytest.approx(0.5)
    assert square.Margin([0.9, 0.5]) == pytest.approx(0.1)
    assert square.Margin([1.2, 0.5]) == pytest.approx(-0.2)
    A, b = square.HalfSpaces(margin=0.1)
    assert np.all(A @ [0.5, 0.5] <= b) and not np.all(A @ [0.95, 0.5] <= b)
    cop = CenterOfPressure([[0, 0, 0], [1, 0, 0]], [[0, 0, 1], [0, 0, 3]])
    assert cop == pytest.approx([0.75, 0.0])


def test_plan_cop_is_the_ground_wrenchs_centre_of_pressure(beetle):
    """`PlanCop` (the plan's COP of Fig. 11) against plane statics: vertical loads w_j at the
    planned footholds put the COP at Σ w_j e_j / Σ w_j; a contact torque τ_y on a foot moves it by
    -τ_y / F_z in x; a COP pushed d beyond the front feet's toes is d outside the polygon (its
    front edge is the front soles' toe line, straight across in the home pose)."""
    from drakebots.skinned.space_time import PlanCop, SpaceTimeResult

    motion = SampleMotion(motions.SingleFootLift(beetle, duration=0.1))
    assert motion.contact[:, 0].all()
    feet = motion.feet[:, 0]  # (4, 3) planned sole centres, from the generator
    weight = np.array([1.0, 2.0, 3.0, 4.0])
    forces = np.zeros((2, 4, 3))
    forces[:, :, 2] = weight * 10.0
    torques = np.zeros((2, 4, 3))
    # Knot 1: every load on the front-left foot, tipped forward onto its toe and 5 mm beyond.
    forces[1, 1:] = 0.0
    toe = beetle.sole_corners[0][:, 0].max() - beetle.sole_centers[0][0]
    torques[1, 0, 1] = -(toe + 0.005) * forces[1, 0, 2]
    result = SpaceTimeResult(
        success=True,
        status="",
        q_knots=np.tile(beetle.q_home, (2, 1)),
        knot_times=np.array([0.0, 0.0]),
        forces=forces,
        torques=torques,
        joint_torques=np.zeros((2, beetle.nu)),
        cost=0.0,
        infeasible=[],
        solve_time=0.0,
        costs={},
    )
    cop, margin = PlanCop(beetle, motion, result)
    expected = (weight[:, None] * feet[:, :2]).sum(axis=0) / weight.sum()
    np.testing.assert_allclose(cop[0], expected, atol=1e-6)
    assert margin[0] > 0.02
    np.testing.assert_allclose(cop[1], feet[0, :2] + [toe + 0.005, 0.0], atol=1e-6)
    assert margin[1] == pytest.approx(-0.005, abs=1e-6)


def test_model_mass_includes_the_skin_and_the_failure_case_doubles_it(beetle):
    assert beetle.total_mass == pytest.approx(2.8 + 1.1)  # paper: skeleton 2.8 kg + skin 1.1 kg
    assert SkeletonModel("beetle", mass_scale=2.0).total_mass == pytest.approx(2 * 3.9)


def test_euler_coordinates_agree_with_the_robots_own_plant(beetle):
    """Our Euler-angle base and Drake's quaternion floating base put the feet at the same place."""
    q, _, _ = _RandomState(beetle)
    plant = MultibodyPlant(0.0)
    AddSkinnedQuadruped(plant, "beetle")
    plant.Finalize()
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, beetle.ToFloatingPositions(q))
    for j, leg in enumerate(beetle.legs):
        X = plant.EvalBodyPoseInWorld(context, plant.GetBodyByName(f"{leg}_foot"))
        p, _ = beetle.FootPoints(q, j, beetle.sole_centers[j])
        np.testing.assert_allclose(p[0], X.multiply(beetle.sole_centers[j]), atol=1e-12)


def test_kinematic_jacobians_match_finite_differences(beetle):
    q, _, _ = _RandomState(beetle, 1)
    eps = 1e-6
    E = np.eye(beetle.nq)
    for function in (
        lambda x: beetle.Com(x),
        lambda x: beetle.FootNormal(x, 2),
        lambda x: [a[0] for a in beetle.FootPoints(x, 1, beetle.sole_centers[1])],
    ):
        _, J = function(q)
        fd = np.array(
            [(function(q + eps * e)[0] - function(q - eps * e)[0]) / (2 * eps) for e in E]
        ).T
        np.testing.assert_allclose(J, fd, atol=1e-7)


def test_inverse_dynamics_gradient_matches_finite_differences(beetle):
    q, v, rng = _RandomState(beetle, 2)
    a = rng.normal(size=beetle.nv)
    w = rng.normal(size=(4, 6))
    n = beetle.nq
    x0 = np.concatenate([q, v, a, w.ravel()])

    def f(x):
        return beetle.InverseDynamics(
            x[:n], x[n : 2 * n], x[2 * n : 3 * n], x[3 * n :].reshape(4, 6)
        )

    tau, G = beetle.InverseDynamicsWithGradient(q, v, a, w)
    np.testing.assert_allclose(tau, f(x0), atol=1e-12)
    fd = np.array([(f(x0 + 1e-6 * e) - f(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(len(x0))]).T
    np.testing.assert_allclose(G, fd, atol=1e-6)


def test_batched_inverse_dynamics_partials_match_the_force_element_path(beetle):
    """InverseDynamicsBatch (the space-time step's batched RNEA with complex-step partials, skin
    loads on links) against InverseDynamics (Drake's gravity force element) and central
    differences of it."""
    q, v, rng = _RandomState(beetle, 3)
    a = rng.normal(size=beetle.nv)
    w = rng.normal(size=(4, 6))
    links = [(beetle.plant.get_body(beetle.foot_bodies[1].index()).name(), rng.normal(size=6))]
    n = beetle.nq

    def f(x):
        return beetle.InverseDynamics(
            x[:n], x[n : 2 * n], x[2 * n : 3 * n], x[3 * n :].reshape(4, 6), links
        )

    # Independent of both: M v̇ + C v - τ_g + D v from Drake's mass matrix, bias term and
    # gravity forces (no contact, no skin loads). The joints' viscous damping counts once.
    no_load = np.zeros((4, 6))
    reference = beetle.MassMatrix(q) @ a + beetle.BiasAndGravity(q, v)
    np.testing.assert_allclose(beetle.InverseDynamics(q, v, a, no_load), reference, atol=1e-10)
    np.testing.assert_allclose(
        beetle.InverseDynamicsBatch(q[None], v[None], a[None], no_load[None], partials=True)[0][0],
        reference,
        atol=1e-10,
    )
    x0 = np.concatenate([q, v, a, w.ravel()])
    batch_links = [(name, W[None]) for name, W in links]
    tau, Gq, Gv, Ga, Gw = (
        G[0]
        for G in beetle.InverseDynamicsBatch(
            q[None], v[None], a[None], w[None], batch_links, partials=True
        )
    )
    np.testing.assert_allclose(tau, f(x0), atol=1e-10)
    fd = np.array([(f(x0 + 1e-6 * e) - f(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(len(x0))]).T
    np.testing.assert_allclose(np.hstack([Gq, Gv, Ga, Gw]), fd, atol=1e-6)


def test_static_equilibrium_from_inverse_dynamics(beetle):
    """At rest, the six base rows vanish exactly when the feet carry the weight (Eq. 7)."""
    q = beetle.q_home
    zero = np.zeros(beetle.nv)
    wrenches = np.zeros((4, 6))
    wrenches[:, 5] = beetle.total_mass * beetle.gravity / 4
    com, _ = beetle.Com(q)
    feet, _, _, _ = beetle.AllFeet(q)
    # Split the weight so the moment about the COM vanishes: symmetric robot, equal shares work
    # only if the COM is above the feet's centroid.
    assert np.allclose(com[:2], feet[:, :2].mean(axis=0), atol=2e-3)
    tau = beetle.InverseDynamics(q, zero, zero, wrenches)
    assert np.abs(tau[2]) < 1e-9  # vertical force balance exactly
    assert np.abs(tau[:6]).max() < 0.05 * beetle.total_mass * beetle.gravity


def test_condensed_step_matches_drakes_forward_dynamics(beetle):
    """Eq. (10)'s condensed map (rigid version) against Drake's own forward dynamics."""
    q, v, rng = _RandomState(beetle, 3)
    dt = 0.005
    dyn = RigidFrameDynamics(beetle, dt)
    lin = dyn.Linearize(q, v)
    z = np.concatenate([rng.normal(size=beetle.nu), rng.normal(size=3 * dyn.num_patches)])
    q_next, v_next = dyn.Step(q, v, lin, z)
    plant = beetle.plant
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q)
    plant.SetVelocities(context, v)
    _, Jp = dyn.PatchJacobians(q)
    generalized = beetle.B @ z[: beetle.nu] + Jp.reshape(-1, beetle.nv).T @ z[beetle.nu :]
    plant.get_applied_generalized_force_input_port().FixValue(context, generalized)
    vdot = plant.get_generalized_acceleration_output_port().Eval(context)
    np.testing.assert_allclose(v_next, v + dt * vdot, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(q_next, q + dt * v_next, atol=1e-14)


def test_qpcc_holding_still_carries_the_weight_within_the_motor_limits(beetle):
    """Standing frames: once the compliant soles have settled (the first frame starts them
    uncompressed), the contact forces carry m g, torques stay within U_m, the COP inside the
    feet, and each loaded foot point sits f_z / k below the ground (the sole's compression)."""
    dt = 0.005
    dyn = RigidFrameDynamics(beetle, dt)
    qpcc = FrameQpcc(beetle, dyn, beetle.effort_limits, 0.8, QpccConfig())
    q, v = beetle.q_home.copy(), np.zeros(beetle.nv)
    tau = np.zeros(beetle.nu)
    for _ in range(30):
        r = qpcc.SolveFrame(
            q, v, beetle.q_home, v * dt, tau, flat_feet=range(4), support_feet=range(4)
        )
        q, v, tau = r.q_next, r.v_next, r.tau
    assert not r.infeasible and r.consistent
    assert r.forces[:, 2].sum() == pytest.approx(beetle.total_mass * beetle.gravity, rel=5e-3)
    assert np.all(np.abs(r.tau) <= beetle.effort_limits + 1e-6)
    assert r.cop_margin > 0.0
    assert np.abs(r.q_next - beetle.q_home).max() < 1e-3
    points, _ = dyn.PatchJacobians(r.q_next)
    loaded = r.forces[:, 2] > 1e-3
    np.testing.assert_allclose(
        points[loaded, 2], -r.forces[loaded, 2] / dyn.sole_stiffness, atol=2e-6
    )


def test_torque_regulariser_lowers_the_standing_torques_and_keeps_the_weight_carried(beetle):
    """`QpccConfig.torque_regularization` (ours): standing on four compliant soles, the motor
    torques are otherwise free in the null space of the step (legs may squeeze the ground); with
    the regulariser the settled torques are smaller (in units of U_m) and the forces still carry
    m g, each frame within the motor limits."""
    dt = 0.005
    dyn = RigidFrameDynamics(beetle, dt)
    U = beetle.effort_limits
    settled = {}
    for weight in (0.0, 0.1):
        config = dataclasses.replace(QpccConfig(), torque_regularization=weight)
        qpcc = FrameQpcc(beetle, dyn, U, 0.8, config)
        q, v = beetle.q_home.copy(), np.zeros(beetle.nv)
        # Start from a squeeze: opposite knee torques on the two sides.
        tau = np.zeros(beetle.nu)
        knees = [i for i, n in enumerate(beetle.actuator_names) if n.endswith("knee")]
        tau[knees] = 0.5 * U[knees] * np.array([1.0, -1.0, 1.0, -1.0])
        for _ in range(40):
            r = qpcc.SolveFrame(
                q, v, beetle.q_home, v * dt, tau, flat_feet=range(4), support_feet=range(4)
            )
            q, v, tau = r.q_next, r.v_next, r.tau
            assert np.all(np.abs(tau) <= U + 1e-6)
        assert not r.infeasible
        assert r.forces[:, 2].sum() == pytest.approx(beetle.total_mass * beetle.gravity, rel=5e-3)
        settled[weight] = np.linalg.norm(tau / U)
    assert settled[0.1] < 0.5 * settled[0.0], settled


def test_the_baselines_inverse_dynamics_follows_the_joints_and_leaves_the_root(beetle):
    """`QpccConfig.joints_only` (the kinematic-only baseline's inverse dynamics, section 7):
    the torques answer the plan's joint angles only. Moving the plan's root (roll 0.1 rad,
    x 1 cm) leaves them unchanged, where the paper's E_G (ours by default) changes them; moving
    a joint's target changes them either way."""
    dt = 0.005
    dyn = RigidFrameDynamics(beetle, dt)
    q, v = beetle.q_home.copy(), np.zeros(beetle.nv)
    tau0 = np.zeros(beetle.nu)
    root_moved = beetle.q_home.copy()
    root_moved[5] += 0.1  # roll (BASE_JOINTS: x y z yaw pitch roll)
    root_moved[0] += 0.01
    joint_moved = beetle.q_home.copy()
    joint_moved[beetle.nq - 1] += 0.05
    torques = {}
    for joints_only in (False, True):
        config = dataclasses.replace(
            QpccConfig(), joints_only=joints_only, cop_constraint=not joints_only
        )
        qpcc = FrameQpcc(beetle, dyn, beetle.effort_limits, 0.8, config)
        for name, target in (("plan", beetle.q_home), ("root", root_moved), ("joint", joint_moved)):
            r = qpcc.SolveFrame(
                q, v, target, v * dt, tau0, flat_feet=range(4), support_feet=range(4)
            )
            assert not r.infeasible
            torques[joints_only, name] = r.tau / beetle.effort_limits

    def Change(joints_only, name):
        return np.abs(torques[joints_only, name] - torques[joints_only, "plan"]).max()

    assert Change(True, "root") < 1e-6
    assert Change(False, "root") > 1e-2
    assert Change(True, "joint") > 1e-2 and Change(False, "joint") > 1e-2


def test_a_frame_without_dynamics_stops_the_pass_and_is_named(beetle, monkeypatch):
    """A dynamics model that cannot linearise a state (the coupled system's matrix indefinite
    after a skin element inverted) ends the pass at that frame, recorded as infeasible with the
    reason, the frames before it kept (no traceback out of `drakebots design`)."""
    from drakebots.skinned.qpcc import FrameDynamicsError, RunFrameByFrame

    dyn = RigidFrameDynamics(beetle, 0.005)
    qpcc = FrameQpcc(beetle, dyn, beetle.effort_limits, 0.8, QpccConfig())
    linearize, calls = dyn.Linearize, []

    def failing(q, v):
        calls.append(1)
        if len(calls) > 4:
            raise FrameDynamicsError("not positive definite")
        return linearize(q, v)

    monkeypatch.setattr(dyn, "Linearize", failing)
    plan = np.tile(beetle.q_home, (10, 1))
    result = RunFrameByFrame(beetle, dyn, qpcc, plan, np.ones((4, 10), dtype=bool))
    frame, names = result.infeasible[-1]
    assert "not positive definite" in names[0] and names[0].startswith("dynamics")
    assert result.frames_done == frame < 9 and len(result.tau) == frame


def test_final_labels_satisfy_the_complementarity_through_a_lift_off(beetle):
    """The labelling loop's final labels, checked frame by frame against Drake's kinematics at
    the returned configuration (not the QP's linearisation): a loaded patch pushes and sits on
    the ground (its foot point f_⊥/k below it, the sole compressed), an unloaded one carries no
    force and is not below the ground; a sticking foot's force is inside the friction pyramid
    and its sole centre does not slip; a sliding foot's force is on the pyramid and does no
    positive work. The swing foot leaves the ground."""
    from drakebots.skinned.qpcc import BREAKAGE, SLIDING, STATIC

    dt, mu = 0.005, 0.8
    dyn = RigidFrameDynamics(beetle, dt)
    qpcc = FrameQpcc(beetle, dyn, beetle.effort_limits, mu, QpccConfig())
    weight = beetle.total_mass * beetle.gravity
    tol = 1e-5 * weight
    knee = beetle.position_names.index("front_left_knee")
    q, v, tau = beetle.q_home.copy(), np.zeros(beetle.nv), np.zeros(beetle.nu)
    kinds = set()
    for i in range(24):
        target = beetle.q_home.copy()
        lifting = i >= 10
        if lifting:
            target[knee] += 0.01 * (i - 9)  # flexing the knee lifts the front left foot
        r = qpcc.SolveFrame(
            q,
            v,
            target,
            v * dt,
            tau,
            flat_feet=[1, 2, 3],
            support_feet=[1, 2, 3] if lifting else range(4),
            swing_feet=[0] if lifting else [],
        )
        assert r.consistent and not r.infeasible
        points, _ = dyn.PatchJacobians(r.q_next)
        before, _ = dyn.PatchJacobians(q)
        f = r.forces
        # The sole's compression s: on the ground the contact point is the foot point + s, and
        # the force follows the sole's law f_⊥ = k s + c ṡ.
        s_prev, s_now = dyn.Deformation(q)[:, 2], dyn.Deformation(r.q_next)[:, 2]
        law = dyn.sole_stiffness * s_now + dyn.sole_damping * (s_now - s_prev) / dt
        np.testing.assert_allclose(f[:, 2], law, atol=tol)
        for p, label in enumerate(r.labels):
            if label in (STATIC, SLIDING):
                assert f[p, 2] >= -tol
                assert points[p, 2] + s_now[p] == pytest.approx(0.0, abs=1e-6)
                kinds.add(label)
            else:
                assert label in (BREAKAGE, "")
                assert np.abs(f[p]).max() <= tol
                assert points[p, 2] + s_now[p] >= -1e-7  # (a released sole still relaxing)
        for foot in range(4):
            mine = np.arange(5 * foot, 5 * foot + 5)
            loaded = [p for p in mine if r.labels[p] in (STATIC, SLIDING)]
            if not loaded:
                continue
            F = f[mine].sum(axis=0)
            slip = (points[loaded, :2] - before[loaded, :2]).mean(axis=0)
            if r.labels[loaded[0]] == STATIC:
                assert abs(F[0]) + abs(F[1]) <= mu * F[2] + tol
                # Held to first order: the QPCC's patch motion is linear in z, the check is
                # exact kinematics at q_next (second-order error of a 5 ms step: microns).
                assert np.abs(slip).max() < 5e-6
            else:
                assert abs(F[0]) + abs(F[1]) == pytest.approx(mu * F[2], abs=tol)
                assert F[:2] @ slip <= 1e-9
        q, v, tau = r.q_next, r.v_next, r.tau
    assert STATIC in kinds
    points, _ = dyn.PatchJacobians(q)
    assert points[:5, 2].min() > 1e-3  # the front left sole is off the ground


def test_gauss_newton_solves_a_constrained_least_squares_exactly():
    """min ||x - a||² s.t. ||x||² = 1 has the answer a / ||a|| (closed form)."""
    from pydrake.solvers import MathematicalProgram

    from drakebots.skinned.space_time import ResidualsOf, _AddResidualCost, _Evaluator

    a = np.array([2.0, -1.0, 0.5])
    prog = MathematicalProgram()
    x = prog.NewContinuousVariables(3, "x")
    _AddResidualCost(prog, lambda y: (y - a, np.eye(3)), x, "fit")
    prog.AddConstraint(
        _Evaluator(lambda y: (np.array([y @ y]), 2 * y[None])),
        [1.0],
        [1.0],
        x,
        description="unit",
    )
    result = SolveGaussNewton(prog, ResidualsOf(prog), np.array([1.0, 0.0, 0.0]))
    assert result.success, result.status
    np.testing.assert_allclose(result.x, a / np.linalg.norm(a), atol=1e-5)


class _TinyNlp(LeastSquaresNlp):
    """min (x1 - 2)² subject to the two equality rows x0 = 0 and x0 = 1 (contradictory), or
    with `consistent`, min ||x - a||² subject to ||x||² = 1 (the closed form a / ||a||)."""

    def __init__(self, consistent, curvature=None):
        import scipy.sparse as sp

        self.sp, self.consistent, self.curvature = sp, consistent, curvature
        self.num_vars = 2
        self.lower, self.upper = np.full(2, -np.inf), np.full(2, np.inf)
        self.a = np.array([2.0, -1.0])
        self.eq_names = [("c", 0, 1 if consistent else 2)]
        if curvature is not None:
            self.Curvature = lambda x, lam_eq, lam_in: curvature

    def Evaluate(self, x, jacobians):
        from drakebots.optimization.gauss_newton import NlpEvaluation

        sp = self.sp
        if self.consistent:
            r, c_eq = x - self.a, np.array([x @ x - 1.0])
            J, A = np.eye(2), 2 * x[None]
        else:
            r, c_eq = np.array([x[1] - 2.0]), np.array([x[0], x[0] - 1.0])
            J, A = np.array([[0.0, 1.0]]), np.array([[1.0, 0.0], [1.0, 0.0]])
        if not jacobians:
            return NlpEvaluation(r=r, c_eq=c_eq, c_in=np.zeros(0))
        return NlpEvaluation(
            r=r,
            c_eq=c_eq,
            c_in=np.zeros(0),
            J_r=sp.csr_matrix(J),
            A_eq=sp.csr_matrix(A),
            A_in=sp.csr_matrix((0, 2)),
        )


def test_contradictory_constraints_end_at_the_least_violation_under_any_penalty():
    """Two rows x0 = 0 and x0 = 1 cannot both hold: every QP is re-solved elastic (l1 slacks).
    Whatever the merit's penalty ν has grown to, the elastic QP's slack price is capped
    (`max_penalty`): with slacks priced at 1e25 Clarabel gave up on the QP and with it the
    solve. The answer: the cost's minimiser x1 = 2, x0 in [0, 1] (l1 violation 1 everywhere
    there), reported infeasible, not as a failed subproblem."""
    from drakebots.optimization.gauss_newton import GaussNewtonOptions, SolveLeastSquaresSqp

    for penalty in (10.0, 1e25):
        result = SolveLeastSquaresSqp(
            _TinyNlp(consistent=False),
            np.array([3.0, -1.0]),
            GaussNewtonOptions(penalty=penalty, max_iterations=20),
        )
        assert "subproblem failed" not in result.status, (penalty, result.status)
        assert not result.success
        assert result.x[1] == pytest.approx(2.0, abs=1e-6)
        assert -1e-6 <= result.x[0] <= 1.0 + 1e-6
        c_eq = _TinyNlp(consistent=False).Evaluate(result.x, False).c_eq
        assert np.abs(c_eq).sum() == pytest.approx(1.0, abs=1e-6)  # the least l1 violation


def test_a_qp_that_its_constraint_curvature_spoils_is_solved_without_it():
    """The constraints' curvature enters the QP weighted by the last multipliers; where it makes
    the QP one Clarabel cannot solve (here an indefinite one, unbounded below) the step is taken
    with Gauss-Newton's Hessian alone instead of losing the iteration. min ||x - a||² on the
    unit circle: a / ||a||, and no iteration without a step."""
    import scipy.sparse as sp

    from drakebots.optimization.gauss_newton import GaussNewtonOptions, SolveLeastSquaresSqp

    bad = sp.csr_matrix(-1e3 * np.eye(2))
    nlp = _TinyNlp(consistent=True, curvature=bad)
    # Without the curvature Gauss-Newton converges linearly along the circle: tight tolerances.
    options = GaussNewtonOptions(merit_tolerance=1e-14, step_tolerance=1e-12, max_iterations=200)
    result = SolveLeastSquaresSqp(nlp, np.array([1.0, 0.0]), options)
    assert result.success, result.status
    np.testing.assert_allclose(result.x, nlp.a / np.linalg.norm(nlp.a), atol=1e-7)
    assert not [h for h in result.history if "qp" in h]


def test_generic_curvature_is_the_weighted_constraint_hessian():
    """MathematicalProgramNlp.Curvature against the closed form: for c(x) = [x·x, x0 x1] with
    bounds making row 0 an equality and row 1 an upper bound, Σ λ ∇²c = 2 λ_0 I + λ_1 E01."""
    from pydrake.solvers import MathematicalProgram

    from drakebots.optimization.gauss_newton import MathematicalProgramNlp
    from drakebots.skinned.space_time import _Evaluator

    prog = MathematicalProgram()
    x = prog.NewContinuousVariables(3, "x")
    prog.AddConstraint(
        _Evaluator(
            lambda y: (
                np.array([y @ y, y[0] * y[1]]),
                np.array([2 * y, [y[1], y[0], 0.0]]),
            )
        ),
        [1.0, -np.inf],
        [1.0, 0.5],
        x,
        description="c",
    )
    prog.AddLinearConstraint(x[0] + x[2] <= 3.0)  # linear: no curvature
    nlp = MathematicalProgramNlp(prog, {})
    lam_eq, lam_in = np.array([0.7]), np.array([0.4, 2.0])  # upper row of c, then the linear row
    H = nlp.Curvature(np.array([0.3, -0.2, 0.9]), lam_eq, lam_in).toarray()
    expected = 2 * 0.7 * np.eye(3)
    expected[0, 1] = expected[1, 0] = 0.4
    np.testing.assert_allclose(H, expected, atol=1e-7)  # PSD already: the projection keeps it


def test_generators_make_valid_motions(beetle):
    for spec in (
        motions.SingleFootLift(beetle),
        motions.DoubleFootLift(beetle),
        motions.Walk(beetle, speed=0.04),
        motions.Trot(beetle, speed=0.2),
    ):
        sampled = SampleMotion(spec)
        assert sampled.num_frames == round(spec.duration / spec.frame_dt) + 1
        # Feet on the ground exactly where the contact plan says so; at least two feet down in
        # every walking frame.
        assert np.all(sampled.feet[sampled.contact][:, 2] == 0.0)
        assert np.all(sampled.feet[:, :, 2] >= -1e-12)
    walk = SampleMotion(motions.Walk(beetle, speed=0.04))
    assert walk.contact.sum(axis=0).min() == 3  # a crawl: one foot at a time
    assert SampleMotion(motions.SingleFootLift(beetle)).contact.sum(axis=0).min() == 3
    # A trot whose COM leads (the horse stand-in): the COM path moves ahead by the lead at every
    # frame, the feet and the contact plan stay; a lead that is not a number is refused.
    trot = SampleMotion(motions.Trot(beetle, speed=0.2))
    lead = SampleMotion(motions.Trot(beetle, speed=0.2, com_lead=0.03))
    np.testing.assert_allclose(lead.com - trot.com, np.tile([0.03, 0.0, 0.0], (len(trot.com), 1)))
    np.testing.assert_array_equal(lead.feet, trot.feet)
    np.testing.assert_array_equal(lead.contact, trot.contact)
    with pytest.raises(InputError, match="--com-lead"):
        motions.Trot(beetle, com_lead=float("nan"))


def test_lookahead_targets_are_the_plans_chord_and_tangent(beetle):
    """E_F's lookahead targets (`QpccConfig.lookahead_target`) against closed forms: on a plan
    linear in the frame index the chord q̄^{i+1+L} and the tangent q̄^{i+1} + L q̄' coincide;
    on q̄_k = a k² the chord exceeds the tangent by exactly a L² (Taylor's remainder, the plan's
    curvature over the horizon: what makes aiming at the chord a low-pass filter). "auto" is the
    tangent for a contact plan with flight phases (the trot), the chord for a crawl."""
    from drakebots.skinned.qpcc import LookaheadTarget, ResolveLookahead

    N, L = 40, 10
    k = np.arange(N, dtype=float)[:, None]
    a, b = np.array([[0.3, -1.2]]), np.array([[2.0, 0.5]])
    line, parabola = a * k + b, a * k**2
    for i in (0, 7, N - 2 - L):
        np.testing.assert_allclose(
            LookaheadTarget(line, i, L, "chord"), LookaheadTarget(line, i, L, "tangent")
        )
        chord = LookaheadTarget(parabola, i, L, "chord")
        np.testing.assert_allclose(chord - LookaheadTarget(parabola, i, L, "tangent"), a[0] * L**2)
        np.testing.assert_allclose(chord, a[0] * (i + 1 + L) ** 2)
    trot = SampleMotion(motions.Trot(beetle, speed=0.2)).contact
    walk = SampleMotion(motions.Walk(beetle, speed=0.04)).contact
    assert not trot.any(axis=0).all() and walk.any(axis=0).all()
    assert ResolveLookahead("auto", trot) == "tangent"
    assert ResolveLookahead("auto", walk) == "chord"
    assert ResolveLookahead("chord", trot) == "chord"
    with pytest.raises(ValueError, match="lookahead_target"):
        ResolveLookahead("secant", walk)


def test_periodic_keyframes_interpolate_across_the_seam_as_across_any_keyframe():
    """A periodic motion's COM keyframes over one cycle, interpolated, equal SciPy's PCHIP of the
    same keyframes laid out over three cycles (each moved on by the cycle's displacement) in the
    middle cycle, where the seam is an ordinary interior keyframe."""
    from scipy.interpolate import PchipInterpolator

    from drakebots.skinned.motion import _Interpolate

    T = 2.0
    times = np.array([0.0, 0.3, 0.9, 1.4, 2.0])
    values = np.array([[0.0, 0.01, 0.2], [0.01, -0.02, 0.2], [0.02, -0.02, 0.21]])
    values = np.vstack([values, [0.035, 0.015, 0.2], values[0] + [0.04, 0.0, 0.0]])
    shift = values[-1] - values[0]
    wide_t = np.concatenate([times[:-1] - T, times[:-1], times + T])
    wide_v = np.vstack([values[:-1] - shift, values[:-1], values + shift])
    sample = np.linspace(0.0, T, 201)
    expected = PchipInterpolator(wide_t, wide_v, axis=0)(sample)
    np.testing.assert_allclose(_Interpolate(times, values, sample, "com", period=T), expected)
    # PCHIP's one-sided end slopes differ at the seam (what the periodic layout fixes).
    plain = _Interpolate(times, values, sample, "com")
    assert np.abs(plain - expected).max() > 1e-4


@pytest.mark.parametrize("robot", ["beetle", "lizard"])
def test_walk_com_is_no_harder_to_follow_at_the_cycles_seam(robot):
    """The crawl's COM target accelerates no harder across the cycle's seam than inside it (the
    generator once returned the COM to the centre in the cycle's last 0.03 s: 40-110 m/s²)."""
    model = SkeletonModel(robot)
    walk = SampleMotion(motions.Walk(model, speed=0.015))
    c, dt = walk.com, walk.dt
    shift = c[-1] - c[0]
    wrapped = np.vstack([c[-6:-1] - shift, c, c[1:6] + shift])  # 5 frames either side of the seam
    a = np.abs(np.diff(wrapped, 2, axis=0)) / dt**2
    seam = np.r_[a[:10], a[-10:]].max()
    inside = a[10:-10].max()
    assert seam <= 1.5 * inside, (seam, inside)


def test_bad_motion_inputs_name_what_is_wrong(beetle):
    spec = motions.SingleFootLift(beetle)
    broken = dataclasses.replace(spec, com_positions=spec.com_positions[:-1])
    with pytest.raises(InputError, match="com"):
        SampleMotion(broken)
    feet = dict(spec.feet)
    feet["middle_left"] = FootTrack(times=[0.0], positions=[[0, 0, 0]])
    with pytest.raises(InputError, match="middle_left"):
        SampleMotion(dataclasses.replace(spec, feet=feet))
    with pytest.raises(InputError, match="motor_effort_limit"):
        SampleMotion(dataclasses.replace(spec, motor_effort_limit=-1.0))
    feet = dict(spec.feet)
    feet.pop("rear_left")
    with pytest.raises(InputError, match="rear_left"):
        SampleMotion(dataclasses.replace(spec, feet=feet))


def test_qp_with_explicit_rows_substituted_equals_the_full_qp():
    """gauss_newton._Qp eliminates explicit equality rows (the soft sole's patch forces) by
    substitution; the step and every multiplier equal Clarabel's on the full subproblem."""
    import scipy.sparse as sp

    from drakebots.optimization.gauss_newton import NlpEvaluation, _Qp

    rng = np.random.default_rng(5)
    n, p_other, m = 30, 4, 6
    pivots = np.array([3, 7, 11, 20, 25])  # explicit rows give these variables
    k = len(pivots)

    class Toy:
        num_vars = n
        lower = np.full(n, -np.inf)
        upper = np.full(n, np.inf)
        cone_A = None  # noqa: N815 (the NLP interface's name)
        cone_b = None

    Toy.lower[7] = -0.05  # a bound on a pivot, near enough to enter the QP
    Toy.upper[0] = Toy.lower[0] = 0.3  # a fixed variable leaves the QP
    explicit = np.zeros((k, n))
    explicit[:, :] = rng.normal(size=(k, n)) * (rng.random((k, n)) < 0.3)
    explicit[:, pivots] = 0.0
    explicit[np.arange(k), pivots] = rng.uniform(0.5, 2.0, k)  # coefficient on its own pivot
    other = rng.normal(size=(p_other, n))  # the pivots appear in other rows too
    A_eq = np.vstack([other[:2], explicit, other[2:]])
    A_in = rng.normal(size=(m, n))
    cone = np.zeros((3, n))
    cone[0, 1], cone[1, 2], cone[2, 7] = 1.0, 1.0, 1.0  # t >= ||(x2, x7)|| with t = x1 + 1
    Toy.cone_A, Toy.cone_b = sp.csr_matrix(cone), np.array([1.0, 0.0, 0.0])
    ev = NlpEvaluation(
        r=np.zeros(0),
        c_eq=rng.normal(size=len(A_eq)) * 0.1,
        c_in=rng.normal(size=m) * 0.1,
        A_eq=sp.csr_matrix(A_eq),
        A_in=sp.csr_matrix(A_in),
    )
    L = rng.normal(size=(n, n))
    P = sp.csc_matrix(L @ L.T / n + 0.1 * np.eye(n))
    q = rng.normal(size=n)
    x = rng.normal(size=n) * 0.01
    x[0] = 0.3
    full = _Qp(Toy())
    assert full.explicit is None
    Toy.explicit_rows = (np.arange(2, 2 + k), pivots)
    reduced = _Qp(Toy())
    assert reduced.explicit is not None
    for qp in (full, reduced):  # tight, so that the comparison tests the algebra
        qp.settings.tol_gap_abs = qp.settings.tol_gap_rel = qp.settings.tol_feas = 1e-12
    d0, eq0, in0, status0 = full.Solve(P, q, ev, x)
    d1, eq1, in1, status1 = reduced.Solve(P, q, ev, x)
    assert "Solved" in status0 and status1 == "Solved (eliminated)", status1
    np.testing.assert_allclose(d1, d0, atol=1e-6)
    np.testing.assert_allclose(eq1, eq0, atol=1e-6)
    np.testing.assert_allclose(in1, in0, atol=1e-6)
    # The eliminated rows hold at the step.
    np.testing.assert_allclose(A_eq[2 : 2 + k] @ d1, -ev.c_eq[2 : 2 + k], atol=1e-9)
    assert np.abs(eq0).max() > 1e-3  # the multipliers are not all trivially zero
