"""The variational contact-implicit transcription on small systems with known answers.

- A point mass dropped on the ground: free fall matches z0 - g t^2 / 2 at the knots (the midpoint
  rule integrates a uniform field exactly), then it rests on the ground: no penetration, the
  normal force equals its weight, complementarity holds.
- A block sliding with speed v0 decelerates at mu g and stops after v0^2 / (2 mu g), for two mu.
- A double pendulum without contact: the variational integrator's energy error stays bounded over
  1000 steps, and its trajectory agrees with Drake's own error-controlled simulator.
- Every Python constraint's hand-written Jacobian agrees with central finite differences.

Every solve is re-checked by evaluating each binding at the solution (never trusting the solver).
"""

import numpy as np
import pytest
from pydrake.geometry import AddContactMaterial, HalfSpace, ProximityProperties, Sphere
from pydrake.math import RigidTransform
from pydrake.multibody.plant import AddMultibodyPlantSceneGraph, CoulombFriction, MultibodyPlant
from pydrake.multibody.tree import (
    FixedOffsetFrame,
    PrismaticJoint,
    RevoluteJoint,
    SpatialInertia,
    UnitInertia,
)
from pydrake.solvers import SnoptSolver
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import VectorLogSink

from drakebots.optimization import contact_implicit_constraints as constraints
from drakebots.optimization.contact_implicit import (
    CheckContactImplicitSolution,
    ContactGuessFromKnots,
    IdentifyContactModes,
    MakeContactImplicitProblem,
    ReconstructTrajectory,
    ResampleKnots,
    SetInitialGuess,
    SolveContactImplicit,
    SolveProximalFeasibility,
    SolverConfig,
    SolveWithFixedContactModes,
    SolveWithSlackHomotopy,
)
from drakebots.optimization.contact_implicit_constraints import BlockConstraintFunction
from drakebots.optimization.contact_implicit_costs import AddComplementarityPenalty
from drakebots.optimization.tree_lagrangian import RelativePositionConstraints, TreeLagrangian
from drakebots.optimization.variational import (
    PointContact,
    SimulateVariational,
    VariationalDynamics,
)
from tests.optimization._trees import MakeRandomTree

# Units: mm, s, kg for the point-mass systems (force in kg mm/s^2), so that positions, speeds and
# forces are all of order one for the solver.
G = 9810.0  # mm/s^2
TIGHT = SolverConfig(optimality_tolerance=1e-6, feasibility_tolerance=1e-7)
HOMOTOPY = (1e-2, 1e-4, 1e-6)
pytestmark = pytest.mark.skipif(not SnoptSolver().available(), reason="SNOPT not available")


def PointMassPlant(*, with_geometry=False, mu=0.5, time_step=0.0):
    """A 1 kg point mass on three prismatic joints x, y, z (v = qdot); optionally with a small
    sphere whose lowest point is the body origin, on a half space, for Drake's own simulator."""
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlantSceneGraph(builder, time_step=time_step)
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
    if with_geometry:
        properties = ProximityProperties()
        AddContactMaterial(friction=CoulombFriction(mu, mu), properties=properties)
        radius = 1.0  # mm
        plant.RegisterCollisionGeometry(
            parent, RigidTransform([0, 0, radius]), Sphere(radius), "ball", properties
        )
        plant.RegisterCollisionGeometry(
            plant.world_body(), RigidTransform(), HalfSpace(), "ground", properties
        )
        plant.set_penetration_allowance(1e-3)
    plant.mutable_gravity_field().set_gravity_vector([0, 0, -G])
    plant.Finalize()
    return builder, plant, parent


def PointMassDynamics(mu):
    _, plant, body = PointMassPlant()
    contact = PointContact(int(body.index()), np.zeros(3), "point")
    return VariationalDynamics(
        TreeLagrangian(plant), contacts=[contact], friction=mu, force_scale=G
    )


def DrakeSimulationGuess(mu, q0, v0, duration, num_knots):
    """Knots sampled from Drake's own simulation (compliant point contact, regularized friction):
    the warm start, as the authors warm-start from simulation; penetration clipped to zero."""
    builder, plant, _ = PointMassPlant(with_geometry=True, mu=mu, time_step=1e-4)
    log = builder.AddSystem(VectorLogSink(6, duration / (num_knots - 1) / 4))
    builder.Connect(plant.get_state_output_port(), log.get_input_port())
    diagram = builder.Build()
    context = diagram.CreateDefaultContext()
    plant_context = plant.GetMyContextFromRoot(context)
    plant.SetPositions(plant_context, q0)
    plant.SetVelocities(plant_context, v0)
    Simulator(diagram, context).AdvanceTo(duration)
    data = log.FindLog(context)
    q = ResampleKnots(data.sample_times(), data.data().T[:, :3], num_knots)
    q[:, 2] = np.maximum(q[:, 2], 0.0)
    return q


