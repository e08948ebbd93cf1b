"""A multifrontal supernodal sparse Cholesky factorisation on a nested-dissection tree (NumPy).

SciPy has no sparse Cholesky: its SuperLU computes both triangles of an LU and works column by
column, which made the 2744-voxel frame solve (53k unknowns) take seconds. A frame lattice's
nested-dissection tree gives the factor's supernodes directly: every leaf subdomain and every
separator is one dense block of columns of L. The multifrontal method (Duff & Reid 1983; Liu,
"The multifrontal method for sparse matrix solution", SIAM Review 34, 1992) factors them in
postorder with dense BLAS-3 kernels:

    for each supernode s (children first):
        F = [A[s, s]  A[s, r]^T; A[r, s]  0] + sum of the children's update matrices (extend-add),
            with r the rows of L below s (the union of the children's rows and A's pattern)
        L11 = chol(F11);  L21 = F21 L11^-T;  U_s = F22 - L21 L21^T   (passed to the parent)

The solve runs the triangular sweeps supernode by supernode. Python loops once per supernode
(a few thousand for the largest benchmark lattice), never per entry.

The tree comes from `NestedDissectionTree` (geometric nested dissection: every coordinate plane
of face nodes of a voxel lattice is an exact separator, so fill stays near that of METIS).

Why it is kept, measured against the libraries that do the same (scripts/bench_voxel.py table
2: the 2744-voxel K_ff, 52,908 unknowns, one thread, best of 3, four runs on the
shared 2-core machine at load 3-7; CPU seconds, the fairer figure under load, and wall):

    ======================================  =========  =========  ======
    numeric factorisation                   CPU s      wall s     nnz(L)
    ======================================  =========  =========  ======
    MKL PARDISO (its METIS)                 0.35-0.40  0.55-0.98  18.8 M
    CHOLMOD supernodal (METIS)              0.55-0.61  1.03-1.27  16.7 M
    CHOLMOD supernodal (this module's ND)   0.54-0.63  0.93-1.36  16.6 M
    this multifrontal (its ND)              1.18-1.33  1.8-3.3    17.8 M
    ======================================  =========  =========  ======

PARDISO is therefore the frame's factorisation wherever MKL loads (drakebots.frame.model,
FactorizationBackend). This one stays as the fallback where it does not (no `mkl` wheel for the
platform; CHOLMOD is an optional, GPL extra), 3-4x slower than PARDISO and still about 2x faster
than SciPy's SuperLU on the same order (whole solves), and as a second implementation that
shares no code with MKL, which the tests compare with it.
"""

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk


