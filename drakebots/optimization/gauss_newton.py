"""A Gauss-Newton SQP for least-squares NLPs with sparse Jacobians (paper, section 5.1).

The paper solves the space-time problem (Eq. 9) "using the Gauss-Newton algorithm" as a sequence
of quadratic programs. `SolveLeastSquaresSqp` does that for an NLP given as vectorised functions
(`LeastSquaresNlp`): min ||r(x)||² + ½ xᵀHx + gᵀx subject to c_eq(x) = 0, c_in(x) <= 0, bounds
and second-order cones on affine maps of x. Each iteration:

- evaluates r, c_eq, c_in and their sparse Jacobians in one call (no per-term Python objects);
- solves the QP with the Gauss-Newton Hessian 2 JᵀJ (+ a Levenberg-Marquardt damping that
  shrinks after full steps and grows after steps the line search cut short),
  the constraints linearised, bounds and cones exact, with Clarabel (sparse interior point, SOCP);
  equality rows that give one variable explicitly (`LeastSquaresNlp.explicit_rows`: the soft
  sole's patch forces) are substituted out first, the same QP with fewer variables and rows;
  a subproblem whose linearisation is infeasible is re-solved elastic (l1-penalised slacks,
  priced at most `max_penalty`), and one that fails with the constraints' curvature is
  re-solved with Gauss-Newton's Hessian alone;
- accepts the step by an Armijo line search on the l1 merit f + ν (||c_eq||₁ + ||c_in⁺||₁), with
  ν kept above the QP's multipliers, and a *second-order correction* when the full step is
  rejected: the minimum-norm step back onto the constraints' linearisation at the trial point
  (Nocedal & Wright, section 18.3). That is what lets Gauss-Newton follow curved equality
  constraints (a foot that must stay on the ground while the leg rotates) instead of crawling along
  them with tiny steps (the Maratos effect of an l1 merit).

`SolveGaussNewton(prog, residuals, x0)` runs the same solver on a generic `MathematicalProgram`
(costs given as residuals, every constraint evaluated through its binding, the constraints'
curvature by central differences of their AutoDiff gradients): slower, for small problems and
tests. SNOPT and IPOPT solve the same programs through Drake
(`space_time.SolveSpaceTime(..., solver="snopt")`); scripts/bench_skinned.py compares them.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp


@dataclasses.dataclass
class NlpEvaluation:
    """Values (and, when asked, Jacobians) of a least-squares NLP at one x.

    Attributes:
        r: residuals; the cost is ||r||² + ½ xᵀ H x + gᵀ x.
        c_eq: equality constraints (= 0).
        c_in: inequality constraints (<= 0).
        J_r, A_eq, A_in: their Jacobians (sparse CSR), or None when not asked for.
    """

    r: np.ndarray
    c_eq: np.ndarray
    c_in: np.ndarray
    J_r: sp.csr_matrix | None = None
    A_eq: sp.csr_matrix | None = None
    A_in: sp.csr_matrix | None = None


class LeastSquaresNlp:
    """Interface of the NLPs `SolveLeastSquaresSqp` solves (duck-typed; see SpaceTimeNlp).

    Attributes:
        num_vars: n.
        lower, upper: (n,) bounds (±inf where none).
        H, g: constant quadratic cost terms (sparse (n, n), (n,)), or None.
        cone_A, cone_b: second-order cones C x + e ∈ SOC₃ per 3 rows (sparse (3 c, n), (3 c,)),
            or None: (t, u, v) with t >= ||(u, v)||.
        eq_names, in_names: list of (name, first row, end row) naming the constraint rows.
        explicit_rows: optional (rows, pivots): equality rows that each give one variable
            explicitly (row rows[i] has a nonzero coefficient on variable pivots[i], and no
            other pivot appears in it). The QP eliminates those variables and rows by
            substitution (`_Qp`), an exact reduction of the same subproblem.
    """

    num_vars: int
    lower: np.ndarray
    upper: np.ndarray
    H = None
    g = None
    cone_A = None  # noqa: N815 (monogram: the cone map A)
    cone_b = None
    eq_names: list = []
    in_names: list = []
    explicit_rows = None

    def Evaluate(self, x: np.ndarray, jacobians: bool) -> NlpEvaluation:
        raise NotImplementedError


@dataclasses.dataclass
class GaussNewtonOptions:
    max_iterations: int = 40
    # Converged when constraints hold to feasibility_tolerance and the relative change of the
    # merit or of the cost, or the step (max |d|), is below these.
    feasibility_tolerance: float = 1e-6
    merit_tolerance: float = 1e-6
    step_tolerance: float = 1e-6
    # Initial Levenberg-Marquardt damping (times identity on the step), relative to mean(diag JᵀJ).
    damping: float = 1e-8
    # Initial l1 penalty on constraint violation in the merit (raised above the multipliers).
    penalty: float = 10.0
    # Cap of the slack price in an elastic QP. The merit's penalty follows the multipliers, which
    # near a degenerate point (linearised constraints almost inconsistent) grow without bound
    # (1.6e20 on a trot whose COM leads the diagonals by 4 cm); an elastic QP with slacks priced
    # at that failed in Clarabel (DualInfeasible) and ended the solve.
    max_penalty: float = 1e10
    # Cap of the damping's growth after short steps, relative to mean(diag JᵀJ): the QP's
    # multipliers grow with the damping (P d + q + Aᵀλ = 0), and the merit's penalty with them.
    max_damping: float = 1.0
    # Second-order correction steps when the full step is rejected.
    second_order_correction: bool = True
    # Add the NLP's constraint curvature Σ λ ∇²c (nlp.Curvature, if it has one) to the QP.
    constraint_curvature: bool = True
    # Wall-clock limit, s (0: none).
    time_limit: float = 0.0


@dataclasses.dataclass
class GaussNewtonResult:
    x: np.ndarray
    success: bool
    status: str
    iterations: int
    cost: float
    violation: float
    worst_constraint: str
    history: list
    solve_time: float
    evaluations: int = 0
    qp_time: float = 0.0
    evaluation_time: float = 0.0


def _Names(names, values, absolute):
    """(max violation, its name) over named rows."""
    worst, name = 0.0, ""
    for label, a, b in names:
        if b <= a:
            continue
        v = values[a:b]
        v = np.abs(v) if absolute else np.maximum(v, 0.0)
        if v.max() > worst:
            worst, name = float(v.max()), label
    return worst, name


def _MaxAbs(*arrays) -> float:
    return max(float(np.abs(a).max(initial=0.0)) for a in arrays)


def _ConeViolation(nlp, x) -> float:
    if nlp.cone_A is None or nlp.cone_A.shape[0] == 0:
        return 0.0
    z = (nlp.cone_A @ x + nlp.cone_b).reshape(-1, 3)
    return float(np.max(np.maximum(0.0, np.hypot(z[:, 1], z[:, 2]) - z[:, 0]), initial=0.0))


class _Qp:
    """Clarabel for one subproblem: min ½ dᵀPd + qᵀd s.t. A d + s = b, s ∈ cones."""

    def __init__(self, nlp):
        import clarabel

        self.clarabel = clarabel
        self.nlp = nlp
        self.settings = clarabel.DefaultSettings()
        self.settings.verbose = False
        self.settings.tol_gap_abs = 1e-9
        self.settings.tol_gap_rel = 1e-9
        self.settings.tol_feas = 1e-9
        self.settings.max_iter = 200
        # Iterative refinement of each KKT solve to 1e-9 relative instead of Clarabel's 1e-13:
        # the steps and multipliers change by < 1e-9 relative, the QP is ~30% faster (beetle lift).
        self.settings.iterative_refinement_reltol = 1e-9
        self.settings.iterative_refinement_abstol = 1e-11
        lower, upper = nlp.lower, nlp.upper
        # Variables fixed by their bounds (a swing foot's force) leave the subproblem.
        self.free = np.flatnonzero(~(upper <= lower))
        self.lower, self.upper = lower[self.free], upper[self.free]
        # Explicit equality rows whose pivot is free: eliminated from every (non-elastic) QP.
        self.explicit = None
        self._explicit_key = None  # (n, rows) of the QP the cached index sets below belong to
        explicit = getattr(nlp, "explicit_rows", None)
        if explicit is not None and len(explicit[0]):
            position = np.full(len(lower), -1)
            position[self.free] = np.arange(len(self.free))
            rows, pivots = np.asarray(explicit[0], int), position[np.asarray(explicit[1], int)]
            keep = pivots >= 0
            if np.any(keep):
                self.explicit = (rows[keep], pivots[keep])

    def Solve(self, P, q, ev: NlpEvaluation, x, *, elastic_penalty=None):
        """Returns (d, λ_eq, λ_in, status) (d None when the QP failed)."""
        cl = self.clarabel
        nlp = self.nlp
        free = self.free
        n_all = len(x)
        x_all = x
        x = x[free]
        n = len(x)
        P = P[free][:, free]
        q = q[free]
        A_eq, A_in = ev.A_eq[:, free], ev.A_in[:, free]
        # Bounds enter as rows only near where they could become active within one step.
        near = 1.0
        fin_u = np.flatnonzero(np.isfinite(self.upper) & (self.upper - x < near))
        fin_l = np.flatnonzero(np.isfinite(self.lower) & (x - self.lower < near))
        p, m = A_eq.shape[0], A_in.shape[0]
        blocks, rhs, cones = [], [], []
        ns = 0
        if elastic_penalty is not None:
            # d, then slacks s_eq⁺, s_eq⁻ (p each) and s_in (m): A_eq d + s⁺ - s⁻ = -c_eq,
            # A_in d - s_in <= -c_in, s >= 0, cost ν Σ s.
            ns = 2 * p + m

        def pad(M, extra=None):
            M = sp.csr_matrix(M)
            if ns == 0:
                return M
            right = extra if extra is not None else sp.csr_matrix((M.shape[0], ns))
            return sp.hstack([M, right], format="csr")

        if p:
            extra = None
            if ns:
                extra = sp.hstack([sp.eye(p), -sp.eye(p), sp.csr_matrix((p, m))], format="csr")
            blocks.append(pad(A_eq, extra))
            rhs.append(-ev.c_eq)
            cones.append(cl.ZeroConeT(p))
        nonneg = []
        nonneg_rhs = []
        if m:
            extra = None
            if ns:
                extra = sp.hstack([sp.csr_matrix((m, 2 * p)), -sp.eye(m)], format="csr")
            nonneg.append(pad(A_in, extra))
            nonneg_rhs.append(-ev.c_in)
        if len(fin_u):
            E = sp.csr_matrix(
                (np.ones(len(fin_u)), (np.arange(len(fin_u)), fin_u)), (len(fin_u), n)
            )
            nonneg.append(pad(E))
            nonneg_rhs.append(self.upper[fin_u] - x[fin_u])
        if len(fin_l):
            E = sp.csr_matrix(
                (-np.ones(len(fin_l)), (np.arange(len(fin_l)), fin_l)), (len(fin_l), n)
            )
            nonneg.append(pad(E))
            nonneg_rhs.append(x[fin_l] - self.lower[fin_l])
        if ns:
            nonneg.append(sp.hstack([sp.csr_matrix((ns, n)), -sp.eye(ns)], format="csr"))
            nonneg_rhs.append(np.zeros(ns))
        if nonneg:
            block = sp.vstack(nonneg, format="csr")
            blocks.append(block)
            rhs.append(np.concatenate(nonneg_rhs))
            cones.append(cl.NonnegativeConeT(block.shape[0]))
        if nlp.cone_A is not None and nlp.cone_A.shape[0]:
            C = nlp.cone_A[:, free]
            blocks.append(pad(-C))
            rhs.append(nlp.cone_A @ x_all + nlp.cone_b)
            cones.extend([cl.SecondOrderConeT(3)] * (C.shape[0] // 3))
        A = sp.vstack(blocks, format="csr")
        b = np.concatenate(rhs)
        if ns:
            P = sp.block_diag([P, sp.csr_matrix((ns, ns))], format="csc")
            q = np.concatenate([q, np.full(ns, elastic_penalty)])
        x_free = None
        if self.explicit is not None and ns == 0 and p:
            x_free, z, status = self._SolveEliminated(P, q, A, b, cones, p)
            if x_free is None and status != "no pivot":
                return None, None, None, status
        if x_free is None:
            P = sp.triu(P, format="csc")
            solver = cl.DefaultSolver(P, q, A.tocsc(), b, cones, self.settings)
            sol = solver.solve()
            status = str(sol.status)
            if "Solved" not in status:
                return None, None, None, status
            z = np.asarray(sol.z)
            x_free = np.asarray(sol.x)
        d = np.zeros(n_all)
        d[free] = x_free[:n]
        lam_eq = z[:p] if p else np.zeros(0)
        lam_in = z[p : p + m] if m else np.zeros(0)
        return d, lam_eq, lam_in, status

    def _SolveEliminated(self, P, q, A, b, cones, p):
        """The QP with the explicit rows' pivot variables substituted out.

        Row r of the zero cone reads a_r · d = b_r with coefficient a_rc on its pivot c, so
        d_c = (b_r - Σ_{j≠c} a_rj d_j) / a_rc: d = T y + t₀ over the other variables y, and the
        QP in y has Tᵀ P T, Tᵀ (P t₀ + q), A' T and b' - A' t₀ over the remaining rows A'. The
        eliminated rows' multipliers follow from stationarity in the pivot variables,
        (P d + q)_c + Σ_rows A_ic z_i = 0. Returns (d, z in the original row order, status);
        d is None when the QP failed, or with status "no pivot" when a pivot's coefficient is 0.
        """
        cl = self.clarabel
        rows, pivots = self.explicit
        n = P.shape[0]
        A = A.tocsr()
        key = (n, A.shape[0])
        if self._explicit_key != key:
            self._explicit_key = key
            self._others = np.setdiff1d(np.arange(n), pivots)
            self._rest = np.setdiff1d(np.arange(A.shape[0]), rows)
        others, rest = self._others, self._rest
        # Row r's coefficient on its pivot, and the other entries S (d_c = t₀_c - (S d)_c).
        E = A[rows].tocoo()
        on_pivot = E.col == pivots[E.row]
        coef = np.zeros(len(rows))
        coef[E.row[on_pivot]] = E.data[on_pivot]
        if np.any(coef == 0.0):
            return None, None, "no pivot"
        off = ~on_pivot
        S = sp.csc_matrix(
            (E.data[off] / coef[E.row[off]], (pivots[E.row[off]], E.col[off])), shape=(n, n)
        )
        T = (sp.eye(n, format="csc") - S)[:, others]
        t0 = np.zeros(n)
        t0[pivots] = b[rows] / coef
        A_rest = A[rest]
        P = sp.csc_matrix(P)
        P_y = sp.triu(T.T @ P @ T, format="csc")
        q_y = T.T @ (P @ t0 + q)
        A_y = (A_rest @ T).tocsc()
        b_y = b[rest] - A_rest @ t0
        cones = [cl.ZeroConeT(p - len(rows))] + list(cones[1:])
        sol = cl.DefaultSolver(P_y, q_y, A_y, b_y, cones, self.settings).solve()
        status = str(sol.status)
        if "Solved" not in status:
            return None, None, status
        d = T @ np.asarray(sol.x) + t0
        z = np.zeros(A.shape[0])
        z[rest] = np.asarray(sol.z)
        z[rows] = -((P @ d + q)[pivots] + (A_rest.T @ z[rest])[pivots]) / coef
        return d, z, f"{status} (eliminated)"


def SolveLeastSquaresSqp(
    nlp, x0: np.ndarray, options: GaussNewtonOptions | None = None, *, progress=None
) -> GaussNewtonResult:
    """Solves a `LeastSquaresNlp` by Gauss-Newton SQP (see the module docstring).

    Args:
        nlp: the problem.
        x0: initial guess (clipped to the bounds).
        options: tolerances and limits.
        progress: optional callable(iteration, merit, max violation).
    """
    options = options or GaussNewtonOptions()
    start = time.perf_counter()
    qp = _Qp(nlp)
    x = np.clip(np.asarray(x0, float), nlp.lower, nlp.upper)
    n = len(x)
    H = nlp.H if nlp.H is not None else sp.csr_matrix((n, n))
    g = nlp.g if nlp.g is not None else np.zeros(n)
    nu = options.penalty
    counters = {"evaluations": 0, "eval_time": 0.0, "qp_time": 0.0}

    def evaluate(x, jacobians):
        t = time.perf_counter()
        ev = nlp.Evaluate(x, jacobians)
        counters["evaluations"] += 1
        counters["eval_time"] += time.perf_counter() - t
        return ev

    def cost(ev, x):
        return float(ev.r @ ev.r + 0.5 * x @ (H @ x) + g @ x)

    def infeasibility(ev):
        return float(np.abs(ev.c_eq).sum() + np.maximum(ev.c_in, 0.0).sum())

    def max_violation(ev, x):
        worst_eq, name_eq = _Names(nlp.eq_names, ev.c_eq, True)
        worst_in, name_in = _Names(nlp.in_names, ev.c_in, False)
        worst, name = (worst_eq, name_eq) if worst_eq >= worst_in else (worst_in, name_in)
        cone = _ConeViolation(nlp, x)
        if cone > worst:
            worst, name = cone, "friction_cone"
        return worst, name

    def Step(P):
        """The QP's step: (d, λ_eq, λ_in, status, elastic); d None when it failed. A QP that
        fails (its linearisation infeasible) is re-solved elastic."""
        d, new_eq, new_in, qp_status = qp.Solve(P, grad, ev, x)
        if d is not None:
            return d, new_eq, new_in, qp_status, False
        d, new_eq, new_in, elastic_status = qp.Solve(
            P, grad, ev, x, elastic_penalty=min(nu, options.max_penalty)
        )
        return d, new_eq, new_in, f"{qp_status}; elastic: {elastic_status}", True

    ev = evaluate(x, True)
    lam_eq = np.zeros(len(ev.c_eq))
    lam_in = np.zeros(len(ev.c_in))
    curvature = getattr(nlp, "Curvature", None)
    history = []
    status, success = "iteration limit", False
    damping = None
    full_step_before = False
    iteration = 0
    for iteration in range(1, options.max_iterations + 1):
        if options.time_limit and time.perf_counter() - start > options.time_limit:
            status = "time limit"
            iteration -= 1
            break
        J = ev.J_r
        JtJ = (J.T @ J).tocsc()
        if damping is None:
            scale = max(float(np.mean(JtJ.diagonal())) if n else 1.0, 1e-12)
            damping = options.damping * scale
        P = 2.0 * JtJ + H + sp.eye(n, format="csc") * (2.0 * damping)
        grad = 2.0 * (J.T @ ev.r) + H @ x + g
        t = time.perf_counter()
        if curvature is not None and options.constraint_curvature:
            d, new_eq, new_in, qp_status, elastic = Step(P + curvature(x, lam_eq, lam_in))
            if d is None:
                # The constraints' curvature is weighted by the last multipliers; near a
                # degenerate point they are large and the QP too ill-conditioned for Clarabel
                # (it reported the strictly convex QP unbounded): Gauss-Newton's Hessian alone.
                d, new_eq, new_in, qp_status, elastic = Step(P)
        else:
            d, new_eq, new_in, qp_status, elastic = Step(P)
        if d is not None:
            lam_eq, lam_in = new_eq, new_in
        counters["qp_time"] += time.perf_counter() - t
        if d is None:
            damping *= 100.0
            history.append({"iteration": iteration, "qp": qp_status})
            if damping > 1e6 * scale:
                status = f"subproblem failed ({qp_status})"
                break
            continue
        if not elastic:
            nu = max(nu, 1.5 * _MaxAbs(lam_eq, lam_in) + 1e-3)
        f0, h0 = cost(ev, x), infeasibility(ev)
        merit0 = f0 + nu * h0
        # Directional derivative of the merit along d (the linearised constraints hold at d).
        slope = float(grad @ d) - nu * h0
        if elastic:
            ev_lin_eq = ev.c_eq + ev.A_eq @ d
            ev_lin_in = ev.c_in + ev.A_in @ d
            slope = float(grad @ d) - nu * (
                h0 - np.abs(ev_lin_eq).sum() - np.maximum(ev_lin_in, 0).sum()
            )
        slope = min(slope, -1e-16)
        alpha = 1.0
        accepted = None
        soc_used = False
        while alpha >= 1e-4:
            trial = np.clip(x + alpha * d, nlp.lower, nlp.upper)
            # After a full step the next is usually full too: evaluate the full trial with its
            # Jacobians, which are then the accepted point's (one evaluation instead of two).
            ev_t = evaluate(trial, alpha == 1.0 and full_step_before)
            merit_t = cost(ev_t, trial) + nu * infeasibility(ev_t)
            if merit_t <= merit0 + 1e-4 * alpha * slope:
                accepted = (trial, merit_t)
                break
            if alpha == 1.0 and options.second_order_correction:
                corrected = _SecondOrderCorrection(ev, ev_t, trial)
                if corrected is not None:
                    corrected = np.clip(corrected, nlp.lower, nlp.upper)
                    ev_c = evaluate(corrected, False)
                    merit_c = cost(ev_c, corrected) + nu * infeasibility(ev_c)
                    if merit_c <= merit0 + 1e-4 * slope:
                        accepted = (corrected, merit_c)
                        soc_used = True
                        break
            alpha *= 0.5
        if accepted is None:
            damping *= 10.0
            history.append({"iteration": iteration, "rejected": True, "merit": merit0})
            if damping > 1e8 * max(1.0, float(np.mean(JtJ.diagonal()))):
                status = "no decrease of the merit function"
                break
            continue
        step = accepted[0] - x
        x = accepted[0]
        full_step_before = alpha == 1.0 and not soc_used
        ev = ev_t if full_step_before and ev_t.J_r is not None else evaluate(x, True)
        # Levenberg-Marquardt damping follows how far the quadratic model held: down after a
        # full step, up by 1/α² after a step the line search cut below half (the model was
        # poor that far out; the damping shortens the next step in the directions the
        # linearised constraints leave free). Growing it only below α = 0.1, and by 2, left
        # the monster's kinematic warm start taking steps of ~1 rad cut to α 0.03-0.25 for 40
        # iterations (iteration limit, violation 2 mm): with 1/α² it converges in 25. Capped
        # (options.max_damping): uncapped, the monster's 0.11 m/s walk's dynamic step raised it
        # to 1e16 in 9 iterations, the QP's multipliers and the merit's penalty followed it
        # (1e17) and Clarabel failed on the next subproblem.
        if alpha == 1.0:
            damping *= 0.3
        elif alpha < 0.5:
            damping = max(damping, min(damping / (alpha * alpha), options.max_damping * scale))
        damping = max(damping, 1e-14)
        worst, worst_name = max_violation(ev, x)
        f1 = cost(ev, x)
        merit1 = f1 + nu * infeasibility(ev)
        history.append(
            {
                "iteration": iteration,
                "merit": merit1,
                "cost": f1,
                "max_violation": worst,
                "worst_constraint": worst_name,
                "step": float(np.max(np.abs(step))),
                "alpha": alpha,
                "second_order_correction": soc_used,
                "elastic": elastic,
                "penalty": nu,
                "damping": damping,
            }
        )
        if progress is not None:
            progress(iteration, merit1, worst)
        # The merit's change, or the cost's: once feasible, the penalty times a violation far
        # below the tolerance (nu ~ 1e4 on the beetle's lift) keeps the merit moving for an
        # iteration or two after the cost has settled.
        small_change = abs(merit0 - merit1) <= options.merit_tolerance * max(
            1.0, abs(merit1)
        ) or abs(f0 - f1) <= options.merit_tolerance * max(1.0, abs(f1))
        small_step = np.max(np.abs(step)) <= options.step_tolerance * max(1.0, np.abs(x).max())
        if worst <= options.feasibility_tolerance and (small_change or small_step):
            status, success = "converged", True
            break
    worst, worst_name = max_violation(ev, x)
    if not success and worst <= options.feasibility_tolerance and status == "iteration limit":
        status = "iteration limit (feasible)"
    return GaussNewtonResult(
        x=x,
        success=success,
        status=status,
        iterations=iteration,
        cost=cost(ev, x),
        violation=worst,
        worst_constraint=worst_name,
        history=history,
        solve_time=time.perf_counter() - start,
        evaluations=counters["evaluations"],
        qp_time=counters["qp_time"],
        evaluation_time=counters["eval_time"],
    )


def _SecondOrderCorrection(ev, ev_trial, trial):
    """The minimum-norm correction back onto the constraints linearised at x, evaluated at the
    trial point: A d_c = -c(x + d) for the equalities and the violated inequalities."""
    rows, rhs = [], []
    if ev.A_eq.shape[0]:
        rows.append(ev.A_eq)
        rhs.append(-ev_trial.c_eq)
    violated = np.flatnonzero(ev_trial.c_in > 0.0)
    if len(violated):
        rows.append(ev.A_in[violated])
        rhs.append(-ev_trial.c_in[violated])
    if not rows:
        return None
    A = sp.vstack(rows, format="csr")
    b = np.concatenate(rhs)
    # d_c = Aᵀ (A Aᵀ + ε I)⁻¹ b (dependent rows regularised away).
    AAt = (A @ A.T).tocsc()
    eps = 1e-12 * max(1.0, float(AAt.diagonal().max(initial=1.0)))
    try:
        from scipy.sparse.linalg import splu

        y = splu(AAt + eps * sp.eye(AAt.shape[0], format="csc")).solve(b)
    except RuntimeError:
        return None
    return trial + A.T @ y


# ----------------------------------------------------------------------------------------------
# The same solver on a generic MathematicalProgram (small problems, tests).


class MathematicalProgramNlp(LeastSquaresNlp):
    """A `MathematicalProgram` seen as a LeastSquaresNlp (every binding evaluated by Drake).

    Generic costs need a residual form (`residuals[description] = r(x) -> (r, J)`); quadratic
    costs enter as H, g; linear, generic and quadratic constraints as c_eq/c_in (their bounds
    split into rows); bounding boxes as bounds; Lorentz cones of dimension 3 as cones.
    """

    def __init__(self, prog, residuals: dict):
        from pydrake.autodiffutils import ExtractGradient, ExtractValue, InitializeAutoDiff

        self._ad = (ExtractGradient, ExtractValue, InitializeAutoDiff)
        self.prog = prog
        n = prog.num_vars()
        self.num_vars = n
        self.lower = np.full(n, -np.inf)
        self.upper = np.full(n, np.inf)
        for b in prog.bounding_box_constraints():
            idx = self._Idx(b)
            self.lower[idx] = np.maximum(self.lower[idx], b.evaluator().lower_bound())
            self.upper[idx] = np.minimum(self.upper[idx], b.evaluator().upper_bound())
        self.costs = []
        for b in prog.generic_costs():
            name = b.evaluator().get_description()
            if name not in residuals:
                raise ValueError(f"cost '{name}' has no residual form for Gauss-Newton")
            self.costs.append((self._Idx(b), residuals[name]))
        H = np.zeros((n, n))
        g = np.zeros(n)
        for b in prog.quadratic_costs():
            idx = self._Idx(b)
            H[np.ix_(idx, idx)] += b.evaluator().Q()
            g[idx] += b.evaluator().b()
        for b in prog.linear_costs():
            g[self._Idx(b)] += b.evaluator().a()
        self.H, self.g = sp.csr_matrix(H), g
        nonlinear = list(prog.generic_constraints()) + list(prog.quadratic_constraints())
        linear = list(prog.linear_constraints()) + list(prog.linear_equality_constraints())
        # Nonlinear bindings first: Curvature visits only those.
        self.constraints = [(self._Idx(b), b) for b in nonlinear + linear]
        self._num_nonlinear = len(nonlinear)
        cones = [b for b in prog.lorentz_cone_constraints()]
        rows, cols, vals, offs = [], [], [], []
        for c, b in enumerate(cones):
            e = b.evaluator()
            A = e.A().toarray() if hasattr(e.A(), "toarray") else np.asarray(e.A())
            if A.shape[0] != 3:
                raise ValueError("only 3-dimensional Lorentz cones are supported")
            idx = self._Idx(b)
            for i in range(3):
                for k in range(A.shape[1]):
                    if A[i, k] != 0.0:
                        rows.append(3 * c + i)
                        cols.append(idx[k])
                        vals.append(A[i, k])
            offs.extend(e.b())
        self.cone_A = sp.csr_matrix((vals, (rows, cols)), (3 * len(cones), n))
        self.cone_b = np.array(offs, float)
        self.eq_names, self.in_names = [], []
        self._Layout()

    def _Idx(self, b):
        return np.array(self.prog.FindDecisionVariableIndices(b.variables()), dtype=int)

    def _Layout(self):
        eq, ineq = 0, 0
        self._rows = []
        for _idx, b in self.constraints:
            e = b.evaluator()
            lb, ub = e.lower_bound(), e.upper_bound()
            is_eq = np.isclose(lb, ub)
            lower = ~is_eq & np.isfinite(lb)
            upper = ~is_eq & np.isfinite(ub)
            self._rows.append((is_eq, lower, upper))
            name = e.get_description() or type(e).__name__
            self.eq_names.append((name, eq, eq + int(is_eq.sum())))
            count = int(lower.sum() + upper.sum())
            self.in_names.append((name, ineq, ineq + count))
            eq += int(is_eq.sum())
            ineq += count

    def _ConstraintWeights(self, lam_eq, lam_in):
        """Per constraint binding, the weights w on its values y with Σ λ·c = Σ_b w_b·y_b + const
        (equality rows c = y - lb, lower rows c = lb - y, upper rows c = y - ub)."""
        eq = ineq = 0
        weights = []
        for (_idx, _b), (is_eq, lower, upper) in zip(self.constraints, self._rows):
            w = np.zeros(len(is_eq))
            k = int(is_eq.sum())
            w[is_eq] = lam_eq[eq : eq + k]
            eq += k
            k = int(lower.sum())
            w[lower] -= lam_in[ineq : ineq + k]
            ineq += k
            k2 = int(upper.sum())
            w[upper] += lam_in[ineq : ineq + k2]
            ineq += k2
            weights.append(w)
        return weights

    def Curvature(self, x, lam_eq, lam_in, *, step: float = 1e-6):
        """Σ λ_i ∇²c_i over the nonlinear constraints (generic and quadratic bindings; linear ones
        have none), each binding's block by central differences of its exact (AutoDiff) gradient
        w·∂y/∂x and projected to positive semi-definite, as SpaceTimeNlp.Curvature does.

        Without it the SQP follows a curved equality constraint only through second-order
        corrections and stops short of the answer (min ||x - a||² on the unit sphere:
        tests/skinned/test_motion_optimization.py).
        """
        from drakebots.fem.materials import ProjectToPsd

        ExtractGradient, _, InitializeAutoDiff = self._ad
        n = self.num_vars
        rows, cols, vals = [], [], []
        weights = self._ConstraintWeights(lam_eq, lam_in)[: self._num_nonlinear]
        for (idx, b), w in zip(self.constraints, weights):
            if not np.any(w):
                continue
            e = b.evaluator()

            def gradient(z, e=e, w=w):
                return ExtractGradient(np.atleast_1d(e.Eval(InitializeAutoDiff(z)))).T @ w

            xi = x[idx]
            h = step * np.maximum(1.0, np.abs(xi))
            H = np.empty((len(idx), len(idx)))
            for k in range(len(idx)):
                dz = np.zeros(len(idx))
                dz[k] = h[k]
                H[:, k] = (gradient(xi + dz) - gradient(xi - dz)) / (2.0 * h[k])
            H = ProjectToPsd(H[None])[0]
            rows.append(np.repeat(idx, len(idx)))
            cols.append(np.tile(idx, len(idx)))
            vals.append(H.ravel())
        if not vals:
            return sp.csc_matrix((n, n))
        return sp.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        )

    def Evaluate(self, x, jacobians):
        ExtractGradient, ExtractValue, InitializeAutoDiff = self._ad
        n = self.num_vars
        r, Jr_rows = [], []
        for idx, fn in self.costs:
            ri, Ji = fn(x[idx])
            r.append(np.atleast_1d(ri))
            if jacobians:
                full = np.zeros((len(r[-1]), n))
                full[:, idx] = Ji
                Jr_rows.append(full)
        c_eq, c_in, A_eq, A_in = [], [], [], []
        for (idx, b), (is_eq, lower, upper) in zip(self.constraints, self._rows):
            e = b.evaluator()
            if jacobians:
                ya = np.atleast_1d(e.Eval(InitializeAutoDiff(x[idx])))
                y = ExtractValue(ya).ravel()
                G = np.zeros((len(y), n))
                G[:, idx] = ExtractGradient(ya)
            else:
                y = np.atleast_1d(e.Eval(x[idx])).astype(float)
            lb, ub = e.lower_bound(), e.upper_bound()
            c_eq.append((y - lb)[is_eq])
            c_in.append(np.concatenate([(lb - y)[lower], (y - ub)[upper]]))
            if jacobians:
                A_eq.append(G[is_eq])
                A_in.append(np.vstack([-G[lower], G[upper]]))
        r = np.concatenate(r) if r else np.zeros(0)
        out = NlpEvaluation(
            r=r,
            c_eq=np.concatenate(c_eq) if c_eq else np.zeros(0),
            c_in=np.concatenate(c_in) if c_in else np.zeros(0),
        )
        if jacobians:

            def stack(blocks):
                blocks = [b for b in blocks if len(b)]
                return sp.csr_matrix(np.vstack(blocks)) if blocks else sp.csr_matrix((0, n))

            out.J_r = stack(Jr_rows)
            out.A_eq = stack(A_eq)
            out.A_in = stack(A_in)
        return out


def SolveGaussNewton(prog, residuals: dict, x0, options=None, *, progress=None):
    """Gauss-Newton SQP on a MathematicalProgram (see `MathematicalProgramNlp`)."""
    return SolveLeastSquaresSqp(
        MathematicalProgramNlp(prog, residuals), x0, options, progress=progress
    )