def SimulationProblem(dyn, q0, v0, h, num_knots):
    """The transcription used as a simulator (no cost but the exact penalty), warm-started from
    Drake's simulation."""
    problem = MakeContactImplicitProblem(
        dyn, num_knots=num_knots, time_step=h, initial=("velocity", v0), slack_bounds=(0.0, 1.0)
    )
    constraints.AddFixedPositions(problem.prog, problem.vars, 0, q0)
    AddComplementarityPenalty(problem.prog, problem.vars, weight=100.0)
    guess_q = DrakeSimulationGuess(dyn.friction, q0, v0, h * (num_knots - 1), num_knots)
    guess = ContactGuessFromKnots(dyn, guess_q, h, contact_tolerance=0.05)
    guess["q"] = guess_q
    SetInitialGuess(problem, guess)
    return problem


def SolveSimulationProblem(dyn, q0, v0, h, num_knots):
    """SimulationProblem solved with the relaxation driven to 1e-6 in stages."""
    problem = SimulationProblem(dyn, q0, v0, h, num_knots)
    outcome = SolveWithSlackHomotopy(problem, TIGHT, upper_bounds=HOMOTOPY)
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x, tolerance=1e-6)
    return problem, outcome, check, ReconstructTrajectory(problem, x)


def test_point_mass_drop_comes_to_rest():
    dyn = PointMassDynamics(mu=0.5)
    z0, h, N = 100.0, 0.005, 51  # mm, s
    t = h * np.arange(N)
    z_analytic = z0 - 0.5 * G * t**2
    _, outcome, check, traj = SolveSimulationProblem(dyn, [0, 0, z0], np.zeros(3), h, N)
    assert outcome.success, outcome.status
    assert check.max_violation <= 1e-6, check.MostViolated()
    falling = z_analytic > 0
    np.testing.assert_allclose(traj.q[falling, 2], z_analytic[falling], atol=1e-9 * z0)
    assert traj.phi.min() >= -1e-6  # no penetration
    # Resting: the last 20 knots are on the ground and the normal force is the weight.
    assert np.all(np.abs(traj.q[-20:, 2]) <= 1e-6)
    np.testing.assert_allclose(traj.contact_forces[-20:, 0, 2], G, rtol=1e-6)
    assert np.all(np.abs(traj.contact_forces[-20:, 0, :2]) <= 1e-6 * G)
    assert check.max_complementarity_violation <= 1e-6, check.complementarity
    assert check.max_dynamics_residual <= 1e-6 * G


@pytest.mark.parametrize("mu", [0.3, 0.8])
def test_block_slides_to_rest_at_mu_g(mu):
    dyn = PointMassDynamics(mu=mu)
    v0, a = 500.0, mu * G  # mm/s, mm/s^2
    stop_time, stop_distance = v0 / a, v0**2 / (2 * a)
    h = 0.004 if mu < 0.5 else 0.002
    N = int(np.ceil(1.25 * stop_time / h)) + 1
    _, outcome, check, traj = SolveSimulationProblem(dyn, [0, 0, 0], np.array([v0, 0, 0]), h, N)
    assert outcome.success, outcome.status
    assert check.max_violation <= 1e-6, check.MostViolated()
    assert check.max_complementarity_violation <= 1e-4, check.complementarity
    assert np.max(np.abs(traj.q[:, 2])) <= 1e-6  # it never leaves the ground
    assert traj.q[-1, 0] == pytest.approx(stop_distance, rel=0.02)
    # While sliding the midpoint velocities fall by mu g per unit time.
    sliding = traj.qdot[:, 0] > 0.05 * v0
    decel = -np.diff(traj.qdot[sliding, 0]) / h
    np.testing.assert_allclose(decel[1:], a, rtol=1e-3)
    # Friction opposes the motion and is mu times the normal force while sliding.
    k = np.flatnonzero(sliding)[1:-1]
    np.testing.assert_allclose(
        -traj.contact_forces[k, 0, 0], mu * traj.contact_forces[k, 0, 2], rtol=1e-4
    )
    # And it rests after the stop: zero velocity, no friction needed.
    assert np.all(np.abs(traj.qdot[-5:, 0]) <= 1e-6 * v0)


