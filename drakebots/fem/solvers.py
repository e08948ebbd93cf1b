"""Sparse linear solvers for the Newton systems, behind one small interface, every answer checked.

The choice was made by measurement (scripts/bench_fem.py, table "linear solvers"): on the beetle
skin's Newton matrix M/h^2 + D/h + K (about 46k unknowns, symmetric positive definite and badly
conditioned: the 4 mm shell is stiff in-plane and the mass term at h = 1-5 ms is small), SuperLU
on the matrix pre-permuted by a METIS nested dissection of the mesh's vertex graph (pymetis) is
the fastest direct solver SciPy offers (about half the factorisation time of SuperLU's own
MMD(A^T+A) ordering, a third of COLAMD's); Jacobi-preconditioned CG needs thousands of
iterations there. CHOLMOD (scikit-sparse) does not build from PyPI without the system SuiteSparse
library, so it is an optional extra (`cholmod`): the skin's own Newton steps do not use it, the
coupled skin-skeleton system (drakebots.fem.coupling.ReducedKkt) and the frame-by-frame QPCC take
it where `CholmodAvailable()`. qdldl (measured) was slower than SuperLU and is not used.

What a factorisation promises, whichever backend runs it (the SuperLU defect, issue 53):

- A positive-definite factorisation (`SpdFactor`, `Factorize`) of a matrix that is not
  numerically positive definite raises `NotPositiveDefinite`, from SuperLU as from CHOLMOD.
  SuperLU runs in symmetric mode without pivoting (`diag_pivot_thresh=0`), which is exact
  Cholesky-in-LU-form for a positive-definite matrix; for an indefinite one it used to return a
  factor without complaint. Its pivots are the LDLᵀ pivots of the symmetrically permuted matrix
  (diagonal pivots only: `perm_r == perm_c`), so by Sylvester's law of inertia the matrix is
  positive definite iff every pivot is positive: that is the check, the counterpart of CHOLMOD's.
  Before it, the coupled QPCC on the default install linearised every frame with the exact,
  indefinite stiffness of a compressed skin (the monster's folded skin: 11 negative pivots in
  the first frame), where with CHOLMOD the refusal switched it to the PSD-projected stiffness;
  its frames diverged within four steps.
- Where an indefinite matrix is wanted (Newton on the exact Hessian, the coupled simulator),
  `FactorSymmetric(..., indefinite="lu")` factorises it by SuperLU with threshold partial
  pivoting (`LuFactor`): a stable LU, never the unpivoted one.
- Every solve is checked: the normwise backward error ‖b - A x‖ / (‖A‖ ‖x‖ + ‖b‖) (∞-norms; for
  a block of right-hand sides, of one random combination of its columns, one product with A) must
  be at most `BACKWARD_ERROR_TOLERANCE`; a solve above it gets one step of iterative refinement,
  and a solve still above it raises `InaccurateSolve` naming the size and the error. A stable
  factorisation of these matrices leaves 1e-14..1e-12.

`Factorize(A, method)` returns an object with `solve(b)` (b: (n,) or (n, k)).
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

SOLVERS = ("auto", "pardiso", "splu_nd", "splu", "splu_colamd", "spsolve", "cg")
# The skin's own Newton steps: PARDISO where MKL loads, else SuperLU in METIS order.
DEFAULT_SOLVER = "auto"
# The positive-definite factorisations: "auto" is MKL PARDISO where the `mkl` wheel loads (the
# default install on x86-64), else CHOLMOD where scikit-sparse imports, else SuperLU; "dense" is
# LAPACK's Cholesky, the independent reference for small systems (tests).
BACKENDS = ("auto", "pardiso", "cholmod", "splu", "dense")
# Largest system the dense reference takes (a 12k x 12k matrix is 1.2 GB).
DENSE_MAX_UNKNOWNS = 12_000
# Largest normwise backward error a solve may leave (module docstring).
BACKWARD_ERROR_TOLERANCE = 1e-9


class NotPositiveDefinite(np.linalg.LinAlgError):
    """A positive-definite factorisation met a matrix that is not numerically positive definite
    (a non-positive pivot), whichever backend ran it."""


class InaccurateSolve(np.linalg.LinAlgError):
    """A factorisation's solve left a backward error above `BACKWARD_ERROR_TOLERANCE` even after
    a step of iterative refinement: its answer is not a solution of the system."""


def PardisoAvailable() -> bool:
    """True when MKL PARDISO loads (drakebots.fem.pardiso; the `mkl` wheel)."""
    from drakebots.fem import pardiso

    return pardiso.Available()


def AutoBackend() -> str:
    """The factorisation "auto" means on this install: "pardiso", "cholmod" or "splu"."""
    if PardisoAvailable():
        return "pardiso"
    return "cholmod" if CholmodAvailable() else "splu"


def CholmodAvailable() -> bool:
    """True when scikit-sparse's CHOLMOD imports (an optional, measured backend)."""
    try:
        import sksparse.cholmod  # noqa: F401
    except ImportError:
        return False
    return True


