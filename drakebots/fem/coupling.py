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
import weakref

import numpy as np
import scipy.sparse as sp

from drakebots.fem.solvers import (
    BACKENDS,
    BACKWARD_ERROR_TOLERANCE,
    BackwardError,
    FactorSymmetric,
    InfinityNorm,
    NestedDissection,
    PardisoFactor,
    ResolveBackend,
)


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


class FactorPool:
    """Factorisations whose numeric factor may be overwritten, for their symbolic analysis.

    PARDISO's (and CHOLMOD's) analysis of the monster's 128k-row reduced matrix costs more than
    its numeric factorisation, and it holds while the pattern does (drakebots.fem.pardiso keeps
    it for a pattern inside the analysed one too). A factorisation carried from step to step is
    shared read-only (skin_coupling.StepMemory), so it cannot be refactorised in place while a
    state holds it; the pool hands out the factorisation of a ReducedKkt that nothing references
    any more (its owner is garbage-collected), else None (a fresh one is made and joins the
    pool). The coupled simulator keeps one pool per stepper (scratch, not state): every
    factorisation of a replay after the first few reuses an analysis.

    Args:
        size: factorisations kept at most (each holds its factor: ~0.3 GB on the monster).
    """

    def __init__(self, size: int = 4):
        self.size = int(size)
        self._entries = []  # [factor, weakref to its owner or None]

    def Take(self, key=None):
        """A factorisation nobody uses (its numeric factor is yours to overwrite), or None; with
        `key`, only one made for that key (`pool_key`: a PARDISO handle bordered by a Schur
        block, ReducedKkt's `schur_dofs`), without, only one made for none."""
        for entry in self._entries:
            if getattr(entry[0], "pool_key", None) != key:
                continue
            if entry[1] is None or entry[1]() is None:
                entry[1] = None
                return entry[0]
        return None

    def Release(self, factor) -> None:
        """Marks `factor` unused although its owner lives (ReducedKkt.Release)."""
        for entry in self._entries:
            if entry[0] is factor:
                entry[1] = None

    def Give(self, factor, owner) -> None:
        """Registers `factor` as used by `owner` until `owner` is garbage-collected."""
        for entry in self._entries:
            if entry[0] is factor:
                entry[1] = weakref.ref(owner)
                return
        self._entries.append([factor, weakref.ref(owner)])
        if len(self._entries) > self.size:
            free = [k for k, e in enumerate(self._entries) if e[1] is None or e[1]() is None]
            del self._entries[free[0] if free else 0]


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
            analysis is kept where the pattern is the same (its own factor is overwritten); or
            a FactorPool to take such a factorisation from (and to give this one to).
        lazy: factorise at the first solve, not here (a PinnedCorrection whose contact rows
            are solved in place may never need the glue-only factorisation).
        schur_dofs: coordinates (free skin coordinates d < nd, the skeleton's velocities as
            nd + j; `Rows`) whose block of the reduced matrix's inverse, `schur_complement` =
            S M⁻¹ Sᵀ, the factorisation gives as well: PARDISO's Cholesky bordered by their
            rows' unit columns (drakebots.fem.pardiso, `schur_columns`, in PARDISO's own METIS
            order; sorted here). Ignored by the other factorisations and where the matrix is
            indefinite (`schur_complement` is then None).

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
        reuse: "ReducedKkt | FactorPool | None" = None,
        lazy: bool = False,
        schur_dofs=None,
    ):
        if factorization not in FACTORIZATIONS:
            raise ValueError(
                f"unknown factorization '{factorization}' (known: {', '.join(FACTORIZATIONS)})"
            )
        self.factorization = factorization
        A_d = sp.csr_matrix(A_d)
        self.nd = A_d.shape[0]
        # diag(A_d) (nd,): the skin block's diagonal (SAP's Delassus estimate from it:
        # drakebots.skinned.convex_contact, CouplingConfig.contact_delassus).
        self.skin_diagonal = A_d.diagonal()
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
        plan = _BlockPlan.For(A_d, self.pinned, self.free)
        A_ff = plan.Block("ff", A_d.data, "csc")
        A_fP = plan.Block("fP", A_d.data)
        A_PP = plan.Block("PP", A_d.data)
        self.A_d = A_d
        self.A_r = np.asarray(A_r.toarray() if sp.issparse(A_r) else A_r, float)
        self.ordering = ordering
        G = self.G
        top_left = np.asarray(
            (A_r.toarray() if sp.issparse(A_r) else A_r) + G.T @ (A_PP @ G), float
        )
        bottom_left = sp.csr_matrix(A_fP @ sp.csr_matrix(G))
        self.A_dr = None if A_dr is None else sp.csr_matrix(A_dr)
        self._A_dr_P = None
        if self.A_dr is not None:
            bottom_left = bottom_left + self.A_dr[self.free]
            self._A_dr_P = self.A_dr[self.pinned]
        # M is in the fill-reducing order already (the skeleton's dense rows last), unless no
        # ordering could be made.
        self._M = _ReducedMatrix(A_ff, bottom_left, top_left)
        self._pool = reuse if isinstance(reuse, FactorPool) else None
        self._reuse = None if reuse is None or self._pool is not None else reuse._factor
        self._factor = None
        self.factorizations = 0
        self.schur_dofs = (
            None if schur_dofs is None else np.unique(np.asarray(schur_dofs, np.int64))
        )
        self.schur_rows = None if schur_dofs is None else self.Rows(self.schur_dofs)
        if not lazy:
            self._Factorize()
        self._A_fP = A_fP
        self._A_PP = A_PP
        self._A_Pf = plan.Block("Pf", A_d.data)

    def _Factorize(self):
        key = None if self.schur_dofs is None else self.schur_dofs.tobytes()
        old = self._pool.Take(key) if self._pool is not None else None
        if self._reuse is not None:
            reused = self._reuse.positive_definite_factor
            if getattr(reused, "pool_key", None) == key:
                old = reused
            self._reuse = None
        if old is None and key is not None and ResolveBackend(self.factorization) == "pardiso":
            n = self._M.shape[0]
            border = sp.csc_matrix(
                (np.ones(len(self.schur_rows)), (self.schur_rows, np.arange(len(self.schur_rows)))),
                shape=(n, len(self.schur_rows)),
            )
            old = PardisoFactor(positive_definite=True, schur_columns=border)
            old.pool_key = key
        self._factor = FactorSymmetric(
            self._M,
            self.factorization,
            ordering="natural" if self.ordering is not None else None,
            indefinite="lu",
            reuse=old,
        )
        self.factorizations += 1
        if self._pool is not None:
            self._pool.Give(self._factor.positive_definite_factor, self)

    def Release(self) -> None:
        """Hands the factorisation back to its FactorPool, for the next ReducedKkt to overwrite
        (a later use of this one factorises again). For a factorisation that something still
        references but nothing will use: the coupled step's carried one, kept by the last
        state's memory, when the step does not reuse it. The new one takes its analysis instead
        of analysing the same pattern again (0.5 s on the monster with a Schur block; a third
        of a replay's analyses were such repeats, measured)."""
        if self._pool is None or self._factor is None:
            return
        self._pool.Release(self._factor.positive_definite_factor)
        self._factor = None

    @property
    def _lu(self):
        """The factorisation of the reduced matrix (made at the first use when `lazy`)."""
        if self._factor is None:
            self._Factorize()
        return self._factor

    def Rows(self, dofs) -> np.ndarray:
        """The rows of the reduced system (free skin coordinates in `free`'s order, then the
        skeleton's) of coordinates `dofs`: a skin coordinate d < nd, or the skeleton's velocity
        j as nd + j. A unit right-hand side on such a row is a unit force on the skin coordinate
        (N) or a unit impulse on the skeleton's (N s), and the solution's row the skin's
        position (m) or the skeleton's velocity (m/s or rad/s) (`_Rhs`, `_Finish`). Raises
        ValueError for a pinned (glued) coordinate."""
        dofs = np.asarray(dofs, np.int64)
        position = np.full(self.nd + self.nr, -1, dtype=np.int64)
        position[self.free] = np.arange(len(self.free))
        position[self.nd :] = len(self.free) + np.arange(self.nr)
        rows = position[dofs]
        if np.any(rows < 0):
            raise ValueError("a contact candidate is a glued coordinate")
        return rows

    @property
    def schur_complement(self) -> np.ndarray | None:
        """S M⁻¹ Sᵀ of `schur_dofs` (their order), where the factorisation made it, else None."""
        if self.schur_rows is None or self._lu.backend != "pardiso":
            return None
        return getattr(self._lu, "schur_complement", None)

    @property
    def factorized(self) -> bool:
        return self._factor is not None

    @property
    def factorized_by(self) -> str:
        return self._lu.backend

    def Solve(self, b_r, b_d, c):
        """(dq (nr,), du (nd,), lam (p,)) solving Eq. (2) with right-hand side (b_r, b_d, c);
        with k right-hand sides as columns (b_r (nr, k), b_d (nd, k), c (p, k)) the solutions
        as columns too, in one block solve."""
        b_r = np.asarray(b_r, float)
        b_d = np.asarray(b_d, float)
        c = np.asarray(c, float)
        z = np.asarray(self._lu.solve(self._Rhs(b_r, b_d, c)))
        return self._Finish(z.reshape((len(z),) + b_d.shape[1:]), b_d, c)

    def SolveBordered(self, b_r, b_d, c) -> "BorderedSolve":
        """`Solve` split at the Schur block (`BorderedSolve`); needs `schur_complement`."""
        return BorderedSolve(self, b_r, b_d, c)

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
        du = np.empty((self.nd,) + du_f.shape[1:])
        du[self.free] = du_f
        du[self.pinned] = du_P
        lam = self._A_Pf @ du_f + self._A_PP @ du_P - b_d[self.pinned]
        if self._A_dr_P is not None:
            lam = lam + self._A_dr_P @ dq
        return dq, du, lam


