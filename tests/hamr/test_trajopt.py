"""HAMR-VI in the variational contact-implicit transcription.

Default (fast): a tiny gait problem (5 knots) builds, every constraint is named and evaluates,
the warm start from the transcription's own time stepping satisfies the dynamics except where
periodicity is imposed, and the hand-written Jacobians of the HAMR bindings agree with central
differences; the warm start's step halving and the budgeted stage's quiet log. Slow: the full
10 Hz gait and the jump solve and reach the paper's targets, the 2 Hz and 10 Hz cardstock plans
track within 30 % in Drake's simulator, and the 10 Hz teflon warm start stays in its bounds.
"""

import numpy as np
import pytest

from drakebots.hamr import trajopt as ht
from drakebots.hamr.workflows import FIRST_STAGE_ITERATIONS
from drakebots.optimization.contact_implicit import (
    CheckContactImplicitSolution,
    ReconstructTrajectory,
    SolverConfig,
)


@pytest.fixture(scope="module")
def model():
    return ht.MakeHamrTrajoptModel("cardstock")


@pytest.fixture(scope="module")
def tiny(model):
    # 30 Hz with 9 knots: 4.2 ms steps, 16 steps of time stepping for the warm start.
    warm = ht.GaitWarmStart(model, 30.0, 9, cycles=2)
    problem = ht.MakeHamrGaitProblem(model, 30.0, warm, ht.GaitSettings(num_knots=9))
    return warm, problem


def test_model_matches_the_paper(model):
    assert model.plant.num_positions() == 38
    assert model.dynamics.num_position_constraints == 24
    assert model.dynamics.num_contacts == 4
    assert model.dynamics.num_inputs == 8
    assert model.friction == pytest.approx(0.51)
    assert model.weight == pytest.approx(1.475 * 9.81e-3, rel=1e-3)
    lower, upper = model.PositionBounds()
    flex = model.FlexureIndices()
    assert len(flex) == 24
    np.testing.assert_allclose(upper[flex], np.pi / 4)
    # The home pose closes every loop and stands on the four feet.
    c = model.dynamics.PositionConstraintResidual(model.home, jacobian=False)[0]
    assert np.max(np.abs(c)) < 1e-9
    np.testing.assert_allclose(model.dynamics.SignedDistances(model.home), 0.0, atol=1e-9)


def _AuthorsBenderForce(V, q, orientation):
    """Eq. 3's force source F_s(u, q), computed here by hand from the authors' numbers
    (shared/reference/hamr-vi/README.md: their PZTBender, after Jafferis et al. 2015) and
    independently of drakebots.hamr.piezo. Units mm, V, N.

    Each PZT plate's force per volt is C = (0.75 / l_act) f31(q) w_n (t_pzt + t_cf) GF, where
    f31 moves from its blocked value (0.024) towards its free value (0.032) in proportion to the
    deflection over the free deflection δ_f; the top plate sees V_b - V, the bottom plate V - V_g.
    Returns (F_s, ∂F_s/∂q, ∂F_s/∂V, the bender's stiffness K of the same model).
    """
    t_act, t_pzt, w_n, w_r, l_ext, l_act = 0.335, 0.135, 3.5, 1.5, 1.0, 9.2
    f_b, f_f, E_pzt, E_cf, V_b, V_g = 0.024, 0.032, 40e3, 340e3, 225.0, 0.0
    t_cf = t_act - 2 * t_pzt
    lr = l_ext / l_act
    gf = (8 * (1 - w_r) ** 3 * (1 + 2 * lr)) / (
        -6 * (w_r - 1) * (-3 + 4 * lr * (w_r - 1) + 2 * w_r)
        + 3 * (-2 + 2 * lr * (w_r - 1) + w_r) ** 2 * np.log((2 - w_r) / w_r)
    )
    rigidity = E_pzt * t_pzt * (1.5 * t_cf**2 + 3 * t_cf * t_pzt + 2 * t_pzt**2) / 3 + (
        E_cf * t_cf**3 / 12
    )
    field = (V_b - V_g) / t_pzt
    delta_f = 0.25 * (1 + 2 * lr) * f_f * t_pzt * l_act**2 * field * (t_pzt + t_cf) / rigidity
    stiffness = 3 * (f_b / f_f) * (w_n / l_act**3) * gf * rigidity / (1 + 2 * lr)
    per_f31 = 0.75 / l_act * w_n * (t_pzt + t_cf) * gf
    s = orientation
    c_top = per_f31 * (f_b - s * q / delta_f * (f_f - f_b))
    c_bottom = per_f31 * (f_b + s * q / delta_f * (f_f - f_b))
    force = s * (c_top * (V_b - V) - c_bottom * (V - V_g))
    dc = per_f31 * (f_f - f_b) / delta_f
    dforce_dq = s * (-s * dc * (V_b - V) - s * dc * (V - V_g))
    dforce_dV = -s * (c_top + c_bottom)
    return force, dforce_dq, dforce_dV, stiffness


