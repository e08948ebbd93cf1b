"""Backward-Euler time stepping of a FEM body by Newton's method on the incremental potential.

One step of size h from (x, v) solves for the end positions y (then v+ = (y - x)/h):

    M (y - x - h v)/h^2 + dE/dx(y) + D (y - x)/h - f_ext = 0,

the stationarity condition of the incremental potential

    Phi(y) = 1/(2h^2) |y - x - h v|_M^2 + E(y) + 1/(2h) |y - x|_D^2 - f_ext . y,

which is the skin block (A_d, b_d) of the paper's Eq. (2) (skinned-quad-robots.txt section 4.1,
Appendix A: A_d = M/h^2 + D/h + K). Newton's method uses the exact stiffness (with the mass term
it is positive definite except under large compression) and switches to the PSD-projected one as
soon as a direction fails to descend Phi or the factorisation finds the matrix indefinite
(drakebots.fem.solvers.NotPositiveDefinite); a modified Newton keeps the factorisation while the
iteration contracts fast; a backtracking line search (Armijo) keeps Phi decreasing and
rejects any trial point where an element inverts (det F <= `min_jacobian`: neo-Hookean energy is
infinite there). If Newton fails (no descent, an inversion it cannot avoid, or too many
iterations), the step is cut in halves and retried up to `max_cuts` times; if that still fails an
`ElementInversion` (or `NewtonFailure`) names the element and the time.

Prescribed vertices (a clamp, glued vertices moved by a skeleton) are handled by elimination:
their rows and columns are replaced by identity and their positions set to the targets.
"""

import dataclasses

import numpy as np
import scipy.sparse as sp

from drakebots.fem.model import ElementInversion, FemModel
from drakebots.fem.solvers import (
    DEFAULT_SOLVER,
    Factorize,
    NestedDissection,
    NotPositiveDefinite,
    PardisoFactor,
    ResolveMethod,
)


class NewtonFailure(RuntimeError):
    """Newton's method did not converge within its iteration and step-cut budget."""


@dataclasses.dataclass
class NewtonOptions:
    """Options of the Newton solve of one implicit step."""

    # Converged when the largest position update is below this, m.
    position_tolerance: float = 1e-8
    # ... or when the residual force (free dofs, infinity norm) is below this, N.
    force_tolerance: float = 1e-7
    # Newton iterations per (sub)step.
    max_iterations: int = 30
    # Line-search halvings before the step is declared failed.
    max_line_search: int = 25
    # Step cuts (each halves h) before giving up.
    max_cuts: int = 4
    # Trial points with any det F at or below this are rejected.
    min_jacobian: float = 1e-3
    # ... or when it is below this fraction of the step's displacement (Drake's FEM solver uses a
    # relative tolerance too); 0 disables.
    relative_tolerance: float = 1e-6
    # Project every element's dP/dF to PSD in every iteration (else only after a non-descent
    # direction, the cheaper default).
    always_project: bool = False
    # Modified Newton: keep the factorisation while the iteration contracts by 4x or more.
    reuse_factorization: bool = True
    # Modified Newton across steps: a step starts from the last step's factorisation (same h),
    # refreshed by the rule above when it contracts slowly. The Newton matrix changes little
    # from one step to the next, so a step then often needs no factorisation; and a step whose
    # gradient is converged after an update makes no Hessian. On the beetle's 12.7k-vertex skin
    # at h = 1 ms (bench_fem table 2, same run): a step costs 1.48 numeric factorisations, 3.41
    # with every step factorised afresh. False: that reference (the states agree to the
    # tolerances above; tests/fem/test_fem.py).
    reuse_across_steps: bool = True
    # Linear solver (drakebots.fem.solvers.Factorize).
    linear_solver: str = DEFAULT_SOLVER
    # "backward_euler" (L-stable, dissipative: the default for simulation) or "midpoint"
    # (implicit midpoint: symplectic, conserves linear and angular momentum exactly).
    scheme: str = "backward_euler"


@dataclasses.dataclass
class StepStats:
    """Diagnostics of one (possibly cut) step."""

    newton_iterations: int = 0
    line_search_cuts: int = 0
    step_cuts: int = 0
    residual: float = 0.0


