"""The skin-skeleton glue constraint and the coupled linear system (paper Eqs. 1-2, 10).

Eq. (1): C(q, u) = R(q) r + t - x_c = 0: every glue vertex x_c of the skin coincides with its
point r on a skeleton link. With the skeleton's linearisation G_q = dC/dq (a velocity Jacobian
here) and G_u = dC/du = -S_c (S_c selects the glue vertices' coordinates), one Newton step of the
coupled system is the KKT system of Eq. (2):

    [ A_r   0    G_q^T ] [dq]   [b_r]
    [ 0     A_d  G_u^T ] [du] = [b_d]
    [ G_q   G_u  0     ] [lam]  [ c ]

where lam are the glue forces applied to the skin (N), and -lam act on the skeleton. Contacts
that pin skin coordinates (a vertex sticking to the ground, or its height while sliding) are more
rows of the same kind with G_q = 0.

`AssembleKkt` builds that matrix (for checks, and for the motion optimizer's condensation,
Eq. 10). `ReducedKkt` solves it exactly by the null-space method: because G_u = -S selects
coordinates, the pinned coordinates are du_P = G_q dq - c, and eliminating them leaves the
symmetric positive definite system in (dq, du_free)

    [ A_r + G^T A_PP G   G^T A_Pf ] [dq     ]   [ b_r + G^T (b_P + A_PP c) ]
    [ A_fP G             A_ff     ] [du_free] = [ b_f + A_fP c             ],

one sparse factorisation (the skeleton's few dense rows ordered last) and one solve; the
multipliers follow from the pinned rows: lam = A_Pf du_f + A_PP du_P - b_P. This gives the same
(dq, du, lam) as the KKT system (tests/fem/test_coupling.py checks it against a direct sparse
solve of Eq. 2) at the cost of one factorisation of the skin's size.

Units: whatever the caller's blocks use (the coupled simulator uses impulses for the skeleton rows
and forces for the skin rows, so lam is a force in N).
"""

import copy

import numpy as np
import scipy.sparse as sp

from drakebots.fem.solvers import BACKENDS, FactorSymmetric, NestedDissection


class GlueConstraint:
    """Glue vertices and their link-frame points (Eq. 1).

    Args:
        vertices: (k,) skin vertex indices.
        num_vertices: n, the skin's vertex count.
    """

    def __init__(self, vertices, num_vertices: int):
        self.vertices = np.asarray(vertices, dtype=np.int64)
        self.num_vertices = int(num_vertices)
        self.dofs = (3 * self.vertices[:, None] + np.arange(3)).ravel()

    @property
    def num_rows(self) -> int:
        return len(self.dofs)

    def Residual(self, p_WG: np.ndarray, x: np.ndarray) -> np.ndarray:
        """C = R(q) r + t - x_c, (3k,), m; p_WG (k, 3) are the link points in world."""
        return np.asarray(p_WG, float).ravel() - np.asarray(x, float)[self.dofs]

    def JacobianU(self) -> sp.csr_matrix:
        """dC/du = -S_c, (3k, 3n)."""
        rows = np.arange(self.num_rows)
        return sp.csr_matrix(
            (-np.ones(self.num_rows), (rows, self.dofs)),
            shape=(self.num_rows, 3 * self.num_vertices),
        )


def AssembleKkt(A_r, A_d, G_q, G_u, A_dr=None) -> sp.csr_matrix:
    """The matrix of Eq. (2): [[A_r, A_dr^T, G_q^T], [A_dr, A_d, G_u^T], [G_q, G_u, 0]], A_dr
    (skin rows x skeleton velocities; None: zero) the collision penalties' coupling of the two
    bodies when they are implicit in both (drakebots.optimization.qpcc_coupled)."""
    A_r = sp.csr_matrix(A_r)
    G_q = sp.csr_matrix(G_q)
    G_u = sp.csr_matrix(G_u)
    A_dr = None if A_dr is None else sp.csr_matrix(A_dr)
    return sp.bmat(
        [
            [A_r, None if A_dr is None else A_dr.T, G_q.T],
            [A_dr, sp.csr_matrix(A_d), G_u.T],
            [G_q, G_u, None],
        ],
        format="csr",
    )


