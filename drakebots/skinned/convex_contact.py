"""The coupled skin's ground contact as one convex problem per step (issue 69; SAP, Castro et al.
2022, "An unconstrained convex formulation of compliant contact"; deformables: Han, Masterjohn,
Castro et al. 2023).

`ConvexStep` is CoupledSkinSkeleton's step with `CouplingConfig.contact = "convex"`. Today's step
("active_set") labels each skin vertex pinned / sliding / free inside Newton and re-factorises
as the labels change; this one has no labels and factorises the coupled matrix once.

The step (size h; skeleton velocities v+, skin positions y, glue multipliers λ) is linearised
once at the predictor y₀ = x + h w (x where that folds an element), v₀ = v:

    K = [[A_r, 0, G_qᵀ], [0, A_d, G_uᵀ], [G_q, G_u, 0]]   (the glued KKT matrix of Eq. 2,
    A_d = M/h² + D/h + ∂²E(y₀) projected PSD, A_r = M(q) + h D_j
    + h K_d + h² K_p)

factorised once (drakebots.fem.coupling.ReducedKkt). The candidates are the free skin vertices
that may touch the ground in the step: z < `contact_margin` at the step's start or at the
predictor. Their compliance with the glue enforced, W = S K⁻¹ Sᵀ (3m × 3m, m/N; S picks their
coordinates), is made by 3m solves with the factorisation (or, by default, in the
factorisation itself: below).

Then modified Newton on the nonlinear step with K fixed: at the iterate (v+, y, λ) the
residuals r (those of today's step: inertia, elasticity, damping, gravity, servo,
glue rows; no contact) give the contact-free update Δ* = -K⁻¹ r and the candidates' free
positions u* = y_c + Δy*_c. The contact forces f (3m, N on the skin) solve the convex problem
in the candidates' velocities v_c = (u - x_c)/h, with u = u* + W f:

    min_{v_c}  ℓ(v_c) = ½ (v_c - v_c*)ᵀ A_c (v_c - v_c*) + Σ_i ℓ_i(v_c,i),   A_c = h² W⁻¹,

SAP's regularised primal: per vertex i, with R_i = diag(R_t, R_t, R_n) and the bias v̂_i =
(0, 0, -φ_i / (h + τ_d)) (φ_i = x_i,z, the signed distance at the step's start),

    y_i = -R_i⁻¹ (v_c,i - v̂_i),  γ_i = P_F(y_i) (the projection onto the friction cone
    ‖γ_t‖ ≤ μ γ_n in the R_i-norm),  ℓ_i = ½ γ_iᵀ R_i γ_i,  ∇ℓ_i = -γ_i,

the friction a cone, not a pyramid. The ground is rigid (SAP's near-rigid regime, Castro 2022
section V.B): R_n = β²/(4π²) w_i, τ_d = β h / π, R_t = σ w_i, w_i the mean of the diagonal of
the vertex's 3 × 3 block of W_v = W / h² (β = `near_rigid`, σ = `friction_regularization`;
Drake's defaults 1 and 1e-3). γ (N s) are impulses: f = γ / h. ℓ is convex with a continuous
gradient; it is minimised by Newton's method with the Hessian A_c + G, G = -∂γ/∂v_c (block
diagonal, PSD), and an exact line search (bisection of the slope along the update, convex). The
update is then Δ = Δ* + K⁻¹ Sᵀ f (the kept columns), and modified Newton repeats until the
skin's update is below `position_tolerance` and the glue residual below `glue_tolerance` (or
`convex_iterations`). Every iteration costs two solves with the factorisation (the residual's
and the contact forces'), or one where the factorisation has a Schur block (below): its
forward substitution gives Δ* on the block, and one backward substitution with the border's
unknowns set to the contact forces gives Δ* + K⁻¹ Sᵀ f (`_OneSolve`, issue 69, Findings 26); a
refactorisation (below) 3m column solves for W. The dense problem
holds the candidates within `contact_active` of the floor and grows by any other its solution
pushes (the same solution: the others' impulses are zero).

Globalised as the active set's Newton is (issue 69, Findings 20): an update moves no vertex
further than `max_update`, and one that overshoots the minimum of the step's potential along it
is cut back (the active set's `_LineSearch`; the potential's contact part is SAP's cost ℓ, whose
gradient along the update is -γ / h at the trial point), once an update of the step has come out
longer than the one before with the same factorisation (where the updates contract, plain
modified Newton is faster: a sliding box's first step took 44 damped iterations against 4).
Without it the monster's walk cycled:
a skin vertex crossing a skeleton box's face, whose penalty stiffness the fixed K lacked, went
in and out at ±1.5 mm for 60 iterations and the step was cut. The factorisation is refreshed
when its updates contract by more than `convex_contraction` an iteration (the exact Hessian
where the update is below `convex_exact_below`, every time by default, the projected one
where that is indefinite or further out), and a step whose last updates contracted faster
hands it, with W, to the next (modified Newton across steps, as the active set's Schur path
does). The collision penalties' change since the factorisation enters by Woodbury's identity
(`_PenaltyUpdate`).

Contact points (`contact_points` = "triangles", `contact_stiffness`; issue 69, Findings 19): as
Drake's deformable contact, the ground may push at points on the skin's ground-facing surface
triangles instead (ContactPoints: the centroid of a triangle's part below the ground, or its
three quadrature points), each moving with its triangle's vertices by barycentric weights, J
(3P × 3m). The unknowns stay the candidates' velocities: ℓ(v_c) = ½ (v_c - v_c*)ᵀ A_c (v_c -
v_c*) + Σ_j ℓ_j(J_j v_c), gradient A_c (v_c - v_c*) - Jᵀ γ, Hessian A_c + Jᵀ G J, the forces on
the vertices Jᵀ γ / h; R_j from the point's Delassus block J_j W_v J_jᵀ, and with a finite
stiffness C the point's k = C area and Drake's R_n = max(β²/(4π²) w, 1 / (h k (h + τ)))
(PointRegularisation). Drake 1.51's own regularisation of a deformable-rigid point (issue 69,
Findings 23; drakebots.skinned.drake_scenes.DrakeContact): the skin's stiffness in series with
the ground's for R_n, the bias holding the ground's pressure (`contact_skin_stiffness`,
_GroundLaw), and w from the diagonal of the step's matrix alone (`contact_delassus`,
_DrakeDelassusEstimate). SAP starts, as Drake's, from the velocities at the step's start.

Collisions in the problem (`convex_collisions`, the default; issue 69, Findings 21; with it
off, the penalties of section 4.2 enter r and K as in the active set): the skeleton boxes and
the self-collision pairs of section 4.2 join the ground as SAP constraints (CollisionContacts),
frictionless, compliant with the penalty's stiffness k (τ = 0: R_n = max(β²/(4π²) w, 1/(h² k)),
v̂_n = -φ / h, so γ_n = h k (-(φ + h v_n))⁺, the penalty k z at the step's end), with the
penalty's C¹ onset δ replaced by its tangent k (z - δ/2) (φ shifted by δ/2). A box constraint's
velocity is n · (v_a - J_box v): the skeleton's velocities join the unknowns, ξ = ((y_c - x_c) /
h, v), with the compliance W_ξ = D S K⁻¹ Sᵀ D over the candidates' coordinates and the
skeleton's (the skeleton rows of the same factorisation; D = 1/h on the skin's, 1 on the
skeleton's), A = W_ξ⁻¹, and the impulses Γ = Jᵀ γ return through K⁻¹ as forces Γ_skin / h on
the skin and impulses Γ_skel on the skeleton. The factorised matrix then holds no penalty
stiffness: a vertex crossing a box face changes the convex problem, whose solution Newton finds
exactly, not the matrix (_SolveGrowing: the problem on the points within `contact_active` of
contact, grown by those its solution pushes).

W from the factorisation (`convex_schur_margin`, the default with PARDISO; issue 69, Findings
22): K⁻¹'s block on the coordinates near contact is the Schur complement PARDISO computes when
the reduced matrix M is factorised bordered by their unit columns E, [[M, E], [Eᵀ, 0]] with the
border last (drakebots.fem.pardiso): its numeric phase returns -Eᵀ M⁻¹ E, which is W on those
coordinates, at about the cost of M's own factorisation, instead of a forward half-solve per
held coordinate. The block (ReducedKkt.schur_dofs) is the problem's coordinates, the outer
surface's free vertices within the margin of the ground, the collisions' within it and the
skeleton's velocities; it is kept while it holds each new problem's coordinates (PARDISO
analyses a new block; the pool keeps one analysis per block), W on a coordinate outside it is
solved as before, and a carried factorisation whose block lacks a step's coordinates is not
reused. Up to `convex_schur_spill` coordinates may lie outside the block before it is replaced:
their columns are solved whole and kept (_Factor.spilled), the others' W still comes from the
block (issue 69, Findings 25: a new block and analysis in 6 of the walk's first 8 steps before).
A carried factorisation that a step does not reuse, or that a refresh replaces, is released to
the pool (ReducedKkt.Release), so its block's analysis serves the next one (Findings 26).

The collisions' problem (issue 69, Findings 25) starts each modified-Newton iteration from the
points its last solution in the step held (`_SolveGrowing`'s `grown`), and SAP's Newton
direction uses the compliance W it already has: with G = L Lᵀ per point in contact,
H⁻¹ = W - (J W)ᵀ L (I + Lᵀ J W Jᵀ L)⁻¹ Lᵀ (J W) (Woodbury), a system of three rows a point in
contact instead of the dense Hessian over every unknown (ContactProblem._Direction).

Drake's time integration (`skin_integrator` "newmark"; issue 69, Findings 33): Drake 1.51's
deformable bodies step by VelocityNewmarkScheme with γ = 1, β = 1/2, the velocity by backward
Euler and the positions by the trapezoid, y = x + h (w + w') / 2. In the step's unknowns y
that is w' = 2 (y - x) / h - w: the residual's inertia and damping M (w' - w) / h + D w', the
matrix 2 (M/h² + D/h) + ∂²E, the candidates' velocities w'(y) and the Delassus operator
2 W / h² (A = h² W⁻¹ / 2); SAP's bias stays -φ / (h + τ) on w', as Drake's. The skeleton stays
backward Euler (Drake's rigid bodies too), so a skeleton box in the problem is refused: its
impulses' compliance with a glued vertex's would not be symmetric.

What the regularisation costs: a resting vertex sinks by about R_n γ_n h, and a stuck one creeps
at R_t |γ_t| (SAP's price for a unique, convex solution); `StepInfo.max_penetration` measures it.
"""

import dataclasses
import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from pydrake.multibody.tree import JacobianWrtVariable
from threadpoolctl import threadpool_limits

from drakebots.fem.coupling import ReducedKkt
from drakebots.fem.model import ElementInversion
from drakebots.fem.solvers import NestedDissection, ResolveBackend

_MIN_JACOBIAN = 1e-3


class CompliantInverse:
    """A = W⁻¹ of an SPD compliance W, applied through W's Cholesky factor (`A @ x`, x a vector
    or columns): SAP's cost needs A only in products, ½ (v - v*)ᵀ A (v - v*) and its gradient,
    and Newton's direction comes from W itself (ContactProblem._Direction). LAPACK's inverse
    (LU, then the inverse from it) costs about 2 d³ flops, the Cholesky factor d³/3, and a
    product through it (two triangular solves) costs what the product with the dense inverse
    does: the monster's walk inverted 58 held blocks of up to 1500 rows in 16 steps, 5.1 of their
    96.6 s (cProfile, issue 69). `Dense()` forms A where a dense Hessian needs it."""

    def __init__(self, W: np.ndarray):
        self.shape = W.shape
        self._factor = sla.cho_factor(W, lower=True, check_finite=False)
        self._dense = None

    def __matmul__(self, x):
        return sla.cho_solve(self._factor, x, check_finite=False)

    def Dense(self) -> np.ndarray:
        if self._dense is None:
            A = self @ np.eye(self.shape[0])
            self._dense = 0.5 * (A + A.T)
        return self._dense