class BorderedSolve:
    """A solve of Eq. (2), right-hand side (b_r, b_d, c), split at the factorisation's Schur
    block (ReducedKkt.schur_dofs, PARDISO): after the forward substitution the solution's rows
    on the block are known (`block`, in schur_dofs' order), and `Finish(g)` gives the whole
    solution with forces g on the block's coordinates added (N on a skin coordinate, N s on a
    skeleton velocity) by the backward substitution (drakebots.fem.pardiso's
    BackwardBordered). A solve and the response to forces on the block cost one solve, where
    they cost two (drakebots.skinned.convex_contact: the free motion, then the contact
    impulses' response, in every modified-Newton iteration).

    `rhs` is the reduced system's right-hand side (`ReducedKkt.Rows`' order), for coordinates
    outside the block whose columns are solved: zⱼ = cⱼᵀ rhs for cⱼ = M⁻¹ eⱼ (M symmetric)."""

    def __init__(self, kkt: ReducedKkt, b_r, b_d, c):
        if kkt.schur_complement is None:
            raise ValueError("a bordered solve needs the factorisation's Schur block")
        self._kkt = kkt
        self._b_d, self._c = np.asarray(b_d, float), np.asarray(c, float)
        self.rhs = kkt._Rhs(np.asarray(b_r, float), self._b_d, self._c)
        self._y = kkt._lu.ForwardBordered(self.rhs)
        self.block = -self._y[len(self.rhs) :]

    def Finish(self, g=None, extra=None):
        """(dq, du, lam) with forces g (k,) on the block's coordinates (None: none) and `extra`
        (the reduced system's rows) added to the reduced solution: the response to forces
        elsewhere, solved already. Once: the forward substitution is consumed."""
        if self._y is None:
            raise RuntimeError("BorderedSolve.Finish was called twice")
        g = np.zeros(len(self.block)) if g is None else np.asarray(g, float)
        z = self._kkt._lu.BackwardBordered(self._y, self.rhs, g)
        self._y = None
        if extra is not None:
            z = z + extra
        return self._kkt._Finish(z, self._b_d, self._c)