def NestedDissection(A: sp.spmatrix, block: int = 3) -> np.ndarray | None:
    """A fill-reducing ordering of the dofs of a mesh matrix: METIS nested dissection (pymetis)
    of its vertex graph (`block` dofs a vertex), or None if pymetis is missing."""
    try:
        import pymetis
    except ImportError:  # pragma: no cover - pymetis is a declared dependency
        return None
    n = A.shape[0] // block
    A = sp.csr_matrix(A)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr)) // block
    cols = A.indices // block
    graph = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    graph.setdiag(0)
    graph.eliminate_zeros()
    graph.sort_indices()
    adjacency = pymetis.CSRAdjacency(graph.indptr, graph.indices)
    perm, _ = pymetis.nested_dissection(adjacency)
    perm = np.asarray(perm, dtype=np.int64)
    return (block * perm[:, None] + np.arange(block)).ravel()


def InfinityNorm(A) -> float:
    """‖A‖∞ of a sparse or dense matrix (its largest absolute row sum)."""
    return float(abs(A).sum(axis=1).max()) if A.shape[0] else 0.0


def BackwardError(A, x, b, norm_A: float | None = None) -> float:
    """‖b - A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞), the normwise backward error of a solution x of A x = b
    (`norm_A`: ‖A‖∞ if already known)."""
    x = np.asarray(x, float)
    b = np.asarray(b, float)
    norm_A = InfinityNorm(A) if norm_A is None else norm_A
    denominator = norm_A * np.abs(x).max(initial=0.0) + np.abs(b).max(initial=0.0)
    residual = np.abs(b - A @ x).max(initial=0.0)
    return 0.0 if residual == 0.0 else float(residual / denominator) if denominator else np.inf


