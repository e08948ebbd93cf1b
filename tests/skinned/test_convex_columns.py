"""The convex contact's compliance W = S K⁻¹ Sᵀ and its columns' product with the contact forces
(drakebots.skinned.convex_contact._Factor, made for the monster's 42.9k-vertex skin: W alone
kept, the columns applied by one solve, W of a new factorisation by forward half-solves),
against a dense solve of the whole glued KKT matrix of Eq. 2 (numpy.linalg.solve)."""

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from drakebots.fem.coupling import ReducedKkt
from drakebots.fem.solvers import PardisoAvailable
from drakebots.skinned.convex_contact import _BlockDiagonal, _Factor

BACKENDS = ["splu"] + (["pardiso"] if PardisoAvailable() else [])


def _Kkt(backend, nr=4, nd=30, pinned=(0, 1, 2, 7), seed=0):
    """A small glued KKT system: (ReducedKkt, its dense matrix K with rows (v, u, λ))."""
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nr, nr))
    A_r = B @ B.T + nr * np.eye(nr)
    C = sp.random(nd, nd, density=0.2, random_state=seed).toarray()
    A_d = C @ C.T + nd * np.eye(nd)
    G_q = rng.normal(size=(len(pinned), nr))
    kkt = ReducedKkt(A_r, sp.csr_matrix(A_d), G_q, list(pinned), factorization=backend)
    G_u = np.zeros((len(pinned), nd))
    G_u[np.arange(len(pinned)), list(pinned)] = -1.0
    K = np.block(
        [
            [A_r, np.zeros((nr, nd)), G_q.T],
            [np.zeros((nd, nr)), A_d, G_u.T],
            [G_q, G_u, np.zeros((len(pinned), len(pinned)))],
        ]
    )
    return kkt, K


@pytest.mark.parametrize("backend", BACKENDS)
def test_w_and_the_applied_columns_are_the_dense_kkt_solves(backend):
    kkt, K = _Kkt(backend)
    nr, nd = kkt.nr, kkt.nd
    first, later = np.array([3, 4, 5, 12, 13, 14]), np.array([20, 21, 22, 5])
    factor, solves = _Factor(kkt, 0.005).With(first)  # a new factorisation's first coordinates
    assert solves == 6
    factor, solves = factor.With(later)  # and some more (one of them held already)
    assert solves == 3
    dofs = np.array([12, 20, 3, 22, 4])
    cols_v, cols_y, cols_l, W = factor.Columns(dofs)
    S = np.zeros((len(K), len(dofs)))
    S[nr + dofs, np.arange(len(dofs))] = 1.0
    columns = np.linalg.solve(K, S)  # K⁻¹ Sᵀ, dense
    np.testing.assert_allclose(W, columns[nr + dofs], rtol=1e-9, atol=1e-14)
    f = np.random.default_rng(3).normal(size=len(dofs))
    expected = columns @ f
    np.testing.assert_allclose(cols_v @ f, expected[:nr], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(cols_y @ f, expected[nr : nr + nd], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(cols_l @ f, expected[nr + nd :], rtol=1e-9, atol=1e-12)


def test_the_block_diagonal_is_scipys():
    G = np.random.default_rng(4).normal(size=(5, 3, 3))
    assert np.array_equal(_BlockDiagonal(G), sla.block_diag(*G))