class _BlockPlan:
    """Where the blocks A_ff, A_fP, A_Pf and A_PP of a `ReducedKkt` (free and pinned rows and
    columns, in the free coordinates' fill-reducing order) find their entries in the skin
    block's CSR data, for one sparsity pattern and pinned set. The coupled simulator builds a
    ReducedKkt for each Newton matrix of a step, and its skin block keeps its pattern
    (FemModel.PatternMatrix) and the glue its pinned set: four fancy-indexed slices of the
    monster's 128k-row matrix took 0.11 s of each 0.24 s construction (cProfile, issue 52);
    with the plan a block is one gather. Made by slicing a matrix of the same pattern whose
    entries are their own positions, so it is exactly what the slices give."""

    _cache: list = []  # the last plans made (2 at most)

    @classmethod
    def For(cls, A_d: sp.csr_matrix, pinned, free) -> "_BlockPlan":
        for plan in cls._cache:
            if plan.Matches(A_d, pinned, free):
                return plan
        plan = cls(A_d, pinned, free)
        cls._cache = [plan] + cls._cache[:1]
        return plan

    def __init__(self, A_d: sp.csr_matrix, pinned, free):
        self.shape = A_d.shape
        self.indptr, self.indices = A_d.indptr.copy(), A_d.indices.copy()
        self.pinned, self.free = np.array(pinned), np.array(free)
        positions = sp.csr_matrix(
            (np.arange(1, A_d.nnz + 1, dtype=float), A_d.indices, A_d.indptr), shape=A_d.shape
        )
        self.blocks = {}
        for name, rows, cols in [
            ("ff", free, free),
            ("fP", free, pinned),
            ("Pf", pinned, free),
            ("PP", pinned, pinned),
        ]:
            block = positions[rows][:, cols]
            for kind in ("csr", "csc") if name == "ff" else ("csr",):
                B = block.asformat(kind)
                B.sort_indices()
                take = B.data.astype(np.int64) - 1
                self.blocks[name, kind] = (B.indices, B.indptr, B.shape, take)

    def Matches(self, A_d, pinned, free) -> bool:
        return (
            A_d.shape == self.shape
            and len(pinned) == len(self.pinned)
            and np.array_equal(A_d.indptr, self.indptr)
            and np.array_equal(A_d.indices, self.indices)
            and np.array_equal(pinned, self.pinned)
            and np.array_equal(free, self.free)
        )

    def Block(self, name: str, data: np.ndarray, kind: str = "csr"):
        indices, indptr, shape, take = self.blocks[name, kind]
        matrix = sp.csr_matrix if kind == "csr" else sp.csc_matrix
        return matrix((data[take], indices, indptr), shape=shape)


class _ReducedPlan:
    """Where `_ReducedMatrix`'s entries come from, for one pattern of A_ff and of B: a gather
    from A_ff's data, B's (sorted CSR) data and T's, made by writing the matrix once with
    entries that are their own source positions (as _BlockPlan). Its insertion pass took
    0.23-0.26 s of each 0.6 s factorisation of the monster's reduced matrix (cProfile of a convex
    step, issue 69); the gather is a few hundredths of that, and the pattern holds through a
    replay (the skin block's and the glue's)."""

    _cache: list = []  # the last plans made (2 at most)

    @classmethod
    def Made(cls, A_ff: sp.csc_matrix, B: sp.csr_matrix, top_left) -> sp.csc_matrix:
        nr = np.shape(top_left)[0]
        for plan in cls._cache:
            if plan.Matches(A_ff, B, nr):
                break
        else:
            plan = cls(A_ff, B, nr)
            cls._cache = [plan] + cls._cache[:1]
        source = np.concatenate([A_ff.data, B.data, np.asarray(top_left, float).ravel()])
        return sp.csc_matrix((source[plan.take], plan.indices, plan.indptr), shape=plan.shape)

    def __init__(self, A_ff, B, nr: int):
        self.ff = (A_ff.shape, A_ff.indptr.copy(), A_ff.indices.copy())
        self.B = (B.shape, B.indptr.copy(), B.indices.copy())
        self.nr = nr
        tags = np.arange(1, A_ff.nnz + B.nnz + nr * nr + 1, dtype=float)
        M = _ReducedMatrixWritten(
            sp.csc_matrix((tags[: A_ff.nnz], A_ff.indices, A_ff.indptr), shape=A_ff.shape),
            sp.csr_matrix((tags[A_ff.nnz : A_ff.nnz + B.nnz], B.indices, B.indptr), B.shape),
            tags[A_ff.nnz + B.nnz :].reshape(nr, nr),
        )
        self.take = M.data.astype(np.int64) - 1
        self.indices, self.indptr, self.shape = M.indices, M.indptr, M.shape

    def Matches(self, A_ff, B, nr: int) -> bool:
        def Same(pattern, matrix):
            shape, indptr, indices = pattern
            return (
                matrix.shape == shape
                and (matrix.indices is indices or np.array_equal(matrix.indices, indices))
                and np.array_equal(matrix.indptr, indptr)
            )

        return nr == self.nr and Same(self.ff, A_ff) and Same(self.B, B)


