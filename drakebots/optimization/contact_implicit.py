"""Variational contact-implicit trajectory optimization (hamr-contact-implicit.txt, Sec. III).

The transcription of Eq. 15, for any tree MultibodyPlant with point contacts on flat ground and
position constraints (kinematic loops):

    minimize    J(h, q, u) + alpha sum_k s_k
    subject to  discrete Euler-Lagrange equations with contact and loop forces    (Eqs. 9, 14)
                c(q_k) = 0                                                        (Eq. 10)
                0 <= gamma _|_ phi(q_k+1) >= 0, relaxed to gamma . phi <= s_k     (Eqs. 11, 12)
                max-dissipation friction on a 4-sided pyramid, relaxed likewise   (Eq. 13)
                u_min <= u <= u_max, q_min <= q <= q_max, s_k in [s_min, s_max]
                periodicity of positions (but the body x) and discrete momentum, or an
                initial velocity through the Legendre transform.

`MakeContactImplicitProblem` composes the Add<Thing> builders of drakebots.optimization.
constraints and .costs; `SolveContactImplicit` runs SNOPT (default) or IPOPT with options from a
`SolverConfig`; `CheckContactImplicitSolution` re-evaluates every binding at the solution (never
trusting a solver's "success") and measures the TRUE complementarity (products of the unrelaxed
pairs); `ReconstructTrajectory` returns arrays for plots, replays and tracking.

Design choices (see also variational.py): the loop constraint is enforced at the knots with its
force C(q_k)^T lambda_k in the DEL (the constrained variational integrator of Marsden and West;
the paper writes a midpoint c_d), which keeps every replayed knot exactly closed; friction is the
authors' polyhedral cone with 4 directions per foot; the tangential velocity in the dissipation
condition is the displacement of the foot over the step divided by h.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
from pydrake.solvers import (
    IpoptSolver,
    MathematicalProgram,
    MathematicalProgramResult,
    SnoptSolver,
    SolverOptions,
)

from drakebots.optimization import contact_implicit_constraints as constraints
from drakebots.optimization.contact_implicit_constraints import BindingViolation
from drakebots.optimization.contact_implicit_variables import (
    AddContactImplicitVariables,
    ContactImplicitVariables,
)
from drakebots.optimization.variational import VariationalDynamics

# "fast": IPOPT on the vectorised evaluators with the exact Hessian
# (drakebots.optimization.contact_implicit_fast); "snopt" and "ipopt" run through Drake.
SOLVERS = ("snopt", "ipopt", "fast")
# How far inside its bounds IPOPT moves a warm start's variables and slacks (SolveContactImplicit).
WARM_START_BOUND_PUSH = 1e-8
# Variables per proximal cost term (SolveProximalFeasibility).
PROXIMAL_CHUNK = 128


@dataclasses.dataclass
class SolverConfig:
    """Which NLP solver runs, and its options (loadable with drakebots.config.LoadTypedYaml)."""

    # "snopt" (default, as the authors), "ipopt" (both through Drake), or "fast" (IPOPT on the
    # vectorised evaluators with second derivatives: contact_implicit_fast.py).
    solver: str = "snopt"
    # Major (SNOPT) or outer (IPOPT) iteration limit.
    major_iterations: int = 3000
    # SNOPT major optimality / feasibility tolerances (the authors: 1e-5); IPOPT tol.
    optimality_tolerance: float = 1e-5
    feasibility_tolerance: float = 1e-5
    # Extra solver options by name, e.g. {"Superbasics limit": 4000} or {"mu_strategy": "adaptive"}.
    snopt_options: dict[str, int | float | str] = dataclasses.field(default_factory=dict)
    ipopt_options: dict[str, int | float | str] = dataclasses.field(default_factory=dict)
    # Wall-clock limit for IPOPT (s; 0 = none). SNOPT stops by iterations only.
    time_limit: float = 0.0
    # The fast path's Hessian of the Lagrangian: "gauss-newton" (default: exact but for the
    # dynamics rows' curvature), "exact", or "limited-memory" (IPOPT's quasi-Newton);
    # ipopt_options apply there too. Gauss-Newton by measurement: from the same warm starts
    # and stages (40 first-stage iterations, fixed contact modes) the nine 51-knot gaits took
    # 0.36-0.99 times the CPU seconds of the exact Hessian (median 0.79; 30 Hz sandpaper 19
    # against 53 s), the jump 0.69 (cheaper evaluations, fewer inertia corrections, about as
    # many iterations); every plan was accepted with either.
    hessian: str = "gauss-newton"


def SolverAvailable(name: str) -> tuple[bool, str]:
    """(available, reason) for a solver name."""
    if name not in SOLVERS:
        return False, f"unknown solver '{name}' (known: {', '.join(SOLVERS)})"
    if name == "fast":
        from drakebots.optimization.ipopt import IpoptAvailable

        ok, reason = IpoptAvailable()
        return ok, ("" if ok else f"solver 'fast': {reason}")
    solver = SnoptSolver() if name == "snopt" else IpoptSolver()
    if not solver.available():
        return False, f"solver '{name}' is not available in this Drake build"
    if not solver.enabled():
        return False, f"solver '{name}' is not enabled (license/environment)"
    return True, ""


@dataclasses.dataclass
class ContactImplicitProblem:
    """A transcription: the program, its variables and dynamics, and its bindings by group."""

    prog: MathematicalProgram
    vars: ContactImplicitVariables
    dynamics: VariationalDynamics
    bindings: dict
    periodic: bool
    initial: tuple
    functions: dict = dataclasses.field(default_factory=dict)  # name -> BlockConstraintFunction
    # What solvers keep between solves of this problem (the fast path's evaluators).
    cache: dict = dataclasses.field(default_factory=dict, repr=False)
    # Optional callable(iteration, objective, constraint violation) at every IPOPT iteration of
    # the fast path (a progress display; rate-limit it yourself).
    on_iteration: object = dataclasses.field(default=None, repr=False)

    def AllConstraintBindings(self) -> list:
        return self.prog.GetAllConstraints()


def MakeContactImplicitProblem(
    dynamics: VariationalDynamics,
    *,
    num_knots: int,
    time_step: float,
    time_step_bounds: tuple[float, float] | None = None,
    initial: tuple = ("periodic",),
    periodic_free_indices=(),
    slack_bounds: tuple[float, float] = (1e-6, 1.0),
    position_lower: np.ndarray | None = None,
    position_upper: np.ndarray | None = None,
    input_lower: np.ndarray | None = None,
    input_upper: np.ndarray | None = None,
    sample_configuration: np.ndarray | None = None,
    prog: MathematicalProgram | None = None,
    constrain_first_knot: bool = True,
) -> ContactImplicitProblem:
    """Builds the constraints of Eq. 15 (costs are added by the caller, see costs.py).

    Args:
        dynamics: the VariationalDynamics of the plant.
        num_knots: N.
        time_step: the (nominal) time step.
        time_step_bounds: make h a decision variable within these bounds (None: fixed).
        initial: ("periodic",), ("velocity", qdot0) or ("momentum", p0) (see
            AddDiscreteEulerLagrangeConstraints).
        periodic_free_indices: with ("periodic",): positions left free (the body x).
        slack_bounds: bounds of the complementarity slack.
        position_lower/upper, input_lower/upper: bounds (None: the plant's joint limits for
            positions, none for inputs).
        sample_configuration: a typical configuration (sparsity sampling).
        constrain_first_knot: add c(q_0) = 0 and phi(q_0) >= 0 (False when q_0 is data, as in
            time stepping, where it already satisfies them to the previous step's tolerance).
    """
    prog = prog if prog is not None else MathematicalProgram()
    constraints._REGISTRY.pop(id(prog), None)
    vars = AddContactImplicitVariables(
        prog, dynamics, num_knots, time_step=time_step, time_step_bounds=time_step_bounds
    )
    periodic = initial[0] == "periodic"
    b = {}
    b["dynamics"] = constraints.AddDiscreteEulerLagrangeConstraints(
        prog, vars, dynamics, initial=initial, sample_configuration=sample_configuration
    )
    # With periodic positions, c(q_N-1) = c(q_0) already (loops do not see the body x).
    loop_knots = range(num_knots - 1) if periodic else range(num_knots)
    if not constrain_first_knot:
        loop_knots = [k for k in loop_knots if k > 0]
    b["loop"] = constraints.AddPositionConstraints(
        prog, vars, dynamics, knots=loop_knots, sample_configuration=sample_configuration
    )
    b["contact"] = constraints.AddNormalContactConstraints(
        prog,
        vars,
        dynamics,
        sample_configuration=sample_configuration,
        initial_clearance=constrain_first_knot,
    )
    b["friction"] = constraints.AddFrictionConstraints(
        prog, vars, dynamics, sample_configuration=sample_configuration
    )
    b["bounds"] = constraints.AddContactVariableBounds(prog, vars, slack_bounds=slack_bounds)
    plant = dynamics.plant
    lower = plant.GetPositionLowerLimits() if position_lower is None else position_lower
    upper = plant.GetPositionUpperLimits() if position_upper is None else position_upper
    b["bounds"] += constraints.AddPositionBounds(prog, vars, lower, upper)
    if input_lower is not None or input_upper is not None:
        m = dynamics.num_inputs
        lo = np.full(m, -np.inf) if input_lower is None else input_lower
        hi = np.full(m, np.inf) if input_upper is None else input_upper
        b["bounds"] += constraints.AddInputBounds(prog, vars, lo, hi)
    if periodic:
        b["periodic"] = [
            constraints.AddPeriodicityConstraints(prog, vars, free_indices=periodic_free_indices)
        ]
    functions = constraints._REGISTRY.pop(id(prog), {})
    return ContactImplicitProblem(prog, vars, dynamics, b, periodic, initial, functions)


# ---------------------------------------------------------------------------- initial guess
def ResampleKnots(times: np.ndarray, values: np.ndarray, num_knots: int) -> np.ndarray:
    """Linear interpolation of a logged trajectory at num_knots equally spaced times."""
    times = np.asarray(times, float)
    values = np.asarray(values, float)
    t = np.linspace(times[0], times[-1], num_knots)
    return np.column_stack([np.interp(t, times, values[:, i]) for i in range(values.shape[1])])


def SetInitialGuess(problem: ContactImplicitProblem, guess: dict) -> None:
    """Sets the initial guess from arrays named as in ContactImplicitVariables.Groups().

    Missing groups get defaults: contact and friction variables from a simple estimate (the
    normal force where a foot touches the ground shares the weight), slack at its upper bound.
    """
    prog, vars = problem.prog, problem.vars
    groups = vars.Groups()
    for name, value in guess.items():
        if name in groups and np.asarray(groups[name]).size:
            prog.SetInitialGuess(groups[name], np.asarray(value, float).reshape(groups[name].shape))
    if "slack" not in guess:
        prog.SetInitialGuess(vars.slack, np.full(vars.num_intervals, 1e-2))


def ContactGuessFromKnots(
    dynamics: VariationalDynamics,
    q: np.ndarray,
    h: float,
    *,
    contact_tolerance: float,
    weight: float | None = None,
) -> dict:
    """Contact variables consistent with a knot guess: normal forces share the weight among the
    contacts within `contact_tolerance` of the ground; sliding contacts get the Coulomb force
    opposing their motion (projected on the pyramid); psi and eta satisfy the max-dissipation
    stationarity g1 with the smallest psi. Returns arrays named as ContactImplicitVariables."""
    plant = dynamics.plant
    if weight is None:
        weight = float(
            np.linalg.norm(dynamics.lagrangian.gravity)
            * plant.CalcTotalMass(plant.CreateDefaultContext())
        )
    N, nc = len(q), dynamics.num_contacts
    D = dynamics.directions
    gamma = np.zeros((N - 1, nc))
    beta = np.zeros((N - 1, nc, len(D)))
    psi = np.zeros((N - 1, nc))
    eta = np.zeros((N - 1, nc, len(D)))
    for k in range(N - 1):
        x0 = dynamics.ContactPoints(dynamics.Kinematics(q[k]))
        x1 = dynamics.ContactPoints(dynamics.Kinematics(q[k + 1]))
        touching = (x1[:, 2] - dynamics.ground_height) < contact_tolerance
        if np.any(touching):
            gamma[k, touching] = weight / np.count_nonzero(touching) / dynamics.force_scale
        tangential = ((x1 - x0) @ D.T) / h  # (nc, nd): d_j . v
        psi[k] = np.maximum(0.0, -tangential.min(axis=1))
        eta[k] = tangential + psi[k][:, None]
        for c in range(nc):
            if gamma[k, c] > 0 and psi[k, c] > 0:
                # Coulomb force opposing the slip, split on the directions with eta = 0.
                j = int(np.argmin(eta[k, c]))
                beta[k, c, j] = dynamics.friction * gamma[k, c]
    return {
        "gamma": gamma,
        "beta": beta.reshape(N - 1, -1),
        "psi": psi,
        "eta": eta.reshape(N - 1, -1),
    }


# ---------------------------------------------------------------------------- solve
@dataclasses.dataclass
class SolveOutcome:
    """What a solve returned, with the facts summary.json reports."""

    result: MathematicalProgramResult
    solver: str
    status: str
    success: bool
    solve_time_s: float
    iterations: int | None
    num_variables: int
    num_constraints: int
    num_constraint_rows: int
    log: str = ""
    cpu_time_s: float = 0.0


def _ConstraintRows(prog: MathematicalProgram) -> int:
    return int(sum(b.evaluator().num_constraints() for b in prog.GetAllConstraints()))


def SolveContactImplicit(
    problem: ContactImplicitProblem,
    config: SolverConfig | None = None,
    *,
    print_to_console: bool = False,
) -> SolveOutcome:
    """Solves the program with the configured solver (BLAS limited to one thread meanwhile)."""
    config = config or SolverConfig()
    ok, reason = SolverAvailable(config.solver)
    if not ok:
        raise ValueError(reason)
    if config.solver == "fast":
        from drakebots.optimization.contact_implicit_fast import SolveFast

        return SolveFast(
            problem, config, outcome_type=SolveOutcome, bound_push=WARM_START_BOUND_PUSH
        )
    prog = problem.prog
    options = SolverOptions()
    handle, name = tempfile.mkstemp(prefix=f"{config.solver}-", suffix=".out")
    os.close(handle)
    log_file = Path(name)
    try:
        return _SolveLogged(config, prog, options, log_file, print_to_console)
    finally:
        log_file.unlink(missing_ok=True)  # also when Ctrl-C or an error ends the solve


def _SolveLogged(config, prog, options, log_file, print_to_console) -> SolveOutcome:
    """SolveContactImplicit's body for SNOPT and IPOPT through Drake, writing the solver's log to
    `log_file` (which the caller removes)."""
    if config.solver == "snopt":
        solver = SnoptSolver()
        sid = solver.solver_id()
        options.SetOption(sid, "Major iterations limit", int(config.major_iterations))
        options.SetOption(sid, "Iterations limit", int(50 * config.major_iterations + 10000))
        options.SetOption(sid, "Major optimality tolerance", float(config.optimality_tolerance))
        options.SetOption(sid, "Major feasibility tolerance", float(config.feasibility_tolerance))
        options.SetOption(sid, "Superbasics limit", int(prog.num_vars() + 1))
        # SNOPT sizes its LU workspace from the Jacobian's nonzeros; the fill-in of these
        # bases outgrows it (info 83, "Increase lena" on the 21-knot HAMR gait), so reserve
        # room in proportion to the problem (about 8 kB per variable and row).
        size = prog.num_vars() + _ConstraintRows(prog)
        options.SetOption(sid, "Total real workspace", int(max(5_000_000, 1000 * size)))
        options.SetOption(sid, "Total integer workspace", int(max(5_000_000, 1000 * size)))
        options.SetOption(sid, "Print file", str(log_file))
        for key, value in config.snopt_options.items():
            options.SetOption(sid, key, value)
    else:
        solver = IpoptSolver()
        sid = solver.solver_id()
        options.SetOption(sid, "max_iter", int(config.major_iterations))
        options.SetOption(sid, "tol", float(config.optimality_tolerance))
        options.SetOption(sid, "constr_viol_tol", float(config.feasibility_tolerance))
        # IPOPT's limited-memory Hessian leaves the dual infeasibility of these complementarity
        # problems high long after the iterate is feasible and stalls in objective: accept a
        # point that is feasible, complementary and no longer improving for 10 iterations.
        options.SetOption(sid, "acceptable_tol", 1e10)
        options.SetOption(sid, "acceptable_iter", 10)
        options.SetOption(sid, "acceptable_constr_viol_tol", float(config.feasibility_tolerance))
        options.SetOption(sid, "acceptable_dual_inf_tol", 1e10)
        options.SetOption(sid, "acceptable_compl_inf_tol", 1e-3)
        options.SetOption(sid, "acceptable_obj_change_tol", 1e-4)
        options.SetOption(sid, "mu_strategy", "adaptive")
        # Every solve here starts from a warm start (a simulated stride, or the previous stage's
        # point) whose contact forces, multipliers and gaps sit at their bounds exactly where
        # the complementarity holds. IPOPT's default pushes each such variable and inequality
        # slack 1e-2 into the interior first (bound_push, bound_frac), which breaks every one of
        # those products before the first step; start 1e-8 inside instead. Measured on seven
        # 21-knot gaits from the same warm starts, both stages (SolveHamrProblem): proximal
        # repair 132-357 iterations against 177-891, median whole solve 57 against 74 s CPU,
        # plans of 9.15-10.06 against 8.60-10.58 mm/cycle (the README has the release's
        # figures, from scripts/bench_contact_implicit.py).
        for name in ("bound_push", "bound_frac", "slack_bound_push", "slack_bound_frac"):
            options.SetOption(sid, name, WARM_START_BOUND_PUSH)
        # IPOPT's linear solver in Drake's build is SPRAL, with Drake's own (unoptimised) dense
        # kernels: on these KKT systems (a few dense ~40 x 180 blocks per knot) its time goes to
        # dense supernodes, so amalgamate none of them (spral_nemin 1; default 32) and skip the
        # matching-based scaling, which redoes a symbolic analysis per factorization. Measured
        # on the 10 Hz gait, 30 iterations with identical iterates: factorization 10.4 -> 4.3 s
        # at 21 knots, 15 iterations 24.3 -> 13.3 s CPU in all at 51 knots.
        options.SetOption(sid, "spral_nemin", 1)
        options.SetOption(sid, "spral_scaling", "none")
        options.SetOption(sid, "output_file", str(log_file))
        options.SetOption(sid, "print_level", 0)
        options.SetOption(sid, "file_print_level", 5)
        if config.time_limit > 0:
            options.SetOption(sid, "max_wall_time", float(config.time_limit))
        for key, value in config.ipopt_options.items():
            options.SetOption(sid, key, value)
    if print_to_console:
        from pydrake.solvers import CommonSolverOption

        options.SetOption(CommonSolverOption.kPrintToConsole, 1)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - declared dependency
        threadpool_limits = None
    start = time.perf_counter()
    cpu_start = time.process_time()
    if threadpool_limits is not None:
        with threadpool_limits(1):
            result = solver.Solve(prog, prog.initial_guess(), options)
    else:
        result = solver.Solve(prog, prog.initial_guess(), options)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    status, iterations = _ParseSolverLog(config.solver, result, log)
    return SolveOutcome(
        result=result,
        solver=config.solver,
        status=status,
        success=bool(result.is_success()),
        solve_time_s=elapsed,
        iterations=iterations,
        num_variables=prog.num_vars(),
        num_constraints=len(prog.GetAllConstraints()),
        num_constraint_rows=_ConstraintRows(prog),
        log=log,
        cpu_time_s=cpu,
    )


def SolveWithSlackHomotopy(
    problem: ContactImplicitProblem,
    config: SolverConfig | None = None,
    *,
    upper_bounds=(1.0, 1e-6),
) -> SolveOutcome:
    """Solves in stages with a shrinking upper bound on the complementarity slack, each stage
    warm-started from the previous one (the relaxation of Eq. 15 driven to the true
    complementarity, as in Fletcher and Leyffer's relaxation schemes). Returns the last stage's
    outcome with the total time and evaluations."""
    slack_binding = next(
        b for b in problem.bindings["bounds"] if b.evaluator().get_description() == "slack_bounds"
    )
    lower = slack_binding.evaluator().lower_bound()
    total_time, total_cpu, total_iterations, outcome = 0.0, 0.0, 0, None
    for upper in upper_bounds:
        ub = np.full_like(lower, float(upper))
        slack_binding.evaluator().UpdateUpperBound(ub)
        lb = np.minimum(lower, ub)
        slack_binding.evaluator().UpdateLowerBound(lb)
        if outcome is not None:
            x = outcome.result.get_x_val()
            x[problem.prog.FindDecisionVariableIndices(problem.vars.slack)] = np.clip(
                x[problem.prog.FindDecisionVariableIndices(problem.vars.slack)], lb, ub
            )
            problem.prog.SetInitialGuessForAllVariables(x)
        outcome = SolveContactImplicit(problem, config)
        total_time += outcome.solve_time_s
        total_cpu += outcome.cpu_time_s
        total_iterations += outcome.iterations or 0
    outcome.solve_time_s = total_time
    outcome.cpu_time_s = total_cpu
    outcome.iterations = total_iterations or outcome.iterations
    return outcome


def SolveProximalFeasibility(
    problem: ContactImplicitProblem,
    x_start: np.ndarray,
    config: SolverConfig | None = None,
    *,
    weights: dict | None = None,
    slack: float = 1e-6,
    keep_costs: bool = False,
) -> SolveOutcome:
    """The nearest point to x_start that satisfies every constraint with the complementarity
    slack at `slack` (the TRUE complementarity, not the relaxation).

    The objective is the proximal cost 1/2 sum_g w_g |x_g - x_start,g|^2 over the variable
    groups (q, u, forces, ...; `weights` by group name, default 1 and 1e-4 for inputs, which are
    volts), plus the program's own costs if `keep_costs`; otherwise those are set aside for this
    solve and restored afterwards. Without them "nearest" is measured in the variables alone,
    and a start that is not yet feasible can be repaired by motion the costs were there to
    prevent (a 2 Hz teflon gait's objective rose from 1.0e3 to 1.2e5, its loaded feet skidding
    231 mm per stride, measured).
    A strongly convex objective with a start that is nearly feasible is the easy case for a
    quasi-Newton method: where the paper's problem (Eq. 15 with the costs of Eqs. 16-17) stalls
    with its objective oscillating (IPOPT with a limited-memory Hessian on the contact
    complementarity), this restores feasibility in tens of iterations and keeps the motion.
    """
    prog, vars = problem.prog, problem.vars
    x_start = np.asarray(x_start, float)
    w = {"u": 1e-4, "slack": 0.0}
    w.update(weights or {})
    slack_binding = next(
        b for b in problem.bindings["bounds"] if b.evaluator().get_description() == "slack_bounds"
    )
    lower = slack_binding.evaluator().lower_bound().copy()
    upper = slack_binding.evaluator().upper_bound().copy()
    fixed = np.full_like(lower, float(slack))
    costs = [] if keep_costs else list(prog.GetAllCosts())
    for binding in costs:
        prog.RemoveCost(binding)
    added = []
    try:
        slack_binding.evaluator().UpdateLowerBound(np.minimum(lower, fixed))
        slack_binding.evaluator().UpdateUpperBound(fixed)
        for name, group in vars.Groups().items():
            flat = np.asarray(group).ravel()
            weight = float(w.get(name, 1.0))
            if flat.size == 0 or weight == 0.0:
                continue
            target = x_start[prog.FindDecisionVariableIndices(flat)]
            # w |x - target|^2 in pieces of at most PROXIMAL_CHUNK variables, known convex:
            # Drake builds each QuadraticCost densely and checks its convexity, which for one
            # dense identity over the 1938 knot positions of a 51-knot gait took 3.7 s.
            for i in range(0, flat.size, PROXIMAL_CHUNK):
                part, t = flat[i : i + PROXIMAL_CHUNK], target[i : i + PROXIMAL_CHUNK]
                cost = prog.AddQuadraticCost(
                    2.0 * weight * np.eye(part.size),
                    -2.0 * weight * t,
                    weight * float(t @ t),
                    part,
                    is_convex=True,
                )
                cost.evaluator().set_description(f"proximal_{name}")
                added.append(cost)
        x0 = x_start.copy()
        x0[prog.FindDecisionVariableIndices(vars.slack)] = fixed
        prog.SetInitialGuessForAllVariables(x0)
        config = dataclasses.replace(config or SolverConfig())
        if config.solver in ("ipopt", "fast"):
            # Any feasible point near x_start will do: stop once the proximal cost settles to
            # 1 % (IPOPT's acceptable-point test; its feasibility tolerance is unchanged). The
            # start is near the answer, so a small barrier parameter decreased monotonically:
            # on the 21-knot 10 Hz gait 109 iterations / 40 s CPU against 210 / 81 s with the
            # adaptive strategy from IPOPT's default mu_init 0.1.
            config.ipopt_options = {
                "acceptable_obj_change_tol": 1e-2,
                "acceptable_iter": 5,
                "mu_strategy": "monotone",
                "mu_init": 1e-4,
                **config.ipopt_options,
            }
        outcome = SolveContactImplicit(problem, config)
    finally:
        for binding in added:
            prog.RemoveCost(binding)
        for binding in costs:
            prog.AddCost(binding)
        slack_binding.evaluator().UpdateLowerBound(lower)
        slack_binding.evaluator().UpdateUpperBound(upper)
    return outcome


@dataclasses.dataclass
class ContactModes:
    """Which member of each complementary pair is zero (one row per interval k).

    Attributes:
        touching: (K, nc) True: phi_c(q_k+1) = 0; False: gamma_k,c = 0 (Eqs. 11-12).
        sliding: (K, nc) True: the friction force is on the pyramid's boundary,
            mu gamma - sum_j beta_j = 0; False: psi = 0, the contact sticks (Eq. 13).
        edge_free: (K, nc nd) True: eta_j = 0 (the pyramid edge j may carry force); False:
            beta_j = 0 (Eq. 13).
    """

    touching: np.ndarray
    sliding: np.ndarray
    edge_free: np.ndarray

    def Counts(self) -> dict:
        return {
            "touching": int(self.touching.sum()),
            "sliding": int(self.sliding.sum()),
            "edge_free": int(self.edge_free.sum()),
            "pairs": int(self.touching.size + self.sliding.size + self.edge_free.size),
        }


def IdentifyContactModes(problem: ContactImplicitProblem, x: np.ndarray) -> ContactModes:
    """The contact modes of a nearly complementary point x (the relaxed problem's answer).

    For each pair 0 <= a _|_ b >= 0 the member that is smaller relative to its scale is the
    one taken to be zero: the active-set identification that turns the complementarity
    problem into an ordinary NLP near a solution of its relaxation. The members are in
    different units, so each is measured against the trajectory's own scale of its kind:
    lengths (phi) against the larger of the highest clearance and the contact points' range of
    motion; speeds (psi, eta) against the larger of their own largest value and the contact
    points' fastest displacement per step; forces (gamma; the cone margin mu gamma - sum beta
    and beta against mu times it) against the largest normal force. A scale from the motion,
    not only from the member itself, keeps a member that is small everywhere (a block that
    never lifts off, hovering by the relaxation's slack) from looking large.
    """
    traj = ReconstructTrajectory(problem, x)
    dyn = problem.dynamics
    nc, nd = dyn.num_contacts, dyn.num_directions
    K = len(traj.gamma)
    tiny = 1e-300

    def Largest(a) -> float:
        return float(np.max(np.abs(np.asarray(a, float)), initial=0.0))

    points = traj.contact_points  # (N, nc, 3)
    length = max(Largest(traj.phi), Largest(np.ptp(points, axis=0)), tiny)
    step_speed = np.linalg.norm(np.diff(points[..., :2], axis=0), axis=-1) / traj.h
    speed = max(Largest(traj.psi), Largest(traj.eta), Largest(step_speed), tiny)
    gamma = traj.gamma.reshape(K, nc)
    force = max(Largest(gamma), tiny)
    friction = max(dyn.friction * force, tiny)
    phi = np.maximum(traj.phi[1:].reshape(K, nc), 0.0)
    beta = traj.beta.reshape(K, nc * nd)
    cone = np.maximum(dyn.friction * gamma - beta.reshape(K, nc, nd).sum(2), 0.0)
    return ContactModes(
        touching=phi / length <= gamma / force,
        sliding=cone / friction <= traj.psi.reshape(K, nc) / speed,
        edge_free=traj.eta.reshape(K, nc * nd) / speed <= beta / friction,
    )


@contextlib.contextmanager
def FixedContactModes(problem: ContactImplicitProblem, modes: ContactModes):
    """Within the block the program's complementarity constraints hold with the given modes:
    the zero member of each pair is fixed there (a variable bounded to [0, 0], or a constraint
    row phi_c >= 0 or mu gamma - sum beta >= 0 made an equality). On exit every bound is as it
    was and the added bounding box is removed.
    """
    prog, vars = problem.prog, problem.vars
    nc = problem.dynamics.num_contacts
    by_name = {
        b.evaluator().get_description(): b
        for b in problem.bindings.get("contact", []) + problem.bindings.get("friction", [])
    }
    saved, added = [], None
    try:
        zero = []
        for k in range(vars.num_intervals):
            contact = by_name[f"contact[{k}]"].evaluator()
            upper = contact.upper_bound().copy()
            saved.append((contact, contact.upper_bound().copy()))
            upper[:nc] = np.where(modes.touching[k], 0.0, upper[:nc])
            contact.UpdateUpperBound(upper)
            cone = by_name[f"friction_cone[{k}]"].evaluator()
            saved.append((cone, cone.upper_bound().copy()))
            cone.UpdateUpperBound(np.where(modes.sliding[k], 0.0, cone.upper_bound()))
            zero.append(np.asarray(vars.gamma[k])[~modes.touching[k]])
            zero.append(np.asarray(vars.psi[k])[~modes.sliding[k]])
            edges = modes.edge_free[k]
            zero.append(np.asarray(vars.eta[k]).ravel()[edges])
            zero.append(np.asarray(vars.beta[k]).ravel()[~edges])
        zero = np.concatenate(zero)
        if zero.size:
            added = prog.AddBoundingBoxConstraint(0.0, 0.0, zero)
            added.evaluator().set_description("fixed_contact_modes")
        yield zero
    finally:
        if added is not None:
            prog.RemoveConstraint(added)
        for evaluator, upper in saved:
            evaluator.UpdateUpperBound(upper)


def SolveWithFixedContactModes(
    problem: ContactImplicitProblem,
    x_start: np.ndarray,
    config: SolverConfig | None = None,
    *,
    modes: ContactModes | None = None,
    keep_costs: bool = True,
    max_iterations: int = 300,
) -> SolveOutcome:
    """SolveProximalFeasibility with the contact modes fixed (`IdentifyContactModes` at x_start
    unless given): the true complementarity by construction, every product exactly zero.

    With the modes fixed the problem is an ordinary NLP instead of a complementarity problem
    (no constraint qualification holds at a complementary point, which is what makes IPOPT
    crawl there), so a quasi-Newton interior point converges in fewer iterations: on the 21-knot
    10 Hz cardstock gait 106 iterations, 53 s, against 199, 86 s for the proximal problem
    with the complementarity kept (from the same first-stage point). A sticking foot cannot
    skid (psi = 0 leaves the pyramid's opposite edges no tangential velocity). If the modes
    were misidentified the fixed problem may be infeasible: the caller checks the answer
    (CheckContactImplicitSolution) and falls back to SolveProximalFeasibility.
    `outcome.modes` holds the modes used.
    """
    modes = modes if modes is not None else IdentifyContactModes(problem, x_start)
    config = dataclasses.replace(config or SolverConfig())
    config.major_iterations = min(config.major_iterations, int(max_iterations))
    if config.solver == "fast":
        # With exact second derivatives the adaptive barrier update takes fewer iterations
        # here than the monotone one SolveProximalFeasibility starts from (from the same
        # 40-iteration first stages: 10 Hz cardstock 23 against 56, 2 Hz sandpaper 56 against
        # 90, 30 Hz teflon 70 against 300 unfinished, the jump 23 against 59).
        # And with the modes fixed a feasible point that has stopped improving is the answer:
        # two such iterations in a row end the stage instead of five (3-6 iterations fewer on
        # four gaits, the same plans).
        config.ipopt_options = {
            "mu_strategy": "adaptive",
            "acceptable_iter": 2,
            **config.ipopt_options,
        }
    with FixedContactModes(problem, modes) as zero:
        x0 = np.array(x_start, float)
        if zero.size:
            x0[problem.prog.FindDecisionVariableIndices(zero)] = 0.0
        outcome = SolveProximalFeasibility(problem, x0, config, keep_costs=keep_costs)
    outcome.modes = modes
    return outcome


_SNOPT_INFO = {
    1: "optimality conditions satisfied",
    2: "feasible point found (no objective)",
    3: "requested accuracy could not be achieved",
    11: "infeasible linear constraints",
    12: "infeasible linear equalities",
    13: "nonlinear infeasibilities minimized",
    14: "infeasibilities minimized",
    31: "iteration limit reached",
    32: "major iteration limit reached",
    33: "the superbasics limit is too small",
    41: "current point cannot be improved",
    42: "singular basis",
    43: "cannot satisfy the general constraints",
    44: "ill-conditioned null-space basis",
}


def _ParseSolverLog(solver: str, result, log: str) -> tuple[str, int | None]:
    details = result.get_solver_details()
    iterations = None
    if solver == "snopt":
        info = int(details.info)
        status = f"SNOPT info {info}: {_SNOPT_INFO.get(info, 'see SNOPT manual')}"
        match = re.findall(r"No\. of major iterations\s+(\d+)", log)
        if match:
            iterations = int(match[-1])
    else:
        status = f"IPOPT status {int(details.status)}: {details.ConvertStatusToString()}"
        match = re.findall(r"Number of Iterations\.+:\s+(\d+)", log)
        if match:
            iterations = int(match[-1])
    return status, iterations


# ---------------------------------------------------------------------------- checking
@dataclasses.dataclass
class SolutionCheck:
    """Constraint satisfaction at a solution, measured independently of the solver.

    Attributes:
        max_violation: the largest violation of any constraint binding (its own units).
        violations: binding name -> violation, worst first (only those above tolerance).
        max_complementarity_violation: max over all complementary pairs of the product a * b of
            the UNRELAXED pairs (gamma phi, psi g2, beta eta) in physical units.
        complementarity: the maximum product per kind.
        max_dynamics_residual: max |DEL residual| in force units.
        max_loop_residual: max |c(q_k)| (length unit).
        min_signed_distance: the deepest penetration (negative) or smallest clearance.
        max_slack: the largest relaxation slack.
    """

    max_violation: float
    violations: dict
    max_complementarity_violation: float
    complementarity: dict
    max_dynamics_residual: float
    max_loop_residual: float
    min_signed_distance: float
    max_slack: float

    def MostViolated(self, count: int = 10) -> list[tuple[str, float]]:
        return list(self.violations.items())[:count]


def CheckContactImplicitSolution(
    problem: ContactImplicitProblem, x: np.ndarray, *, tolerance: float = 1e-6
) -> SolutionCheck:
    """Evaluates every binding and the true complementarity at the decision vector x."""
    prog, dyn = problem.prog, problem.dynamics
    x = np.asarray(x, float)
    violations = {}
    worst = 0.0
    for binding in prog.GetAllConstraints():
        v = BindingViolation(binding, x, prog)
        worst = max(worst, v)
        if v > tolerance:
            violations[binding.evaluator().get_description()] = v
    violations = dict(sorted(violations.items(), key=lambda kv: -kv[1]))
    traj = ReconstructTrajectory(problem, x)
    s = dyn.force_scale
    # True complementarity in physical units (forces scaled back).
    nc, nd = dyn.num_contacts, dyn.num_directions
    normal = traj.gamma * s * np.maximum(traj.phi[1:], 0.0)
    g2 = dyn.friction * traj.gamma - traj.beta.reshape(len(traj.gamma), nc, nd).sum(2)
    friction = traj.psi * np.maximum(g2, 0.0) * s
    pyramid = traj.beta * traj.eta * s
    kinds = {
        "normal": float(np.max(normal, initial=0.0)),
        "friction": float(np.max(friction, initial=0.0)),
        "pyramid": float(np.max(pyramid, initial=0.0)),
    }
    # The DEL residuals in force units.
    dyn_res = 0.0
    for binding in problem.bindings.get("dynamics", []):
        values = binding.evaluator().Eval(x[prog.FindDecisionVariableIndices(binding.variables())])
        dyn_res = max(dyn_res, float(np.max(np.abs(values))) * s)
    loop_res = 0.0
    if dyn.num_position_constraints:
        for q in traj.q:
            loop_res = max(
                loop_res,
                float(np.max(np.abs(dyn.PositionConstraintResidual(q, jacobian=False)[0]))),
            )
    return SolutionCheck(
        max_violation=worst,
        violations=violations,
        max_complementarity_violation=max(kinds.values()),
        complementarity=kinds,
        max_dynamics_residual=dyn_res,
        max_loop_residual=loop_res,
        min_signed_distance=float(np.min(traj.phi)) if traj.phi.size else float("inf"),
        max_slack=float(np.max(traj.slack)) if traj.slack.size else 0.0,
    )


# ---------------------------------------------------------------------------- trajectory
@dataclasses.dataclass
class ContactImplicitTrajectory:
    """A solution as arrays (plant units; forces physical, not scaled).

    Attributes:
        times: (N,) knot times; h: the time step.
        q: (N, n) knots; qdot: (N-1, n) midpoint velocities (q_k+1 - q_k)/h.
        u: (N-1, m) inputs per interval.
        contact_points: (N, nc, 3) world positions of the contact points at the knots.
        phi: (N, nc) signed distances.
        contact_forces: (N-1, nc, 3) world contact forces acting at the end of each interval.
        gamma, beta, psi, eta, lam, slack: the raw (scaled) contact variables.
    """

    times: np.ndarray
    h: float
    q: np.ndarray
    qdot: np.ndarray
    u: np.ndarray
    contact_points: np.ndarray
    phi: np.ndarray
    contact_forces: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    psi: np.ndarray
    eta: np.ndarray
    lam: np.ndarray
    slack: np.ndarray

    def AsDict(self) -> dict:
        return dataclasses.asdict(self)


def ReconstructTrajectory(
    problem: ContactImplicitProblem, x: np.ndarray
) -> ContactImplicitTrajectory:
    """The solution's arrays from a decision vector x (e.g. result.get_x_val())."""
    prog, vars, dyn = problem.prog, problem.vars, problem.dynamics

    def Get(v):
        v = np.asarray(v)
        if v.size == 0:
            return np.zeros(v.shape)
        return x[prog.FindDecisionVariableIndices(v.ravel())].reshape(v.shape)

    h = vars.time_step if vars.h is None else float(Get(vars.h)[0])
    q = Get(vars.q)
    N = len(q)
    gamma, beta = Get(vars.gamma), Get(vars.beta)
    points = np.array([dyn.ContactPoints(dyn.Kinematics(qk)) for qk in q]).reshape(
        N, dyn.num_contacts, 3
    )
    forces = np.array([dyn.ContactForces(gamma[k], beta[k]) for k in range(N - 1)]).reshape(
        N - 1, dyn.num_contacts, 3
    )
    return ContactImplicitTrajectory(
        times=h * np.arange(N),
        h=h,
        q=q,
        qdot=np.diff(q, axis=0) / h,
        u=Get(vars.u),
        contact_points=points,
        phi=points[..., 2] - dyn.ground_height,
        contact_forces=forces,
        gamma=gamma,
        beta=beta,
        psi=Get(vars.psi),
        eta=Get(vars.eta),
        lam=Get(vars.lam),
        slack=Get(vars.slack),
    )


def RepeatCycles(q: np.ndarray, times: np.ndarray, x_index: int, count: int):
    """A periodic knot trajectory repeated `count` times, shifted forward in x by its distance
    each cycle (for replays and logs of a gait); returns (q, times)."""
    stride = q[-1, x_index] - q[0, x_index]
    period = times[-1] - times[0]
    qs, ts = [q], [times]
    for i in range(1, count):
        shifted = q[1:].copy()
        shifted[:, x_index] += i * stride
        qs.append(shifted)
        ts.append(times[1:] + i * period)
    return np.vstack(qs), np.concatenate(ts)


# ---------------------------------------------------------------------------- time stepping
@dataclasses.dataclass
class ContactImplicitSimulation:
    """A trajectory integrated step by step with the transcription's own discrete dynamics.

    Attributes:
        times, q: knots (num_steps + 1); u: inputs per step; gamma, beta, lam: forces (scaled);
        max_complementarity: the largest unrelaxed complementarity product of any step;
        max_violation: the largest constraint violation of any step's solve; failures: steps
        whose solve did not report success.
    """

    times: np.ndarray
    q: np.ndarray
    u: np.ndarray
    forces: dict
    max_complementarity: float
    max_violation: float
    failures: list


def SimulateContactImplicit(
    dynamics: VariationalDynamics,
    q0: np.ndarray,
    qdot0: np.ndarray,
    h: float,
    inputs: np.ndarray,
    *,
    slack: float = 1e-6,
    config: SolverConfig | None = None,
    progress=None,
) -> ContactImplicitSimulation:
    """Integrates the midpoint variational dynamics with contact, one small NLP per step.

    Each step solves the discrete Euler-Lagrange equation at the current knot (its incoming
    momentum from the previous step, or the Legendre transform of qdot0 at the first), the loop
    constraints at the next knot, non-penetration, and the complementarity conditions relaxed to
    `slack` (the same constraint builders as the trajectory optimization, with N = 2 knots).
    This is Stewart-Trinkle style time stepping with the variational integrator; the result is
    consistent with the transcription (a warm start needs no repair but periodicity).

    Args:
        dynamics: the VariationalDynamics.
        q0, qdot0: initial positions and position derivatives.
        h: time step.
        inputs: (num_steps, num_inputs) inputs held over each step.
        slack: the complementarity relaxation of every step.
        progress: optional callable(step, num_steps).
    """
    n = dynamics.num_positions
    inputs = np.asarray(inputs, float)
    num_steps = len(inputs)
    p_in = np.asarray(dynamics.LegendreMomentum(np.asarray(q0, float), np.asarray(qdot0, float))[0])
    momentum = np.array(p_in, dtype=float)  # updated in place between steps
    # No position bounds: joint limits have no reaction force in the transcription, so a plan
    # respects them as constraints but a simulation must not be made infeasible by them.
    unbounded = np.full(n, np.inf)
    problem = MakeContactImplicitProblem(
        dynamics,
        num_knots=2,
        time_step=h,
        initial=("momentum", momentum),
        slack_bounds=(0.0, slack),
        position_lower=-unbounded,
        position_upper=unbounded,
        constrain_first_knot=False,
    )
    prog, vars = problem.prog, problem.vars
    fixed_q = constraints.AddFixedPositions(prog, vars, 0, q0)
    fixed_u = None
    if dynamics.num_inputs:
        fixed_u = prog.AddBoundingBoxConstraint(inputs[0], inputs[0], vars.u[0])
        fixed_u.evaluator().set_description("fixed_inputs")
    from drakebots.optimization.contact_implicit_costs import AddComplementarityPenalty

    AddComplementarityPenalty(prog, vars, weight=1.0)
    config = config or SolverConfig(major_iterations=500)
    q = np.zeros((num_steps + 1, n))
    q[0] = q0
    forces = {name: [] for name in ("gamma", "beta", "lam", "psi", "eta")}
    worst_c, worst_v, failures = 0.0, 0.0, []
    previous = None
    guess_q1 = np.asarray(q0, float) + h * np.asarray(qdot0, float)
    for k in range(num_steps):
        fixed_q.evaluator().UpdateLowerBound(q[k])
        fixed_q.evaluator().UpdateUpperBound(q[k])
        if fixed_u is not None:
            fixed_u.evaluator().UpdateLowerBound(inputs[k])
            fixed_u.evaluator().UpdateUpperBound(inputs[k])
        x0 = np.zeros(prog.num_vars()) if previous is None else previous.copy()
        x0[prog.FindDecisionVariableIndices(vars.q[0])] = q[k]
        x0[prog.FindDecisionVariableIndices(vars.q[1])] = guess_q1
        if dynamics.num_inputs:
            x0[prog.FindDecisionVariableIndices(vars.u[0])] = inputs[k]
        prog.SetInitialGuessForAllVariables(x0)
        outcome = SolveContactImplicit(problem, config)
        if not outcome.success:
            # Retry through a looser relaxation (a short homotopy) from the same guess.
            prog.SetInitialGuessForAllVariables(x0)
            outcome = SolveWithSlackHomotopy(problem, config, upper_bounds=(1e-2, 1e-4, slack))
        x = outcome.result.get_x_val()
        check = CheckContactImplicitSolution(problem, x)
        worst_c = max(worst_c, check.max_complementarity_violation)
        worst_v = max(worst_v, check.max_violation)
        if not outcome.success:
            failures.append((k, outcome.status))
        traj = ReconstructTrajectory(problem, x)
        q[k + 1] = traj.q[1]
        for name in forces:
            forces[name].append(getattr(traj, name)[0])
        # The momentum arriving at the new knot feeds the next step's DEL.
        momentum[:] = dynamics.Interval(q[k], q[k + 1], inputs[k], h).p_minus
        guess_q1 = 2.0 * q[k + 1] - q[k]
        previous = x
        if progress is not None:
            progress(k + 1, num_steps)
    return ContactImplicitSimulation(
        times=h * np.arange(num_steps + 1),
        q=q,
        u=inputs,
        forces={name: np.array(value) for name, value in forces.items()},
        max_complementarity=worst_c,
        max_violation=worst_v,
        failures=failures,
    )