@pytest.mark.parametrize("keep_costs", [False, True])
def test_proximal_stage_restores_exact_complementarity_and_keeps_the_costs(keep_costs):
    """SolveProximalFeasibility (the second stage of the HAMR solves): from a perturbed,
    infeasible copy of the sliding block's solution it returns a point that satisfies every
    binding with the complementarity slack at 1e-6, near the known answer (the stop distance
    v0^2 / (2 mu g)), and leaves the program's costs and slack bounds as they were, whether
    the program's costs were set aside for the solve or kept beside the proximal term."""
    mu = 0.5
    dyn = PointMassDynamics(mu=mu)
    v0, a = 500.0, mu * G
    h, N = 0.004, 31
    problem, outcome, check, _ = SolveSimulationProblem(dyn, [0, 0, 0], np.array([v0, 0, 0]), h, N)
    assert outcome.success and check.max_violation <= 1e-6
    prog = problem.prog
    costs_before = [b.evaluator().get_description() for b in prog.GetAllCosts()]
    slack = next(
        b for b in problem.bindings["bounds"] if b.evaluator().get_description() == "slack_bounds"
    )
    bounds_before = (slack.evaluator().lower_bound().copy(), slack.evaluator().upper_bound().copy())
    x = outcome.result.get_x_val().copy()
    q_index = prog.FindDecisionVariableIndices(problem.vars.q[1:].ravel())
    x[q_index] += np.random.default_rng(1).normal(0.0, 0.5, len(q_index))  # mm
    assert CheckContactImplicitSolution(problem, x).max_violation > 1e-2
    polished = SolveProximalFeasibility(problem, x, TIGHT, keep_costs=keep_costs)
    y = polished.result.get_x_val()
    after = CheckContactImplicitSolution(problem, y, tolerance=1e-6)
    assert polished.success, polished.status
    assert after.max_violation <= 1e-6, after.MostViolated()
    # Every product within 1e-5 of the scaled units (forces in units of the weight, G here).
    assert after.max_complementarity_violation <= 1e-5 * G, after.complementarity
    assert after.max_slack <= 1e-6 + 1e-9
    traj = ReconstructTrajectory(problem, y)
    assert traj.q[-1, 0] == pytest.approx(v0**2 / (2 * a), rel=0.02)
    assert [b.evaluator().get_description() for b in prog.GetAllCosts()] == costs_before
    np.testing.assert_array_equal(slack.evaluator().lower_bound(), bounds_before[0])
    np.testing.assert_array_equal(slack.evaluator().upper_bound(), bounds_before[1])


def RelaxedSlidingBlock(mu=0.5, v0=500.0, h=0.004, N=31):
    """The sliding block solved with its complementarity relaxed to a slack up to 1e-2 (what
    the first stage of the HAMR solves hands on): (problem, x)."""
    problem = SimulationProblem(PointMassDynamics(mu=mu), [0, 0, 0], np.array([v0, 0, 0]), h, N)
    relaxed = SolveWithSlackHomotopy(problem, TIGHT, upper_bounds=(1e-2,))
    return problem, relaxed.result.get_x_val()


def test_fixed_contact_modes_make_the_relaxed_answer_exactly_complementary():
    """IdentifyContactModes + SolveWithFixedContactModes (the second stage of the HAMR solves):
    from the sliding block's answer to the RELAXED problem (slack up to 1e-2), the modes read off
    are the physical ones (on the ground throughout, sliding on one pyramid edge while it
    moves, sticking at rest), and the fixed-mode solve returns a point on every binding whose
    complementary products are all zero, with the stop distance v0^2 / (2 mu g); the program's
    bounds are as before."""
    mu, v0 = 0.5, 500.0
    a = mu * G
    problem, x = RelaxedSlidingBlock(mu, v0)
    relaxed_check = CheckContactImplicitSolution(problem, x)
    assert relaxed_check.max_violation <= 1e-6
    assert relaxed_check.max_complementarity_violation > 1e-8 * G  # the relaxation shows

    modes = IdentifyContactModes(problem, x)
    traj = ReconstructTrajectory(problem, x)
    assert modes.touching.all()
    moving = traj.qdot[:, 0] > 0.05 * v0  # interval k: from knot k to k+1
    # Resting: this interval and the one before it without motion (in the interval where it
    # stops, friction still acts).
    still = np.abs(traj.qdot[:, 0]) <= 1e-3 * v0
    resting = still & np.concatenate([[False], still[:-1]])
    assert moving.sum() >= 10 and modes.sliding[moving].all()
    assert resting.sum() >= 3 and not modes.sliding[resting].any()
    # Sliding, only the edge against the motion may carry force (eta = d.v + psi > 0 on the
    # other three); at rest v = psi = 0, so every eta is zero.
    assert (modes.edge_free[moving].sum(axis=1) == 1).all()
    assert modes.edge_free[resting].all()

    prog = problem.prog
    contact0 = problem.bindings["contact"][1].evaluator()
    before = (contact0.upper_bound().copy(), len(prog.bounding_box_constraints()))
    fixed = SolveWithFixedContactModes(problem, x, TIGHT, modes=modes, keep_costs=True)
    y = fixed.result.get_x_val()
    after = CheckContactImplicitSolution(problem, y, tolerance=1e-6)
    assert fixed.success, fixed.status
    assert after.max_violation <= 1e-6, after.MostViolated()
    assert after.max_complementarity_violation <= 1e-9 * G, after.complementarity
    polished = ReconstructTrajectory(problem, y)
    assert polished.q[-1, 0] == pytest.approx(v0**2 / (2 * a), rel=0.02)
    np.testing.assert_array_equal(contact0.upper_bound(), before[0])
    assert len(prog.bounding_box_constraints()) == before[1]