def _ReducedMatrix(A_ff: sp.csc_matrix, bottom_left, top_left) -> sp.csc_matrix:
    """`_ReducedMatrixWritten` by its plan (_ReducedPlan)."""
    B = sp.csr_matrix(bottom_left)
    B.sort_indices()
    return _ReducedPlan.Made(A_ff, B, top_left)


def _ReducedMatrixWritten(A_ff: sp.csc_matrix, bottom_left, top_left) -> sp.csc_matrix:
    """The CSC matrix [[A_ff, B], [Bᵀ, T]] (B = bottom_left, (nf, nr) sparse; T = top_left,
    (nr, nr) dense) written column by column: column j < nf is A_ff's column j over B's row j
    (rows nf + k), column nf + k is B's column k over T's column k. What scipy.sparse.bmat
    gives (with its entries sorted), without its COO round trip (0.1 s on the monster's
    128k-row matrix)."""
    nf, nr = bottom_left.shape
    B = sp.csr_matrix(bottom_left)
    B.sort_indices()
    Bt = sp.csr_matrix(B.T)  # B's columns as rows
    Bt.sort_indices()
    b_len = np.diff(B.indptr)
    # B's row j goes at the end of A_ff's column j: one insertion pass over A_ff's arrays.
    at = A_ff.indptr[np.repeat(np.arange(nf), b_len) + 1]
    top_indptr = A_ff.indptr.astype(np.int64)
    top_indptr[1:] += np.cumsum(b_len)
    # The last nr columns: B's column k (rows < nf), then T's column k (rows nf..).
    c_len = np.diff(Bt.indptr) + nr
    last_indptr = np.cumsum(np.concatenate([[0], c_len]))
    last_indices = np.empty(int(last_indptr[-1]), dtype=np.int64)
    last_data = np.empty(int(last_indptr[-1]))
    column = np.repeat(np.arange(nr), np.diff(Bt.indptr))
    where = np.arange(Bt.nnz) + (last_indptr[:-1] - Bt.indptr[:-1])[column]
    last_indices[where], last_data[where] = Bt.indices, Bt.data
    dense = (last_indptr[1:] - nr)[:, None] + np.arange(nr)[None, :]  # (column k, row)
    last_indices[dense] = nf + np.arange(nr)[None, :]
    last_data[dense] = np.asarray(top_left, float).T
    indptr = np.concatenate([top_indptr, top_indptr[-1] + last_indptr[1:]])
    nnz = int(indptr[-1])
    index_type = np.int32 if nnz < 2**31 and nf + nr < 2**31 else np.int64
    indices = np.concatenate(
        [np.insert(A_ff.indices.astype(index_type), at, B.indices + nf), last_indices]
    ).astype(index_type, copy=False)
    data = np.concatenate([np.insert(A_ff.data, at, B.data), last_data])
    return sp.csc_matrix((data, indices, indptr.astype(index_type)), shape=(nf + nr, nf + nr))