# How ReducedKkt factorises its reduced matrix (drakebots.fem.solvers.BACKENDS): MKL PARDISO's
# Cholesky (the default install's), SciPy's SuperLU (symmetric mode, no pivoting, its pivots
# checked), CHOLMOD's supernodal Cholesky (scikit-sparse, optional), or "auto" (PARDISO where MKL
# loads, else CHOLMOD where it imports, else SuperLU). A matrix that is not positive definite (the
# coupled simulator's exact Hessian) is factorised by a pivoted factorisation instead: PARDISO's
# Bunch-Kaufman LDLᵀ with PARDISO, else SuperLU's pivoted LU.
FACTORIZATIONS = BACKENDS


class ReducedKkt:
    """Factorises and solves Eq. (2) through the null-space (pinned-coordinate) elimination.

    Args:
        A_r: (nr, nr) skeleton block (dense or sparse, symmetric positive definite).
        A_d: (nd, nd) sparse skin block (symmetric positive definite).
        G_q: (p, nr) skeleton Jacobian of the constraint rows.
        pinned: (p,) skin coordinate pinned by each row (G_u row = -e_pinned).
        ordering: optional dof permutation of the skin (reuse one from
            `drakebots.fem.solvers.NestedDissection`).
        A_dr: optional (nd, nr) sparse block coupling skin rows to the skeleton unknowns, and
            its transpose the skeleton rows to the skin's (`AssembleKkt`; the collision
            penalties implicit in both bodies).
        factorization: "auto" (default), "pardiso", "cholmod", "splu" or "dense"
            (`FACTORIZATIONS`).
        reuse: an earlier ReducedKkt that is no longer used: its factorisation's symbolic
            analysis is kept where the pattern is the same (its own factor is overwritten).

    `factorized_by` says what factorised the reduced matrix: "pardiso", "cholmod", "splu" or
    "dense" (it is positive definite), or "ldlt" / "lu" (it is not: PARDISO's pivoted LDLᵀ or
    SuperLU's pivoted LU; the exact Hessian of a compressed skin). Every solve is checked
    (drakebots.fem.solvers).
    """

    def __init__(
        self,
        A_r,
        A_d,
        G_q,
        pinned,
        *,
        ordering=None,
        A_dr=None,
        factorization="auto",
        reuse: "ReducedKkt | None" = None,
    ):
        if factorization not in FACTORIZATIONS:
            raise ValueError(
                f"unknown factorization '{factorization}' (known: {', '.join(FACTORIZATIONS)})"
            )
        self.factorization = factorization
        A_d = sp.csr_matrix(A_d)
        self.nd = A_d.shape[0]
        self.nr = np.shape(A_r)[0]
        self.pinned = np.asarray(pinned, dtype=np.int64)
        if len(np.unique(self.pinned)) != len(self.pinned):
            raise ValueError("a skin coordinate is pinned by two constraint rows")
        self.G = np.asarray(sp.csr_matrix(G_q).toarray() if sp.issparse(G_q) else G_q, float)
        is_pinned = np.zeros(self.nd, dtype=bool)
        is_pinned[self.pinned] = True
        if ordering is None:
            ordering = NestedDissection(A_d)
        order = np.arange(self.nd) if ordering is None else np.asarray(ordering)
        self.free = order[~is_pinned[order]]
        A_ff = A_d[self.free][:, self.free]
        A_fP = A_d[self.free][:, self.pinned]
        A_PP = A_d[self.pinned][:, self.pinned]
        self.A_d = A_d
        self.A_r = np.asarray(A_r.toarray() if sp.issparse(A_r) else A_r, float)
        self.ordering = ordering
        G = self.G
        top_left = np.asarray(
            (A_r.toarray() if sp.issparse(A_r) else A_r) + G.T @ (A_PP @ G), float
        )
        bottom_left = sp.csr_matrix(A_fP @ G)
        self.A_dr = None if A_dr is None else sp.csr_matrix(A_dr)
        self._A_dr_P = None
        if self.A_dr is not None:
            bottom_left = bottom_left + self.A_dr[self.free]
            self._A_dr_P = self.A_dr[self.pinned]
        M = sp.bmat([[A_ff, bottom_left], [bottom_left.T, sp.csr_matrix(top_left)]], format="csc")
        # M is in the fill-reducing order already (the skeleton's dense rows last), unless no
        # ordering could be made.
        self._lu = FactorSymmetric(
            M,
            factorization,
            ordering="natural" if ordering is not None else None,
            indefinite="lu",
            reuse=None if reuse is None else reuse._lu.positive_definite_factor,
        )
        self.factorized_by = self._lu.backend
        self._A_fP = A_fP
        self._A_PP = A_PP
        self._A_Pf = A_d[self.pinned][:, self.free]

    def Solve(self, b_r, b_d, c):
        """(dq (nr,), du (nd,), lam (p,)) solving Eq. (2) with right-hand side (b_r, b_d, c)."""
        b_r = np.asarray(b_r, float)
        b_d = np.asarray(b_d, float)
        c = np.asarray(c, float)
        return self._Finish(self._lu.solve(self._Rhs(b_r, b_d, c)), b_d, c)

    def _Rhs(self, b_r, b_d, c):
        """Right-hand side of the reduced system in z = (du_free, dq)."""
        b_P = b_d[self.pinned]
        return np.concatenate(
            [b_d[self.free] + self._A_fP @ c, b_r + self.G.T @ (b_P + self._A_PP @ c)]
        )

    def _Finish(self, z, b_d, c):
        """(dq, du, lam) from the reduced solution z."""
        du_f = z[: len(self.free)]
        dq = z[len(self.free) :]
        du_P = self.G @ dq - c
        du = np.empty(self.nd)
        du[self.free] = du_f
        du[self.pinned] = du_P
        lam = self._A_Pf @ du_f + self._A_PP @ du_P - b_d[self.pinned]
        if self._A_dr_P is not None:
            lam = lam + self._A_dr_P @ dq
        return dq, du, lam