def test_misread_contact_modes_fail_visibly_and_leave_the_program_as_it_was():
    """Modes that contradict the physics (the block never touching the ground: every normal
    force fixed at zero, so it must fall through phi >= 0) admit no feasible point: the solve
    says so (no success, a violated binding), which is what sends SolveHamrProblem to its
    fallback, and every bound of the program is restored afterwards."""
    problem, x = RelaxedSlidingBlock()
    modes = IdentifyContactModes(problem, x)
    modes.touching[:] = False
    prog = problem.prog
    bounds_before = [
        (b.evaluator().lower_bound().copy(), b.evaluator().upper_bound().copy())
        for b in prog.GetAllConstraints()
    ]
    wrong = SolveWithFixedContactModes(problem, x, TIGHT, modes=modes, max_iterations=100)
    check = CheckContactImplicitSolution(problem, wrong.result.get_x_val())
    assert not (wrong.success and check.max_violation <= 1e-6), wrong.status
    bounds_after = [
        (b.evaluator().lower_bound(), b.evaluator().upper_bound()) for b in prog.GetAllConstraints()
    ]
    assert len(bounds_after) == len(bounds_before)
    for (lb0, ub0), (lb1, ub1) in zip(bounds_before, bounds_after, strict=True):
        np.testing.assert_array_equal(lb0, lb1)
        np.testing.assert_array_equal(ub0, ub1)


def DoublePendulumPlant():
    plant = MultibodyPlant(0.0)
    lengths, masses = [1.0, 0.8], [1.0, 0.7]
    parent, offset = plant.world_body(), RigidTransform()
    for i in range(2):
        L = lengths[i]
        G_Bo = UnitInertia.ThinRod(L, [0, 0, 1]).ShiftFromCenterOfMass([0, 0, L / 2])
        body = plant.AddRigidBody(f"link{i}", SpatialInertia(masses[i], [0, 0, -L / 2], G_Bo))
        frame = plant.AddFrame(FixedOffsetFrame(f"F{i}", parent.body_frame(), offset))
        plant.AddJoint(RevoluteJoint(f"joint{i}", frame, body.body_frame(), [0, 1, 0]))
        parent, offset = body, RigidTransform([0, 0, -L])
    plant.Finalize()
    return plant


def test_double_pendulum_energy_bounded_and_matches_drake():
    plant = DoublePendulumPlant()
    dyn = VariationalDynamics(TreeLagrangian(plant))
    q0, v0 = np.array([1.0, -0.5]), np.array([0.0, 1.0])
    context = plant.CreateDefaultContext()
    plant.SetPositions(context, q0)
    plant.SetVelocities(context, v0)
    E0 = plant.CalcKineticEnergy(context) + plant.CalcPotentialEnergy(context)
    # 1000 steps of 10 ms: a symplectic integrator's energy error oscillates without drift.
    _, energy = SimulateVariational(dyn, q0, v0, 0.01, 1000)
    error = np.abs(energy - E0)
    assert error.max() <= 2e-3 * abs(E0)
    assert error[500:].max() <= 2.0 * error[:500].max()
    # Small steps agree with Drake's error-controlled integrator (second-order convergence).
    T = 0.4
    simulator = Simulator(plant, context)
    simulator.get_mutable_integrator().set_target_accuracy(1e-12)
    simulator.AdvanceTo(T)
    reference = plant.GetPositions(context)
    errors = []
    for h in (4e-3, 2e-3):
        q, _ = SimulateVariational(dyn, q0, v0, h, int(round(T / h)))
        errors.append(np.abs(q[-1] - reference).max())
    assert errors[-1] <= 1e-4
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.25)  # O(h^2)