# The largest |E^T z + c_extra| / max(|z|, |c_extra|) a solve through half-solved columns may
# leave on the pinned rows (PinnedCorrection._HalfSolve); a round-off-sized miss is ~1e-13.
HALF_SOLVE_TOLERANCE = 1e-8


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
        max_new_columns: a new set needing more uncached columns is solved directly (Solve).
        exact: the direct path factorises every new set afresh with its rows eliminated (the
            reference); False: the rows are pinned in place (`_InPlacePins`, the base's
            pattern) and factorised through `pool`, and a set near the last factorised one
            (`anchor`) is solved through its factorisation: a low-rank update (max_low_rank),
            or where the factorisation has no half-solve, for a set within a coordinate, GMRES
            preconditioned by it (`_Gmres`, to `krylov_tolerance` in at most
            `krylov_iterations`).
        pool: the FactorPool of the in-place factorisations (None: fresh ones).
        previous: the PinnedCorrection this one replaces: its anchor preconditions this one's
            first in-place solves where the Newton matrix is the same (read-only).
        max_low_rank: a set that differs from the anchor's in at most this many coordinates,
            with the same Newton matrix, is solved exactly through a low-rank (Woodbury) update
            of the anchor's factorisation where that factorisation half-solves (`_LowRank`;
            PARDISO's or CHOLMOD's Cholesky); else, or where its check fails, by GMRES or a
            factorisation as before. 0: never (the reference).
    """

    def __init__(
        self,
        base: ReducedKkt,
        *,
        max_columns: int = 600,
        max_new_columns: int | None = 150,
        exact: bool = True,
        pool: "FactorPool | None" = None,
        previous: "PinnedCorrection | None" = None,
        krylov_tolerance: float = 1e-10,
        krylov_iterations: int = 4,
        max_low_rank: int = 40,
    ):
        self.base = base
        self.max_low_rank = int(max_low_rank)
        self.low_rank_solves = 0
        self.exact = bool(exact)
        self.pool = pool
        self.krylov_tolerance = float(krylov_tolerance)
        self.krylov_iterations = int(krylov_iterations)
        self.krylov_iterations_total = 0
        self.krylov_solves = 0
        # The last in-place factorisation (_Direct), the preconditioner of the next contact
        # sets: read-only (another PinnedCorrection's, or this one's).
        self.anchor = None if previous is None or exact else previous.anchor
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
        self.factorizations = 0  # of contact sets solved directly (the base's: base.factorizations)

    def Fork(self) -> "PinnedCorrection":
        """A copy sharing this one's factorisations read-only and starting from its cached
        columns: what the copy caches or factorises is its own, and it never overwrites a
        factorisation of this one. The coupled simulator carries a PinnedCorrection from step
        to step in its state (drakebots.skinned.skin_coupling.StepMemory), which copies of a
        Drake Context share; each step forks it."""
        fork = copy.copy(self)
        fork._columns = dict(self._columns)
        fork._half = dict(getattr(self, "_half", {}))
        fork._fallback_owned = False
        return fork

    def _HalfSolves(self) -> bool:
        """Whether the base's factorisation is a Cholesky factor P K Pᵀ = L Lᵀ with a forward
        half-solve (PARDISO's, CHOLMOD's): then the Schur complement on the extra coordinates
        is Yᵀ Y with Y = L⁻¹ P E (`_HalfColumns`), at a fraction of full columns' cost."""
        if getattr(self, "_half_failed", False):
            return False
        factor = self.base._factor
        if factor is None:  # not made yet (lazy): by the backend it will be made with
            return ResolveBackend(self.base.factorization) in ("pardiso", "cholmod")
        return _HalfSolving(factor)

    def _HalfSolvesAfterFactor(self) -> bool:
        return _HalfSolving(self.base._lu)  # (made here if lazy)

    def _HalfColumns(self, dofs):
        """Y = L⁻¹ P e_j for the coordinates `dofs` not cached yet, in one forward half-solve:
        (measured on the monster's 128k-row reduced matrix, PARDISO) about 4 ms a column,
        where a full solve with its backward substitution and check took 19-36 ms a column."""
        if not hasattr(self, "_half"):
            self._half = {}
        missing = sorted({int(d) for d in dofs} - set(self._half))
        if not missing:
            return
        if not self._HalfSolves() or not self._HalfSolvesAfterFactor():
            return
        units = np.zeros((len(self.base.free) + self.base.nr, len(missing)), order="F")
        units[self.position[missing], np.arange(len(missing))] = 1.0
        solved = self.base._lu.HalfSolve(units)
        for k, dof in enumerate(missing):
            self._half[dof] = solved[:, k].copy()
        self.column_solves += len(missing)

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
        half = self._HalfSolves()
        if self._last is None or self._last[0] != key or (len(self._last) == 4) != half:
            needed = set(extra.tolist()) | (set(dofs.tolist()) if has_coupling else set())
            cache = getattr(self, "_half", {}) if half else self._columns
            missing = len(needed - set(cache))
            if self.max_new_columns is not None and missing > self.max_new_columns:
                return self._Direct(b_r, b_d, c, extra, c_extra)
            if len(set(cache) | needed) > self.max_columns:
                cache.clear()
            if half:
                # Schur complement E^T K^-1 (E + W) = Y_E^T (Y_E + Y_W) from half-solved columns.
                self._HalfColumns(needed)
                if not self._HalfSolves():  # the factorisation made was a pivoted one
                    self._half_failed, self._last = True, None
                    return self.Solve(b_r, b_d, c, extra, c_extra, coupling)
                Y = np.column_stack([self._half[int(d)] for d in extra])
                T = Y.copy()
                if has_coupling:
                    for column, dof, coefficient in zip(columns, dofs, coefficients):
                        T[:, int(column)] += coefficient * self._half[int(dof)]
                    factor = _LuFactor(Y.T @ T)
                else:
                    S = Y.T @ T
                    factor = _ChoFactor(0.5 * (S + S.T))
                self._last = (key, Y, factor, "half")
                return self._HalfSolve(b_r, b_d, c, extra, c_extra, coupling, pos)
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
        if half:
            return self._HalfSolve(b_r, b_d, c, extra, c_extra, coupling, pos)
        _, Z, factor = self._last
        z = base._lu.solve(base._Rhs(b_r, b_d, c))
        lam_extra = _FactorSolve(factor, -c_extra - z[pos])
        z = z + Z @ lam_extra
        return (*base._Finish(z, b_d, c), lam_extra)

    def _HalfSolve(self, b_r, b_d, c, extra, c_extra, coupling, pos):
        """Solve through the half-solved columns Y (`_last`): E^T K^-1 r = Y^T (L^-1 P r) from
        one half-solve of r, the multipliers from the Schur complement, then one full (checked)
        solve z = K^-1 (r + (E + W) lam). The pinned rows' residual E^T z + c_extra, which a
        wrong Schur complement would leave, is checked; where it misses, the full columns
        (the path without half-solves) answer instead."""
        base = self.base
        _, Y, factor, _ = self._last
        rhs = base._Rhs(b_r, b_d, c)
        lam_extra = _FactorSolve(factor, -c_extra - Y.T @ base._lu.HalfSolve(rhs))
        v = rhs.copy()
        np.add.at(v, pos, lam_extra)
        if coupling is not None and len(coupling[1]) > 0:
            columns, dofs, coefficients = (np.asarray(a) for a in coupling)
            np.add.at(v, self.position[dofs.astype(np.int64)], coefficients * lam_extra[columns])
        z = base._lu.solve(v)
        scale = max(np.abs(z).max(initial=0.0), np.abs(c_extra).max(initial=0.0))
        if np.abs(z[pos] + c_extra).max(initial=0.0) > HALF_SOLVE_TOLERANCE * scale:
            self._half_failed, self._last = True, None
            return self.Solve(b_r, b_d, c, extra, c_extra, coupling)
        return (*base._Finish(z, b_d, c), lam_extra)

    def _Direct(self, b_r, b_d, c, extra, c_extra):
        """The same system with every row pinned, solved without the cached columns (kept for
        a repeat): `exact`, factorised afresh with the rows eliminated (the reference); else the
        rows pinned in place (`_InPlacePins`: the base's pattern, so the factorisation reuses
        an analysis) and solved by GMRES preconditioned by the last such factorisation (of an
        older contact set, or Newton matrix: `anchor`), refactorised when GMRES does not reach
        `krylov_tolerance` within `krylov_iterations`."""
        base = self.base
        key = extra.tobytes()
        if self.exact:
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
        if self._fallback is None or self._fallback[0] != key:
            self._fallback = (key, _InPlacePins(base, extra))
        _, system = self._fallback
        rhs = system.Rhs(b_r, b_d, c, c_extra)
        z = None
        if system.factor is None and self.anchor is not None and self.anchor.base is base:
            z = _LowRank(self.anchor, system, rhs, self.max_low_rank)
            self.low_rank_solves += int(z is not None)
        if (
            z is None
            and system.factor is None
            and self.anchor is not None
            and self.anchor.base is base
            and not _HalfSolving(self.anchor.factor)
            and 2 * len(np.setxor1d(self.anchor.extra, extra)) + 2 <= self.krylov_iterations
        ):
            # The same Newton matrix, a few coordinates pinned or released since the anchor:
            # GMRES needs about two iterations a coordinate (the preconditioned operator is the
            # identity plus a rank-2 change for each), a factorisation about as many solves as
            # `krylov_iterations` (measured on the monster's 128k-row matrix).
            z, iterations = _Gmres(
                system.M,
                self.anchor.factor,
                rhs,
                self.krylov_tolerance,
                self.krylov_iterations,
            )
            self.krylov_iterations_total += iterations
            self.krylov_solves += 1
        if z is None:
            if system.factor is None:
                system.Factorize(self.pool)
                self.factorizations += 1
                self.anchor = system
            z = system.factor.solve(rhs)
        return system.Finish(z, b_d, c, c_extra)


