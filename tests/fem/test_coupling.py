"""The glue constraint and the coupled KKT system (Eq. 2): the null-space solve against a direct
sparse solve of the assembled KKT matrix, and the glue residual and Jacobian."""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from drakebots.fem.coupling import AssembleKkt, GlueConstraint, ReducedKkt
from drakebots.fem.materials import Material
from drakebots.fem.mesh import BoxMesh
from drakebots.fem.model import FemModel


def _Problem(seed=0):
    rng = np.random.default_rng(seed)
    fem = FemModel(BoxMesh((0.1, 0.04, 0.04), (4, 2, 2)), Material(youngs_modulus=1e6))
    x = fem.RestPositions() + 1e-3 * rng.standard_normal(fem.num_dofs)
    h = 5e-3
    A_d = fem.Hessian(x, project=True) + sp.diags(fem.MassDiagonal() / h**2)
    nr = 7
    Q = rng.standard_normal((nr, nr))
    A_r = Q @ Q.T + nr * np.eye(nr)
    glue = GlueConstraint([0, 5, 17, 30], fem.num_vertices)
    G_q = rng.standard_normal((glue.num_rows, nr))
    b_r = rng.standard_normal(nr)
    b_d = rng.standard_normal(fem.num_dofs)
    c = 1e-3 * rng.standard_normal(glue.num_rows)
    return fem, A_r, A_d, glue, G_q, b_r, b_d, c


def test_reduced_solve_equals_direct_kkt_solve():
    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem()
    K = AssembleKkt(A_r, A_d, G_q, glue.JacobianU())
    z = spla.spsolve(K.tocsc(), np.concatenate([b_r, b_d, c]))
    nr, nd = len(b_r), len(b_d)
    dq, du, lam = ReducedKkt(A_r, A_d, G_q, glue.dofs).Solve(b_r, b_d, c)
    scale = np.abs(z).max()
    np.testing.assert_allclose(dq, z[:nr], atol=1e-9 * scale)
    np.testing.assert_allclose(du, z[nr : nr + nd], atol=1e-9 * scale)
    np.testing.assert_allclose(lam, z[nr + nd :], atol=1e-7 * np.abs(z[nr + nd :]).max())
    # The linearised constraint holds exactly: G_q dq + G_u du = c.
    np.testing.assert_allclose(G_q @ dq + glue.JacobianU() @ du, c, atol=1e-12)


def test_reduced_solve_with_a_fill_reducing_ordering():
    from drakebots.fem.coupling import _NestedDissection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(1)
    plain = ReducedKkt(A_r, A_d, G_q, glue.dofs, ordering=np.arange(fem.num_dofs))
    nd = ReducedKkt(A_r, A_d, G_q, glue.dofs, ordering=_NestedDissection(A_d))
    for a, b in zip(plain.Solve(b_r, b_d, c), nd.Solve(b_r, b_d, c)):
        np.testing.assert_allclose(a, b, atol=1e-9 * np.abs(a).max())


def test_glue_residual_and_jacobian():
    glue = GlueConstraint([2, 0], 3)
    x = np.arange(9.0)
    p = np.array([[6.5, 7.0, 8.0], [0.0, 1.0, 2.0]])
    np.testing.assert_allclose(glue.Residual(p, x), [0.5, 0, 0, 0, 0, 0])
    J = glue.JacobianU().toarray()
    d = np.random.default_rng(0).standard_normal(9)
    np.testing.assert_allclose(glue.Residual(p, x + d) - glue.Residual(p, x), J @ d)
