"""Sparse linear solvers for the Newton systems, behind one small interface.

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

`Factorize(A, method)` returns an object with `solve(b)` (b: (n,) or (n, k)).
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

SOLVERS = ("splu_nd", "splu", "splu_colamd", "spsolve", "cg")
DEFAULT_SOLVER = "splu_nd"


def CholmodAvailable() -> bool:
    """True when scikit-sparse's CHOLMOD imports (an optional, measured backend)."""
    try:
        import sksparse.cholmod  # noqa: F401
    except ImportError:
        return False
    return True


class OrderedSplu:
    """SuperLU (symmetric mode) on a symmetric matrix taken in a fixed symmetric order.

    `Factor(A)` may be called again for new values on the same sparsity pattern: the order and
    the map from A's data to the permuted matrix's data are made once per pattern (SciPy's fancy
    indexing of a 40k-row sparse matrix costs a good part of a factorisation).

    Args:
        ordering: a permutation of the rows/columns (e.g. a METIS nested dissection); or a
            function of the matrix returning one (or None), called once per sparsity pattern;
            or None for SuperLU's own `permc_spec`.
        permc_spec: SuperLU's column ordering when there is no permutation.
    """

    def __init__(self, ordering=None, permc_spec: str = "MMD_AT_PLUS_A"):
        self._ordering = ordering
        self._permc_spec = permc_spec
        fixed = ordering is not None and not callable(ordering)
        self._perm = np.asarray(ordering, dtype=np.int64) if fixed else None
        self._pattern = None
        self._lu = None

    def Factor(self, A) -> "OrderedSplu":
        A = sp.csc_matrix(A)
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
        self._lu = spla.splu(
            A,
            permc_spec="NATURAL" if self._perm is not None else self._permc_spec,
            diag_pivot_thresh=0.0,
            options={"SymmetricMode": True},
        )
        return self

    def solve(self, b):
        b = np.asarray(b, float)
        if self._perm is None:
            return self._lu.solve(b)
        x = np.empty_like(b)
        x[self._perm] = self._lu.solve(b[self._perm])
        return x


class _Spsolve:
    def __init__(self, A):
        self._A = sp.csc_matrix(A)

    def solve(self, b):
        return spla.spsolve(self._A, b)


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


def Factorize(A, method: str = DEFAULT_SOLVER, *, ordering=None):
    """A solver for the sparse symmetric positive definite matrix A.

    Args:
        A: sparse (n, n).
        method: "splu_nd" (SuperLU on the matrix permuted by METIS nested dissection of the
            vertex graph, symmetric mode; the default), "splu" (SuperLU, its MMD(A^T+A)
            ordering), "splu_colamd" (SuperLU, COLAMD), "spsolve" (no reusable factor),
            "cg" (Jacobi-preconditioned conjugate gradients).
        ordering: for "splu_nd", a precomputed dof permutation (reuse across factorisations of
            the same pattern); computed when None.
    """
    if method == "splu_nd":
        if ordering is None:
            from drakebots.fem.coupling import _NestedDissection

            ordering = _NestedDissection
        return OrderedSplu(ordering).Factor(A)
    if method == "splu":
        return OrderedSplu(permc_spec="MMD_AT_PLUS_A").Factor(A)
    if method == "splu_colamd":
        return OrderedSplu(permc_spec="COLAMD").Factor(A)
    if method == "spsolve":
        return _Spsolve(A)
    if method == "cg":
        return _Cg(A)
    raise ValueError(f"unknown linear solver '{method}' (known: {', '.join(SOLVERS)})")