class _InPlacePins:
    """A ReducedKkt's system with more skin coordinates pinned (rows -du_j = c_j, G_q = 0)
    in place: their rows and columns of the reduced matrix zeroed but for the diagonal, the
    known du_j moved to the right-hand side. The matrix keeps the base's size and sparsity
    pattern, so a factorisation of it keeps PARDISO's analysis (FactorPool), and one of another
    contact set preconditions it (PinnedCorrection._Direct). The solution is that of the
    eliminated system (a fresh ReducedKkt with every row pinned) to round-off."""

    def __init__(self, base: ReducedKkt, extra):
        self.base = base
        self.extra = np.asarray(extra, dtype=np.int64)
        position = np.full(base.nd, -1, dtype=np.int64)
        position[base.free] = np.arange(len(base.free))
        self.pos = position[self.extra]
        M0 = base._M
        size = M0.shape[0]
        if getattr(base, "_columns_of_entries", None) is None:
            base._columns_of_entries = np.repeat(np.arange(size), np.diff(M0.indptr))
        marked = np.zeros(size, dtype=bool)
        marked[self.pos] = True
        rows, cols = M0.indices, base._columns_of_entries
        data = M0.data.copy()
        data[(marked[rows] | marked[cols]) & (rows != cols)] = 0.0
        self.M = sp.csc_matrix((data, M0.indices, M0.indptr), shape=M0.shape)
        self.columns = M0[:, self.pos]  # the eliminated couplings (the original values)
        if getattr(base, "_diagonal", None) is None:  # (19 ms on the monster's 128k rows)
            base._diagonal = M0.diagonal()
        self.diagonal = base._diagonal[self.pos]
        self.factor = None

    def Factorize(self, pool=None) -> None:
        base = self.base
        self.factor = FactorSymmetric(
            self.M,
            base.factorization,
            ordering="natural" if base.ordering is not None else None,
            indefinite="lu",
            reuse=None if pool is None else pool.Take(),
        )
        if pool is not None:
            pool.Give(self.factor.positive_definite_factor, self)

    def Rhs(self, b_r, b_d, c, c_extra):
        known = -np.asarray(c_extra, float)
        rhs = self.base._Rhs(b_r, b_d, c) - self.columns @ known
        rhs[self.pos] = self.diagonal * known
        return rhs

    def Finish(self, z, b_d, c, c_extra):
        """(dq, du, lam, lam_extra) from the reduced solution z."""
        base = self.base
        dq, du, lam = base._Finish(z, b_d, c)
        lam_extra = self.columns.T @ z - base._A_fP[self.pos] @ c - b_d[self.extra]
        return dq, du, lam, lam_extra