def _Dense(A) -> np.ndarray:
    """A as a dense array (a CompliantInverse formed)."""
    return A.Dense() if isinstance(A, CompliantInverse) else A


@dataclasses.dataclass
class ContactProblem:
    """SAP's regularised contact problem on m candidate vertices (module docstring), in their
    velocities v (3m,), m/s: A (3m, 3m) SPD, N s/m; v_star (3m,); R (m, 3) the regularisation
    (R_t, R_t, R_n) per vertex, s/kg; v_hat (m, 3); mu the friction coefficient."""

    A: np.ndarray
    v_star: np.ndarray
    R: np.ndarray
    v_hat: np.ndarray
    mu: float
    # The contact points' velocities J v (3P, 3m), None: the vertices themselves (P = m, J = I);
    # R and v_hat are then per point (P, 3) (ContactPoints).
    J: np.ndarray | None = None
    # A⁻¹ (the compliance W), where the caller has it: Newton's direction then by Woodbury's
    # identity on the points in contact (_Direction) instead of a Cholesky factorisation of
    # the dense Hessian.
    W: np.ndarray | None = None
    _JW: tuple | None = dataclasses.field(default=None, repr=False)  # (J W, J W Jᵀ), made once

    def Impulses(self, v: np.ndarray, hessian: bool = False):
        """(γ (P, 3), G (P, 3, 3) = -∂γ/∂v_c per point, or None): the projection in R-norm, at
        the points' velocities v_c = J v."""
        return self._PointImpulses(self._PointVelocities(v), hessian)

    def _PointVelocities(self, v: np.ndarray) -> np.ndarray:
        """v_c = J v (3P,)."""
        return v if self.J is None else self.J @ v

    def _PointImpulses(self, v_c: np.ndarray, hessian: bool = False):
        """`Impulses` at the points' velocities v_c (3P,)."""
        V = v_c.reshape(-1, 3)
        sqrtR = np.sqrt(self.R)
        y_hat = -(V - self.v_hat) / sqrtR  # R^{1/2} y with y = -R^{-1} (v - v_hat)
        mu_hat = self.mu * np.sqrt(self.R[:, 0] / self.R[:, 2])
        yt, yn = y_hat[:, :2], y_hat[:, 2]
        t = np.linalg.norm(yt, axis=1)
        stick = t <= mu_hat * yn
        separate = ~stick & (mu_hat * t <= -yn)
        slide = ~stick & ~separate
        g_hat = np.zeros_like(y_hat)
        g_hat[stick] = y_hat[stick]
        that = yt / np.maximum(t, 1e-300)[:, None]
        gn = (yn + mu_hat * t) / (1.0 + mu_hat**2)
        g_hat[slide, 2] = gn[slide]
        g_hat[slide, :2] = (mu_hat * gn)[slide, None] * that[slide]
        gamma = g_hat / sqrtR
        if not hessian:
            return gamma, None
        # dP/dŷ: identity (stick), zero (separate), the cone's derivative (slide).
        D = np.zeros((len(V), 3, 3))
        D[stick] = np.eye(3)
        s = np.flatnonzero(slide)
        if len(s):
            m, th, tt = mu_hat[s], that[s], t[s]
            dn = np.concatenate([m[:, None] * th, np.ones((len(s), 1))], 1) / (1 + m**2)[:, None]
            D[s, 2, :] = dn
            P = np.eye(2) - th[:, :, None] * th[:, None, :]
            D[s, :2, :] = m[:, None, None] * th[:, :, None] * dn[:, None, :]
            D[s, :2, :2] += (m * gn[s] / tt)[:, None, None] * P
        # γ = R^{-1/2} P(ŷ), ŷ = -R^{-1/2}(v - v̂): G = -∂γ/∂v = R^{-1/2} D R^{-1/2}.
        G = D / sqrtR[:, :, None] / sqrtR[:, None, :]
        return gamma, G

    def Cost(self, v: np.ndarray) -> float:
        gamma, _ = self.Impulses(v)
        e = v - self.v_star
        return 0.5 * e @ (self.A @ e) + 0.5 * float(np.sum(gamma**2 * self.R))

    def Gradient(self, v: np.ndarray) -> np.ndarray:
        gamma, _ = self.Impulses(v)
        return self.A @ (v - self.v_star) - self._Generalized(gamma.ravel())

    def _Generalized(self, gamma: np.ndarray) -> np.ndarray:
        """Jᵀ γ: the points' impulses on the vertices."""
        return gamma if self.J is None else self.J.T @ gamma

    def _Hessian(self, G: np.ndarray) -> np.ndarray:
        """A + Jᵀ G J (G block diagonal, one 3 × 3 block a point)."""
        A = _Dense(self.A)
        if not len(G):
            return A
        if self.J is None:
            H = A.copy()
            rows = 3 * np.arange(len(G))[:, None, None] + np.arange(3)[None, :, None]
            H[rows, rows.transpose(0, 2, 1)] += G
            return H
        if sp.issparse(self.J):
            # G block diagonal as a sparse matrix: a point moves with few unknowns, so Jᵀ G J
            # is sparse (the monster's collisions: the dense product was 7 of a 40 s step).
            index = 3 * np.arange(len(G))[:, None, None] + np.zeros((1, 3, 3), np.int64)
            rows, cols = index + np.arange(3)[None, :, None], index + np.arange(3)[None, None, :]
            size = 3 * len(G)
            Gs = sp.csr_matrix((G.ravel(), (rows.ravel(), cols.ravel())), shape=(size, size))
            return A + (self.J.T @ (Gs @ self.J)).toarray()
        GJ = np.einsum("pij,pjk->pik", G, self.J.reshape(len(G), 3, -1)).reshape(len(self.J), -1)
        return A + self.J.T @ GJ

    def Solve(self, v0=None, tolerance=1e-10, max_iterations=100):
        """(v (3m,), γ (m, 3), iterations): Newton with exact line search from v0 (v_star)."""
        v = (self.v_star if v0 is None else v0).copy()
        scale = max(float(np.abs(self.A @ self.v_star).max(initial=0.0)), 1e-12)
        for iteration in range(1, max_iterations + 1):
            gamma, G = self.Impulses(v, hessian=True)
            Ae = self.A @ (v - self.v_star)
            g = Ae - self._Generalized(gamma.ravel())
            if np.abs(g).max() <= tolerance * (scale + np.abs(gamma).max(initial=0.0)):
                return v, gamma, iteration - 1
            d = self._Direction(G, g)
            v = v + self._LineSearch(v, d, g @ d, Ae) * d
        gamma, _ = self.Impulses(v)
        return v, gamma, max_iterations

    def _Direction(self, G: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Newton's direction -H⁻¹ g, H = A + Jᵀ G J.

        With the compliance W = A⁻¹ (the field `W`), by Woodbury's identity on the points
        whose G is not zero (in contact: sticking or sliding), G_a = L Lᵀ per point (its 3 × 3
        eigen-decomposition, G PSD):

            H⁻¹ = W - (J W)ᵀ L (I + Lᵀ J W Jᵀ L)⁻¹ Lᵀ (J W),

        a factorisation of 3a × 3a (a points in contact) instead of the dense d × d Hessian
        (the monster's walk: d = 420-1500 unknowns, a = 55-200; the Hessian's Cholesky was 34
        ms of each SAP iteration, a sixth of a 7.5 s step, cProfile). Without W, or with as
        many rows in contact as unknowns (3a ≥ d), the Cholesky of H."""
        if self.W is None:
            return -sla.solve(self._Hessian(G), g, assume_a="pos")
        lam, V = np.linalg.eigh(G)
        lam = np.maximum(lam, 0.0)
        active = np.flatnonzero(lam.max(axis=1, initial=0.0) > 0.0)
        if 3 * len(active) >= len(g):
            # More rows in contact than unknowns (the validation block's points, 3 to a
            # triangle): the Hessian's own factorisation is the smaller (Woodbury's took 50
            # against 27 ms a step there).
            return -sla.solve(self._Hessian(G), g, assume_a="pos")
        Wg = self.W @ g
        if not len(active):
            return -Wg
        if self._JW is None:
            J = sp.eye(len(g)) if self.J is None else self.J
            JW = np.asarray(J @ self.W)
            self._JW = (JW, np.asarray(J @ JW.T).T)  # (J W, J W Jᵀ)
        JW, D = self._JW
        a = len(active)
        rows = (3 * active[:, None] + np.arange(3)).ravel()
        L = V[active] * np.sqrt(lam[active])[:, None, :]  # G = L Lᵀ per point, (a, 3, 3)
        # I + Lᵀ J W Jᵀ L, L block diagonal: its (p, q) block is L_pᵀ D_pq L_q, as two batched
        # 3 × 3 products (scipy's sparse block_diag and products were 2.1 of SAP's 10 s,
        # cProfile; np.einsum's 4-index contractions 1.9 of 61.5 s over the monster walk's
        # first 10 frames, where matmul's batches take a third to a half of einsum's time at
        # a = 60-300 points, the same to 1e-16 relative; issue 69, Findings 37).
        LtD = np.matmul(L.transpose(0, 2, 1), D[np.ix_(rows, rows)].reshape(a, 3, 3 * a))
        M = np.matmul(LtD.reshape(3 * a, a, 3).transpose(1, 0, 2), L)  # (q, 3a, 3)
        M = M.transpose(1, 0, 2).reshape(3 * a, 3 * a) + np.eye(3 * a)
        JW_a = JW[rows]
        t = np.einsum("pji,pj->pi", L, (JW_a @ g).reshape(a, 3)).ravel()
        s = sla.solve(0.5 * (M + M.T), t, assume_a="pos")
        return -(Wg - JW_a.T @ np.einsum("pij,pj->pi", L, s.reshape(a, 3)).ravel())

    def _LineSearch(self, v, d, slope0, Ae=None):
        """The minimiser of ℓ(v + a d) over a in (0, 1], to 1e-10 of the slope (ℓ convex).

        The slope dℓ/da = dᵀ A (v - v*) + a dᵀ A d - γ(J v + a J d)ᵀ J d takes the products
        with A and J once; each trial is then the projection alone (the validation block's
        point problem: 9 trials a search, 2.4 of a profiled 6.5 s were the gradients'
        products)."""
        Ad = self.A @ d
        base, curvature = float(d @ (self.A @ (v - self.v_star))), float(d @ Ad)
        v_c, d_c = self._PointVelocities(v), self._PointVelocities(d)

        def Slope(a):
            gamma, _ = self._PointImpulses(v_c + a * d_c)
            return base + a * curvature - float(gamma.ravel() @ d_c)

        if slope0 >= 0.0:
            return 0.0
        hi_slope = Slope(1.0)
        if hi_slope <= 0.0:
            return 1.0
        lo, hi, lo_slope = 0.0, 1.0, slope0
        for _ in range(60):
            a = lo + (hi - lo) * (-lo_slope) / (hi_slope - lo_slope)
            a = min(max(a, lo + 0.01 * (hi - lo)), hi - 0.01 * (hi - lo))
            s = Slope(a)
            if abs(s) <= 1e-10 * -slope0:
                return a
            if s < 0.0:
                lo, lo_slope = a, s
            else:
                hi, hi_slope = a, s
        return lo


def _BlockDiagonal(G: np.ndarray) -> np.ndarray:
    """scipy.linalg.block_diag(*G) of (m, 3, 3) blocks by one scatter: its Python loop over the
    blocks took 14 of the 155 s of a monster frame's 1610 contact Newton iterations (Findings
    18)."""
    B = np.zeros((3 * len(G), 3 * len(G)))
    index = 3 * np.arange(len(G))[:, None] + np.arange(3)
    B[index[:, :, None], index[:, None, :]] = G
    return B


class _Factor:
    """A factorisation of the step's glued KKT matrix and the candidates' compliance W = S K⁻¹ Sᵀ
    solved with it so far (one row and column per skin coordinate in `dofs`). Read-only once
    made: `With` returns a new one when coordinates are added (a StepMemory may share it).

    Only W is kept, not the columns K⁻¹ Sᵀ over the whole skeleton and skin: on the monster's
    folded skin (128k skin coordinates) the feet give thousands of candidate coordinates, and
    their columns took gigabytes (15 GB resident in the first step, issue 69's replay, Findings
    18); their product with the contact forces is one solve instead (`_ContactColumns`)."""

    def __init__(self, kkt: ReducedKkt, h: float, dofs=None, W=None, penalty=None, spilled=None):
        self.kkt, self.h = kkt, h
        # The whole columns K⁻¹ e_d (the reduced system's rows) of the held coordinates d
        # outside the Schur block (CouplingConfig.convex_schur_spill), by coordinate.
        self.spilled = {} if spilled is None else spilled
        self.dofs = np.zeros(0, np.int64) if dofs is None else dofs
        self.W = np.zeros((0, 0)) if W is None else W
        self.index = {int(d): k for k, d in enumerate(self.dofs)}
        # The penalties in the factorised matrix and the columns solved for their changes
        # (_PenaltyUpdate), shared by the With copies.
        self.penalty = penalty

    def SpilledColumns(self, dofs) -> list[np.ndarray]:
        """The kept whole columns of coordinates `dofs` (all in `spilled`; the reduced system's
        rows), in their order. A list, not a stack: stacking up to 48 columns of 128k rows
        took 32 ms each time the set changed, 1.7 of 96.6 s over the monster walk's 16 steps
        (cProfile, issue 69), while their products (`_SpilledRows`, `_OneSolve`) read each
        column once either way."""
        return [self.spilled[int(d)] for d in dofs]

    def With(self, dofs):
        """(a _Factor holding W for `dofs` too, the number of new column solves)."""
        new = np.array([d for d in dofs if int(d) not in self.index], dtype=np.int64)
        if not len(new):
            return self, 0
        held = np.concatenate([self.dofs, new])
        k0 = len(self.dofs)
        at = _BorderIndex(self.kkt, held)
        if at is not None:
            # All in the factorisation's Schur block (ReducedKkt.schur_dofs): W without a solve.
            W = self.kkt.schur_complement[np.ix_(at, at)]
            return _Factor(self.kkt, self.h, held, W, self.penalty, self.spilled), 0
        if self.kkt.schur_complement is not None:
            # Some outside the block (CouplingConfig.convex_schur_spill): W among those inside
            # from the block, the columns of those outside by full solves, kept whole so that
            # a later coordinate's rows in them cost no solve.
            inside = _InBorder(self.kkt, held)
            outside = held[~inside]
            spilled = dict(self.spilled)
            missing = np.array([d for d in outside if int(d) not in spilled], np.int64)
            if len(missing):
                for d, column in zip(missing, _SolveColumns(self.kkt, missing).T):
                    spilled[int(d)] = column
            at = _BorderIndex(self.kkt, held[inside])
            W = np.empty((len(held), len(held)))
            W[np.ix_(inside, inside)] = self.kkt.schur_complement[np.ix_(at, at)]
            factor = _Factor(self.kkt, self.h, held, W, self.penalty, spilled)
            out = np.flatnonzero(~inside)
            columns = _SpilledRows(factor.SpilledColumns(outside), self.kkt.Rows(held))
            W[:, out] = columns
            W[out, :] = columns.T
            return factor, len(missing)
        columns = None
        if not k0:
            # The first coordinates of a new factorisation: W = Yᵀ Y by forward half-solves.
            columns = _HalfSolveColumns(self.kkt, new)
        if columns is None:
            columns = _SolveColumns(self.kkt, new, held)  # (len(held), len(new))
        W = np.empty((len(held), len(held)))
        W[:k0, :k0] = self.W
        W[:, k0:] = columns
        W[k0:, :k0] = columns[:k0].T  # W is symmetric
        return _Factor(self.kkt, self.h, held, W, self.penalty, self.spilled), len(new)

    def Columns(self, dofs):
        """(cols_v, cols_y, cols_l, W) of `dofs` (all held: `With` first): K⁻¹ Sᵀ's skeleton,
        skin and glue parts as operators (`cols_y @ f`; `_ContactColumns`) and W."""
        k = np.array([self.index[int(d)] for d in dofs], dtype=np.int64)
        W = self.W[np.ix_(k, k)]
        columns = _ContactColumns(self.kkt, dofs)
        return columns.Part(0), columns.Part(1), columns.Part(2), 0.5 * (W + W.T)


class _OneSolve:
    """A modified-Newton iteration's solves with the factorisation, as one (ReducedKkt's
    BorderedSolve): the free motion K⁻¹ b on the problem's coordinates from the forward
    substitution (`free`), the response to forces on them from W (`Response`: the Schur
    block's and the kept columns', no solve), and the whole update, free motion and response,
    from one backward substitution (`Finish`). Before, the free solve and the response's solve
    were two whole solves an iteration (0.05 s each on the monster's walk; 14 of a step's
    4.4 s were 0.82 s, cProfile). The same update to round-off (the response is linear).

    `For` makes one where every problem coordinate is in the factorisation's Schur block or has
    its column kept (_Factor.spilled); else None, and the two solves. Units are the reduced
    system's: a skin coordinate's position (m) per force (N), a skeleton velocity per impulse."""

    @staticmethod
    def For(factor: "_Factor", problem_dofs, b_r, b_d, c) -> "_OneSolve | None":
        kkt = factor.kkt
        if kkt.schur_complement is None:
            return None
        inside = _InBorder(kkt, problem_dofs)
        if any(int(d) not in factor.spilled for d in problem_dofs[~inside]):
            return None
        return _OneSolve(factor, problem_dofs, inside, b_r, b_d, c)

    def __init__(self, factor: "_Factor", problem_dofs, inside, b_r, b_d, c):
        self.kkt = kkt = factor.kkt
        self.inside = inside
        self.at = np.searchsorted(kkt.schur_dofs, problem_dofs)  # valid where inside
        self.split = kkt.SolveBordered(b_r, b_d, c)
        self.free = np.empty(len(problem_dofs))
        self.free[inside] = self.split.block[self.at[inside]]
        self.columns = None  # the kept columns of those outside (the reduced rows, o of them)
        if not np.all(inside):
            outside = problem_dofs[~inside]
            self.columns = factor.SpilledColumns(outside)
            self.free[~inside] = [column @ self.split.rhs for column in self.columns]
            # Their rows in the Schur block and on the problem's coordinates (Response).
            self.block_rows = _SpilledRows(self.columns, kkt.schur_rows)
            self.problem_rows = _SpilledRows(self.columns, kkt.Rows(problem_dofs))

    def Response(self, S, g):
        """(Δz on every problem coordinate, the forces as `Finish` takes them) of forces g on the
        problem's coordinates S."""
        inside = self.inside[S]
        g_block = np.zeros(len(self.kkt.schur_dofs))
        g_block[self.at[S[inside]]] = g[inside]
        change = np.empty(len(self.inside))
        change[self.inside] = (self.kkt.schur_complement @ g_block)[self.at[self.inside]]
        g_out = None
        if self.columns is not None:
            g_out = np.zeros(len(self.columns))
            g_out[np.searchsorted(np.flatnonzero(~self.inside), S[~inside])] = g[~inside]
            change[~self.inside] = self.block_rows.T @ g_block
            change += self.problem_rows @ g_out
        return change, (g_block, g_out)

    def Finish(self, forces=None):
        """(dv, dy, dlam): the free motion plus the response to `forces` (Response's second
        output; None: none)."""
        if forces is None:
            return self.split.Finish()
        g_block, g_out = forces
        extra = None
        if g_out is not None:
            extra = np.zeros_like(self.columns[0])
            for column, g in zip(self.columns, g_out):
                extra += g * column
        return self.split.Finish(g_block, extra)