class _Checked:
    """A solve of A x = b checked by its backward error (module docstring): `_Solve(b)` is the
    backend's raw solve, `_matrix` the matrix it factorised."""

    _matrix = None
    _rng = None
    _norm = None  # ‖_matrix‖∞, computed at the first check after each Factor
    refinements = 0  # solves that needed the step of iterative refinement

    def _SetMatrix(self, A):
        self._matrix = A
        self._norm = None

    @property
    def positive_definite_factor(self):
        """The positive-definite factorisation this one came from (FactorSymmetric): itself,
        or, for a pivoted factorisation, the one that refused the matrix. Not stored as a
        reference to itself: that cycle kept a dropped factorisation (0.4-0.5 GB of PARDISO's
        memory on the monster) alive until Python's cyclic collector ran, and a replay whose
        Schur blocks changed every step grew by a handle a step (issue 69, measured)."""
        spd = self.__dict__.get("_positive_definite_factor")
        return self if spd is None else spd

    @positive_definite_factor.setter
    def positive_definite_factor(self, spd):
        self.__dict__["_positive_definite_factor"] = None if spd is self else spd

    def _Error(self, x, b) -> float:
        if self._norm is None:
            self._norm = InfinityNorm(self._matrix)
        return BackwardError(self._matrix, x, b, self._norm)

    def solve(self, b):
        b = np.asarray(b, float)
        return self.Checked(self._Solve(b), b)

    def Checked(self, x, b):
        """x, a solution of A x = b found with this factorisation, once its backward error is
        checked (and, above the tolerance, after one step of iterative refinement); raises
        InaccurateSolve where the refined one is above it too."""
        A = self._matrix
        if b.ndim == 1:
            probe_x, probe_b = x, b
        else:  # one product with A: a random combination of the columns
            if self._rng is None:
                self._rng = np.random.default_rng(0)
            weights = self._rng.standard_normal(b.shape[1])
            probe_x, probe_b = x @ weights, b @ weights
        error = self._Error(probe_x, probe_b)
        if error <= BACKWARD_ERROR_TOLERANCE:
            return x
        x = x + self._Solve(b - A @ x)  # one step of iterative refinement
        self.refinements += 1
        probe_x = x if b.ndim == 1 else x @ weights
        refined = self._Error(probe_x, probe_b)
        if not refined <= BACKWARD_ERROR_TOLERANCE:
            raise InaccurateSolve(
                f"{type(self).__name__}: a solve of a {A.shape[0]}x{A.shape[1]} system left a "
                f"backward error of {refined:.2e} (tolerance {BACKWARD_ERROR_TOLERANCE:.0e}, "
                f"{error:.2e} before refinement)"
            )
        return x


class OrderedSplu(_Checked):
    """SuperLU (symmetric mode) on a symmetric matrix taken in a fixed symmetric order.

    `Factor(A)` may be called again for new values on the same sparsity pattern: the order and
    the map from A's data to the permuted matrix's data are made once per pattern (SciPy's fancy
    indexing of a 40k-row sparse matrix costs a good part of a factorisation).

    Without pivoting (the default, `positive_definite=True`) the factor is a Cholesky factor in
    LU form, and `Factor` raises `NotPositiveDefinite` unless every pivot is positive (module
    docstring). With `positive_definite=False` SuperLU pivots (threshold 0.1, preferring the
    diagonal), the stable LU of an indefinite matrix.

    Args:
        ordering: a permutation of the rows/columns (e.g. a METIS nested dissection); or a
            function of the matrix returning one (or None), called once per sparsity pattern;
            or None for SuperLU's own `permc_spec`.
        permc_spec: SuperLU's column ordering when there is no permutation.
        positive_definite: require (and check) a positive-definite matrix, factorised without
            pivoting; False: pivot.
    """

    def __init__(self, ordering=None, permc_spec: str = "MMD_AT_PLUS_A", *, positive_definite=True):
        self._ordering = ordering
        self._permc_spec = permc_spec
        self.positive_definite = bool(positive_definite)
        fixed = ordering is not None and not callable(ordering)
        self._perm = np.asarray(ordering, dtype=np.int64) if fixed else None
        self._pattern = None
        self._lu = None

    def Factor(self, A) -> "OrderedSplu":
        A = sp.csc_matrix(A)
        self._SetMatrix(A)
        if self._ordering is not None:
            pattern = (A.shape, A.indptr.tobytes(), A.indices.tobytes())
            if pattern != self._pattern:
                if callable(self._ordering):
                    perm = self._ordering(A)
                    self._perm = None if perm is None else np.asarray(perm, dtype=np.int64)
                if self._perm is not None:
                    marker = sp.csc_matrix(
                        (np.arange(1.0, A.nnz + 1.0), A.indices, A.indptr), shape=A.shape
                    )
                    permuted = marker[self._perm][:, self._perm].tocsc()
                    permuted.sort_indices()
                    self._map = permuted.data.astype(np.int64) - 1
                    self._permuted = (permuted.indices.copy(), permuted.indptr.copy())
                self._pattern = pattern
            if self._perm is not None:
                indices, indptr = self._permuted
                A = sp.csc_matrix((A.data[self._map], indices, indptr), shape=A.shape)
        self._lu = None
        try:
            lu = spla.splu(
                A,
                permc_spec="NATURAL" if self._perm is not None else self._permc_spec,
                diag_pivot_thresh=0.0 if self.positive_definite else 0.1,
                options={"SymmetricMode": True},
            )
        except RuntimeError as e:  # "Factor is exactly singular"
            if self.positive_definite:
                raise NotPositiveDefinite(f"SuperLU: {e} ({A.shape[0]} unknowns)") from e
            raise
        if self.positive_definite:
            pivots = lu.U.diagonal()
            diagonal = np.array_equal(lu.perm_r, lu.perm_c)
            bad = int(np.sum(~(pivots > 0.0)))
            if bad or not diagonal:
                raise NotPositiveDefinite(
                    f"SuperLU: the {A.shape[0]}x{A.shape[0]} matrix is not positive definite "
                    + (f"({bad} non-positive pivots)" if bad else "(an off-diagonal pivot)")
                )
        self._lu = lu
        return self

    def _Solve(self, b):
        if self._perm is None:
            return self._lu.solve(b)
        x = np.empty_like(b)
        x[self._perm] = self._lu.solve(b[self._perm])
        return x


