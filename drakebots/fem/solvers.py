"""Sparse linear solvers for the Newton systems, behind one small interface.

The choice was made by measurement (scripts/bench_fem.py, table "linear solvers"): on the beetle
skin's Newton matrix M/h^2 + D/h + K (about 46k unknowns, symmetric positive definite and badly
conditioned: the 4 mm shell is stiff in-plane and the mass term at h = 1-5 ms is small), SuperLU
on the matrix pre-permuted by a METIS nested dissection of the mesh's vertex graph (pymetis) is
the fastest direct solver SciPy offers (about half the factorisation time of SuperLU's own
MMD(A^T+A) ordering, a third of COLAMD's); Jacobi-preconditioned CG needs thousands of
iterations there. CHOLMOD (scikit-sparse) does not build from PyPI without the system SuiteSparse
library, and qdldl (measured) was slower than SuperLU, so neither is used.

`Factorize(A, method)` returns an object with `solve(b)` (b: (n,) or (n, k)).
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

SOLVERS = ("splu_nd", "splu", "splu_colamd", "spsolve", "cg")
DEFAULT_SOLVER = "splu_nd"


class _Splu:
    def __init__(self, A, permc_spec, ordering=None):
        A = sp.csc_matrix(A)
        self._perm = ordering
        if ordering is not None:
            A = A[ordering][:, ordering].tocsc()
        self._lu = spla.splu(
            A,
            permc_spec=permc_spec,
            diag_pivot_thresh=0.0,
            options={"SymmetricMode": True},
        )

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

            ordering = _NestedDissection(A)
        return _Splu(A, "NATURAL" if ordering is not None else "MMD_AT_PLUS_A", ordering)
    if method == "splu":
        return _Splu(A, "MMD_AT_PLUS_A")
    if method == "splu_colamd":
        return _Splu(A, "COLAMD")
    if method == "spsolve":
        return _Spsolve(A)
    if method == "cg":
        return _Cg(A)
    raise ValueError(f"unknown linear solver '{method}' (known: {', '.join(SOLVERS)})")