class BackwardEuler:
    """Implicit (backward-Euler) integrator of one FEM body.

    Args:
        model: the FemModel.
        gravity: gravitational acceleration (3,), m/s^2.
        fixed_vertices: indices of vertices whose positions are prescribed each step.
        options: NewtonOptions.
    """

    def __init__(
        self,
        model: FemModel,
        *,
        gravity=(0.0, 0.0, -9.81),
        fixed_vertices=None,
        options: NewtonOptions | None = None,
    ):
        self.model = model
        self.options = options or NewtonOptions()
        self.gravity_forces = model.GravityForces(gravity)
        self.mass = model.MassDiagonal()
        self.damping = model.DampingMatrix()
        self.has_damping = self.damping.nnz > 0 and abs(self.damping).sum() > 0.0
        n = model.num_dofs
        self.fixed_dofs = np.zeros(n, dtype=bool)
        if fixed_vertices is not None:
            fv = np.asarray(fixed_vertices, dtype=np.int64)
            self.fixed_dofs[(3 * fv[:, None] + np.arange(3)).ravel()] = True
        self._free = ~self.fixed_dofs
        # CSR data positions that belong to a fixed row or column (zeroed), and fixed diagonals.
        K0 = model.EmptyPatternMatrix()
        rows = np.repeat(np.arange(n), np.diff(K0.indptr))
        self._fixed_entries = self.fixed_dofs[rows] | self.fixed_dofs[K0.indices]
        self._fixed_diag = model.diagonal_positions[self.fixed_dofs]
        self.stats = StepStats()
        self._ordering = None  # fill-reducing ordering, computed once (the pattern is fixed)
        self._pardiso = None  # PARDISO handle, its symbolic analysis kept across steps
        # (h, factor) of the last step's Newton matrix (NewtonOptions.reuse_across_steps)
        self._carried = None
        if self.options.scheme == "backward_euler":
            self._a, self._c = 1.0, 1.0
        elif self.options.scheme == "midpoint":
            # Phi(y) = 1/h^2 |y - x - h v|_M^2 + 2 E((x + y)/2) - f.y; v+ = 2 (y - x)/h - v.
            self._a, self._c = 2.0, 0.5
        else:
            raise ValueError(f"unknown scheme '{self.options.scheme}'")

    def Potential(self, y, x, v, h, f_ext) -> float:
        """The incremental potential Phi(y), J (inf if an element inverts)."""
        a, c = self._a, self._c
        d = y - x - h * v
        value = (
            0.5 * a / h**2 * np.dot(d * self.mass, d)
            + self.model.Energy(x + c * (y - x)) / c
            - np.dot(f_ext, y)
        )
        if self.has_damping:
            e = y - x
            value += 0.5 / h * np.dot(e, self.damping @ e)
        return value

    def _PotentialGradientHessian(self, y, x, v, h, f_ext, project=True):
        a, c = self._a, self._c
        energy, grad_e, K = self.model.EnergyGradientHessian(x + c * (y - x), project=project)
        d = y - x - h * v
        phi = 0.5 * a / h**2 * np.dot(d * self.mass, d) + energy / c - np.dot(f_ext, y)
        grad = a * self.mass * d / h**2 + grad_e - f_ext
        A = K * c if c != 1.0 else K
        A.data[self.model.diagonal_positions] += a * self.mass / h**2
        if self.has_damping:
            e = y - x
            De = self.damping @ e
            phi += 0.5 / h * np.dot(e, De)
            grad += De / h
            A = A + self.damping / h
        return phi, grad, A.tocsr()

    def _PotentialGradient(self, y, x, v, h, f_ext):
        a, c = self._a, self._c
        z = x + c * (y - x)
        energy, grad_e = self.model.Energy(z), self.model.Gradient(z)
        d = y - x - h * v
        phi = 0.5 * a / h**2 * np.dot(d * self.mass, d) + energy / c - np.dot(f_ext, y)
        grad = a * self.mass * d / h**2 + grad_e - f_ext
        if self.has_damping:
            e = y - x
            De = self.damping @ e
            phi += 0.5 / h * np.dot(e, De)
            grad += De / h
        return phi, grad

    def _Constrain(self, A: sp.csr_matrix) -> sp.csr_matrix:
        """Identity rows/columns for the prescribed dofs (A must have the stiffness pattern)."""
        if not self.fixed_dofs.any():
            return A
        if A.nnz != len(self._fixed_entries):
            A = A.tocsr()
            A.sum_duplicates()
            n = A.shape[0]
            rows = np.repeat(np.arange(n), np.diff(A.indptr))
            mask = self.fixed_dofs[rows] | self.fixed_dofs[A.indices]
            A.data[mask] = 0.0
            A = A + sp.diags(self.fixed_dofs.astype(float))
            return A.tocsr()
        A.data[self._fixed_entries] = 0.0
        A.data[self._fixed_diag] = 1.0
        return A

    def Step(self, x, v, h, *, time=0.0, external_forces=None, targets=None):
        """One backward-Euler step; returns (x+, v+) and records `self.stats`.

        Args:
            x, v: positions (3n,) m and velocities (3n,) m/s at the start.
            h: time step, s.
            time: the step's start time, s (for error messages).
            external_forces: (3n,) N added to gravity (constant over the step).
            targets: (3n,) end positions of the fixed vertices (default: unchanged).

        Raises:
            ElementInversion, NewtonFailure: after `max_cuts` step cuts.
        """
        self.stats = StepStats()
        f_ext = self.gravity_forces.copy()
        if external_forces is not None:
            f_ext = f_ext + external_forces
        if targets is None:
            targets = x
        return self._StepWithCuts(x, v, h, time, f_ext, targets, 0)

    def _StepWithCuts(self, x, v, h, time, f_ext, targets, depth):
        try:
            return self._NewtonStep(x, v, h, time, f_ext, targets)
        except (ElementInversion, NewtonFailure):
            if depth >= self.options.max_cuts:
                raise
            self.stats.step_cuts += 1
            # Two half steps; fixed vertices move half way in the first.
            mid_targets = np.where(self.fixed_dofs, 0.5 * (x + targets), targets)
            x1, v1 = self._StepWithCuts(x, v, 0.5 * h, time, f_ext, mid_targets, depth + 1)
            return self._StepWithCuts(x1, v1, 0.5 * h, time + 0.5 * h, f_ext, targets, depth + 1)

    def _NewtonStep(self, x, v, h, time, f_ext, targets):
        opt = self.options
        free = self._free
        y = np.where(self.fixed_dofs, targets, x + h * v)
        if self.model.FirstInverted(y, opt.min_jacobian) is not None:
            y = np.where(self.fixed_dofs, targets, x)  # inertial guess inverts: start at x
        bad = self.model.FirstInverted(y, opt.min_jacobian)
        if bad is not None:
            raise ElementInversion(bad, time, f"element {bad} is inverted at t = {time:.6g} s")
        factor, last_step = None, np.inf
        # The exact Hessian first (with the mass term it is positive definite for all but large
        # compressive strains); the PSD-projected one whenever it fails to give descent.
        project = opt.always_project
        # A factorisation carried from the last step (stale: of another configuration) makes
        # the step's first update; one that gives no descent or that the line search cannot
        # take is dropped for a fresh one from the same point.
        stale = False
        if opt.reuse_across_steps and self._carried is not None and self._carried[0] == h:
            factor, stale = self._carried[1], True
        self._carried = None
        for iteration in range(opt.max_iterations):
            if factor is None and (iteration == 0 or not opt.reuse_across_steps):
                phi, grad, A = self._PotentialGradientHessian(y, x, v, h, f_ext, project)
            else:
                # Modified Newton: the factor of the previous iteration, a fresh gradient; or,
                # after an update, the gradient first: a converged step needs no Hessian.
                phi, grad = self._PotentialGradient(y, x, v, h, f_ext)
                if factor is None:
                    masked = np.where(free, grad, 0.0)
                    if float(np.max(np.abs(masked), initial=0.0)) > opt.force_tolerance:
                        phi, grad, A = self._PotentialGradientHessian(y, x, v, h, f_ext, project)
            grad[~free] = 0.0
            residual = float(np.max(np.abs(grad))) if grad.size else 0.0
            self.stats.residual = residual
            if residual <= opt.force_tolerance:
                break
            if factor is None:
                stale = False
                A = self._Constrain(A)
                method = ResolveMethod(opt.linear_solver)
                if method == "splu_nd" and self._ordering is None:
                    self._ordering = NestedDissection(A)
                try:
                    if method == "pardiso":  # one symbolic analysis for every step and iteration
                        if self._pardiso is None:
                            self._pardiso = PardisoFactor()
                        factor = self._pardiso.Factor(A)
                    else:
                        factor = Factorize(A, method, ordering=self._ordering)
                except NotPositiveDefinite:
                    if project:
                        raise
                    # The exact Hessian is indefinite (large compression): no Newton descent
                    # direction from it; the PSD-projected one from the same point.
                    project, factor = True, None
                    continue
            dy = -factor.solve(grad)
            dy[~free] = 0.0
            slope = float(np.dot(grad, dy))
            if not slope < 0.0 and stale:
                factor = None
                continue
            if not slope < 0.0 and not project:
                project, factor = True, None
                continue
            if not slope < 0.0:
                raise NewtonFailure(f"no descent direction at t = {time:.6g} s (slope {slope})")
            alpha = 1.0
            for _ in range(opt.max_line_search):
                trial = y + alpha * dy
                J = self.model.Jacobians(x + self._c * (trial - x))
                if J.min() > opt.min_jacobian:
                    value = self.Potential(trial, x, v, h, f_ext)
                    if np.isfinite(value) and value <= phi + 1e-4 * alpha * slope + 1e-12 * abs(
                        phi
                    ):
                        break
                alpha *= 0.5
                self.stats.line_search_cuts += 1
            else:
                if stale:  # the carried factor's update: a fresh one from the same point
                    factor = None
                    continue
                k = int(np.argmin(self.model.Jacobians(y + dy)))
                raise ElementInversion(
                    k,
                    time,
                    f"element {k} inverts (det F <= {opt.min_jacobian}) in every line-search "
                    f"trial at t = {time:.6g} s",
                )
            y = trial
            self.stats.newton_iterations += 1
            if opt.reuse_across_steps:
                self._carried = (h, factor)
            step = float(np.max(np.abs(dy))) if dy.size else 0.0
            if alpha == 1.0 and step <= max(
                opt.position_tolerance, opt.relative_tolerance * float(np.max(np.abs(y - x)))
            ):
                break
            # Keep the factor while it contracts fast; otherwise refresh the Hessian. A carried
            # factor serves one update: the step's next one (unless converged) is Newton's own.
            if stale or not (opt.reuse_factorization and alpha == 1.0 and step <= 0.25 * last_step):
                factor = None
            last_step = step
        else:
            raise NewtonFailure(
                f"Newton did not converge in {opt.max_iterations} iterations at t = {time:.6g} s "
                f"(residual {self.stats.residual:.3g} N)"
            )
        return y, self._a * (y - x) / h - (self._a - 1.0) * v


def StaticEquilibrium(
    model: FemModel,
    *,
    gravity=(0.0, 0.0, -9.81),
    fixed_vertices=None,
    options: NewtonOptions | None = None,
    load_steps: int = 1,
    x0=None,
):
    """Static equilibrium dE/dx = f_gravity with fixed vertices at rest, by damped Newton.

    Solved as a sequence of backward-Euler steps with a huge time step (the inertia term then
    only regularises Newton), loading gravity in `load_steps` increments.

    Returns:
        positions (3n,), m.
    """
    g = np.asarray(gravity, float)
    x = model.RestPositions() if x0 is None else np.asarray(x0, float).copy()
    options = options or NewtonOptions(max_iterations=100)
    for k in range(1, load_steps + 1):
        integ = BackwardEuler(
            model, gravity=g * k / load_steps, fixed_vertices=fixed_vertices, options=options
        )
        for _ in range(3):
            x, _ = integ.Step(x, np.zeros_like(x), 1e3)
    return x