class CholmodFactor(_Checked):
    """CHOLMOD's supernodal Cholesky (scikit-sparse) behind the same interface: the symbolic
    analysis is reused while the sparsity pattern stays the same; a matrix that is not positive
    definite raises `NotPositiveDefinite`.

    Args:
        ordering: CHOLMOD's fill-reducing order ("nesdis": its METIS nested dissection; on the
            beetle's reduced QPCC matrix, 37.7k rows, 6 % less fill and a 25-30 % faster numeric
            factorisation than its default, for a one-off analysis 0.12 s longer), or "natural"
            when the caller has permuted the matrix already.
    """

    def __init__(self, ordering: str = "nesdis"):
        self._ordering = ordering
        self._factor = None
        self._pattern = None

    def Factor(self, A) -> "CholmodFactor":
        from sksparse.cholmod import CholmodNotPositiveDefiniteError, analyze

        A = sp.csc_matrix(A)
        self._SetMatrix(A)
        pattern = (A.shape, A.indptr.tobytes(), A.indices.tobytes())
        if self._factor is None or pattern != self._pattern:
            # Supernodal always: its LLᵀ meets a non-positive pivot and says so. In "auto" mode
            # CHOLMOD factorises a small or sparse-enough matrix by simplicial LDLᵀ, which takes
            # an indefinite one without complaint (measured: a 432-row shifted Laplacian, and a
            # box skin's reduced Eq. 2 with 7 negative eigenvalues; tests/fem/test_solvers.py).
            self._factor = analyze(A, mode="supernodal", ordering_method=self._ordering)
            self._pattern = pattern
        try:
            self._factor.cholesky_inplace(A)
        except CholmodNotPositiveDefiniteError as e:
            raise NotPositiveDefinite(f"CHOLMOD: {e} ({A.shape[0]} unknowns)") from e
        return self

    def _Solve(self, b):
        return self._factor.solve_A(b)

    def HalfSolve(self, B) -> np.ndarray:
        """Y = L⁻¹ P B (dense B), so that Bᵀ A⁻¹ B = Yᵀ Y."""
        f = self._factor
        return f.solve_L(f.apply_P(np.asarray(B, float)), use_LDLt_decomposition=False)


