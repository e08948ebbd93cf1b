"""The QPCC frame's Schur condensation with the self-collision pairs as low-rank columns
(qpcc_coupled._SchurCondensation, issue 52), against dense linear algebra on K_red itself.

K_red = [[A + U Uᵀ, B], [Bᵀ, C]] is assembled densely and solved by NumPy: the condensation
never forms A + U Uᵀ (it factorises A alone and carries U through an indefinite extended Schur
complement), so agreement checks the block algebra, not a rearrangement of the same sums."""

import numpy as np
import pytest
import scipy.sparse as sp

from drakebots.fem.solvers import NotPositiveDefinite
from drakebots.skinned.qpcc_coupled import _SchurCondensation
from tests.fem.test_coupling import FACTORIZATIONS

# SuperLU (full solves), PARDISO and CHOLMOD (forward half-solves: the Gram matrix as Yᵀ Y),
# each where it loads; .ci/run's CHOLMOD phase runs the cholmod cases.
BACKENDS = FACTORIZATIONS


def _Problem(rng, vertices=40, nv=5, pairs=4, touched=6):
    """A random SPD skin block A (3 x 3 vertex blocks on a chain, sparse), B on a few rows,
    an SPD skeleton corner C, and `pairs` columns u = √k (e, -e) on two far apart vertices."""
    n = 3 * vertices
    blocks = []
    for i in range(vertices - 1):
        R = rng.standard_normal((3, 3))
        K = R @ R.T + 0.1 * np.eye(3)
        rows = np.r_[3 * i : 3 * i + 6]
        blocks.append((rows, np.block([[K, -K], [-K, K]])))
    A = np.zeros((n, n))
    for rows, K in blocks:
        A[np.ix_(rows, rows)] += K
    A += np.diag(rng.uniform(1.0, 2.0, n))  # inertia
    B_rows = np.sort(rng.choice(n, touched, replace=False))
    B_values = rng.standard_normal((touched, nv))
    R = rng.standard_normal((nv, nv))
    C = R @ R.T + 10.0 * np.eye(nv)
    a = rng.choice(vertices // 2, pairs, replace=False)
    b = vertices // 2 + rng.choice(vertices // 2, pairs, replace=False)
    e = rng.standard_normal((pairs, 3))
    e /= np.linalg.norm(e, axis=1)[:, None]
    k = rng.uniform(0.5, 20.0, pairs)
    U_rows = np.concatenate([3 * a[:, None] + np.arange(3), 3 * b[:, None] + np.arange(3)], 1)
    U_values = np.concatenate([e, -e], 1) * np.sqrt(k)[:, None]
    return A, B_rows, B_values, C, (U_rows, U_values)


def _Dense(A, B_rows, B_values, C, columns):
    n, nv = A.shape[0], C.shape[0]
    skin = A.copy()
    if columns is not None:
        U = np.zeros((n, len(columns[0])))
        for j, (rows, values) in enumerate(zip(*columns)):
            U[rows, j] += values
        skin += U @ U.T
    B = np.zeros((n, nv))
    B[B_rows] = B_values
    return np.block([[skin, B], [B.T, C]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pairs", [0, 1, 4])
@pytest.mark.parametrize("patches", ["given", "held"])
def test_condensation_with_pair_columns_solves_the_whole_k_red(backend, pairs, patches):
    """`patches`: W passed to Condense, or given at construction (with PARDISO W then borders
    the factor as its Schur block, `CoupledFrameConfig.patch_schur`; the other backends take it
    in Condense)."""
    rng = np.random.default_rng(3 + pairs)
    A, B_rows, B_values, C, columns = _Problem(rng, pairs=max(pairs, 1))
    columns = columns if pairs else None
    K = _Dense(A, B_rows, B_values, C, columns)
    n, nv = A.shape[0], C.shape[0]
    # The compliance of O = diag(W, I) and the constant response, against dense K⁻¹. W: six
    # sparse columns, a patch's three on each of two vertex groups (as the soles' patches).
    W = np.zeros((n, 6))
    for j, start in enumerate((0, 0, 0, 30, 30, 30)):
        W[start + j % 3 : start + 12 : 3, j] = rng.uniform(0.1, 1.0, 4)
    held = patches == "held"
    factor = _SchurCondensation(backend, sp.csc_matrix(W) if held else None)
    factor.Factor(sp.csc_matrix(A), B_rows, B_values, C, columns)
    rhs = rng.standard_normal(n + nv)
    assert factor.holds_patches == (held and factor.name == "pardiso")
    compliance, x_v, W_x_f = factor.Condense(None if factor.holds_patches else W, rhs)
    if held and factor.name == "pardiso":  # the bordered factor, not the half-solve
        assert factor._factor.schur_complement.shape == (6, 6)
    O = np.zeros((n + nv, 6 + nv))
    O[:n, :6] = W
    O[n:, 6:] = np.eye(nv)
    K_inv = np.linalg.inv(K)
    x = np.linalg.solve(K, rhs)
    np.testing.assert_allclose(compliance, O.T @ K_inv @ O, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(x_v, x[n:], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(W_x_f, W.T @ x[:n], rtol=1e-9, atol=1e-12)
    # The frame's step (patch forces: rhs plus W f) and a general right-hand side.
    f = rng.standard_normal(6)
    stepped = rhs.copy()
    stepped[:n] += W @ f
    np.testing.assert_allclose(
        factor.Solve(stepped, patch_forces=f), np.linalg.solve(K, stepped), rtol=1e-9, atol=1e-12
    )
    other = rng.standard_normal(n + nv)
    np.testing.assert_allclose(
        factor.Solve(other), np.linalg.solve(K, other), rtol=1e-9, atol=1e-12
    )


def test_condensation_refuses_a_k_red_that_is_not_positive_definite():
    """The pairs make the extended Schur complement indefinite by construction; K_red itself
    is still refused where it is indefinite (a skeleton corner too small for its coupling)."""
    rng = np.random.default_rng(7)
    A, B_rows, B_values, C, columns = _Problem(rng)
    K = _Dense(A, B_rows, B_values, C, columns)
    n = A.shape[0]
    shift = np.linalg.eigvalsh(K[n:, n:] - K[n:, :n] @ np.linalg.solve(K[:n, :n], K[:n, n:]))
    bad = C - (shift.min() + 1.0) * np.eye(C.shape[0])
    factor = _SchurCondensation("splu")
    factor.Factor(sp.csc_matrix(A), B_rows, B_values, bad, columns)
    with pytest.raises(NotPositiveDefinite):
        factor.Condense(rng.standard_normal((n, 3)), rng.standard_normal(n + C.shape[0]))