def _SpilledRows(columns: list[np.ndarray], rows) -> np.ndarray:
    """(len(rows), len(columns)): rows `rows` of the kept whole columns (_Factor.SpilledColumns)."""
    return np.stack([column[rows] for column in columns], axis=1)


def _InBorder(kkt: ReducedKkt, dofs) -> np.ndarray:
    """(len(dofs),) bool: which of the coordinates `dofs` lie in kkt's Schur block (none where
    it has none)."""
    dofs = np.asarray(dofs, np.int64)
    if kkt.schur_dofs is None or kkt.schur_complement is None or not len(kkt.schur_dofs):
        return np.zeros(len(dofs), dtype=bool)
    border = kkt.schur_dofs
    at = np.minimum(np.searchsorted(border, dofs), len(border) - 1)
    return border[at] == dofs


def _BorderIndex(kkt: ReducedKkt, dofs) -> np.ndarray | None:
    """The positions of coordinates `dofs` in kkt's Schur block (ReducedKkt.schur_dofs), or
    None where it has none or one of them is not in it (_InBorder)."""
    if not np.all(_InBorder(kkt, dofs)) or kkt.schur_complement is None:
        return None
    return np.searchsorted(kkt.schur_dofs, dofs)


class _PenaltyUpdate:
    """The collision penalties' stiffness in a factorised step matrix K, and the step's matrix at
    a later iterate without a factorisation. The penalties couple skin and skeleton: in the
    unknowns (skin y, skeleton v) their block is [[P, -h C], [-h Cᵀ, h² S]] (P the skin's
    stiffness, C = Σ K_b J_b, S = Σ J_bᵀ K_b J_b; Penalties.StepBlocks), positive semi-definite
    only as a whole. Where it changed since K (a vertex entered or left a skeleton box, a
    self-collision pair began or ended), on the skin coordinates T and all nv skeleton ones,
    U = [E_T, 0; 0, I] and Δ that block's change, Woodbury's identity solves the iterate's matrix:

        (K + U Δ Uᵀ)⁻¹ b = K⁻¹ b - Z (I + Δ Uᵀ Z)⁻¹ Δ Uᵀ K⁻¹ b,   Z = K⁻¹ U,

    Z solved once per factorisation and coordinate (kept), and the contact problem's compliance
    W = S (K + U Δ Uᵀ)⁻¹ Sᵀ likewise. Why (issue 69, Findings 20): a penalised vertex is stiff
    (2000 N/m against 0.04 N/m of inertia at the monster's light vertices) and switches as it
    crosses a box face; with the penalties of the factorisation's iterate in its place the step
    acts explicitly in them. The monster's walk then cycled at ±1.5 mm for 60 iterations, and
    with two iterations a step and no penalty update an element inverted in the 6th frame.
    Changing P alone is not enough: without the skeleton's part the block is indefinite."""

    def __init__(self, kkt: ReducedKkt, penalties, exact: bool, nv: int):
        self.kkt, self.exact, self.nv = kkt, exact, nv
        self.P0, self.C0, self.S0 = self.Parts(penalties)
        self.columns = {}  # ("d", skin coordinate) or ("r", skeleton coordinate) -> (z_r, z_d, z_l)

    def Parts(self, penalties):
        P = penalties.stiffness
        if self.exact and penalties.tangential is not None:
            P = P + penalties.tangential
        C = penalties.coupling
        S = penalties.skeleton_stiffness
        return (
            sp.csr_matrix(P),
            sp.csr_matrix(C) if C is not None else sp.csr_matrix(P.shape[:1] + (self.nv,)),
            np.zeros((self.nv, self.nv)) if S is None else np.asarray(S, float),
        )

    def Update(self, penalties, h):
        """(T, Z_r, Z_d, Z_l, M) with the iterate's solve K⁻¹ b - Z M (Uᵀ K⁻¹ b), or None where
        the penalties are those of the factorisation."""
        P, C, S = self.Parts(penalties)
        dP = (P - self.P0).tocsr()
        dP.eliminate_zeros()
        dC = (C - self.C0).tocsr()
        dC.eliminate_zeros()
        dS = S - self.S0
        T = np.unique(np.concatenate([dP.nonzero()[0], dC.nonzero()[0]]))
        if not len(T) and not np.any(dS):
            return None
        keys = [("d", int(d)) for d in T] + [("r", j) for j in range(self.nv)]
        Z_r, Z_d, Z_l = self.Columns(keys)
        t = len(T)
        D = np.zeros((t + self.nv, t + self.nv))
        D[:t, :t] = dP[T][:, T].toarray()
        D[:t, t:] = -h * dC[T].toarray()
        D[t:, :t] = D[:t, t:].T
        D[t:, t:] = h**2 * dS
        ZU = np.vstack([Z_d[T], Z_r])  # Uᵀ Z
        M = np.linalg.solve(np.eye(len(D)) + D @ ZU, D)
        return T, Z_r, Z_d, Z_l, M

    def Columns(self, keys):
        new = [k for k in keys if k not in self.columns]
        if new:
            kkt = self.kkt
            B_d = np.zeros((kkt.nd, len(new)))
            B_r = np.zeros((kkt.nr, len(new)))
            for i, (part, index) in enumerate(new):
                (B_d if part == "d" else B_r)[index, i] = 1.0
            Z_r, Z_d, Z_l = kkt.Solve(B_r, B_d, np.zeros((len(kkt.pinned), len(new))))
            for i, key in enumerate(new):
                self.columns[key] = (Z_r[:, i], Z_d[:, i], Z_l[:, i])
        parts = [self.columns[k] for k in keys]
        return tuple(np.stack([p[i] for p in parts], axis=1) for i in range(3))