def _HalfSolving(factor) -> bool:
    """Whether `factor` is a Cholesky factorisation P A Pᵀ = L Lᵀ with a forward half-solve."""
    return getattr(factor, "backend", None) in ("pardiso", "cholmod") and hasattr(
        factor, "HalfSolve"
    )


def _LowRank(anchor: "_InPlacePins", system: "_InPlacePins", rhs, max_changed: int):
    """The solution z of system.M z = rhs through the factorisation of anchor.M, where both are
    the same reduced matrix M0 with different contact coordinates pinned in place; None where
    the sets differ in more than `max_changed` coordinates, the anchor's factorisation has no
    half-solve, or the solution misses the backward-error tolerance (the caller then
    factorises system.M).

    The two matrices differ only in the rows and columns of the changed coordinates D (pinned
    in one set, free in the other), which makes the difference low-rank: with w_j the column j
    of M0 off its diagonal, zeroed in the rows the anchor pins, and signed (-1 for a coordinate
    newly pinned, whose couplings go; +1 for one released, whose couplings come back),

        system.M = anchor.M + W E_Dᵀ + E_D Wᵀ + E_D X E_Dᵀ = anchor.M + U C Uᵀ,

    U = [W, E_D], C = [[0, I], [I, X]], where X corrects the D × D block (W's entries there are
    not the change's). The Sherman-Morrison-Woodbury identity (Golub and Van Loan, Matrix
    Computations, 4th ed., section 2.1.4) with the Cholesky factor P anchor.M Pᵀ = L Lᵀ and
    Y = L⁻¹ P U (half-solves, cached per coordinate on the anchor, which M0 and its set fix):

        z = anchor.M⁻¹ (rhs - U t),   (C⁻¹ + Yᵀ Y) t = Yᵀ L⁻¹ P rhs,   C⁻¹ = [[-X, I], [I, 0]].

    Cost: 2 |D| half-solved columns (about 4 ms each on the monster's 128k-row matrix, kept with
    their Gram matrix for the step's later sets: _HalfColumnCache), a half-solve and a full
    solve, where a factorisation takes 0.6-0.8 s.
    GMRES preconditioned by the anchor (the path before) reaches the same solution in about two
    full solves per changed coordinate, so it paid only for one. The result is checked by its
    backward error on system.M itself (drakebots.fem.solvers.BackwardError).
    """
    factor = anchor.factor
    if max_changed <= 0 or factor is None or not _HalfSolving(factor):
        return None
    in_anchor = np.isin(system.pos, anchor.pos)
    released = np.setdiff1d(anchor.pos, system.pos)
    D = np.concatenate([system.pos[~in_anchor], released])
    if len(D) > max_changed:
        return None
    if len(D) == 0:
        return factor.solve(rhs)
    M0 = anchor.base._M
    size = M0.shape[0]
    cache = getattr(anchor, "_low_rank", None)
    if cache is None or len(cache.columns) > 4 * max_changed:
        marked = np.zeros(size, dtype=bool)
        marked[anchor.pos] = True
        cache = anchor._low_rank = _HalfColumnCache(marked)
    sign = np.where(np.isin(D, anchor.pos), 1.0, -1.0)
    W = _SignedColumns(M0, cache.marked, D, sign)  # (size, |D|) sparse
    missing = [k for k, j in enumerate(D) if int(j) not in cache.columns]
    if missing:
        block = np.zeros((size, 2 * len(missing)), order="F")
        block[:, : len(missing)] = W[:, missing].toarray()
        block[D[missing], len(missing) + np.arange(len(missing))] = 1.0
        cache.Add(D[missing], factor.HalfSolve(block))
    k = len(D)
    index = np.concatenate(
        [[cache.columns[int(j)][0] for j in D], [cache.columns[int(j)][1] for j in D]]
    )
    # X = Δ_DD - W_D - W_Dᵀ, with Δ_DD the change of the D × D block itself.
    M_DD = M0[D][:, D].toarray()
    np.fill_diagonal(M_DD, 0.0)
    now = (sign > 0).astype(float)  # free in the system's set (released)
    before = (sign < 0).astype(float)  # free in the anchor's (newly pinned)
    W_D = W[D].toarray()
    X = M_DD * (np.outer(now, now) - np.outer(before, before)) - W_D - W_D.T
    C_inv = np.block([[-X, np.eye(k)], [np.eye(k), np.zeros((k, k))]])
    capacitance = _LuFactor(C_inv + cache.gram[np.ix_(index, index)])
    U = sp.hstack([W, sp.csc_matrix((np.ones(k), (D, np.arange(k))), shape=(size, k))]).tocsr()

    def Apply(b):
        projected = cache.Y.T @ factor.HalfSolve(b[:, None])[:, 0]
        t = _FactorSolve(capacitance, projected[index])
        # Unchecked: the backward error is checked on system.M below.
        return factor._Solve(b - U @ t)

    z = Apply(rhs)
    if not hasattr(system, "norm"):
        system.norm = InfinityNorm(system.M)
    for _ in range(2):  # the solve, then one step of iterative refinement if it needs one
        if BackwardError(system.M, z, rhs, system.norm) <= BACKWARD_ERROR_TOLERANCE:
            return z
        z = z + Apply(rhs - system.M @ z)
    return None


