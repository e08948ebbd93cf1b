"""The fast path of the contact-implicit transcription: batched multibody terms, the vectorised
program with its Jacobian and Hessian, and IPOPT on them.

- Every batched quantity (forward kinematics, Lagrangian terms, contact points, loop rows and
  their derivatives, interval momenta) equals the one-configuration version of
  tree_lagrangian.py / variational.py, whose kinematics come from Drake's body poses, on trees
  with RPY-floating, welded and planar bases.
- The vectorised program equals Drake's evaluation of every binding and cost; its Jacobian and
  the Hessian of its Lagrangian equal central differences of its values and of its Lagrangian's
  gradient, for periodic, initial-velocity and initial-momentum problems, a free or a fixed time
  step, loops, contacts, nonlinear actuation and the foot-scuff cost; the Gauss-Newton Hessian
  equals the exact one without the dynamics rows' curvature.
- Small solves with the fast path are checked by CheckContactImplicitSolution (every binding
  re-evaluated through Drake) and against the known answer.
"""

import numpy as np
import pytest
from pydrake.math import RigidTransform
from pydrake.multibody.plant import MultibodyPlant
from pydrake.multibody.tree import (
    FixedOffsetFrame,
    PlanarJoint,
    RevoluteJoint,
    SpatialInertia,
    UnitInertia,
)

from drakebots.optimization import contact_implicit_constraints as constraints
from drakebots.optimization.batch_dynamics import BatchActuation, BatchIntervals, BatchTree
from drakebots.optimization.contact_implicit import (
    CheckContactImplicitSolution,
    MakeContactImplicitProblem,
    ReconstructTrajectory,
    SetInitialGuess,
    SolveContactImplicit,
    SolverConfig,
)
from drakebots.optimization.contact_implicit_costs import (
    AddComplementarityPenalty,
    AddFootScuffCost,
    AddVelocitySmoothnessCost,
)
from drakebots.optimization.contact_implicit_fast import (
    ContactImplicitNlp,
    FastPathSupport,
    FastPathUnsupported,
)
from drakebots.optimization.ipopt import IpoptAvailable
from drakebots.optimization.tree_lagrangian import RelativePositionConstraints, TreeLagrangian
from drakebots.optimization.variational import (
    JointForceActuation,
    LinearActuation,
    PointContact,
    VariationalDynamics,
)
from tests.optimization._trees import MakeRandomTree

needs_ipopt = pytest.mark.skipif(not IpoptAvailable()[0], reason=IpoptAvailable()[1])


def PlanarRobot():
    """A planar base (x, y, theta) carrying a revolute link: the planar joint's kinematics."""
    plant = MultibodyPlant(0.0)
    base = plant.AddRigidBody("base", SpatialInertia.SolidBoxWithMass(1.0, 0.3, 0.2, 0.1))
    plant.AddJoint(PlanarJoint("base_joint", plant.world_frame(), base.body_frame(), [0, 0, 0]))
    G = UnitInertia.ThinRod(0.5, [0, 0, 1]).ShiftFromCenterOfMass([0, 0, 0.25])
    link = plant.AddRigidBody("link", SpatialInertia(0.4, [0, 0, 0.25], G))
    frame = plant.AddFrame(
        FixedOffsetFrame("F", base.body_frame(), RigidTransform([0.1, 0.05, 0.0]))
    )
    plant.AddJoint(RevoluteJoint("link_joint", frame, link.body_frame(), [0, 0, 1], damping=0.1))
    plant.Finalize()
    return plant


def Law(u, x):
    """A nonlinear actuator force law with nonzero second derivatives (F, dF/du, dF/dx)."""
    return u * x + 0.5 * u**2 + np.sin(x), x + u, u + np.cos(x)


def RandomDynamics(seed=11, *, floating=True, actuation="joint"):
    """A random tree (11 or 5 positions) with two loops, two contacts, damping and springs."""
    plant, loops = MakeRandomTree(seed=seed, floating=floating)
    lag = TreeLagrangian(plant)
    rng = np.random.default_rng(seed)
    Pi = np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :2]
    position_constraints = RelativePositionConstraints(
        lag, [(b1, p1, b2, p2, Pi) for b1, p1, b2, p2 in loops]
    )
    contacts = [PointContact(b, p, f"c{i}") for i, (b, p, _, _) in enumerate(loops)]
    n = plant.num_positions()
    if actuation == "joint":
        act = JointForceActuation(n, [n - 1, n - 3], Law)
    else:
        act = LinearActuation(rng.normal(size=(n, 3)))
    return VariationalDynamics(
        lag,
        contacts=contacts,
        friction=0.6,
        actuation=act,
        position_constraints=position_constraints,
        force_scale=2.0,
    )