class _ContactColumns:
    """K⁻¹ Sᵀ of the candidate coordinates `dofs`, applied and not stored: its product with
    forces f on them is one solve with the factorisation, (dv, dy, dlam) = K⁻¹ (0, Sᵀ f, 0),
    the same as the product with the solved columns (`_SolveColumns`). `Part(i)` is the
    skeleton (0), skin (1) or glue (2) rows as an operator, `part @ f`; the three products
    with the same f share the one solve."""

    def __init__(self, kkt: ReducedKkt, dofs):
        self.kkt, self.dofs = kkt, np.asarray(dofs, np.int64)
        self._last = None  # (f's bytes, (dv, dy, dlam))

    def Apply(self, f):
        f = np.asarray(f, float)
        key = f.tobytes()
        if self._last is None or self._last[0] != key:
            nd = self.kkt.nd
            F, B = np.zeros(nd), np.zeros(self.kkt.nr)
            skin = self.dofs < nd
            F[self.dofs[skin]] = f[skin]
            B[self.dofs[~skin] - nd] = f[~skin]  # impulses on the skeleton's velocities
            parts = self.kkt.Solve(B, F, np.zeros(len(self.kkt.pinned)))
            self._last = (key, parts)
        return self._last[1]

    def Part(self, i: int) -> "_ColumnsPart":
        return _ColumnsPart(self, i)


@dataclasses.dataclass
class _ColumnsPart:
    columns: _ContactColumns
    part: int

    def __matmul__(self, f):
        return self.columns.Apply(f)[self.part]


# Columns solved at once: a block of this many right-hand sides over the monster's 128k-row
# reduced matrix is 260 MB (with its solution).
_COLUMN_BLOCK = 128


def _HalfSolveColumns(kkt: ReducedKkt, dofs):
    """W = S K⁻¹ Sᵀ of free skin coordinates `dofs` as Yᵀ Y, Y = L⁻¹ P Sᵀ the forward
    half-solve with a positive-definite factorisation (half a solve a column, as the active
    set's Schur path makes its columns; profiled on the monster's first convex step, the full
    solves were 16 of its 43 s: Findings 18), checked against one full solve of a random
    combination of the columns; None where the factorisation has no half-solve (SuperLU, an
    indefinite LDLᵀ) or the check fails (then the full solves, `_SolveColumns`)."""
    factor = kkt._lu
    if kkt.factorized_by not in ("pardiso", "cholmod") or not hasattr(factor, "HalfSolve"):
        return None
    rows = kkt.Rows(dofs)
    W = np.zeros((len(rows), len(rows)))
    blocks = [rows[a : a + _COLUMN_BLOCK] for a in range(0, len(rows), _COLUMN_BLOCK)]
    halves = []
    for block in blocks:
        rhs = np.zeros((len(kkt.free) + kkt.nr, len(block)), order="F")  # PARDISO's order
        rhs[block, np.arange(len(block))] = 1.0
        halves.append(factor.HalfSolve(rhs))
    # L⁻¹ P eⱼ is zero outside the elimination tree's path from eⱼ to the root: the products
    # over the rows that are not zero in some column.
    used = np.zeros(len(rhs), dtype=bool)
    for Y in halves:
        used |= np.any(Y != 0.0, axis=1)
    halves = [np.ascontiguousarray(Y[used]) for Y in halves]
    for i, Yi in enumerate(halves):  # W's blocks Yᵢᵀ Yⱼ, j ≥ i
        a = i * _COLUMN_BLOCK
        for j in range(i, len(halves)):
            b = j * _COLUMN_BLOCK
            block = Yi.T @ halves[j]
            W[a : a + block.shape[0], b : b + block.shape[1]] = block
            W[b : b + block.shape[1], a : a + block.shape[0]] = block.T
    weights = np.random.default_rng(0).standard_normal(len(rows))
    rhs = np.zeros(len(kkt.free) + kkt.nr)
    rhs[rows] = weights
    full = factor.solve(rhs)[rows]
    if np.abs(W @ weights - full).max() > 1e-8 * max(np.abs(full).max(), 1e-300):
        return None
    return W


def _SolveColumns(kkt: ReducedKkt, dofs, rows_at=None):
    """The rows of coordinates `rows_at` (None: every row of the reduced system) of K⁻¹ Sᵀ for
    unit loads on coordinates `dofs` (free skin coordinates or skeleton velocities,
    ReducedKkt.Rows): (len(rows_at), len(dofs)), W's columns; block solves of at most
    `_COLUMN_BLOCK` right-hand sides."""
    rows, size = kkt.Rows(dofs), len(kkt.free) + kkt.nr
    at = slice(None) if rows_at is None else kkt.Rows(rows_at)
    out = np.empty((size if rows_at is None else len(at), len(rows)))
    for start in range(0, len(rows), _COLUMN_BLOCK):
        block = rows[start : start + _COLUMN_BLOCK]
        rhs = np.zeros((size, len(block)), order="F")  # PARDISO's order
        rhs[block, np.arange(len(block))] = 1.0
        out[:, start : start + len(block)] = kkt._lu.solve(rhs)[at]
    return out


CONTACT_POINTS = ("vertices", "triangles")
# CouplingConfig.contact_delassus: the ground points' Delassus diagonal (_DrakeDelassusEstimate).
CONTACT_DELASSUS = ("exact", "diagonal")
# The 3-point rule of a triangle (exact for linear fields), in barycentric coordinates.
_TRIANGLE_RULE = np.array([[2 / 3, 1 / 6, 1 / 6], [1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])


@dataclasses.dataclass
class ContactPoints:
    """The ground contact points of one step (CouplingConfig.contact_points), fixed at its start
    as Drake fixes its contact geometry: point j moves with the skin as Σ_k bary[j, k] x of
    vertices[j, k] (its Jacobian the barycentric interpolation of their velocities), stands for
    a piece of the contact surface of `area` (m², projected onto the ground) and starts at the
    signed distance `phi` (m, < 0 below the ground)."""

    vertices: np.ndarray  # (P, k) skin vertices (k = 1, 3 or 4)
    bary: np.ndarray  # (P, k) barycentric weights, summing to 1
    area: np.ndarray  # (P,)
    phi: np.ndarray  # (P,)

    def Jacobian(self, candidates: np.ndarray) -> np.ndarray:
        """J (3P, 3m): the points' velocities from the candidates' (a vertex not among them,
        a glued one, contributes nothing: Drake's rule for a vertex under a boundary condition)."""
        position = {int(c): i for i, c in enumerate(candidates)}
        J = np.zeros((3 * len(self.area), 3 * len(candidates)))
        for j, (verts, weights) in enumerate(zip(self.vertices, self.bary)):
            for vertex, b in zip(verts, weights):
                i = position.get(int(vertex))
                if i is not None and b != 0.0:
                    J[3 * j : 3 * j + 3, 3 * i : 3 * i + 3] += b * np.eye(3)
        return J


def _PolygonAreaCentroid(P2: np.ndarray):
    """(area, centroid weights (k,)) of a convex planar polygon whose corners P2 (k, 2) are in
    order: its centroid is Σ weights · corners (a fan from corner 0)."""
    k = len(P2)
    weights = np.zeros(k)
    total = 0.0
    for i in range(1, k - 1):
        a, b = P2[i] - P2[0], P2[i + 1] - P2[0]
        area = 0.5 * abs(a[0] * b[1] - a[1] * b[0])
        total += area
        weights[[0, i, i + 1]] += area / 3.0
    return total, (weights / total if total > 0.0 else np.full(k, 1.0 / k))


def TriangleContactPoints(X: np.ndarray, faces: np.ndarray, low: np.ndarray, margin: float):
    """ContactPoints on the skin's ground-facing surface triangles `faces` (outward normals)
    with a corner within `margin` of the ground (`low`: each vertex's lower height of the step's
    start and predictor): a triangle that crosses the ground gives the centroid of its part below
    (the triangle clipped against z ≤ 0, Sutherland-Hodgman in barycentric coordinates), one
    wholly below or above gives its three quadrature points (2/3, 1/6, 1/6), a third of its area
    each (above: speculative points with phi > 0, as the vertex formulation's margin)."""
    T = X[faces]
    normal_z = np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0])[:, 2]
    near = (low[faces].min(axis=1) < margin) & (normal_z < 0.0)
    verts, bary, area, phi = [], [], [], []
    for f, P in zip(faces[near], T[near]):
        z = P[:, 2]
        e1, e2 = P[1] - P[0], P[2] - P[0]
        a = 0.5 * abs(e1[0] * e2[1] - e1[1] * e2[0])
        if np.all(z <= 0.0) or np.all(z > 0.0):
            for b in _TRIANGLE_RULE:
                verts.append(f), bary.append(b), area.append(a / 3.0), phi.append(b @ z)
            continue
        corners = []
        E = np.eye(3)
        for i in range(3):
            j = (i + 1) % 3
            if z[i] <= 0.0:
                corners.append(E[i])
            if (z[i] <= 0.0) != (z[j] <= 0.0):
                t = z[i] / (z[i] - z[j])
                corners.append((1 - t) * E[i] + t * E[j])
        C = np.array(corners)
        polygon_area, w = _PolygonAreaCentroid(C @ P[:, :2])
        b = w @ C
        verts.append(f), bary.append(b), area.append(polygon_area), phi.append(b @ z)
    return ContactPoints(
        np.array(verts, np.int64).reshape(-1, 3),
        np.array(bary).reshape(-1, 3),
        np.array(area),
        np.array(phi),
    )


def VertexContactPoints(
    X: np.ndarray, candidates: np.ndarray, tributary: np.ndarray
) -> ContactPoints:
    """The vertex formulation as ContactPoints (a point a candidate vertex, its area the third
    of its ground-facing surface triangles' projected rest areas: `tributary` (n,))."""
    return ContactPoints(
        candidates[:, None], np.ones((len(candidates), 1)), tributary[candidates], X[candidates, 2]
    )


def PointRegularisation(
    J, W, h, points: ContactPoints, beta, sigma, stiffness, tau=0.1, skin_stiffness=np.inf, w=None
):
    """(R (P, 3), v̂ (P, 3)) of SAP's friction cone constraints at the points (Castro et al.
    2022, Eq. 29 as Drake's SapFrictionConeConstraint has it): w_j the mean diagonal of the
    point's 3 × 3 block of the Delassus operator J W Jᵀ / h² (or the given `w`:
    `_DrakeDelassusEstimate`), R_t = σ w_j, R_n = max(β²/(4π²) w_j, 1 / (h k_j (h + τ))), v̂_n =
    -φ_j / (h + τ). With a finite `stiffness` C (Pa/m) the point's k_j = C area_j and τ = `tau`,
    s (Drake's deformable driver: k the polygon's area times its pressure gradient, τ its
    dissipation time constant, 0.1 s by default); at rest the point then carries -C area_j φ_j
    whatever h and τ (`_GroundLaw`: also with the skin's own stiffness in series). With C = inf
    only the near-rigid term, τ = β h / π."""
    if w is None:
        w = _DelassusDiagonal(J, W / h**2)
    k, phi = _GroundLaw(points, stiffness, skin_stiffness)
    return _Regularisation(w, h, phi, k, beta, sigma, tau)