class _HalfColumnCache:
    """An anchor's half-solved columns L⁻¹ P w_j and L⁻¹ P e_j (`_LowRank`), side by side in Y,
    with their Gram matrix Yᵀ Y grown as columns join (so a solve copies no column)."""

    def __init__(self, marked):
        self.marked = marked  # the reduced rows the anchor pins
        self.columns = {}  # position j -> (column of L⁻¹ P w_j, column of L⁻¹ P e_j) in Y
        self.Y = None
        self.gram = np.zeros((0, 0))

    def Add(self, positions, Y_new):
        """Y_new: [L⁻¹ P w_j for positions, then L⁻¹ P e_j for positions]."""
        m, start = len(positions), 0 if self.Y is None else self.Y.shape[1]
        for i, j in enumerate(positions):
            self.columns[int(j)] = (start + i, start + m + i)
        cross = np.zeros((0, 2 * m)) if self.Y is None else self.Y.T @ Y_new
        self.gram = np.block([[self.gram, cross], [cross.T, Y_new.T @ Y_new]])
        self.Y = Y_new if self.Y is None else np.hstack([self.Y, Y_new])


def _SignedColumns(M0, marked, D, sign) -> sp.csc_matrix:
    """The columns D of M0 off the diagonal, zeroed in the `marked` rows, times `sign`."""
    columns = sp.csc_matrix(M0[:, D])
    rows = columns.indices
    owner = np.repeat(np.arange(len(D)), np.diff(columns.indptr))
    keep = ~marked[rows] & (rows != D[owner])
    data = np.where(keep, columns.data * sign[owner], 0.0)
    out = sp.csc_matrix((data, rows, columns.indptr), shape=columns.shape)
    out.eliminate_zeros()
    return out


def _Gmres(A, preconditioner, b, tolerance, max_iterations):
    """(x, iterations) solving A x = b by GMRES right-preconditioned with a factorisation of a
    nearby matrix (Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., Alg. 9.5, with
    the preconditioned vectors kept as in flexible GMRES, Alg. 9.6), from x0 = P b, until the
    true residual ‖b - A x‖₂ <= tolerance ‖b‖₂ and the normwise backward error is within the
    factorisations' (solvers.BACKWARD_ERROR_TOLERANCE); x is None when `max_iterations` did
    not get there (the caller factorises A then). With P⁻¹ = A it ends at x0: the preconditioned
    operator A P is the identity plus the difference of the two matrices, of low rank when
    they differ by a few pinned coordinates."""
    solve = preconditioner._Solve  # raw solves: the result is checked here
    A = sp.csr_matrix(A.T) if sp.isspmatrix_csc(A) else A  # symmetric: the CSC is Aᵀ's CSR
    x0 = solve(b)
    r = b - A @ x0
    norm_b = float(np.linalg.norm(b))
    beta = float(np.linalg.norm(r))
    target = tolerance * norm_b
    if beta <= target:
        return x0, 0
    V = [r / beta]
    Z = []
    H = np.zeros((max_iterations + 1, max_iterations))
    cs, sn = np.zeros(max_iterations), np.zeros(max_iterations)
    g = np.zeros(max_iterations + 1)
    g[0] = beta
    for j in range(max_iterations):
        Z.append(solve(V[j]))
        w = A @ Z[j]
        for i in range(j + 1):  # modified Gram-Schmidt
            H[i, j] = float(w @ V[i])
            w -= H[i, j] * V[i]
        H[j + 1, j] = norm_w = float(np.linalg.norm(w))
        for i in range(j):  # the earlier Givens rotations
            H[i, j], H[i + 1, j] = (
                cs[i] * H[i, j] + sn[i] * H[i + 1, j],
                -sn[i] * H[i, j] + cs[i] * H[i + 1, j],
            )
        radius = float(np.hypot(H[j, j], H[j + 1, j]))
        cs[j], sn[j] = H[j, j] / radius, H[j + 1, j] / radius
        H[j, j], H[j + 1, j] = radius, 0.0
        g[j + 1] = -sn[j] * g[j]
        g[j] = cs[j] * g[j]
        if abs(g[j + 1]) <= target or norm_w == 0.0 or j + 1 == max_iterations:
            k = j + 1
            y = np.linalg.solve(np.triu(H[:k, :k]), g[:k])
            x = x0 + np.column_stack(Z) @ y
            residual = b - A @ x
            if (
                float(np.linalg.norm(residual)) <= target
                and BackwardError(A, x, b, InfinityNorm(A)) <= BACKWARD_ERROR_TOLERANCE
            ):
                return x, k
            if abs(g[j + 1]) <= target:  # round-off: the estimate and the truth differ
                return None, k
            if j + 1 == max_iterations:
                return None, k
        V.append(w / norm_w)
    return None, max_iterations


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