def test_transcription_reproduces_the_variational_integrator():
    """Solved as an NLP (no contact), the DEL knots equal the step-by-step Newton integration."""
    plant = DoublePendulumPlant()
    dyn = VariationalDynamics(TreeLagrangian(plant))
    q0, v0, h, N = np.array([1.0, -0.5]), np.array([0.0, 1.0]), 0.01, 31
    q_newton, _ = SimulateVariational(dyn, q0, v0, h, N - 1)
    problem = MakeContactImplicitProblem(dyn, num_knots=N, time_step=h, initial=("velocity", v0))
    constraints.AddFixedPositions(problem.prog, problem.vars, 0, q0)
    SetInitialGuess(problem, {"q": np.tile(q0, (N, 1))})
    outcome = SolveContactImplicit(problem, TIGHT)
    assert outcome.success, outcome.status
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    assert check.max_violation <= 1e-8
    np.testing.assert_allclose(ReconstructTrajectory(problem, x).q, q_newton, atol=1e-7)


def test_every_python_constraint_jacobian_matches_central_differences():
    """All constraint kinds of a problem with loops, contacts, actuation and a free time step."""
    plant, loops = MakeRandomTree(seed=11, floating=True)
    lag = TreeLagrangian(plant)
    rng = np.random.default_rng(4)
    Pi = np.linalg.qr(rng.normal(size=(3, 3)))[0][:, :2]
    constraints = RelativePositionConstraints(
        lag, [(b1, p1, b2, p2, Pi) for b1, p1, b2, p2 in loops]
    )
    contacts = [PointContact(b, p, f"c{i}") for i, (b, p, _, _) in enumerate(loops)]
    from drakebots.optimization.variational import LinearActuation

    n = plant.num_positions()
    B = rng.normal(size=(n, 3))
    dyn = VariationalDynamics(
        lag,
        contacts=contacts,
        friction=0.6,
        actuation=LinearActuation(B),
        position_constraints=constraints,
        force_scale=2.0,
    )
    checked = set()
    for initial in [("periodic",), ("velocity", rng.normal(size=n))]:
        problem = MakeContactImplicitProblem(
            dyn, num_knots=4, time_step=0.01, time_step_bounds=(0.005, 0.02), initial=initial
        )
        x_all = rng.uniform(-0.5, 0.5, problem.prog.num_vars())
        for binding in problem.prog.GetAllConstraints():
            evaluator = binding.evaluator()
            name = evaluator.get_description()
            idx = problem.prog.FindDecisionVariableIndices(binding.variables())
            x = x_all[idx]
            function = problem.functions.get(name)
            if function is None:
                continue
            r, blocks = function.function(function.Values(x), True)
            J = function.Jacobian(blocks, len(r))

            def value(xx, function=function):
                return function.function(function.Values(xx), False)[0]

            J_fd = np.column_stack(
                [(value(x + 1e-6 * e) - value(x - 1e-6 * e)) / 2e-6 for e in np.eye(len(x))]
            )
            np.testing.assert_allclose(
                J, J_fd, atol=1e-6 * max(1.0, np.abs(J_fd).max()), err_msg=name
            )
            # The declared sparsity pattern covers every nonzero.
            pattern = np.zeros_like(J, dtype=bool)
            rows, cols = zip(*evaluator.gradient_sparsity_pattern())
            pattern[list(rows), list(cols)] = True
            assert not np.any((J != 0) & ~pattern), name
            checked.add(name.split("[")[0])
    assert checked == {"dynamics", "loop", "contact", "clearance", "sliding"}


def test_block_constraint_function_chains_autodiff_gradients():
    """Given a non-identity input gradient, the returned gradient is J @ dx (chain rule)."""
    from pydrake.autodiffutils import ExtractGradient, InitializeAutoDiff

    fn = BlockConstraintFunction(
        lambda v, jac: (
            np.array([v["a"][0] * v["b"][0], np.sin(v["a"][1])]),
            {
                "a": np.array([[v["b"][0], 0.0], [0.0, np.cos(v["a"][1])]]),
                "b": np.array([[v["a"][0]], [0.0]]),
            }
            if jac
            else None,
        ),
        [("a", 2), ("b", 1)],
    )
    x = np.array([0.3, -0.4, 2.0])
    dx = np.arange(6.0).reshape(3, 2)
    y = fn(InitializeAutoDiff(x, dx))
    J = np.array([[2.0, 0.0, 0.3], [0.0, np.cos(-0.4), 0.0]])
    np.testing.assert_allclose(ExtractGradient(y), J @ dx, atol=1e-14)