class PardisoFactor(_Checked):
    """MKL PARDISO behind the same interface (drakebots.fem.pardiso): its Cholesky (mtype 2)
    raising `NotPositiveDefinite` for a matrix that is not positive definite, or with
    `positive_definite=False` its Bunch-Kaufman LDLᵀ (mtype -2) for an indefinite one. The
    symbolic analysis (PARDISO's METIS nested dissection) is reused while the pattern stays.

    With `schur_columns` W (n x k, sparse, fixed; positive definite only, PARDISO's own order)
    each factorisation also gives `schur_complement` = Wᵀ A⁻¹ W, and `HalfSolveWithColumns`
    the half-solve with Wᵀ A⁻¹ B (drakebots.fem.pardiso.Pardiso)."""

    def __init__(self, positive_definite: bool = True, ordering=None, schur_columns=None):
        from drakebots.fem import pardiso

        self.positive_definite = bool(positive_definite)
        self.ordering = ordering
        self._pardiso = pardiso.Pardiso(
            pardiso.POSITIVE_DEFINITE if positive_definite else pardiso.INDEFINITE,
            ordering,
            schur_columns=schur_columns,
        )

    def Factor(self, A) -> "PardisoFactor":
        from drakebots.fem import pardiso

        A = sp.csc_matrix(A)
        self._SetMatrix(A)
        try:
            self._pardiso.Factor(A)
        except pardiso.NonPositivePivot as e:
            raise NotPositiveDefinite(str(e)) from e
        return self

    @property
    def inertia(self):
        """(positive, negative) pivots of the LDLᵀ factorisation (indefinite mode)."""
        return self._pardiso.inertia

    @property
    def factor_flops(self) -> float:
        """Floating-point operations of one numeric factorisation in the current analysis
        (PARDISO's count; 0 before the first `Factor`)."""
        return self._pardiso.factor_flops

    def _Solve(self, b):
        return self._pardiso.Solve(b)

    def HalfSolve(self, B) -> np.ndarray:
        """Y = L⁻¹ P B (dense B), so that Bᵀ A⁻¹ B = Yᵀ Y."""
        return self._pardiso.ForwardSolve(B)

    @property
    def schur_complement(self) -> np.ndarray | None:
        """Wᵀ A⁻¹ W of the last factorisation (with `schur_columns`), else None."""
        return self._pardiso.schur_complement

    def HalfSolveWithColumns(self, B) -> tuple[np.ndarray, np.ndarray | None]:
        """(L⁻¹ P B, Wᵀ A⁻¹ B) for dense B (the second None without `schur_columns`)."""
        return self._pardiso.ForwardSolveWithColumns(B)

    def ForwardBordered(self, B) -> np.ndarray:
        """The bordered factor's forward substitution of [B; 0] (with `schur_columns` W):
        -Wᵀ A⁻¹ B in its last k rows (drakebots.fem.pardiso.Pardiso)."""
        return self._pardiso.ForwardBordered(B)

    def BackwardBordered(self, y, B, g) -> np.ndarray:
        """A⁻¹ (B + W g) from y = ForwardBordered(B), checked (`Checked`); y is overwritten."""
        x = self._pardiso.BackwardBordered(y, g)
        return self.Checked(x, B + self._pardiso.schur_columns @ g)


class DenseCholesky(_Checked):
    """LAPACK's dense Cholesky (scipy.linalg.cho_factor) behind the same interface: an
    implementation independent of SuperLU and CHOLMOD for small systems, the reference the
    tests compare the sparse backends with. Raises `NotPositiveDefinite` where LAPACK's potrf
    meets a non-positive pivot."""

    def Factor(self, A) -> "DenseCholesky":
        import scipy.linalg as sla

        A = sp.csc_matrix(A)
        if A.shape[0] > DENSE_MAX_UNKNOWNS:
            raise ValueError(
                f"factorization 'dense' takes at most {DENSE_MAX_UNKNOWNS} unknowns "
                f"(got {A.shape[0]}): use 'splu' or 'cholmod'"
            )
        self._SetMatrix(A)
        try:
            self._factor = sla.cho_factor(A.toarray(), lower=True, check_finite=True)
        except (np.linalg.LinAlgError, ValueError) as e:
            raise NotPositiveDefinite(f"LAPACK potrf: {e} ({A.shape[0]} unknowns)") from e
        return self

    def _Solve(self, b):
        import scipy.linalg as sla

        return sla.cho_solve(self._factor, b)


