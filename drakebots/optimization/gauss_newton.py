"""A Gauss-Newton SQP for MathematicalPrograms whose costs are sums of squares (paper, section 5.1).

The paper solves the space-time problem (Eq. 9) "using the Gauss-Newton algorithm" as a sequence
of quadratic programs. `SolveGaussNewton` does that on a `MathematicalProgram` as built by
drakebots.optimization.space_time, reading every binding from the program itself:

- generic (Python) costs must come with a residual r(x) -> (r, J) (`residuals[description]`), so
  the subproblem's Hessian is the Gauss-Newton J^T J; quadratic costs enter exactly;
- linear, bounding-box and Lorentz-cone constraints enter the subproblem exactly (Lorentz cones
  on x + d, so the subproblem is a small SOCP); generic and quadratic constraints are linearised
  with their exact AutoDiff Jacobians;
- each subproblem is a sparse MathematicalProgram (one small dense block per binding) solved with
  Clarabel; steps are damped (Levenberg-Marquardt) and accepted by an l1 merit line search.

SNOPT and IPOPT (`space_time.SolveSpaceTime(..., solver="snopt")`) solve the same program; on
problems of a full motion cycle they spend minutes (SNOPT's dense reduced Hessian over thousands
of superbasic variables, IPOPT's quasi-Newton on a least-squares problem) where Gauss-Newton
takes seconds: see scripts/bench_skinned.py.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff
from pydrake.solvers import ClarabelSolver, MathematicalProgram


@dataclasses.dataclass
class GaussNewtonOptions:
    max_iterations: int = 40
    # Stop when the step is this small (max |d|) and constraints hold to feasibility_tolerance.
    step_tolerance: float = 1e-5
    feasibility_tolerance: float = 1e-6
    # Relative decrease of the merit below which the iteration stops (converged).
    merit_tolerance: float = 1e-6
    # Initial Levenberg-Marquardt damping (times identity on the step).
    damping: float = 1e-6
    # l1 penalty weight of constraint violation in the merit function.
    penalty: float = 1e3


@dataclasses.dataclass
class GaussNewtonResult:
    x: np.ndarray
    success: bool
    status: str
    iterations: int
    cost: float
    violation: float
    history: list
    solve_time: float


def _Indices(prog, variables):
    return np.array(prog.FindDecisionVariableIndices(variables), dtype=int)


class _Linearization:
    def __init__(self, prog: MathematicalProgram, residuals: dict):
        self.prog = prog
        self.residuals = residuals
        self.costs = []  # (idx, fn, name)
        for b in prog.generic_costs():
            name = b.evaluator().get_description()
            if name not in residuals:
                raise ValueError(f"cost '{name}' has no residual form for Gauss-Newton")
            self.costs.append((_Indices(prog, b.variables()), residuals[name], name))
        self.quadratic = [
            (_Indices(prog, b.variables()), b.evaluator().Q(), b.evaluator().b(), b.evaluator().c())
            for b in prog.quadratic_costs()
        ]
        self.linear_costs = [
            (_Indices(prog, b.variables()), b.evaluator().a(), b.evaluator().b())
            for b in prog.linear_costs()
        ]
        self.nonlinear = [
            (_Indices(prog, b.variables()), b, b.evaluator().get_description())
            for b in list(prog.generic_constraints()) + list(prog.quadratic_constraints())
        ]
        self.linear = []
        for b in list(prog.linear_constraints()) + list(prog.linear_equality_constraints()):
            e = b.evaluator()
            A = e.GetDenseA() if hasattr(e, "GetDenseA") else e.A()
            self.linear.append(
                (
                    _Indices(prog, b.variables()),
                    A,
                    e.lower_bound(),
                    e.upper_bound(),
                    e.get_description(),
                )
            )
        self.boxes = [
            (
                _Indices(prog, b.variables()),
                b.evaluator().lower_bound(),
                b.evaluator().upper_bound(),
            )
            for b in prog.bounding_box_constraints()
        ]
        self.cones = [
            (
                _Indices(prog, b.variables()),
                b.evaluator().A().toarray()
                if hasattr(b.evaluator().A(), "toarray")
                else b.evaluator().A(),
                b.evaluator().b(),
                b.evaluator().get_description(),
            )
            for b in prog.lorentz_cone_constraints()
        ]

    def Cost(self, x) -> float:
        total = 0.0
        for idx, fn, _ in self.costs:
            r, _ = fn(x[idx])
            total += float(r @ r)
        for idx, Q, b, c in self.quadratic:
            xi = x[idx]
            total += 0.5 * xi @ Q @ xi + b @ xi + c
        for idx, a, b in self.linear_costs:
            total += a @ x[idx] + b
        return total

    def Violation(self, x) -> tuple[float, float, str]:
        """(sum of violations, max violation, name of the worst constraint)."""
        total, worst, name = 0.0, 0.0, ""

        def add(v, n):
            nonlocal total, worst, name
            v = np.asarray(v, float)
            if v.size == 0:
                return
            total += float(np.sum(v))
            if v.max() > worst:
                worst, name = float(v.max()), n

        for idx, b, n in self.nonlinear:
            y = np.atleast_1d(b.evaluator().Eval(x[idx]))
            e = b.evaluator()
            add(np.maximum(0, e.lower_bound() - y) + np.maximum(0, y - e.upper_bound()), n)
        for idx, A, lb, ub, n in self.linear:
            y = A @ x[idx]
            add(np.maximum(0, lb - y) + np.maximum(0, y - ub), n)
        for idx, lb, ub in self.boxes:
            xi = x[idx]
            add(np.maximum(0, lb - xi) + np.maximum(0, xi - ub), "bounds")
        for idx, A, b, n in self.cones:
            z = A @ x[idx] + b
            add([max(0.0, np.linalg.norm(z[1:]) - z[0])], n)
        return total, worst, name


def SolveGaussNewton(
    prog: MathematicalProgram,
    residuals: dict,
    x0: np.ndarray,
    options: GaussNewtonOptions | None = None,
    *,
    progress=None,
) -> GaussNewtonResult:
    """Solves a least-squares NLP by Gauss-Newton SQP (see the module docstring).

    Args:
        prog: the program; every generic cost's description must be a key of `residuals`.
        residuals: description -> r(x_binding) -> (r, dr/dx).
        x0: initial guess (all decision variables).
        progress: optional callable(iteration, merit, violation).
    """
    options = options or GaussNewtonOptions()
    start = time.perf_counter()
    lin = _Linearization(prog, residuals)
    n = prog.num_vars()
    x = np.array(x0, float)
    solver = ClarabelSolver()
    damping = options.damping
    history = []

    def merit(x):
        v, _, _ = lin.Violation(x)
        return lin.Cost(x) + options.penalty * v

    current = merit(x)
    recent = []
    status = "iteration limit"
    success = False
    iteration = 0
    for iteration in range(1, options.max_iterations + 1):
        qp = MathematicalProgram()
        d = qp.NewContinuousVariables(n, "d")
        # Levenberg-Marquardt damping on every variable, in small diagonal blocks (sparse).
        for first in range(0, n, 64):
            block = d[first : first + 64]
            qp.AddQuadraticCost(
                2 * damping * np.eye(len(block)), np.zeros(len(block)), block, is_convex=True
            )
        for idx, fn, _ in lin.costs:
            r, J = fn(x[idx])
            qp.AddQuadraticCost(2 * J.T @ J, 2 * J.T @ r, d[idx], is_convex=True)
        for idx, Q, b, _ in lin.quadratic:
            qp.AddQuadraticCost(Q, Q @ x[idx] + b, d[idx], is_convex=True)
        for idx, a, _ in lin.linear_costs:
            qp.AddLinearCost(a, 0.0, d[idx])
        # Linearised nonlinear constraints are elastic (l1-penalised slacks, as the merit), so a
        # subproblem stays feasible where the linearisation is not (Sl1QP).
        for idx, b, _ in lin.nonlinear:
            xa = InitializeAutoDiff(x[idx])
            ya = np.atleast_1d(b.evaluator().Eval(xa))
            y = ExtractValue(ya).ravel()
            J = ExtractGradient(ya)
            e = b.evaluator()
            m = len(y)
            s = qp.NewContinuousVariables(2 * m, "s")
            qp.AddBoundingBoxConstraint(0.0, np.inf, s)
            qp.AddLinearCost(np.full(2 * m, options.penalty), 0.0, s)
            qp.AddLinearConstraint(
                np.hstack([J, np.eye(m), -np.eye(m)]),
                e.lower_bound() - y,
                e.upper_bound() - y,
                np.concatenate([d[idx], s]),
            )
        for idx, A, lb, ub, _ in lin.linear:
            y = A @ x[idx]
            qp.AddLinearConstraint(A, lb - y, ub - y, d[idx])
        for idx, lb, ub in lin.boxes:
            qp.AddBoundingBoxConstraint(lb - x[idx], ub - x[idx], d[idx])
        for idx, A, b, _ in lin.cones:
            qp.AddLorentzConeConstraint(A, A @ x[idx] + b, d[idx])
        result = solver.Solve(qp)
        if not result.is_success():
            damping *= 10.0
            history.append({"iteration": iteration, "qp": result.get_solution_result().name})
            if damping > 1e6:
                status = f"subproblem failed ({result.get_solution_result().name})"
                break
            continue
        step = result.GetSolution(d)
        # Backtracking on the l1 merit.
        # Non-monotone acceptance (the best of the last few merits) lets a step along a curved
        # constraint's tangent through, whose violation the next linearisation removes (the
        # Maratos effect of an l1 merit).
        reference = max([current] + recent[-4:])
        alpha = 1.0
        accepted = False
        while alpha > 1e-3:
            trial = x + alpha * step
            value = merit(trial)
            if value < reference - 1e-12 * abs(reference):
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            damping *= 10.0
            if damping > 1e6:
                status = "no decrease of the merit function"
                break
            continue
        x = trial
        recent.append(current)
        previous, current = current, value
        damping = max(damping * 0.3, 1e-9)
        viol, worst, worst_name = lin.Violation(x)
        history.append(
            {
                "iteration": iteration,
                "merit": current,
                "cost": lin.Cost(x),
                "max_violation": worst,
                "worst_constraint": worst_name,
                "step": float(np.max(np.abs(alpha * step))),
                "alpha": alpha,
            }
        )
        if progress is not None:
            progress(iteration, current, worst)
        small_step = np.max(np.abs(alpha * step)) < options.step_tolerance
        small_change = abs(previous - current) <= options.merit_tolerance * max(1.0, abs(current))
        if worst <= options.feasibility_tolerance and (small_step or small_change):
            status = "converged"
            success = True
            break
    viol, worst, worst_name = lin.Violation(x)
    if not success and worst <= options.feasibility_tolerance and status == "iteration limit":
        status = "iteration limit (feasible)"
    return GaussNewtonResult(
        x=x,
        success=success,
        status=status,
        iterations=iteration,
        cost=lin.Cost(x),
        violation=worst,
        history=history,
        solve_time=time.perf_counter() - start,
    )