# ---------------------------------------------------------------------------- batched terms
@pytest.mark.parametrize("robot", ["floating", "welded", "planar"])
def test_batched_terms_equal_the_one_configuration_versions(robot):
    if robot == "planar":
        plant = PlanarRobot()
        lag = TreeLagrangian(plant)
        loops = None
        contacts = [(2, np.array([0.0, 0.1, 0.5]))]
    else:
        plant, pairs = MakeRandomTree(seed=3, floating=robot == "floating")
        lag = TreeLagrangian(plant)
        rng = np.random.default_rng(1)
        Pis = [np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :k] for k in (2, 3)]
        # Loops of two row counts (evaluated in two groups).
        loops = RelativePositionConstraints(
            lag, [(b1, p1, b2, p2, Pi) for (b1, p1, b2, p2), Pi in zip(pairs, Pis)]
        )
        contacts = [(b, p) for b, p, _, _ in pairs]
    tree = BatchTree(lag, loops)
    rng = np.random.default_rng(7)
    n = plant.num_positions()
    K = 4
    q = rng.uniform(-1, 1, (K, n))
    v = rng.normal(size=(K, n))
    kin = tree.Kinematics(q)
    terms = tree.Terms(kin, v)
    bodies = [b for b, _ in contacts]
    p_BC = np.array([p for _, p in contacts])
    points = tree.PointsPosition(kin, bodies, p_BC)
    J = tree.PointsJacobian(kin, bodies, points)
    f = rng.normal(size=(K, len(bodies), 3))
    H = tree.PointsHessianTimes(kin, bodies, points, f)
    if loops is not None:
        lam = rng.normal(size=(K, loops.num_constraints))
        c, C, HL = tree.LoopResidual(kin), tree.LoopJacobian(kin), tree.LoopHessianTimes(kin, lam)
    for k in range(K):
        one = lag.CalcKinematics(q[k])
        for name in ("S", "R_WB", "p_WB", "com", "inertia"):
            np.testing.assert_allclose(
                getattr(kin, name)[k], getattr(one, name), atol=1e-12, err_msg=name
            )
        t = lag.Terms(one, v[k])
        for name in ("M", "Mv", "P", "T_q", "T_qq", "V_q", "V_qq"):
            np.testing.assert_allclose(
                getattr(terms, name)[k], getattr(t, name), atol=1e-10, err_msg=name
            )
        assert terms.kinetic_energy[k] == pytest.approx(t.kinetic_energy, abs=1e-12)
        assert terms.potential_energy[k] == pytest.approx(t.potential_energy, abs=1e-12)
        one_points = lag.PointsPosition(one, bodies, p_BC)
        np.testing.assert_allclose(points[k], one_points, atol=1e-12)
        np.testing.assert_allclose(J[k], lag.PointsJacobian(one, bodies, one_points), atol=1e-12)
        np.testing.assert_allclose(
            H[k], lag.PointsHessianTimes(one, bodies, one_points, f[k]), atol=1e-10
        )
        if loops is not None:
            np.testing.assert_allclose(c[k], loops.Evaluate(one), atol=1e-12)
            np.testing.assert_allclose(C[k], loops.Jacobian(one), atol=1e-12)
            np.testing.assert_allclose(
                HL[k], loops.JacobianTransposeTimesDerivative(one, lam[k]), atol=1e-10
            )