class PinnedCorrection:
    """More pinned skin coordinates on top of a `ReducedKkt` factorisation, solved exactly.

    The coupled simulator pins a skin coordinate for every ground contact (a sticking vertex: x,
    y, z; a sliding one: z), and those labels change from one Newton iteration to the next while
    a sole settles. Rather than refactorising Eq. (2) for every new set (about 1 s on the beetle
    skin), the factorisation of the glue-only system is kept and the contact rows, with G_q = 0
    and G_u = -e_j, are added through the Schur complement on the contact coordinates: with the
    reduced matrix K (the glue-only system in z = (du_free, dq)) and E the columns selecting the
    contact coordinates among the free ones, the contact rows make

        K z = r + E lam_c,   E^T z = -c_c
        =>  (E^T K^-1 E) lam_c = -c_c - E^T K^-1 r,   z = K^-1 r + K^-1 E lam_c,

    which is the same (dq, du, lam) as a fresh `ReducedKkt` with all rows pinned (the test in
    tests/fem/test_coupling.py checks it). The columns K^-1 e_j are cached per coordinate, so a
    label change costs one triangular solve per newly pinned coordinate, not a factorisation; S
    is small (3 x contact vertices) and dense.

    Args:
        base: the ReducedKkt of the glue rows (kept, not copied).
        max_columns: the cache is emptied when it holds more columns than this (memory: one
            column is 8 * (free + nr) bytes, about 0.3 MB on the beetle skin).
    """

    def __init__(
        self, base: ReducedKkt, *, max_columns: int = 600, max_new_columns: int | None = 150
    ):
        self.base = base
        self.position = np.full(base.nd, -1, dtype=np.int64)
        self.position[base.free] = np.arange(len(base.free))
        self.max_columns = int(max_columns)
        self.max_new_columns = max_new_columns
        self._columns = {}
        self._last = None  # (key, Z, factor of S) of the last extra set
        self._fallback = None  # (key, ReducedKkt) of the last direct factorisation
        # Whether the fallback was made by this object (and may be overwritten in place).
        self._fallback_owned = False
        self.column_solves = 0
        self.factorizations = 0

    def Fork(self) -> "PinnedCorrection":
        """A copy sharing this one's factorisations read-only and starting from its cached
        columns: what the copy caches or factorises is its own, and it never overwrites a
        factorisation of this one. The coupled simulator carries a PinnedCorrection from step
        to step in its state (drakebots.skinned.skin_coupling.StepMemory), which copies of a
        Drake Context share; each step forks it."""
        fork = copy.copy(self)
        fork._columns = dict(self._columns)
        fork._fallback_owned = False
        return fork

    def _SolveColumns(self, dofs):
        """Solves for the columns of `dofs` not cached yet, all in one call: SuperLU's
        triangular solves on a block of right-hand sides run as matrix-matrix kernels, several
        times faster per column than one call each (the beetle's 18k-vertex skin: ~19 ms for
        one column alone)."""
        missing = sorted({int(d) for d in dofs} - set(self._columns))
        if not missing:
            return
        units = np.zeros((len(self.base.free) + self.base.nr, len(missing)))
        units[self.position[missing], np.arange(len(missing))] = 1.0
        solved = self.base._lu.solve(units)
        for k, dof in enumerate(missing):
            self._columns[dof] = solved[:, k].copy()
        self.column_solves += len(missing)

    def Solve(self, b_r, b_d, c, extra, c_extra, coupling=None):
        """(dq, du, lam, lam_extra): Eq. (2) with the base's rows (right-hand side c) and the
        extra pinned skin coordinates `extra` (rows -du_j = c_extra_j, G_q = 0).

        coupling: optional (columns (k,), dofs (k,), coefficients (k,)): the multiplier of extra
        row columns[i] also enters skin row dofs[i] with that coefficient (A du = b + E lam +
        W lam). The coupled simulator uses it for Coulomb friction of a sliding vertex, whose
        tangential force -mu lam_n t is linear in its normal multiplier: friction then is part
        of the Newton step instead of a fixed-point iteration. The Schur complement is then
        E^T K^-1 (E + W), not symmetric, solved by LU.

        When a new set needs more than `max_new_columns` uncached columns (a whole sole
        touching down at once: hundreds of coordinates), one direct factorisation of the system
        with all rows pinned is cheaper than the columns (about 40 triangular solves cost one
        factorisation of the beetle skin, measured); that solve leaves out `coupling` (the
        friction then lags one iteration, as a fixed-point step; the converged solution is the
        same). The threshold is higher than the break-even point because columns are kept and
        a standing robot's contact set changes by a few vertices at a time: with 40, the
        monster's 23 contacts (70 coordinates) were refactorised at every label change.
        """
        base = self.base
        b_r = np.asarray(b_r, float)
        b_d = np.asarray(b_d, float)
        c = np.asarray(c, float)
        c_extra = np.asarray(c_extra, float)
        extra = np.asarray(extra, dtype=np.int64)
        if len(extra) == 0:
            z = base._lu.solve(base._Rhs(b_r, b_d, c))
            return (*base._Finish(z, b_d, c), np.zeros(0))
        pos = self.position[extra]
        if np.any(pos < 0):
            raise ValueError("an extra pinned coordinate is already pinned by the base rows")
        has_coupling = coupling is not None and len(coupling[1]) > 0
        if has_coupling:
            columns, dofs, coefficients = (np.asarray(a) for a in coupling)
            dofs = dofs.astype(np.int64)
            if np.any(self.position[dofs] < 0):
                raise ValueError("a coupled row is pinned by the base rows")
        key = (
            extra.tobytes(),
            b""
            if not has_coupling
            else columns.tobytes() + dofs.tobytes() + coefficients.tobytes(),
        )
        if self._last is None or self._last[0] != key:
            needed = set(extra.tolist()) | (set(dofs.tolist()) if has_coupling else set())
            missing = len(needed - set(self._columns))
            if self.max_new_columns is not None and missing > self.max_new_columns:
                return self._Direct(b_r, b_d, c, extra, c_extra)
            if len(set(self._columns) | needed) > self.max_columns:
                self._columns.clear()
            self._SolveColumns(needed)
            Z = np.column_stack([self._columns[int(d)] for d in extra])
            if has_coupling:
                for column, dof, coefficient in zip(columns, dofs, coefficients):
                    Z[:, int(column)] += coefficient * self._columns[int(dof)]
                factor = _LuFactor(Z[pos])
            else:
                S = Z[pos]
                factor = _ChoFactor(0.5 * (S + S.T))
            self._last = (key, Z, factor)
        _, Z, factor = self._last
        z = base._lu.solve(base._Rhs(b_r, b_d, c))
        lam_extra = _FactorSolve(factor, -c_extra - z[pos])
        z = z + Z @ lam_extra
        return (*base._Finish(z, b_d, c), lam_extra)

    def _Direct(self, b_r, b_d, c, extra, c_extra):
        """The same system factorised directly with every row pinned (kept for a repeat)."""
        base = self.base
        key = extra.tobytes()
        if self._fallback is None or self._fallback[0] != key:
            p = len(base.pinned)
            G = np.vstack([base.G, np.zeros((len(extra), base.nr))])
            kkt = ReducedKkt(
                base.A_r,
                base.A_d,
                G,
                np.concatenate([base.pinned, extra]),
                ordering=base.ordering,
                A_dr=base.A_dr,
                factorization=base.factorization,
                # The fallback it replaces is dropped: its analysis serves where the pinned
                # set (so the pattern) is the same.
                reuse=self._fallback[1] if self._fallback_owned else None,
            )
            self.factorizations += 1
            self._fallback = (key, kkt, p)
            self._fallback_owned = True
        _, kkt, p = self._fallback
        dq, du, lam = kkt.Solve(b_r, b_d, np.concatenate([c, c_extra]))
        return dq, du, lam[:p], lam[p:]