def _GroundLaw(points: ContactPoints, stiffness: float, skin_stiffness: float = np.inf):
    """(k (P,), N/m; φ (P,), m) that set the points' R_n and bias (PointRegularisation) on a
    ground of pressure gradient C = `stiffness` (Pa/m; inf: near-rigid, k = inf and φ the
    signed distance). As Drake's deformable driver (DeformableDriver, deformable-rigid pairs):
    with the skin's own C_s = `skin_stiffness` in series, g = 1 / (1/C_s + 1/C), k = g area and
    φ = -p / g with the ground's pressure p = C (-φ_signed), so k φ = C area φ_signed: the
    static law is the ground's, the regularisation the softer series one."""
    if not np.isfinite(stiffness):
        return np.full(len(points.area), np.inf), points.phi
    g = 1.0 / (1.0 / skin_stiffness + 1.0 / stiffness)
    return g * points.area, points.phi * (stiffness / g)


def _DrakeDelassusEstimate(J, diagonal):
    """w_j (P,) as Drake's SapModel estimates it (CalcDelassusDiagonalApproximation): the RMS
    norm ‖J_j A_d⁻¹ J_jᵀ‖_F / 3 of each point's 3 × 3 block with A_d = diag(A), A the dynamics
    matrix in the problem's velocities (`diagonal` (3m,), kg: h² times the skin matrix's
    diagonal at the candidates' coordinates). Drake takes the diagonal of its deformable body's
    tangent matrix (its Schur complement on the vertices in contact, under its midpoint rule's
    h²/2 on the stiffness): this estimate ignores the coupling through the skin, which the exact
    J W Jᵀ holds, so on a soft skin it is much smaller."""
    J = sp.csr_matrix(J)
    inverse = sp.diags(1.0 / np.asarray(diagonal, float))
    P = J.shape[0] // 3
    block = np.zeros((P, 3, 3))
    rows = [J[a::3] for a in range(3)]
    for a in range(3):
        scaled = rows[a] @ inverse
        for b in range(3):
            block[:, a, b] = np.asarray(scaled.multiply(rows[b]).sum(axis=1)).ravel()
    return np.linalg.norm(block, axis=(1, 2)) / 3.0


def _DelassusDiagonal(J, W):
    """w_j (P,): the mean diagonal of each point's 3 × 3 block of the Delassus operator J W Jᵀ
    (W the compliance in the problem's velocities per impulse)."""
    J = sp.csr_matrix(J)  # a point moves with 1-4 vertices (and the skeleton): J is sparse
    with threadpool_limits(1):
        diagonal = np.asarray(J.multiply(J @ W).sum(axis=1)).ravel()  # diag(J W Jᵀ)
    return diagonal.reshape(-1, 3).mean(axis=1)


def _Regularisation(w, h, phi, k, beta, sigma, tau):
    """(R (P, 3), v̂ (P, 3)) of SAP's friction cone constraints with Delassus diagonals w (P,),
    signed distances phi (P,), m, and stiffnesses k (P,), N/m (PointRegularisation): R_t = σ w,
    R_n = max(β²/(4π²) w, 1 / (h k (h + τ))), v̂_n = -φ / (h + τ) where k is finite; where it is
    infinite the near-rigid term alone, with τ = β h / π."""
    k = np.asarray(k, float)
    finite = np.isfinite(k)
    tau = np.where(finite, tau, beta * h / np.pi)
    R_n = beta**2 / (4 * np.pi**2) * w
    with np.errstate(divide="ignore"):
        R_n = np.where(
            finite, np.maximum(R_n, 1.0 / (h * np.where(finite, k, 1.0) * (h + tau))), R_n
        )
    R = np.stack([sigma * w, sigma * w, R_n], axis=1)
    v_hat = np.zeros((len(w), 3))
    v_hat[:, 2] = -phi / (h + tau)
    return R, v_hat


def _StepContactPoints(stepper, X, low):
    """This step's ContactPoints (CouplingConfig.contact_points) from the skin's ground-facing
    surface triangles, found once and kept on the stepper (with each vertex's tributary area)."""
    cfg = stepper.config
    faces, tributary = _OuterSurface(stepper)
    if cfg.contact_points == "triangles":
        return TriangleContactPoints(X, faces, low, cfg.contact_margin)
    return VertexContactPoints(X, np.flatnonzero(low < cfg.contact_margin), tributary)


def _OuterSurface(stepper):
    """(the skin's outer surface triangles (F, 3), each vertex's tributary ground-facing area
    (n,)), found once and kept on the stepper."""
    from drakebots.fem.mesh import BoundaryFaces

    cache = getattr(stepper, "_contact_point_data", None)
    if cache is None:
        mesh = stepper.skin.mesh
        faces = BoundaryFaces(mesh.tets)
        faces = faces[np.all(stepper.skin.outer[faces], axis=1)]
        rest = mesh.vertices
        normal_z = np.cross(
            rest[faces[:, 1]] - rest[faces[:, 0]], rest[faces[:, 2]] - rest[faces[:, 0]]
        )[:, 2]
        tributary = np.zeros(len(rest))
        down = normal_z < 0.0
        np.add.at(tributary, faces[down].ravel(), np.repeat(-normal_z[down] / 6.0, 3))
        cache = stepper._contact_point_data = (faces, tributary)
    return cache