@pytest.mark.parametrize("actuation", ["joint", "linear"])
def test_batched_intervals_equal_variational_dynamics(actuation):
    dyn = RandomDynamics(actuation=actuation)
    tree = BatchTree(dyn.lagrangian, dyn.position_constraints)
    act = BatchActuation(dyn.actuation, dyn.num_positions)
    rng = np.random.default_rng(2)
    K, n, m = 3, dyn.num_positions, dyn.num_inputs
    q0, q1 = rng.uniform(-1, 1, (K, n)), rng.uniform(-1, 1, (K, n))
    u = rng.normal(size=(K, m))
    h = 0.03
    batch = BatchIntervals(tree, act, dyn.lagrangian.damping, q0, q1, u, h)
    for k in range(K):
        one = dyn.Interval(q0[k], q1[k], u[k], h)
        np.testing.assert_allclose(batch.p_plus[k], one.p_plus, atol=1e-10)
        np.testing.assert_allclose(batch.p_minus[k], one.p_minus, atol=1e-10)
        for a, b in zip(batch.d_plus + batch.d_minus, one.d_plus + one.d_minus):
            np.testing.assert_allclose(a[k], b, atol=1e-9)


# ---------------------------------------------------------------------------- the program
def _Problem(kind: str):
    """Small programs of each shape the fast path knows, with a point off the solution."""
    rng = np.random.default_rng(5)
    if kind == "hamr":
        from drakebots.hamr import trajopt as ht

        model = ht.MakeHamrTrajoptModel("cardstock")
        N = 4
        h = 1000.0 / 30.0 / (N - 1)
        q = model.home + 1e-3 * rng.normal(size=(N, model.plant.num_positions()))
        warm = ht.WarmStart(q=q, u=np.full((N - 1, 8), 110.0), h=h, source="test")
        problem = ht.MakeHamrGaitProblem(model, 30.0, warm, ht.GaitSettings(num_knots=N))
        x = problem.prog.initial_guess() + 1e-3 * rng.normal(size=problem.prog.num_vars())
        return problem, x
    dyn = RandomDynamics()
    n = dyn.num_positions
    N = 4
    if kind == "periodic":
        initial, bounds = ("periodic",), (0.005, 0.02)
    elif kind == "velocity":
        initial, bounds = ("velocity", rng.normal(size=n)), (0.005, 0.02)
    else:
        initial, bounds = ("momentum", rng.normal(size=n)), None
    problem = MakeContactImplicitProblem(
        dyn, num_knots=N, time_step=0.01, time_step_bounds=bounds, initial=initial
    )
    AddComplementarityPenalty(problem.prog, problem.vars, weight=3.0)
    AddVelocitySmoothnessCost(problem.prog, problem.vars, weight=0.5)
    AddFootScuffCost(problem.prog, problem.vars, dyn, weight=2.0, height_scale=0.3)
    if kind == "momentum":
        constraints.AddFixedPositions(problem.prog, problem.vars, 0, np.zeros(n))
    x = rng.uniform(-0.5, 0.5, problem.prog.num_vars())
    if problem.vars.h is not None:
        x[problem.prog.FindDecisionVariableIndices(problem.vars.h)] = 0.011
    return problem, x