class LuFactor(OrderedSplu):
    """The stable LU (SuperLU, threshold partial pivoting) of a symmetric matrix that may be
    indefinite, in a given symmetric order; checked solves."""

    def __init__(self, ordering=None, permc_spec: str = "MMD_AT_PLUS_A"):
        super().__init__(ordering, permc_spec, positive_definite=False)


def ResolveBackend(backend: str) -> str:
    """The concrete factorisation a name selects ("auto" -> `AutoBackend()`); a backend this
    install lacks is a ValueError naming the package that provides it."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown factorization '{backend}' (known: {', '.join(BACKENDS)})")
    if backend == "cholmod" and not CholmodAvailable():
        raise ValueError(
            f"factorization '{backend}' needs scikit-sparse (pip install scikit-sparse)"
        )
    if backend == "pardiso" and not PardisoAvailable():
        raise ValueError(f"factorization '{backend}' needs Intel MKL (pip install mkl)")
    return AutoBackend() if backend == "auto" else backend


def SpdFactor(backend: str = "auto", ordering=None):
    """An empty positive-definite factorisation ("auto", "pardiso", "cholmod", "splu" or
    "dense"; `BACKENDS`) whose `Factor(A)` raises `NotPositiveDefinite` for a matrix that is not.

    Args:
        backend: "auto" takes MKL PARDISO where it loads, else CHOLMOD where scikit-sparse
            imports, else SuperLU (`AutoBackend`).
        ordering: "natural" (the caller has put the matrix in a fill-reducing order); a
            permutation or a function of the matrix returning one (SuperLU takes it, as
            `OrderedSplu`; PARDISO too, a function's permutation made once and kept for later
            analyses of the same size, so that a grown pattern costs a symbolic factorisation
            only; CHOLMOD takes its own nested dissection); or None (SuperLU's MMD(AᵀA),
            CHOLMOD's and PARDISO's nested dissection).
    """
    backend = ResolveBackend(backend)
    natural = isinstance(ordering, str) and ordering == "natural"
    if backend == "dense":
        return DenseCholesky()
    if backend == "pardiso":
        return PardisoFactor(ordering=ordering)
    if backend == "cholmod":
        return CholmodFactor("natural" if natural else "nesdis")
    return OrderedSplu(permc_spec="NATURAL") if natural else OrderedSplu(ordering)


def FactorSymmetric(
    A, backend: str = "auto", *, ordering=None, indefinite: str = "raise", reuse=None
):
    """The factor of the sparse symmetric matrix A by `SpdFactor(backend, ordering)`; where A is
    not positive definite, `NotPositiveDefinite` (indefinite="raise") or a stable pivoted
    factorisation (indefinite="lu"): PARDISO's Bunch-Kaufman LDLᵀ where the backend is PARDISO,
    else SuperLU's threshold-pivoted LU (`LuFactor`). The factor's `.backend` says which ran:
    "pardiso", "cholmod", "splu", "dense", "ldlt" (PARDISO, pivoted) or "lu" (SuperLU, pivoted).

    `reuse`: the `.positive_definite_factor` of an earlier result that is no longer used (its
    numeric factor is overwritten): PARDISO's and CHOLMOD's symbolic analysis is then kept when
    the pattern is the same (the coupled simulator's Newton iterations and steps: PARDISO's
    analysis of the monster's 128k-row matrix costs more than its numeric factorisation), and
    PARDISO's also for a pattern inside the analysed one (drakebots.fem.pardiso); its pivoted
    LDLᵀ handle is kept with it for the next indefinite matrix.
    """
    if indefinite not in ("raise", "lu"):
        raise ValueError(f"indefinite must be 'raise' or 'lu' (got {indefinite!r})")
    backend = ResolveBackend(backend)
    reusable = (PardisoFactor, CholmodFactor)
    if isinstance(reuse, reusable) and {"pardiso": PardisoFactor, "cholmod": CholmodFactor}.get(
        backend
    ) is type(reuse):
        factor = reuse
    else:
        factor = SpdFactor(backend, ordering)
    spd = factor
    try:
        factor.Factor(A)
        factor.backend = backend
    except NotPositiveDefinite:
        if indefinite == "raise":
            raise
        if backend == "pardiso":
            # Its own handle, kept with the positive-definite one so that the next indefinite
            # matrix of the same pattern reuses its analysis too.
            factor = getattr(spd, "indefinite_factor", None) or PardisoFactor(
                positive_definite=False, ordering=getattr(spd, "ordering", ordering)
            )
            spd.indefinite_factor = factor
            factor.Factor(A)
            factor.backend = "ldlt"
        else:
            natural = isinstance(ordering, str) and ordering == "natural"
            factor = LuFactor(permc_spec="NATURAL") if natural else LuFactor(ordering)
            factor.Factor(A)
            factor.backend = "lu"
    factor.positive_definite_factor = spd
    return factor


class _Spsolve(_Checked):
    def __init__(self, A):
        self._SetMatrix(sp.csc_matrix(A))

    def _Solve(self, b):
        return spla.spsolve(self._matrix, b)


class _Cg:
    def __init__(self, A, rtol=1e-10, maxiter=20000):
        self._A = sp.csr_matrix(A)
        d = self._A.diagonal()
        self._M = sp.diags(1.0 / np.where(d != 0.0, d, 1.0))
        self._rtol = rtol
        self._maxiter = maxiter
        self.iterations = 0

    def solve(self, b):
        b = np.asarray(b, float)
        if b.ndim == 2:
            return np.column_stack([self.solve(b[:, k]) for k in range(b.shape[1])])
        count = [0]

        def callback(_):
            count[0] += 1

        x, info = spla.cg(
            self._A, b, rtol=self._rtol, maxiter=self._maxiter, M=self._M, callback=callback
        )
        self.iterations += count[0]
        if info != 0:
            raise RuntimeError(f"CG did not converge in {self._maxiter} iterations")
        return x


def ResolveMethod(method: str) -> str:
    """`Factorize`'s method with "auto" resolved ("pardiso" where MKL loads, else "splu_nd");
    "pardiso" without MKL is a ValueError naming the package."""
    if method not in SOLVERS:
        raise ValueError(f"unknown linear solver '{method}' (known: {', '.join(SOLVERS)})")
    if method == "auto":
        return "pardiso" if PardisoAvailable() else "splu_nd"
    if method == "pardiso" and not PardisoAvailable():
        raise ValueError("linear solver 'pardiso' needs Intel MKL (pip install mkl)")
    return method


def Factorize(A, method: str = DEFAULT_SOLVER, *, ordering=None):
    """A solver for the sparse symmetric positive definite matrix A.

    Args:
        A: sparse (n, n).
        method: "auto" (the default: "pardiso" where MKL loads, else "splu_nd"), "pardiso" (MKL
            PARDISO's Cholesky, its own nested dissection), "splu_nd" (SuperLU on the matrix
            permuted by METIS nested dissection of the vertex graph, symmetric mode), "splu"
            (SuperLU, its MMD(A^T+A) ordering), "splu_colamd" (SuperLU, COLAMD), "spsolve" (no
            reusable factor), "cg" (Jacobi-preconditioned conjugate gradients).
        ordering: for "splu_nd", a precomputed dof permutation (reuse across factorisations of
            the same pattern); computed when None.

    Raises:
        NotPositiveDefinite: the direct methods, where A is not positive definite.
    """
    method = ResolveMethod(method)
    if method == "pardiso":
        return PardisoFactor().Factor(A)  # its own METIS nested dissection; `ordering` unused
    if method == "splu_nd":
        return OrderedSplu(NestedDissection if ordering is None else ordering).Factor(A)
    if method == "splu":
        return OrderedSplu(permc_spec="MMD_AT_PLUS_A").Factor(A)
    if method == "splu_colamd":
        return OrderedSplu(permc_spec="COLAMD").Factor(A)
    if method == "spsolve":
        return _Spsolve(A)
    if method == "cg":
        return _Cg(A)
    raise ValueError(f"unknown linear solver '{method}' (known: {', '.join(SOLVERS)})")