def _ContactFrames(n: np.ndarray) -> np.ndarray:
    """(P, 3, 3) orthonormal frames whose rows are (t1, t2, n) for unit normals n (P, 3)."""
    helper = np.where(np.abs(n[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    return np.stack([t1, np.cross(n, t1), n], axis=1)


@dataclasses.dataclass
class CollisionContacts:
    """The skin's collisions of one step as constraints of the convex problem
    (CouplingConfig.convex_collisions; section 4.2's penalties, issue 69): skin vertex `a`
    against a skeleton box (b = -1) or against skin vertex b (a self-collision pair). Each is a
    frictionless SAP constraint on the relative velocity v_a - J_box v (box) or v_a - v_b (pair)
    in the frame `frame` (rows t1, t2, n; n the direction a is pushed along), with signed
    distance `phi` (m, < 0 in collision) and the stiffness of the penalty it replaces, k per
    vertex: SAP's compliant constraint with τ = 0 (R_n = 1 / (h² k), v̂_n = -φ / h) is the
    penalty k z at the step's end, implicit (backward Euler), as the active set's implicit
    penalties are, but with its switching inside the convex problem. The geometry (normal,
    distance, the box point's Jacobian J_box (3, nv)) is fixed at the step's start, as SAP
    fixes its contact geometry."""

    a: np.ndarray  # (P,)
    b: np.ndarray  # (P,), -1: a skeleton box
    frame: np.ndarray  # (P, 3, 3)
    phi: np.ndarray  # (P,)
    skeleton: np.ndarray  # (P, 3, nv): J_box at a (zeros for a pair)

    def __len__(self):
        return len(self.a)

    @property
    def vertices(self) -> np.ndarray:
        return np.unique(np.concatenate([self.a, self.b[self.b >= 0]]))

    def Jacobian(self, candidates: np.ndarray, nv: int) -> np.ndarray:
        """(3P, 3m + nv): the constraints' velocities (rows t1, t2, n of each) from the
        candidates' velocities and, in the last nv columns, the skeleton's."""
        position = np.full(
            int(max(candidates.max(initial=-1), self.a.max(initial=-1), self.b.max(initial=-1)))
            + 1,
            -1,
            np.int64,
        )
        position[candidates] = np.arange(len(candidates))
        m = len(candidates)
        J = np.zeros((len(self), 3, 3 * m + nv))
        index = np.arange(len(self))
        ia = position[self.a]
        for k in range(3):
            J[index, :, 3 * ia + k] = self.frame[:, :, k]
        pair = self.b >= 0
        ib = position[self.b[pair]]
        for k in range(3):
            J[index[pair], :, 3 * ib + k] -= self.frame[pair, :, k]
        box = ~pair
        if nv and box.any():
            J[box, :, 3 * m :] = -np.einsum("pij,pjv->piv", self.frame[box], self.skeleton[box])
        return J.reshape(3 * len(self), 3 * m + nv)


def _LargestAxis(excess: np.ndarray) -> np.ndarray:
    """excess.max(axis=-1) of (..., 3) by two elementwise maxima: the reduction over a last axis
    of 3 took 35 ms a call in the monster walk's first 10 frames, the maxima 4 ms (cProfile,
    issue 69, Findings 37)."""
    return np.maximum(np.maximum(excess[..., 0], excess[..., 1]), excess[..., 2])


def _StepCollisions(stepper, q, X, q_pred, Y_pred, margin: float) -> CollisionContacts:
    """This step's CollisionContacts: every (inner-surface vertex, skeleton box) pair the
    penalties would consider (not exempt) with the vertex within `margin` of the box (its local
    coordinates within the box grown by margin) at the step's start or at the predictor
    (q_pred, Y_pred), pushed through the face of its largest local excess at the start (inside:
    the nearest face, as Penalties takes it), φ that excess; and every pair of outer vertices
    closer than self_collision_distance + margin at the start that were more than 4 r apart at
    rest, φ = distance - r. Glued vertices take no part (the penalties' rule)."""
    cfg = stepper.config
    nv = stepper.nv
    a, b, normals, phi, skeleton = [], [], [], [], []
    if stepper._boxes and cfg.penalty_stiffness > 0.0:
        half = np.stack([box[3] for box in stepper._boxes])
        _, _, _, local_pred = stepper.BoxFrames(q_pred, Y_pred[stepper.box_vertices])
        near = _LargestAxis(np.abs(local_pred) - half[None]) < margin
        poses, R_all, _, local = stepper.BoxFrames(q, X[stepper.box_vertices])  # context at q
        excess = np.abs(local) - half[None]
        near |= _LargestAxis(excess) < margin
        near &= ~stepper._box_exempt.T
        world = stepper.plant.world_frame()
        for box in np.flatnonzero(near.any(axis=0)):
            rows = np.flatnonzero(near[:, box])
            vertices = stepper.box_vertices[rows]
            axis = np.argmax(excess[rows, box], axis=1)
            sign = np.sign(local[rows, box, axis])
            sign[sign == 0.0] = 1.0
            normals.append(R_all[box][:, axis].T * sign[:, None])
            phi.append(excess[rows, box, axis])
            body = stepper._boxes[box][0]
            p_BV = poses[box].inverse().multiply(X[vertices].T)
            Jv = stepper.plant.CalcJacobianTranslationalVelocity(
                stepper.context, JacobianWrtVariable.kV, body.body_frame(), p_BV, world, world
            )
            skeleton.append(Jv.reshape(len(rows), 3, nv))
            a.append(vertices)
            b.append(np.full(len(rows), -1, np.int64))
    r = cfg.self_collision_distance
    outer = stepper._outer
    if cfg.penalty_stiffness > 0.0 and r > 0.0 and len(outer):
        O = X[outer]
        # The penalties' pairs (far apart at rest as theirs: 4 r), within r + margin now.
        pairs = stepper._SelfCollisionPairs(O, r + margin, apart=4 * r)
        glued = np.zeros(stepper.n, bool)
        glued[stepper.glue.vertices] = True
        pairs = pairs[~glued[outer[pairs]].any(axis=1)]
        if len(pairs):
            d = O[pairs[:, 0]] - O[pairs[:, 1]]
            dist = np.maximum(np.linalg.norm(d, axis=1), 1e-9)
            normals.append(d / dist[:, None])
            phi.append(dist - r)
            skeleton.append(np.zeros((len(pairs), 3, nv)))
            a.append(outer[pairs[:, 0]])
            b.append(outer[pairs[:, 1]])
    if not a:
        return CollisionContacts(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros((0, 3, 3)),
            np.zeros(0),
            np.zeros((0, 3, nv)),
        )
    return CollisionContacts(
        np.concatenate(a),
        np.concatenate(b),
        _ContactFrames(np.concatenate(normals)),
        np.concatenate(phi),
        np.concatenate(skeleton),
    )


def _SolveGrowing(J, xi_star, xi0, R, v_hat, mu, phi, h, active, Block, Respond, grown=None):
    """(Γ = Jᵀ γ (d,), γ (P, 3), SAP's Newton iterations, the response to Γ or None, ξ): the
    convex problem of the points with Jacobian J (3P × d, sparse) in the unknowns ξ (d,),
    free velocities ξ*: min ½ (ξ - ξ*)ᵀ W⁻¹ (ξ - ξ*) + Σ_j ℓ_j(J_j ξ) (ContactProblem, the
    module docstring), W the compliance in ξ per impulse, with per-point friction mu (P,) and
    regularisation (R, v̂) (R's rows of the points held are set here, from W).

    Solved on the points held: those within `active` of contact at the step's start or at the
    free motion's end (φ_j, or φ_j + h (J_j ξ*)_n), in the unknowns S they move (J's nonzero
    columns over them). `Block(S, held)` gives (W_SS⁻¹, W_SS) (solving W's columns only for
    the coordinates held: on the monster's walk a third of the candidates' were, and W's columns
    were 17.6 of a 40 s step) and sets R's rows of the held points; `Respond(S, Γ_S)` gives
    the whole response to the impulses on S by one solve with the factorisation, (Δξ (d,),
    the solution). The problem is then grown by every point that ξ = ξ* + Δξ leaves with an
    impulse (whether a point pushes, μ |v_t| > v_n - v̂_n, does not depend on its R). The
    problem on a subset is the whole problem with the others' impulses zero, so the growth
    stops at the whole problem's solution. Warm-started at xi0 (None: ξ*). `grown` (P,) bool:
    points held from the start besides those near, set in place to those the solution held
    (the same step's next modified-Newton iteration starts from them instead of growing by the
    same points again, one more solve each)."""
    J = sp.csr_matrix(J)
    P, d = J.shape[0] // 3, len(xi_star)
    Gamma, gamma_all, iterations = np.zeros(d), np.zeros((P, 3)), 0
    xi = xi_star.copy() if xi0 is None else xi0.copy()
    if not P:
        return Gamma, gamma_all, 0, None, xi_star
    near = np.minimum(phi, phi + h * (J[2::3] @ xi_star)) < active
    if grown is not None:
        near |= grown
    response = None
    # Small dense algebra: one BLAS thread (ConvexStep's vertex problem: two threads made a
    # 225-row Cholesky solve 20 times slower on the shared 2-core machine).
    for _ in range(P + 1):
        held = np.flatnonzero(near)
        if not len(held):
            break
        J_h = J[(3 * held[:, None] + np.arange(3)).ravel()]
        S = np.unique(J_h.indices)
        A, W_S = Block(S, held)
        J_S = J_h[:, S]
        with threadpool_limits(1):
            problem = ContactProblem(A, xi_star[S], R[held], v_hat[held], mu[held], J_S, W_S)
            _, gamma, its = problem.Solve(xi[S])
        iterations += its
        Gamma[:] = 0.0
        Gamma[S] = J_S.T @ gamma.ravel()
        gamma_all[:] = 0.0
        gamma_all[held] = gamma
        change, response = Respond(S, Gamma[S])
        xi = xi_star + change
        out = np.flatnonzero(~near)
        if not len(out):
            break
        J_out = J[(3 * out[:, None] + np.arange(3)).ravel()]
        left, _ = ContactProblem(None, None, R[out], v_hat[out], mu[out], J_out).Impulses(xi)
        pushed = out[np.any(left != 0.0, axis=1)]
        if not len(pushed):
            break
        near[pushed] = True
    if grown is not None:
        grown[:] = near
    return Gamma, gamma_all, iterations, response, xi


def ConvexStep(stepper, state, tau_ff, desired, time_s, h):
    """One coupled step with the convex ground contact (module docstring); returns (state,
    StepInfo) as CoupledSkinSkeleton._Step does."""
    from drakebots.skinned.coupled_state import (
        CoupledState,
        CoupledStepFailure,
        StepInfo,
        StepMemory,
        _LineSearch,
    )

    cfg = stepper.config
    wall = time.perf_counter()
    q, v, x, w = state.q, state.v, state.x, state.w
    # The skin's velocity at the step's end from its positions y: w' = α (y - x) / h - (α - 1) w,
    # α = 1 by backward Euler, 2 by Drake's Newmark scheme (CouplingConfig.skin_integrator;
    # y = x + h (w + w') / 2). The residual's inertia and damping are then M (w' - w) / h + D w',
    # the matrix α (M/h² + D/h) + ∂²E, and the contact problem's Delassus operator in
    # velocities α W / h², A = h² W⁻¹ / α (the module docstring's with α = 1).
    # (the name checked by CoupledSkinSkeleton: SKIN_INTEGRATORS)
    skin_alpha = 2.0 if cfg.skin_integrator == "newmark" else 1.0

    def SkinVelocity(y_at, rows):
        if skin_alpha == 1.0:
            return (y_at - x[rows]) / h
        return skin_alpha * (y_at - x[rows]) / h - (skin_alpha - 1.0) * w[rows]

    n, nu = stepper.n, stepper.nu
    start = stepper._StepStart(state, tau_ff, desired, h)  # as the active set's step starts
    tau_ff, q_d, v_d, y = start.tau_ff, start.q_d, start.v_d, start.y
    M, bias, tau_g = start.M, start.bias, start.tau_g
    servo = desired is not None
    info = StepInfo()
    v_next = v.copy()
    X = x.reshape(-1, 3)
    glue_vertex = np.zeros(n, dtype=bool)
    glue_vertex[stepper.glue.vertices] = True
    # The candidates: free vertices near the ground at the start or at the predictor.
    low = np.minimum(X[:, 2], y.reshape(-1, 3)[:, 2])
    if cfg.contact_points not in CONTACT_POINTS:
        raise ValueError(f"unknown contact_points '{cfg.contact_points}' ({CONTACT_POINTS})")
    if cfg.contact_delassus not in CONTACT_DELASSUS:
        raise ValueError(f"unknown contact_delassus '{cfg.contact_delassus}' ({CONTACT_DELASSUS})")
    # Contact at points on the skin's surface or slices (ContactPoints), or with a compliant
    # ground: the candidates are the vertices those points move with.
    points = None
    collisions = None
    nv = len(v)
    if cfg.contact_points != "vertices" or np.isfinite(cfg.contact_stiffness):
        points = _StepContactPoints(stepper, X, low)
        touched = np.unique(points.vertices)
        candidates = touched[~glue_vertex[touched]]
    elif cfg.convex_collisions:
        # The ground's vertices as ContactPoints, one problem with the collisions' points.
        points = _StepContactPoints(stepper, X, low)
        candidates = points.vertices[:, 0][~glue_vertex[points.vertices[:, 0]]]
    else:
        candidates = np.flatnonzero((low < cfg.contact_margin) & ~glue_vertex)
    if cfg.convex_collisions:
        q_pred = stepper._Integrate(q, v, h)
        collisions = _StepCollisions(stepper, q, X, q_pred, y.reshape(-1, 3), cfg.contact_margin)
        candidates = np.union1d(candidates, collisions.vertices)
    dofs = (3 * candidates[:, None] + np.arange(3)).ravel()
    m = len(candidates)
    # The problem's unknowns: the candidates' velocities and, with a skeleton box among the
    # collisions, the skeleton's (coordinates 3n + j of the factorisation, ReducedKkt.Rows).
    with_skeleton = collisions is not None and bool(np.any(collisions.b < 0))
    problem_dofs = np.concatenate([dofs, 3 * n + np.arange(nv)]) if with_skeleton else dofs
    # Forces per impulse on the problem's coordinates (the factorisation's units: N on the
    # skin's positions, N s on the skeleton's velocities), and velocities per its solution's.
    scale = np.where(np.arange(len(problem_dofs)) < 3 * m, 1.0 / h, 1.0)
    velocity_scale = skin_alpha * scale if skin_alpha != 1.0 else scale
    if skin_alpha != 1.0 and with_skeleton:
        raise ValueError(
            f"CouplingConfig.skin_integrator '{cfg.skin_integrator}' with the skeleton's boxes "
            f"in the contact problem (t = {time_s:.4f} s): a glued vertex moves by the trapezoid "
            "and the skeleton by backward Euler, so their impulses' compliance is not "
            "symmetric; use 'backward_euler'"
        )
    # Penalties outside the convex problem: re-evaluated at the iterates (implicit) unless the
    # collisions are in it.
    implicit = cfg.implicit_penalties and collisions is None

    def Residuals(v_next, y, penalties):
        q_next = stepper._Integrate(q, v_next, h)
        p_WG, J = stepper.GluePoints(q_next)
        C = stepper.glue.Residual(p_WG, y)
        if servo:
            qa, va = q_next[stepper.actuated_q], v_next[stepper.actuated_v]
            tau_raw = tau_ff + stepper.kp * (q_d - qa) + stepper.kd * (v_d - va)
            tau = np.clip(tau_raw, -stepper.effort_limits, stepper.effort_limits)
            slope = np.where(
                np.abs(tau_raw) < stepper.effort_limits, stepper.kd + h * stepper.kp, 0.0
            )
        else:
            tau = np.clip(tau_ff, -stepper.effort_limits, stepper.effort_limits)
            slope = np.zeros(nu)
        generalized = (
            stepper.B @ tau - bias + tau_g - stepper.joint_damping * v_next + penalties.skeleton
        )
        r_r = M @ (v_next - v) - h * generalized
        # M (w' - w) / h + D w' (w' = SkinVelocity)
        inertia = skin_alpha * stepper.mass * (y - x - h * w) / h**2
        damping = stepper.damping @ (y - x) / h
        if skin_alpha != 1.0:
            damping = stepper.damping @ SkinVelocity(y, slice(None))
        r_d = inertia + stepper.fem.Gradient(y) + damping - stepper.gravity - penalties.forces
        return q_next, p_WG, J, C, r_r, r_d, tau, slope

    def Border():
        """The coordinates of the factorisation's Schur block (CouplingConfig.convex_schur_margin):
        the last block while it holds the problem's coordinates, else a new one; None for the
        half-solves."""
        if cfg.convex_schur_margin <= 0 or ResolveBackend(cfg.factorization) != "pardiso":
            return None
        border = getattr(stepper, "_schur_border", None)
        if border is not None and np.sum(~np.isin(problem_dofs, border)) <= cfg.convex_schur_spill:
            return border
        near = np.zeros(n, dtype=bool)
        near[_OuterSurface(stepper)[0]] = True
        near &= (low < cfg.convex_schur_margin) & ~glue_vertex
        vertices = np.flatnonzero(near)
        if collisions is not None:
            wide = _StepCollisions(stepper, q, X, q_pred, y.reshape(-1, 3), cfg.convex_schur_margin)
            vertices = np.union1d(vertices, wide.vertices[~glue_vertex[wide.vertices]])
        grown = (3 * vertices[:, None] + np.arange(3)).ravel()
        if collisions is not None:
            grown = np.concatenate([grown, 3 * n + np.arange(nv)])
        border = np.union1d(problem_dofs, grown)
        if len(border) > cfg.convex_schur_max:
            border = np.unique(problem_dofs)
        if not len(border) or len(border) > cfg.convex_schur_max:
            return None
        stepper._schur_border = border
        return border

    def Factor(v_next, y, penalties, slope, J, exact=False):
        """The linearisation at (v_next, y): a _Factor of the glued KKT matrix."""
        A_r = M + h * np.diag(stepper.joint_damping)
        A_r[np.ix_(stepper.actuated_v, stepper.actuated_v)] += h * np.diag(slope)
        A_d = stepper._SkinMatrix(y, h, penalties, exact, skin_alpha)
        A_rr, A_dr = penalties.StepBlocks(h)
        if A_rr is not None:
            A_r = A_r + A_rr
        if stepper._ordering is None:
            rest = stepper.fem.RestPositions()
            stepper._ordering = NestedDissection(stepper._SkinMatrix(rest, h, None, False))
        kkt = ReducedKkt(
            A_r,
            A_d,
            h * J,
            stepper.glue.dofs,
            ordering=stepper._ordering,
            A_dr=A_dr,
            factorization=cfg.factorization,
            reuse=stepper._pool,
            schur_dofs=Border(),
        )
        info.factorizations += 1
        if exact and kkt.factorized_by not in ("pardiso", "cholmod", "splu", "dense"):
            # The exact Hessian is indefinite (a compressed fold): SAP's A = h² W⁻¹ needs W
            # positive definite, so the projected one instead.
            return Factor(v_next, y, penalties, slope, J, exact=False)
        info.exact_factorizations += int(exact)
        penalty = None
        if cfg.penalty_update and collisions is None:
            penalty = _PenaltyUpdate(kkt, penalties, exact, len(v))
        return _Factor(kkt, h, penalty=penalty)

    penalties = stepper.NoPenalties() if collisions is not None else stepper.Penalties(q, x, {})
    q_next, p_WG, J, C, r_r, r_d, tau, slope = Residuals(v_next, y, penalties)
    memory = state.memory
    factor = memory.factor if memory is not None else None
    reusable = (
        isinstance(factor, _Factor)
        and factor.h == h
        and memory.factor_age < cfg.max_factor_age
        and memory.factor_key == "converged"
        # A carried factorisation with a Schur block (convex_schur_margin) solves the columns
        # of this step's coordinates outside it in full (about 10 ms a column on the monster;
        # hundreds of them were 4 of a 15 s step's seconds, cProfile), so it is reused while
        # at most convex_schur_spill lie outside; a new one with a block that holds them costs
        # 1-2.5 s.
        and (
            factor.kkt.schur_dofs is None
            or np.sum(~_InBorder(factor.kkt, problem_dofs)) <= cfg.convex_schur_spill
        )
    )
    if not reusable:
        if isinstance(factor, _Factor):
            factor.kkt.Release()  # the last state's, unused: its analysis for this step's
        factor = Factor(v_next, y, penalties, slope, J)
    age = memory.factor_age if reusable else 0

    # The candidates' Schur columns: K⁻¹ Sᵀ (skeleton, skin, glue parts) and W = S K⁻¹ Sᵀ.
    def Compliance(factor):
        """The problem's compliance W = S K⁻¹ Sᵀ (m/N) on the candidates' coordinates (without
        collisions; with them W_ξ is made where the problem holds, in _SolveGrowing's Block)."""
        return factor.Columns(dofs)[3]

    W = None
    if collisions is None:
        factor, new_columns = factor.With(problem_dofs)
        info.column_solves += new_columns
        W = Compliance(factor)
    # h² W⁻¹ of each set of vertices the contact problem held, while W stays: modified Newton
    # solves the same problem's set again in most iterations (the monster's walk: 292 inverses
    # of up to 1000 rows in one frame, 15 of its 155 s; Findings 18).
    inverses = {}
    lam = np.zeros(len(stepper.glue.dofs))

    def EstimatedDelassus(J_ground):
        """The ground points' Drake estimate of w (CouplingConfig.contact_delassus "diagonal")
        from the present factorisation's matrix, or None for the exact one."""
        if cfg.contact_delassus == "exact":
            return None
        return _DrakeDelassusEstimate(J_ground, h**2 / skin_alpha * factor.kkt.skin_diagonal[dofs])

    def Regularisation(W):
        """(R, v̂) of the contact problem with compliance W (module docstring)."""
        w_diag = EstimatedDelassus(sp.eye(3 * m))
        if w_diag is None:
            w_diag = skin_alpha * np.diag(W).reshape(-1, 3).mean(axis=1) / h**2
        rigid = np.full(m, np.inf)  # near-rigid: τ = β h / π
        return _Regularisation(
            w_diag, h, X[candidates, 2], rigid, cfg.near_rigid, cfg.friction_regularization, 0.0
        )

    J_points = None
    if points is not None:
        J_points = points.Jacobian(candidates)

        def Regularisation(W):  # noqa: F811 (the points' regularisation)
            return PointRegularisation(
                J_points,
                skin_alpha * W,
                h,
                points,
                cfg.near_rigid,
                cfg.friction_regularization,
                cfg.contact_stiffness,
                cfg.contact_dissipation_time,
                cfg.contact_skin_stiffness,
                w=EstimatedDelassus(J_points),
            )

    if collisions is not None:
        # One problem: the ground's points, then the collisions', in the unknowns ξ.
        J_ground = points.Jacobian(candidates)
        J_all = np.zeros((len(J_ground) + 3 * len(collisions), len(problem_dofs)))
        J_all[: len(J_ground), : 3 * m] = J_ground
        J_all[len(J_ground) :] = collisions.Jacobian(candidates, nv if with_skeleton else 0)
        # Sparse once a step (a point moves with 1-4 vertices and the skeleton): converted in
        # each modified-Newton iteration instead, it took 1.9 of 96.6 s over the monster
        # walk's 16 steps (cProfile, issue 69).
        J_all = sp.csr_matrix(J_all)
        ground_points = len(J_ground) // 3
        mu_all = np.concatenate([np.full(ground_points, cfg.friction), np.zeros(len(collisions))])
        # The penalty law's C¹ onset (penalty_onset δ) in a linear law: k (z - δ/2), its
        # value beyond the onset.
        phi_all = np.concatenate([points.phi, collisions.phi + 0.5 * cfg.penalty_onset])

        # The points' Delassus diagonals, known once a point has been held with the present
        # factorisation (_SolveGrowing solves W only where it holds; the others' R is a
        # stand-in, which decides nothing there).
        w_known = np.full(J_all.shape[0] // 3, np.nan)

        def Regularisation(W):  # noqa: F811 (the ground's and the collisions' points)
            w_all = w_known.copy()
            unknown = np.isnan(w_all)
            if unknown.any():
                w_all[unknown] = 1.0 if unknown.all() else np.nanmean(w_all)
            w_g, w_c = w_all[:ground_points], w_all[ground_points:]
            estimated = EstimatedDelassus(J_ground)
            if estimated is not None:
                w_g = estimated
            beta, sigma = cfg.near_rigid, cfg.friction_regularization
            k_g, phi_g = _GroundLaw(points, cfg.contact_stiffness, cfg.contact_skin_stiffness)
            tau_g = cfg.contact_dissipation_time
            R_g, v_g = _Regularisation(w_g, h, phi_g, k_g, beta, sigma, tau_g)
            k_c = np.full(len(collisions), cfg.penalty_stiffness)
            R_c, v_c_hat = _Regularisation(w_c, h, phi_all[ground_points:], k_c, beta, sigma, 0.0)
            return np.concatenate([R_g, R_c]), np.concatenate([v_g, v_c_hat])

    if m:
        R, v_hat = Regularisation(W)
    forces = np.zeros((n, 3))
    # SAP's warm start, as Drake's: the velocities at the step's start (the candidates' and,
    # where the skeleton's velocities are unknowns too, its own). From the free velocities
    # instead, the validation block's problems started with every point falling through the
    # ground and took 20-30 Newton iterations at step lengths of 0.01-0.2 (Findings 23).
    v_c = np.concatenate([w[dofs], v]) if with_skeleton else w[dofs].copy()
    converged = False
    step_norm = np.inf
    residual = np.inf
    sap_iterations = 0
    used, refreshes, contraction = 0, 0, 0.0
    evaluated = None
    damped = False

    def ContactLoads(v_at, y_at):
        """(impulse on the skeleton (nv,), N s; force on the skin (3n,), N) of the contact at
        skeleton velocities v_at and skin positions y_at: SAP's impulses at the problem's
        velocities (the candidates' (y_at - x) / h, and v_at with collisions), the gradient
        of its cost ℓ (the skin's part divided by h)."""
        F, B = np.zeros(3 * n), np.zeros(nv)
        if not m:
            return B, F
        xi = SkinVelocity(y_at[dofs], dofs)
        if collisions is not None:
            xi = np.concatenate([xi, v_at]) if with_skeleton else xi
            law = ContactProblem(None, None, R, v_hat, mu_all, J_all)
        else:
            law = ContactProblem(None, None, R, v_hat, cfg.friction, J_points)
        gamma, _ = law.Impulses(xi)
        Gamma = law._Generalized(gamma.ravel())
        F[dofs] = Gamma[: 3 * m] / h
        B[:] = Gamma[3 * m :] if len(Gamma) > 3 * m else 0.0
        return B, F

    def Slope(d_v, d_y, r_r_, r_d_, lam_, y_at, v_at):
        """The slope of the step's potential (with SAP's contact cost) along (d_v, d_y)."""
        g = np.zeros(3 * n)
        g[stepper.glue.dofs] = lam_
        B, F = ContactLoads(v_at, y_at)
        return float(d_v @ (r_r_ + (h * J).T @ lam_ - B) + d_y @ (r_d_ - g - F))

    # The points the collisions' problem held in this step so far: the next modified-Newton
    # iteration's problem starts from them (_SolveGrowing) instead of growing by the same points
    # again, a second SAP solve and a second solve with the factorisation in each iteration of
    # the monster's landing steps.
    grown = np.zeros(J_all.shape[0] // 3, dtype=bool) if collisions is not None else None
    for iteration in range(cfg.convex_iterations):
        stepper._CheckDeadline(time_s)
        if iteration > 0 and evaluated is not None:
            penalties, (q_next, p_WG, J, C, r_r, r_d, tau, slope) = evaluated
        elif iteration > 0:
            penalties = stepper.Penalties(q_next, y, {}) if implicit else penalties
            q_next, p_WG, J, C, r_r, r_d, tau, slope = Residuals(v_next, y, penalties)
        evaluated = None
        # A factorisation whose updates contract slowly (by more than convex_contraction, two
        # iterations with it at least) or that has served convex_refresh_after iterations of
        # this step: linearise here instead, at most convex_refreshes times a step.
        slow = used >= 2 and contraction > cfg.convex_contraction
        if (slow or used >= cfg.convex_refresh_after) and refreshes < cfg.convex_refreshes:
            # Near the step's solution the exact Hessian (modified Newton with the projected one
            # contracts by about 0.77 an iteration there; CouplingConfig.convex_exact_below).
            exact = step_norm < cfg.convex_exact_below
            # Nothing of this step uses the last factorisation any more. The last state's
            # memory may hold it (a carried one), so it is released: the pool hands its
            # handle, and with it the analysis of its pattern and Schur block, to the new one
            # (ReducedKkt.Release; a second handle for the same block cost a second analysis,
            # 1-1.5 s on the monster, in a third of the steps that reused a carried one).
            factor.kkt.Release()
            factor = Solve = Block = Respond = one = None
            factor, age = Factor(v_next, y, penalties, slope, J, exact), 0
            used, refreshes, contraction = 0, refreshes + 1, 0.0
            # W is solved again with the new factorisation: the update is zero only where the
            # contact problem's W is the factorised matrix's S K⁻¹ Sᵀ (with another W the
            # impulses are those of ξ* + W Γ, not of the state reached; tried, Findings 21).
            inverses = {}
            if collisions is not None:
                w_known[:] = np.nan  # W is solved where the problem holds (_SolveGrowing)
                R, v_hat = Regularisation(None)
            else:
                factor, new_columns = factor.With(problem_dofs)
                info.column_solves += new_columns
                W = Compliance(factor)
                if m:
                    R, v_hat = Regularisation(W)
        # The penalties' change since the factorisation, by Woodbury (_PenaltyUpdate).
        update = None
        W_it = W
        if implicit and factor.penalty is not None:
            update = factor.penalty.Update(penalties, h)
            if update is not None:
                inverses = {}
                if m:
                    Zc = update[2][dofs]
                    W_it = W - Zc @ update[4] @ Zc.T
                    W_it = 0.5 * (W_it + W_it.T)

        def Solve(b_r, b_d, c, factor=factor, update=update):
            a_r, a_d, a_l = factor.kkt.Solve(b_r, b_d, c)
            if update is not None:
                T, Z_r, Z_d, Z_l, M_ = update
                w = M_ @ np.concatenate([a_d[T], a_r])
                a_r, a_d, a_l = a_r - Z_r @ w, a_d - Z_d @ w, a_l - Z_l @ w
            return a_r, a_d, a_l

        glue_force = np.zeros(3 * n)
        glue_force[stepper.glue.dofs] = lam
        r_r_full = r_r + (h * J).T @ lam
        r_d_full = r_d - glue_force
        # The free solve and the contact's response as one solve where the factorisation's
        # Schur block allows it (_OneSolve), else two.
        one = None
        if m and collisions is not None and update is None:
            if factor.kkt.schur_complement is not None:
                # The columns of the problem's coordinates outside the block (at most
                # convex_schur_spill of them), kept: a carried factorisation's problems held
                # 6-45 such coordinates in a third of the monster's iterations, each then two
                # solves instead of one.
                outside = problem_dofs[~_InBorder(factor.kkt, problem_dofs)]
                factor, new_columns = factor.With(outside)
                info.column_solves += new_columns
            one = _OneSolve.For(factor, problem_dofs, -r_r_full, -r_d_full, -C)
        if one is None:
            dv, dy, dlam = Solve(-r_r_full, -r_d_full, -C)
        f = np.zeros(3 * m)
        if m and collisions is not None:
            # The free update on the problem's coordinates, then its velocities ξ*.
            if one is not None:
                free = one.free
            else:
                free = np.concatenate([dy[dofs], dv]) if with_skeleton else dy[dofs]
            xi_star = free.copy()
            xi_star[: 3 * m] = SkinVelocity(y[dofs] + free[: 3 * m], dofs)
            if with_skeleton:
                xi_star[3 * m :] += v_next

            def Block(S, held, inverses=inverses, R=R):
                """(W_ξ⁻¹, W_ξ) on the problem's coordinates S (their columns solved where
                missing), and R of the points held from it."""
                nonlocal factor
                factor, new = factor.With(problem_dofs[S])
                info.column_solves += new
                kept = inverses.get(S.tobytes())
                if kept is None:
                    k = np.array([factor.index[int(c)] for c in problem_dofs[S]], np.int64)
                    D = scale[S]
                    W_S = factor.W[np.ix_(k, k)]
                    W_S = velocity_scale[S][:, None] * (0.5 * (W_S + W_S.T)) * D[None, :]
                    kept = inverses[S.tobytes()] = (CompliantInverse(W_S), W_S)
                # The Delassus diagonals of the held points not yet known (other points may
                # have held the same coordinates first: a self-collision pair on two ground
                # vertices), and R from them.
                new_points = held[np.isnan(w_known[held])]
                if len(new_points):
                    J_h = J_all[(3 * new_points[:, None] + np.arange(3)).ravel()][:, S]
                    w_known[new_points] = _DelassusDiagonal(J_h, kept[1])
                    R[:] = Regularisation(None)[0]  # in place: _SolveGrowing holds R
                return kept

            def Respond(S, Gamma_S, Solve=Solve, one=one):
                """(Δξ of impulses Γ_S on the coordinates S, the solve's (Δv, Δy, Δλ) or, with
                _OneSolve, the forces its Finish takes)."""
                if one is not None:
                    change, forces = one.Response(S, scale[S] * Gamma_S)
                    return velocity_scale * change, forces
                F, B = np.zeros(3 * n), np.zeros(nv)
                skin = S < 3 * m
                F[dofs[S[skin]]] = Gamma_S[skin] / h
                B[S[~skin] - 3 * m] = Gamma_S[~skin]
                parts = Solve(B, F, np.zeros(len(stepper.glue.dofs)))
                change = parts[1][dofs] / h
                if skin_alpha != 1.0:
                    change = change * skin_alpha
                if with_skeleton:
                    change = np.concatenate([change, parts[0]])
                return change, parts

            Gamma, gamma_all, its, parts, v_c = _SolveGrowing(
                J_all,
                xi_star,
                v_c,
                R,
                v_hat,
                mu_all,
                phi_all,
                h,
                cfg.contact_active,
                Block,
                Respond,
                grown=grown,
            )
            sap_iterations += its
            f = J_ground[:, : 3 * m].T @ gamma_all[:ground_points].ravel() / h  # the ground's
            if one is not None:
                dv, dy, dlam = one.Finish(parts)
            elif parts is not None:
                dv, dy, dlam = dv + parts[0], dy + parts[1], dlam + parts[2]
        elif m and points is not None:
            # All the step's points in one problem, in the candidates' velocities.
            v_star = SkinVelocity(y[dofs] + dy[dofs], dofs)
            one_thread = threadpool_limits(1)
            A_s = h**2 / skin_alpha * np.linalg.inv(W_it)
            problem = ContactProblem(0.5 * (A_s + A_s.T), v_star, R, v_hat, cfg.friction, J_points)
            v_c, gamma, its = problem.Solve(v_star if v_c is None else v_c)
            one_thread.restore_original_limits()
            sap_iterations += its
            f = J_points.T @ gamma.ravel() / h
            F = np.zeros(3 * n)
            F[dofs] = f
            c_v, c_y, c_l = Solve(np.zeros(len(v)), F, np.zeros(len(lam)))
            dv, dy, dlam = dv + c_v, dy + c_y, dlam + c_l
        elif m:
            u_star = y[dofs] + dy[dofs]
            v_star = SkinVelocity(u_star, dofs)
            # The problem holds the candidates whose free motion ends (or which start) within
            # contact_active of the floor, and grows by every other that its solution leaves
            # with an impulse (a convex problem on a subset of W is the same problem with the
            # others' impulses zero; the growth stops at the first solution that needs none).
            near = np.minimum(X[candidates, 2], u_star[2::3]) < cfg.contact_active
            gamma_all = np.zeros((m, 3))
            if v_c is None:
                v_c = v_star.copy()
            # Small dense algebra: one BLAS thread (on the shared 2-core machine two threads
            # made a 225-row Cholesky solve 20 times slower, 0.06 s against 0.003 s).
            one_thread = threadpool_limits(1)
            for _ in range(m + 1):
                held = np.flatnonzero(near)
                if not len(held):
                    break
                held_dofs = (3 * held[:, None] + np.arange(3)).ravel()
                A_s = inverses.get(held.tobytes())
                if A_s is None:
                    A_s = h**2 / skin_alpha * np.linalg.inv(W_it[np.ix_(held_dofs, held_dofs)])
                    A_s = inverses[held.tobytes()] = 0.5 * (A_s + A_s.T)
                problem = ContactProblem(A_s, v_star[held_dofs], R[held], v_hat[held], cfg.friction)
                _, gamma, its = problem.Solve(v_c[held_dofs])
                sap_iterations += its
                gamma_all[:] = 0.0
                gamma_all[held] = gamma
                v_c = v_star + skin_alpha * W_it[:, held_dofs] @ gamma.ravel() / h**2
                out = np.flatnonzero(~near)
                out_dofs = (3 * out[:, None] + np.arange(3)).ravel()
                left, _ = ContactProblem(None, None, R[out], v_hat[out], cfg.friction).Impulses(
                    v_c[out_dofs]
                )
                pushed = out[np.any(left != 0.0, axis=1)]
                if not len(pushed):
                    break
                near[pushed] = True
            one_thread.restore_original_limits()
            f = gamma_all.ravel() / h
            F = np.zeros(3 * n)
            F[dofs] = f
            c_v, c_y, c_l = Solve(np.zeros(len(v)), F, np.zeros(len(lam)))
            dv, dy, dlam = dv + c_v, dy + c_y, dlam + c_l
        alpha = 1.0
        largest = float(np.abs(dy).max()) if dy.size else 0.0
        if 0.0 < cfg.max_update < largest:
            alpha = cfg.max_update / largest
        for _ in range(20):
            if stepper.fem.Jacobians(y + alpha * dy).min() > _MIN_JACOBIAN:
                break
            alpha *= 0.5
        else:
            raise ElementInversion(int(np.argmin(stepper.fem.Jacobians(y + dy))), time_s)
        slope0 = 0.0
        if np.isfinite(cfg.overshoot):
            slope0 = alpha * Slope(dv, dy, r_r, r_d, lam, y, v_next)
        v0, y0, lam0 = v_next, y, lam
        v_next = v0 + alpha * dv
        y = y0 + alpha * dy
        lam = lam0 + alpha * dlam
        if slope0 < 0.0 and damped:
            # The step's potential along the update (CoupledSkinSkeleton's _LineSearch, its
            # contact part SAP's cost): a full update that overshoots its minimum is cut back.
            search = _LineSearch(alpha * dv, alpha * dy, alpha * dlam, None, slope0, cfg.overshoot)
            at = 1.0
            q_next = stepper._Integrate(q, v_next, h)
            while True:
                pen = stepper.Penalties(q_next, y, {}) if implicit else penalties
                res = Residuals(v_next, y, pen)
                evaluated = (pen, res)
                q_next, p_WG, J = res[0], res[1], res[2]
                a = search.Next(Slope(search.dv, search.dy, res[4], res[5], lam, y, v_next))
                if a is None:
                    break
                info.backtracks += 1
                at = a
                v_next, y, lam = v0 + a * search.dv, y0 + a * search.dy, lam0 + a * search.dlam
                q_next = stepper._Integrate(q, v_next, h)
            alpha = alpha * at
        forces[:] = 0.0
        forces[candidates] = f.reshape(-1, 3)
        info.newton_iterations += 1
        age += 1
        used += 1
        # Convergence and contraction are judged on the whole update, before the trust region
        # and the line search shorten it (a shortened update is not a small one).
        last_norm, step_norm = step_norm, (float(np.abs(dy).max()) if dy.size else 0.0)
        if used >= 2:
            contraction = step_norm / max(last_norm, 1e-300)
            # An update longer than the last with the same factorisation: from here on the
            # line search guards the step (plain modified Newton converges faster where it
            # contracts: a sliding box's first step took 44 damped iterations against 4).
            damped = damped or contraction > 1.0
        q_next = stepper._Integrate(q, v_next, h)
        p_WG, _ = stepper.GluePoints(q_next)
        residual = float(np.abs(stepper.glue.Residual(p_WG, y)).max()) if len(p_WG) else 0.0
        if step_norm <= cfg.position_tolerance and residual <= cfg.glue_tolerance:
            converged = True
            break
    if not converged and residual > 10 * cfg.glue_tolerance:
        raise CoupledStepFailure(
            f"convex contact step did not converge at t = {time_s:.4f} s: glue residual "
            f"{residual:.3g} m, update {step_norm:.3g} m after {info.newton_iterations} "
            "iterations"
        )
    y[stepper.glue.dofs] = p_WG.ravel()
    Y = y.reshape(-1, 3)
    mode = np.zeros(n, dtype=np.int8)
    mode[candidates[forces[candidates, 2] > 0.0]] = 1
    info.glue_residual = residual
    info.final_update = step_norm
    info.glue_forces = lam.reshape(-1, 3)
    info.contact_forces = forces
    info.contacts = int(np.sum(mode > 0))
    info.krylov_iterations = sap_iterations  # the convex problems' Newton iterations
    info.max_penetration = float(max(0.0, -Y[:, 2].min()))
    info.actuation = tau
    info.wall_time = time.perf_counter() - wall
    # The factorisation (and its columns) is carried into the next step while its updates
    # contract fast: modified Newton across steps, as the active set's Schur path does
    # (CouplingConfig.convex_contraction).
    key = "converged" if converged and contraction <= cfg.convex_contraction else None
    memory = StepMemory(mode, np.zeros((n, 2)), factor, key, age)
    return CoupledState(q_next, v_next, y, SkinVelocity(y, slice(None)), memory), info