def _CentralJacobian(function, x, eps=1e-6):
    return np.column_stack(
        [(function(x + eps * e) - function(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    )


@pytest.mark.parametrize("kind", ["hamr", "periodic", "velocity", "momentum"])
def test_vectorised_program_matches_drake_and_central_differences(kind):
    problem, x = _Problem(kind)
    prog = problem.prog
    nlp = ContactImplicitNlp(problem)
    nlp.Prepare(x)
    # Values: every binding and cost as Drake evaluates it.
    g = nlp.Constraints(x)
    for binding, start, count in nlp._row_bindings:
        drake = binding.evaluator().Eval(x[prog.FindDecisionVariableIndices(binding.variables())])
        np.testing.assert_allclose(
            g[start : start + count],
            np.asarray(drake, float).ravel(),
            atol=1e-9 * max(1.0, np.abs(drake).max()),
            err_msg=binding.evaluator().get_description(),
        )
    cost = sum(
        float(np.asarray(b.evaluator().Eval(x[prog.FindDecisionVariableIndices(b.variables())]))[0])
        for b in prog.GetAllCosts()
    )
    assert nlp.Objective(x) == pytest.approx(cost, rel=1e-12)
    # First derivatives.
    J = nlp.Jacobian(x).toarray()
    J_fd = _CentralJacobian(nlp.Constraints, x)
    scale = np.maximum(1.0, np.abs(J_fd).max(axis=1, keepdims=True))
    assert np.max(np.abs(J - J_fd) / scale) < 1e-6
    grad_fd = _CentralJacobian(lambda z: np.array([nlp.Objective(z)]), x)[0]
    np.testing.assert_allclose(nlp.Gradient(x), grad_fd, atol=1e-6 * max(1, np.abs(grad_fd).max()))
    # The Hessian of the Lagrangian against differences of its gradient, and the Gauss-Newton
    # Hessian against the same without the dynamics rows' curvature (one set of differences).
    rng = np.random.default_rng(9)
    y = rng.uniform(-1, 1, nlp.num_rows)
    y_no_dynamics = y.copy()
    y_no_dynamics[nlp.del_rows.ravel()] = 0.0
    sigma, eps = 0.7, 1e-6
    columns, columns_gn = [], []
    for e in np.eye(len(x)):
        dg = (nlp.Jacobian(x + eps * e) - nlp.Jacobian(x - eps * e)) / (2 * eps)
        df = sigma * (nlp.Gradient(x + eps * e) - nlp.Gradient(x - eps * e)) / (2 * eps)
        columns.append(df + dg.T @ y)
        columns_gn.append(df + dg.T @ y_no_dynamics)
    H_fd, H_gn_fd = np.array(columns), np.array(columns_gn)
    H_fd, H_gn_fd = 0.5 * (H_fd + H_fd.T), 0.5 * (H_gn_fd + H_gn_fd.T)
    H = nlp.Hessian(x, sigma, y).toarray()
    assert np.max(np.abs(H - H_fd)) < 1e-6 * max(1.0, np.abs(H_fd).max())
    gn = ContactImplicitNlp(problem, hessian="gauss-newton")
    gn.Prepare(x)
    H_gn = gn.Hessian(x, sigma, y).toarray()
    assert np.max(np.abs(H_gn - H_gn_fd)) < 1e-6 * max(1.0, np.abs(H_gn_fd).max())
    assert np.abs(H - H_gn).max() > 1e-5 * np.abs(H).max()  # what it leaves out is not nothing


def test_jacobian_and_hessian_patterns_hold_every_nonzero():
    """Away from the points the patterns were sampled at, nothing but rounding falls outside
    them (the Hessian's differences along y leave ~1e-8 of noise where the exact value is 0)."""
    problem, x = _Problem("periodic")
    nlp = ContactImplicitNlp(problem)
    nlp.Prepare(x)
    rng = np.random.default_rng(8)
    for _ in range(2):
        z = x + rng.normal(size=x.size)
        z[problem.prog.FindDecisionVariableIndices(problem.vars.h)] = 0.012
        P = nlp._Evaluate(z)
        for name, _rows, entries in nlp._JacobianBlocks(P):
            for group, _cols, values in entries:
                values = np.asarray(values)
                outside = values[:, ~nlp._jac_masks[(name, group)]]
                assert np.all(np.abs(outside) <= 1e-12 * np.abs(values).max()), (name, group)
        for name, _cols, values in nlp._HessianBlocks(P, 1.0, rng.normal(size=nlp.num_rows)):
            d = values.shape[-1]
            outside = values[:, np.tril(np.ones((d, d), bool)) & ~nlp._hess_masks[name]]
            assert np.all(np.abs(outside) <= 1e-7 * np.abs(values).max()), name


def test_unknown_bindings_are_refused_by_name():
    problem, _ = _Problem("periodic")
    prog, vars = problem.prog, problem.vars
    binding = prog.AddConstraint(lambda z: np.array([z[0] * z[1]]), [0.0], [1.0], vars.q[1, :2])
    binding.evaluator().set_description("my_constraint")
    with pytest.raises(FastPathUnsupported, match="my_constraint"):
        ContactImplicitNlp(problem)
    supported, reason = FastPathSupport(problem)
    assert not supported and "my_constraint" in reason


# ---------------------------------------------------------------------------- solves
G = 9810.0  # mm/s^2 (mm, s, kg)


def PointMassDynamics(mu):
    from pydrake.multibody.tree import PrismaticJoint

    plant = MultibodyPlant(0.0)
    parent = plant.world_body()
    for i, axis in enumerate("xyz"):
        inertia = (
            SpatialInertia.SolidSphereWithMass(1.0, 0.05) if axis == "z" else SpatialInertia.Zero()
        )
        body = plant.AddRigidBody(f"body_{axis}", inertia)
        plant.AddJoint(
            PrismaticJoint(f"{axis}", parent.body_frame(), body.body_frame(), np.eye(3)[i])
        )
        parent = body
    plant.mutable_gravity_field().set_gravity_vector([0, 0, -G])
    plant.Finalize()
    contact = PointContact(int(parent.index()), np.zeros(3), "point")
    return VariationalDynamics(
        TreeLagrangian(plant), contacts=[contact], friction=mu, force_scale=G
    )


@needs_ipopt
def test_fast_solve_of_a_falling_point_mass_is_accepted_and_exact():
    """A point mass dropped from 20 mm lands and rests: free fall z0 - g t^2/2 at the knots, the
    weight carried by the ground afterwards, every binding satisfied (checked through Drake)
    with the true complementarity."""
    dyn = PointMassDynamics(mu=0.5)
    z0, h, N = 20.0, 0.005, 31
    problem = MakeContactImplicitProblem(
        dyn, num_knots=N, time_step=h, initial=("velocity", np.zeros(3)), slack_bounds=(0.0, 1e-6)
    )
    constraints.AddFixedPositions(problem.prog, problem.vars, 0, [0, 0, z0])
    AddComplementarityPenalty(problem.prog, problem.vars, weight=100.0)
    t = h * np.arange(N)
    z_guess = np.maximum(z0 - 0.5 * G * t**2, 0.0)
    SetInitialGuess(problem, {"q": np.column_stack([np.zeros(N), np.zeros(N), z_guess])})
    config = SolverConfig(solver="fast", optimality_tolerance=1e-8, feasibility_tolerance=1e-9)
    outcome = SolveContactImplicit(problem, config)
    assert outcome.success, outcome.status
    assert outcome.solver == "fast" and outcome.iterations > 0
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x, tolerance=1e-7)
    assert check.max_violation <= 1e-7, check.MostViolated()
    assert check.max_complementarity_violation <= 1e-6
    traj = ReconstructTrajectory(problem, x)
    falling = z0 - 0.5 * G * t**2 > 0
    np.testing.assert_allclose(traj.q[falling, 2], (z0 - 0.5 * G * t**2)[falling], atol=1e-6)
    np.testing.assert_allclose(traj.contact_forces[-10:, 0, 2], G, rtol=1e-5)
    # The profile splits the time as the benchmark reports it.
    profile = outcome.profile
    assert profile["evaluation_s"] > 0 and profile["jacobian_nonzeros"] > 0


_ORDER_SCRIPT = """
import sys
import numpy as np
from drakebots.optimization.legged import GaitConfig, OptimizeGait
if sys.argv[1] == "mkl-first":
    import scipy.sparse as sp
    from drakebots.fem import pardiso
    pardiso.Pardiso().Factor(sp.eye(3, format="csc"))  # MKL loads its threading layer
result = OptimizeGait(GaitConfig(robot=sys.argv[2], period=0.5, distance=0.2))
np.save(sys.argv[3], result.q)
"""


def test_the_fast_paths_answer_does_not_depend_on_what_loaded_first(tmp_path):
    """The same gait solved in two fresh processes, one of which factorises with PARDISO (MKL,
    and with it Intel's OpenMP runtime) before IPOPT loads: the plans are the same to round-off.
    Before IPOPT's library was opened with RTLD_DEEPBIND, CasADi's MUMPS and OpenBLAS took their
    OpenMP symbols from Intel's runtime when MKL came first, and the hopper's plan became another
    local solution (Drake's re-simulation 39 % off its distance against 8 %). Shown to fail with
    the library opened in the default mode."""
    import subprocess
    import sys
    from pathlib import Path

    from drakebots.fem import pardiso

    if not IpoptAvailable()[0] or not pardiso.Available():
        pytest.skip("needs both IPOPT's library and MKL")
    hopper = Path(__file__).parents[2] / "scripts" / "examples" / "hopper" / "hopper.yaml"
    plans = {}
    for order in ("ipopt-only", "mkl-first"):
        out = tmp_path / f"{order}.npy"
        run = subprocess.run(
            [sys.executable, "-c", _ORDER_SCRIPT, order, str(hopper), str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        plans[order] = np.load(out)
    assert np.abs(plans["mkl-first"] - plans["ipopt-only"]).max() <= 1e-9