def NestedDissectionTree(
    points: np.ndarray, edges: np.ndarray, leaf_size: int = 16
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fill-reducing node order by geometric nested dissection (George 1973), with its tree.

    Nodes are split recursively by the coordinate plane that best halves them; the separator is
    every node on the plane plus the nodes on one side with an edge across it (always a valid
    vertex separator, whatever the frame). Subtrees are numbered before their separator.

    Args:
        points: (num_nodes, 3) node positions.
        edges: (num_edges, 2) node pairs (the elements).
        leaf_size: subdomains with at most this many nodes are not split further.

    Returns:
        (order, block_ptr, parent): `order` is a permutation of the nodes; block b is the node
        set order[block_ptr[b]:block_ptr[b + 1]] (a leaf subdomain or a separator), blocks in
        postorder; parent[b] is the block that separates it from the rest (-1 for roots).
    """
    points = np.asarray(points, dtype=float)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    scale = max(float(np.ptp(points)) if len(points) else 1.0, 1e-300)
    keys = np.round(points / scale * 1e9).astype(np.int64)
    neighbours = sp.csr_matrix(
        (
            np.ones(2 * len(edges)),
            (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]]),
        ),
        shape=(len(points), len(points)),
    )
    side = np.zeros(len(points), dtype=np.int8)
    blocks, parent = [], []

    def Split(nodes):
        """(left, right, separator) or None when no plane splits the nodes."""
        best = None
        for axis in range(3):
            values = keys[nodes, axis]
            unique, counts = np.unique(values, return_counts=True)
            if len(unique) < 3:
                continue
            lo, hi = len(unique) // 3, max(len(unique) // 3 + 1, 2 * len(unique) // 3)
            left_counts = np.concatenate([[0], np.cumsum(counts)])
            for k in range(lo, hi):
                n_left = left_counts[k]
                n_right = len(nodes) - n_left - counts[k]
                score = counts[k] * (1.0 + abs(n_left - n_right) / len(nodes))
                if best is None or score < best[0]:
                    best = (score, axis, unique[k])
        if best is None:
            return None
        _, axis, value = best
        values = keys[nodes, axis]
        left_mask, right_mask = values < value, values > value
        # Left nodes with an edge to a right node join the separator.
        side[nodes[right_mask]] = 1
        crossing = np.asarray(neighbours[nodes[left_mask]] @ side).ravel() > 0
        side[nodes[right_mask]] = 0
        left = nodes[left_mask][~crossing]
        separator = np.concatenate([nodes[values == value], nodes[left_mask][crossing]])
        return left, nodes[right_mask], separator

    def Recurse(nodes) -> list[int]:
        """Numbers a subtree (postorder); returns the ids of its root blocks."""
        if len(nodes) == 0:
            return []
        split = None if len(nodes) <= leaf_size else Split(nodes)
        if split is None:
            blocks.append(nodes)
            parent.append(-1)
            return [len(blocks) - 1]
        left, right, separator = split
        roots = Recurse(left) + Recurse(right)
        if len(separator) == 0:
            return roots  # two independent parts: a forest
        blocks.append(separator)
        parent.append(-1)
        for r in roots:
            parent[r] = len(blocks) - 1
        return [len(blocks) - 1]

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        Recurse(np.arange(len(points)))
    finally:
        sys.setrecursionlimit(limit)
    sizes = np.array([len(b) for b in blocks], dtype=np.int64)
    order = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
    return order, np.concatenate([[0], np.cumsum(sizes)]), np.array(parent, dtype=np.int64)


class NotPositiveDefiniteError(ValueError):
    """The matrix (or a pivot block) is not positive definite."""


class SupernodalCholesky:
    """A = L L^T for a sparse symmetric positive definite A, multifrontal on a given tree.

    Args:
        matrix: (n, n) sparse symmetric positive definite matrix, already in the elimination
            order (only its lower triangle is read).
        block_ptr: supernode column boundaries: supernode s is columns block_ptr[s]:block_ptr[s+1]
            (blocks may be empty).
        parent: (num_blocks,) parent supernode of each (-1 for roots); children must come before
            their parent and their off-block rows must lie in ancestors (true for a nested-
            dissection tree).

    Raises:
        NotPositiveDefiniteError: a pivot block is not positive definite.
    """

    def __init__(self, matrix, block_ptr: np.ndarray, parent: np.ndarray):
        A = sp.csc_matrix(matrix)
        n = A.shape[0]
        self.n = n
        self.block_ptr = np.asarray(block_ptr, dtype=np.int64)
        num_blocks = len(self.block_ptr) - 1
        children = [[] for _ in range(num_blocks)]
        for s, p in enumerate(parent):
            if p >= 0:
                children[p].append(s)
        position = np.full(n, -1, dtype=np.int64)
        updates = [None] * num_blocks  # (rows, U) waiting for the parent
        self.L11 = [None] * num_blocks
        self.L21 = [None] * num_blocks
        self.rows = [None] * num_blocks
        indptr, indices, data = A.indptr, A.indices, A.data
        for s in range(num_blocks):
            c0, c1 = int(self.block_ptr[s]), int(self.block_ptr[s + 1])
            k = c1 - c0
            # Rows of A below the block in its columns.
            start, stop = indptr[c0], indptr[c1]
            a_rows = indices[start:stop]
            row_sets = [a_rows[a_rows >= c1]]
            row_sets += [updates[c][0] for c in children[s] if updates[c] is not None]
            rows = np.unique(np.concatenate(row_sets)) if row_sets else np.zeros(0, np.int64)
            rows = rows[rows >= c1]
            front = np.concatenate([np.arange(c0, c1), rows])
            position[front] = np.arange(len(front))
            # Only the lower triangle of a front is ever read (potrf, trsm and syrk below use
            # it; fronts are ordered like the matrix, so extend-add maps lower to lower).
            F = np.zeros((len(front), len(front)))
            cols = np.repeat(np.arange(k), np.diff(indptr[c0 : c1 + 1]))
            keep = a_rows >= c0
            F[position[a_rows[keep]], cols[keep]] = data[start:stop][keep]
            flat = F.reshape(-1)
            for c in children[s]:
                if updates[c] is None:
                    continue
                child_rows, U = updates[c]
                loc = position[child_rows]
                # Extend-add; the child's rows are distinct, so a buffered += is exact. U comes
                # from BLAS in column-major order: walk it as U^T (no copy).
                flat[(loc[None, :] * len(front) + loc[:, None]).ravel()] += U.T.ravel()
                updates[c] = None
            position[front] = -1
            if k:
                try:
                    L11 = la.cholesky(F[:k, :k], lower=True, check_finite=False)
                except la.LinAlgError as e:
                    raise NotPositiveDefiniteError(
                        f"pivot block of columns {c0}:{c1} is not positive definite"
                    ) from e
                if not np.all(np.isfinite(np.diag(L11))) or np.min(np.diag(L11)) <= 0:
                    raise NotPositiveDefiniteError(f"pivot block {c0}:{c1} is singular")
                # X = L21^T = L11^-1 F21^T;  U = F22 - X^T X (syrk: lower triangle only).
                X = la.solve_triangular(L11, F[k:, :k].T, lower=True, check_finite=False)
                self.L11[s], self.L21[s] = L11, X.T
                U = dsyrk(-1.0, X, beta=1.0, c=F[k:, k:], trans=1, lower=1) if len(rows) else None
            else:
                U = F
            self.rows[s] = rows
            if parent[s] >= 0:
                updates[s] = (rows, U) if len(rows) else None
            elif len(rows):
                raise ValueError(f"root supernode {s} has rows below it: the tree is not valid")

    @property
    def nnz(self) -> int:
        """Entries of L stored (dense supernode blocks)."""
        return int(
            sum(
                l11.shape[0] * (l11.shape[0] + 1) // 2 + l21.size
                for l11, l21 in zip(self.L11, self.L21)
                if l11 is not None
            )
        )

    def __call__(self, rhs: np.ndarray) -> np.ndarray:
        """Solves A x = rhs for a vector (n,) or a matrix (n, m) of right-hand sides."""
        x = np.array(rhs, dtype=float, copy=True)
        vector = x.ndim == 1
        if vector:
            x = x[:, None]
        ptr = self.block_ptr
        num_blocks = len(ptr) - 1
        for s in range(num_blocks):  # L y = b
            if self.L11[s] is None:
                continue
            c0, c1 = ptr[s], ptr[s + 1]
            y = la.solve_triangular(self.L11[s], x[c0:c1], lower=True, check_finite=False)
            x[c0:c1] = y
            if len(self.rows[s]):
                x[self.rows[s]] -= self.L21[s] @ y
        for s in range(num_blocks - 1, -1, -1):  # L^T x = y
            if self.L11[s] is None:
                continue
            c0, c1 = ptr[s], ptr[s + 1]
            z = x[c0:c1]
            if len(self.rows[s]):
                z = z - self.L21[s].T @ x[self.rows[s]]
            x[c0:c1] = la.solve_triangular(
                self.L11[s], z, lower=True, trans="T", check_finite=False
            )
        return x[:, 0] if vector else x