def _ChoFactor(S):
    import scipy.linalg as sla

    try:
        return ("cho", sla.cho_factor(S))
    except np.linalg.LinAlgError:  # S is SPD when K is; K may be indefinite (the exact Hessian)
        return _LuFactor(S)


def _LuFactor(S):
    import scipy.linalg as sla

    return ("lu", sla.lu_factor(S))


def _FactorSolve(factor, b):
    import scipy.linalg as sla

    kind, data = factor
    return sla.cho_solve(data, b) if kind == "cho" else sla.lu_solve(data, b)


def SolveKkt(A_r, A_d, G_q, pinned, b_r, b_d, c, *, ordering=None):
    """One-shot solve of Eq. (2) (see ReducedKkt): returns (dq, du, lam)."""
    return ReducedKkt(A_r, A_d, G_q, pinned, ordering=ordering).Solve(b_r, b_d, c)


def CondensedResponse(A_r, A_d, G_q, pinned, *, ordering=None):
    """Eq. (10): the linear maps (b_r, b_d) -> (dq, du) with the multipliers eliminated.

    Returns a function f(b_r, b_d, c=0) -> (dq, du, lam) that reuses one factorisation, so the
    frame-by-frame QPCC can evaluate the response to many right-hand sides (torques and contact
    forces enter b_r and b_d linearly).
    """
    kkt = ReducedKkt(A_r, A_d, G_q, pinned, ordering=ordering)

    def response(b_r, b_d, c=None):
        return kkt.Solve(b_r, b_d, np.zeros(len(kkt.pinned)) if c is None else c)

    return response