def test_piezo_actuation_through_the_bender_model(model):
    """Eq. 3's force source on the 8 actuator joints against the authors' bender model computed by
    hand (_AuthorsBenderForce), at voltages across [0, 225] V and deflections across the joints'
    ±0.3 mm, with the authors' orientations (front benders -1, rear +1: their HamrActuators).
    The hand model's own stiffness must equal the swing spring of the authors' URDF (1.1556 N/mm),
    an independent check of its geometry factor and laminate rigidity."""
    assert _AuthorsBenderForce(0.0, 0.0, 1.0)[3] == pytest.approx(1.1556, abs=1e-4)
    act = model.actuator_joints
    orientation = np.array([-1.0 if name[0] == "F" else 1.0 for name in model.actuator_names])
    rng = np.random.default_rng(7)
    cases = [(np.full(8, 112.5), np.zeros(8)), (np.zeros(8), np.zeros(8))]
    cases += [(rng.uniform(0, 225, 8), rng.uniform(-0.3, 0.3, 8)) for _ in range(4)]
    for voltage, deflection in cases:
        q = model.home.copy()
        q[act] = deflection
        tau, tau_q, tau_u = model.dynamics.actuation.Evaluate(q, voltage)
        force, dforce_dq, dforce_dV, _ = _AuthorsBenderForce(voltage, deflection, orientation)
        np.testing.assert_allclose(tau[act], force, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(np.diag(tau_q)[act], dforce_dq, rtol=1e-9)
        np.testing.assert_allclose(tau_u[act, np.arange(8)], dforce_dV, rtol=1e-9)
        others = np.setdiff1d(np.arange(len(q)), act)
        assert not np.any(tau[others]), "B^T is the selection of the actuator joints"
    # The paper's operating point: no force at the mid voltage and zero deflection; the blocked
    # force at the rails is C0 f31_b V_b (0.324 N), within the authors' ±0.28/±0.36 N bounds.
    assert _AuthorsBenderForce(225.0, 0.0, 1.0)[0] == pytest.approx(-0.324, abs=1e-3)


def test_tiny_gait_problem_builds_and_evaluates(tiny, model):
    warm, problem = tiny
    prog = problem.prog
    names = [b.evaluator().get_description() for b in prog.GetAllConstraints()]
    assert all(names), "every binding is named"
    for kind in (
        "dynamics[0]",
        "dynamics[7]",
        "loop[0]",
        "contact[0]",
        "sliding[7]",
        "friction_cone[0]",
        "friction_complementarity[0]",
        "pyramid_complementarity[0]",
        "periodic_positions",
        "position_bounds",
        "input_bounds",
        "slack_bounds",
    ):
        assert kind in names, kind
    x = prog.initial_guess()
    assert not np.any(np.isnan(x))
    check = CheckContactImplicitSolution(problem, x, tolerance=1e-4)
    # The warm start integrates the transcription's own dynamics: only knot 0 (whose momentum
    # comes from the last interval, by periodicity), the periodicity itself and the plan's joint
    # bounds (a simulation does not know them) may be violated.
    offending = set(check.violations)
    assert offending <= {"dynamics[0]", "periodic_positions", "position_bounds"}, (
        check.MostViolated()
    )
    assert check.max_loop_residual < 1e-4


def test_hamr_binding_jacobians_match_central_differences(tiny):
    _, problem = tiny
    prog = problem.prog
    x_all = prog.initial_guess()
    rng = np.random.default_rng(0)
    for name in ("dynamics[0]", "dynamics[5]", "sliding[1]", "contact[1]", "loop[2]"):
        binding = next(
            b for b in prog.GetAllConstraints() if b.evaluator().get_description() == name
        )
        fn = problem.functions[name]
        x = x_all[prog.FindDecisionVariableIndices(binding.variables())]
        x = x + 1e-4 * rng.standard_normal(len(x))
        r, blocks = fn.function(fn.Values(x), True)
        J = fn.Jacobian(blocks, len(r))

        def value(xx, fn=fn):
            return fn.function(fn.Values(xx), False)[0]

        eps = 1e-6
        J_fd = np.column_stack(
            [(value(x + eps * e) - value(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
        )
        np.testing.assert_allclose(J, J_fd, atol=1e-5 * max(1.0, np.abs(J_fd).max()), err_msg=name)


def test_foot_scuff_cost_value_and_gradient(model):
    """The scuff cost against hand-computed values (a body translation moves every foot by the
    same displacement; the weight is exp(-mean height / delta)) and its analytic gradient, read
    through Drake's AutoDiff evaluation of the binding, against central differences."""
    from pydrake.autodiffutils import ExtractGradient, InitializeAutoDiff
    from pydrake.solvers import MathematicalProgram

    from drakebots.optimization.contact_implicit_costs import AddFootScuffCost, FootScuff
    from drakebots.optimization.contact_implicit_variables import AddContactImplicitVariables

    dyn, idx, delta = model.dynamics, model.index, 0.3
    q0 = model.home.copy()
    # Standing still: nothing to pay.
    assert FootScuff(dyn, q0, q0, height_scale=delta, jacobian=False)[0] == 0.0
    # The body slides 0.2 mm forward and 0.1 mm sideways on the ground: four feet pay 1/2 |d|^2.
    q1 = q0.copy()
    q1[idx["base_x"]] += 0.2
    q1[idx["base_y"]] += 0.1
    value = FootScuff(dyn, q0, q1, height_scale=delta, jacobian=False)[0]
    assert value == pytest.approx(4 * 0.5 * 0.05, rel=1e-9)
    # The same slide delta above the ground pays e times less.
    q0_up, q1_up = q0.copy(), q1.copy()
    q0_up[idx["base_z"]] += delta
    q1_up[idx["base_z"]] += delta
    value_up = FootScuff(dyn, q0_up, q1_up, height_scale=delta, jacobian=False)[0]
    assert value_up == pytest.approx(value / np.e, rel=1e-9)
    # A vertical lift alone is free of tangential displacement.
    assert FootScuff(dyn, q0, q0_up, height_scale=delta, jacobian=False)[0] == pytest.approx(0)

    prog = MathematicalProgram()
    vars = AddContactImplicitVariables(prog, dyn, 2, time_step=5.0)
    (binding,) = AddFootScuffCost(prog, vars, dyn, weight=7.0, height_scale=delta)
    assert binding.evaluator().get_description() == "foot_scuff[0]"
    rng = np.random.default_rng(3)
    x = np.concatenate([q0_up, q1_up]) + 0.02 * rng.standard_normal(2 * len(q0))
    gradient = ExtractGradient(binding.evaluator().Eval(InitializeAutoDiff(x)))[0]
    assert binding.evaluator().Eval(x)[0] == pytest.approx(
        7.0 * FootScuff(dyn, x[: len(q0)], x[len(q0) :], height_scale=delta, jacobian=False)[0]
    )
    eps = 1e-6
    fd = np.array(
        [
            (binding.evaluator().Eval(x + eps * e)[0] - binding.evaluator().Eval(x - eps * e)[0])
            / (2 * eps)
            for e in np.eye(len(x))
        ]
    )
    np.testing.assert_allclose(gradient, fd, atol=1e-7 * max(1.0, np.abs(fd).max()))
    assert np.abs(fd).max() > 1e-3  # the test sees a gradient, not zeros


def test_budgeted_first_stage_does_not_warn_but_a_repair_out_of_iterations_does(tiny, caplog):
    """The first stage runs to its budget on purpose: Drake's iteration-limit warning is dropped
    there (its status is in `stages`) and kept for the repair, where it is a failure."""
    import logging

    _, problem = tiny
    config = SolverConfig(solver="ipopt", major_iterations=50)
    with caplog.at_level(logging.WARNING, logger="drake"):
        outcome = ht.SolveHamrProblem(
            problem, config, first_stage_iterations=3, repair_iterations=3
        )
    assert [status.split(":")[0] for status, _ in outcome.stages] == [
        "paper problem",
        "true complementarity",
    ]
    assert all("Max iteration" in status for status, _ in outcome.stages)
    warned = [r for r in caplog.records if "maximum iteration limit" in r.getMessage()]
    assert len(warned) == 1  # the repair's
    assert not logging.getLogger("drake").filters  # the filter does not outlive the stage


def test_warm_start_halves_its_steps_while_the_stride_leaves_the_bounds(model, monkeypatch):
    """GaitWarmStart simulates again with halved steps while its last stride leaves the position
    bounds, and reports how far the stride it returns leaves them. The simulation is a stand-in
    here (a stride that swings a flexure past pi/4 at steps longer than 2 ms, the home pose
    otherwise); the slow test below runs the real one."""
    from types import SimpleNamespace

    import drakebots.optimization.contact_implicit as ci

    steps = []
    flexure = model.FlexureIndices()[0]

    def Simulate(dynamics, q0, qdot0, dt, inputs, **kwargs):
        steps.append(dt)
        q = np.tile(q0, (len(inputs) + 1, 1))
        if dt > 2.0:
            q[-len(q) // 4 :, flexure] = np.pi / 4 + 0.5  # in the last stride
        return SimpleNamespace(q=q, forces={})

    monkeypatch.setattr(ci, "SimulateContactImplicit", Simulate)
    warm = ht.GaitWarmStart(model, 10.0, 21)  # 5 ms knots: 5, 2.5, then 1.25 ms steps
    assert steps == pytest.approx([5.0, 2.5, 1.25])
    assert warm.bounds_excursion <= 0.0 and "4 steps of 1.25 ms" in warm.source
    lower, upper = model.PositionBounds()
    assert np.all((warm.q >= lower) & (warm.q <= upper))
    # Never inside the bounds: WARM_START_HALVINGS halvings, and the excursion is reported.
    steps.clear()
    monkeypatch.setattr(ht, "WARM_START_HALVINGS", 1)
    warm = ht.GaitWarmStart(model, 2.0, 21)  # 25 ms knots: 5, then 2.5 ms steps
    assert steps == pytest.approx([5.0, 2.5])
    assert warm.bounds_excursion == pytest.approx(0.5)


@pytest.mark.paper
def test_ten_hertz_teflon_warm_start_stays_inside_the_position_bounds():
    """The 10 Hz teflon trot at 5 ms steps left the bounds on this machine (seven steps of its
    last stride failed; a four-bar joint 0.94 rad past its limit); the warm start must not."""
    teflon = ht.MakeHamrTrajoptModel("teflon")
    warm = ht.GaitWarmStart(teflon, 10.0, 21)
    lower = teflon.plant.GetPositionLowerLimits()
    upper = teflon.plant.GetPositionUpperLimits()
    flex = teflon.FlexureIndices()
    assert np.all((warm.q >= lower) & (warm.q <= upper))
    assert np.max(np.abs(warm.q[:, flex])) <= np.pi / 4
    assert warm.velocity_mm_per_cycle > 0.0


@pytest.mark.paper
def test_ten_hertz_cardstock_gait_reaches_eight_mm_per_cycle(model):
    # 21 knots (5.5 ms steps): the 51 of the authors take ~2.5x longer
    # (scripts/reproduce.py --paper hamr --full).
    warm = ht.GaitWarmStart(model, 10.0, 21)
    problem = ht.MakeHamrGaitProblem(model, 10.0, warm, ht.GaitSettings(num_knots=21))
    outcome = ht.SolveHamrProblem(
        problem, SolverConfig(solver="ipopt"), first_stage_iterations=FIRST_STAGE_ITERATIONS
    )
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    assert outcome.success, outcome.status
    assert check.max_violation <= 1e-4, check.MostViolated()
    assert check.max_complementarity_violation <= 1e-4
    traj = ReconstructTrajectory(problem, x)
    ix = model.index["base_x"]
    assert traj.q[-1, ix] - traj.q[0, ix] >= 8.0


@pytest.mark.paper
def test_jump_reaches_ten_mm(model):
    warm = ht.JumpWarmStart(model, 70.0, 31)
    problem = ht.MakeHamrJumpProblem(model, warm)
    outcome = ht.SolveHamrProblem(
        problem, SolverConfig(solver="ipopt"), first_stage_iterations=FIRST_STAGE_ITERATIONS
    )
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    assert outcome.success, outcome.status
    assert check.max_violation <= 1e-4, check.MostViolated()
    assert check.max_complementarity_violation <= 1e-4
    traj = ReconstructTrajectory(problem, x)
    iz = model.index["base_z"]
    # The apex: the highest knot, or the ballistic peak if the body still rises at the end.
    height = traj.q[-1, iz] - model.home[iz] + max(traj.qdot[-1, iz], 0) ** 2 / (2 * 9.81e-3)
    assert max(np.max(traj.q[:, iz]) - model.home[iz], height) >= 10.0


def _PlanAndTrack(model, frequency: float, num_knots: int, cycles: int) -> tuple:
    """Plans a cardstock gait with the default settings and tracks it in Drake's SAP model with
    the paper's estimator and PD law: (planned mm per stride, tracked mm per stride)."""
    from drakebots.hamr.tracking import SimulateTracking, TrackingConfig

    warm = ht.GaitWarmStart(model, frequency, num_knots)
    problem = ht.MakeHamrGaitProblem(model, frequency, warm, ht.GaitSettings(num_knots=num_knots))
    outcome = ht.SolveHamrProblem(
        problem, SolverConfig(solver="ipopt"), first_stage_iterations=FIRST_STAGE_ITERATIONS
    )
    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x)
    assert check.max_violation <= 1e-4, check.MostViolated()
    traj = ReconstructTrajectory(problem, x)
    ix = model.index["base_x"]
    planned = traj.q[-1, ix] - traj.q[0, ix]
    knots = ht.HamrKnotTrajectory(model, traj.q, traj.u, traj.h)
    legs = knots.feet_body[:, :, [0, 2]].reshape(len(traj.q), -1)
    run = SimulateTracking(knots.times, traj.u, legs, "cardstock", TrackingConfig(cycles=cycles))
    edges = np.interp(knots.times[-1] * np.arange(cycles + 1), run.times, run.positions[:, 0])
    return planned, np.diff(edges)


@pytest.mark.paper
def test_two_hertz_cardstock_plan_tracks_within_thirty_percent(model):
    """The issue's tracking target: the 2 Hz cardstock gait planned with the default settings
    and the authors' 51 knots (the CLI's) and tracked in Drake's SAP model with the paper's
    estimator and PD law moves within 30 % of its planned distance per stride. Measured: 0.93
    (8.72 of 9.35 mm, the fast path, 2026-11-25), 0.98 with Drake's IPOPT (9.33 of 9.47 mm);
    0.35 with an estimate a tick old (strides -5.5 to 8.6 mm: the swing legs rang at ~170 Hz,
    growing to 2-3 mm). A paper-level check in CI since the fast path: 258 s here beside other
    jobs (193 s CPU), most of it the 10 strides (5 s) in Drake's SAP at 0.25 ms."""
    planned, per_cycle = _PlanAndTrack(model, 2.0, 51, cycles=10)
    assert planned >= 8.0
    # The first strides ramp up; the paper averages steady strides.
    assert 0.7 * planned <= np.mean(per_cycle[2:]) <= 1.3 * planned, per_cycle


@pytest.mark.paper
def test_ten_hertz_cardstock_plan_tracks_within_thirty_percent(model):
    """The 10 Hz half of the target, with the paper's law alone (no steering): measured 0.95
    (21 knots, 9.21 of 9.70 mm) and 0.87 (51, the CLI's: 8.55 of 9.88 mm)."""
    planned, per_cycle = _PlanAndTrack(model, 10.0, 21, cycles=10)
    assert planned >= 8.0
    assert 0.7 * planned <= np.mean(per_cycle[2:]) <= 1.3 * planned, per_cycle


def test_tiny_gait_solved_by_the_fast_path_is_acceptable(tiny, model):
    """The fast path with its stage defaults (what solver "auto" runs when its IPOPT loads) on
    the tiny gait: every stage runs on IPOPT with the vectorised evaluators, and the plan passes
    the same check as Drake's solvers' (every binding re-evaluated through Drake, true
    complementarity, DEL and loop residuals)."""
    from drakebots.hamr.workflows import StageDefaults
    from drakebots.optimization.contact_implicit import SolverAvailable

    if not SolverAvailable("fast")[0]:
        pytest.skip(SolverAvailable("fast")[1])
    warm, _ = tiny
    problem = ht.MakeHamrGaitProblem(model, 30.0, warm, ht.GaitSettings(num_knots=9))
    budget, second = StageDefaults("fast")
    outcome = ht.SolveHamrProblem(
        problem, SolverConfig(solver="fast"), first_stage_iterations=budget, second_stage=second
    )
    assert outcome.solver == "fast"
    assert all("IPOPT" in status for status, _ in outcome.stages)
    assert ht.PlanAcceptable(problem, outcome), outcome.stages
    check = CheckContactImplicitSolution(problem, outcome.result.get_x_val())
    assert check.max_complementarity_violation <= ht.COMPLEMENTARITY_TARGET
    assert check.max_dynamics_residual <= 1e-4 and check.max_loop_residual <= 1e-4
