"""The glue constraint and the coupled KKT system (Eq. 2): the null-space solve against a direct
sparse solve of the assembled KKT matrix, and the glue residual and Jacobian."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from drakebots.fem.coupling import AssembleKkt, GlueConstraint, ReducedKkt
from drakebots.fem.materials import Material
from drakebots.fem.mesh import BoxMesh
from drakebots.fem.model import FemModel
from drakebots.fem.solvers import CholmodAvailable, PardisoAvailable, ResolveBackend


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


def _KktWithContacts(A_r, A_d, G_q, glue, extra, num_dofs):
    """The whole KKT matrix (the reference) with the glue's rows and contact coordinates `extra`
    pinned: each pinned skin coordinate gets a row -1 in G_u, the contacts none in G_q."""
    pinned = np.concatenate([glue.dofs, extra])
    G_all = np.vstack([G_q, np.zeros((len(extra), A_r.shape[0]))])
    G_u = sp.csr_matrix(
        (-np.ones(len(pinned)), (np.arange(len(pinned)), pinned)), shape=(len(pinned), num_dofs)
    )
    return AssembleKkt(A_r, A_d, G_all, G_u)


def _AssertKktSolution(solved, system, extra, rhs):
    """(dq, du, lam, lam_extra) against SciPy's spsolve of the KKT system of Eq. (2) assembled
    with the glue rows and the contact coordinates `extra` pinned (the reference)."""
    dq, du, lam, lam_extra = solved
    A_r, A_d, G_q, glue = system
    b_r, b_d, c, c_extra = rhs
    K = _KktWithContacts(A_r, A_d, G_q, glue, extra, A_d.shape[0])
    z = spla.spsolve(K.tocsc(), np.concatenate([b_r, b_d, c, c_extra]))
    nr, nd = len(b_r), len(b_d)
    scale = np.abs(z[: nr + nd]).max()
    np.testing.assert_allclose(dq, z[:nr], atol=1e-9 * scale)
    np.testing.assert_allclose(du, z[nr : nr + nd], atol=1e-9 * scale)
    lam_all = np.concatenate([lam, lam_extra])
    np.testing.assert_allclose(lam_all, z[nr + nd :], atol=1e-7 * np.abs(z[nr + nd :]).max())


# Every factorization of the reduced matrix: PARDISO where MKL loads (the default install on
# x86-64), CHOLMOD where scikit-sparse is installed (CI installs the `cholmod` extra in a venv of
# its own), SuperLU always.
FACTORIZATIONS = [
    "splu",
    pytest.param(
        "pardiso",
        marks=pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO does not load"),
    ),
    pytest.param(
        "cholmod",
        marks=pytest.mark.skipif(not CholmodAvailable(), reason="scikit-sparse not installed"),
    ),
]


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_reduced_solve_equals_direct_kkt_solve(factorization):
    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem()
    K = AssembleKkt(A_r, A_d, G_q, glue.JacobianU())
    z = spla.spsolve(K.tocsc(), np.concatenate([b_r, b_d, c]))
    nr, nd = len(b_r), len(b_d)
    kkt = ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization=factorization)
    assert kkt.factorized_by == factorization
    dq, du, lam = kkt.Solve(b_r, b_d, c)
    scale = np.abs(z).max()
    np.testing.assert_allclose(dq, z[:nr], atol=1e-9 * scale)
    np.testing.assert_allclose(du, z[nr : nr + nd], atol=1e-9 * scale)
    np.testing.assert_allclose(lam, z[nr + nd :], atol=1e-7 * np.abs(z[nr + nd :]).max())
    # The linearised constraint holds exactly: G_q dq + G_u du = c.
    np.testing.assert_allclose(G_q @ dq + glue.JacobianU() @ du, c, atol=1e-12)


def test_reduced_solve_with_a_fill_reducing_ordering():
    from drakebots.fem.solvers import NestedDissection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(1)
    plain = ReducedKkt(A_r, A_d, G_q, glue.dofs, ordering=np.arange(fem.num_dofs))
    nd = ReducedKkt(A_r, A_d, G_q, glue.dofs, ordering=NestedDissection(A_d))
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


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_pinned_correction_equals_a_fresh_factorisation_with_all_rows(factorization):
    """Contact rows added through the Schur complement (PinnedCorrection) give the same
    (dq, du, lam) as the KKT system of Eq. (2) assembled with them and solved directly."""
    from drakebots.fem.coupling import PinnedCorrection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(2)
    rng = np.random.default_rng(3)
    base = ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization=factorization)
    correction = PinnedCorrection(base)
    # max_new_columns=0: every new set by a direct factorisation of all rows (the path for a
    # whole sole touching down at once).
    direct = PinnedCorrection(base, max_new_columns=0)
    free = np.setdiff1d(np.arange(fem.num_dofs), glue.dofs)
    pool = rng.choice(free, size=12, replace=False)  # a sole's candidate contact coordinates
    for trial in range(6):  # label changes: new sets, mostly cached columns
        extra = rng.choice(pool, size=9, replace=False)
        c_extra = 1e-3 * rng.standard_normal(len(extra))
        solver = correction if trial % 2 == 0 else direct
        solved = solver.Solve(b_r, b_d, c, extra, c_extra)
        _AssertKktSolution(solved, (A_r, A_d, G_q, glue), extra, (b_r, b_d, c, c_extra))
        np.testing.assert_allclose(solved[1][extra], -c_extra, atol=1e-12)
    assert correction.column_solves <= len(pool)  # each column solved once
    assert correction.factorizations == 0 and direct.factorizations == 3
    # A Cholesky with a forward half-solve gives the Schur complement from half-solved columns.
    half = ResolveBackend(factorization) in ("pardiso", "cholmod")
    assert bool(getattr(correction, "_half", None)) == half
    assert not getattr(correction, "_half_failed", False)
    assert direct._fallback[1].factorized_by == factorization  # the direct path's too


def test_an_unknown_factorization_is_named():
    fem, A_r, A_d, glue, G_q, *_ = _Problem()
    with pytest.raises(ValueError, match="unknown factorization 'lu'"):
        ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization="lu")


def test_pinned_correction_with_friction_coupling():
    """A multiplier that also enters other skin rows (Coulomb friction of a sliding vertex,
    -mu lam_n t on its x and y rows): the Schur solve equals a direct solve of the resulting
    non-symmetric KKT matrix."""
    from drakebots.fem.coupling import PinnedCorrection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(4)
    vertex = 11
    extra = np.array([3 * vertex + 2, 3 * 20, 3 * 20 + 1, 3 * 20 + 2])
    c_extra = np.array([2e-4, -1e-4, 3e-4, 1e-4])
    mu, t = 0.8, np.array([0.6, -0.8])
    coupling = (np.array([0, 0]), np.array([3 * vertex, 3 * vertex + 1]), -mu * t)
    dq, du, lam, lam_extra = PinnedCorrection(ReducedKkt(A_r, A_d, G_q, glue.dofs)).Solve(
        b_r, b_d, c, extra, c_extra, coupling
    )
    pinned = np.concatenate([glue.dofs, extra])
    nr, nd, p = len(b_r), len(b_d), len(pinned)
    G_all = np.vstack([G_q, np.zeros((len(extra), nr))])
    G_u = sp.csr_matrix((-np.ones(p), (np.arange(p), pinned)), shape=(p, nd)).toarray()
    # Skin rows: A_d du + G_u^T lam - W lam = b_d, with W the friction columns.
    W = np.zeros((nd, p))
    W[3 * vertex : 3 * vertex + 2, len(glue.dofs)] = -mu * t
    K = np.block(
        [
            [A_r, np.zeros((nr, nd)), G_all.T],
            [np.zeros((nd, nr)), A_d.toarray(), G_u.T - W],
            [G_all, G_u, np.zeros((p, p))],
        ]
    )
    z = np.linalg.solve(K, np.concatenate([b_r, b_d, c, c_extra]))
    scale = np.abs(z[: nr + nd]).max()
    np.testing.assert_allclose(dq, z[:nr], atol=1e-9 * scale)
    np.testing.assert_allclose(du, z[nr : nr + nd], atol=1e-9 * scale)
    np.testing.assert_allclose(
        np.concatenate([lam, lam_extra]), z[nr + nd :], atol=1e-7 * np.abs(z[nr + nd :]).max()
    )


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_an_indefinite_skin_block_is_factorised_by_the_pivoted_lu(factorization):
    """A skin block shifted past its lowest eigenvalues (as the exact Hessian of a compressed
    skin is): every positive-definite factorisation refuses the reduced matrix, a pivoted one
    takes it (PARDISO's LDLᵀ after PARDISO, SuperLU's LU after the others), and the solve equals
    a direct sparse solve of the assembled Eq. (2)."""
    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(4)
    # Shifted between its 20th and 21st eigenvalues: with 12 glue coordinates eliminated the free
    # block keeps at least 7 negative ones (Cauchy interlacing).
    lowest = np.sort(spla.eigsh(A_d.tocsc(), k=21, sigma=0.0, which="LM")[0])
    A_d = (A_d - 0.5 * (lowest[19] + lowest[20]) * sp.identity(A_d.shape[0])).tocsr()
    kkt = ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization=factorization)
    assert kkt.factorized_by == ("ldlt" if factorization == "pardiso" else "lu")
    K = AssembleKkt(A_r, A_d, G_q, glue.JacobianU())
    z = spla.spsolve(K.tocsc(), np.concatenate([b_r, b_d, c]))
    nr, nd = len(b_r), len(b_d)
    dq, du, lam = kkt.Solve(b_r, b_d, c)
    scale = np.abs(z).max()
    np.testing.assert_allclose(dq, z[:nr], atol=1e-9 * scale)
    np.testing.assert_allclose(du, z[nr : nr + nd], atol=1e-9 * scale)


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_contact_rows_pinned_in_place_solve_the_kkt_system(factorization):
    """The default's direct path (PinnedCorrection(exact=False), issue 52): contact rows pinned
    in place in the glue-only reduced matrix (its pattern kept, so the factorisation's analysis
    is shared through a FactorPool), and a set one coordinate away from the last factorised one
    solved by GMRES preconditioned by that factorisation. Each (dq, du, lam) against the KKT
    system of Eq. (2) assembled with all rows and solved by SciPy's spsolve (the reference)."""
    from drakebots.fem.coupling import FactorPool, PinnedCorrection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(4)
    rng = np.random.default_rng(5)
    pool = FactorPool()
    base = ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization=factorization, lazy=True)
    # max_low_rank=1: the new set of trial 2 is factorised (the next test has larger updates).
    solver = PinnedCorrection(base, max_new_columns=0, exact=False, pool=pool, max_low_rank=1)
    free = np.setdiff1d(np.arange(fem.num_dofs), glue.dofs)
    extra = rng.choice(free, size=15, replace=False)
    for trial in range(4):
        if trial == 1:  # one coordinate more than the factorised set: GMRES
            extra = np.append(extra, rng.choice(np.setdiff1d(free, extra)))
        elif trial == 2:  # a new set: factorised in place
            extra = rng.choice(free, size=15, replace=False)
        c_extra = 1e-3 * rng.standard_normal(len(extra))
        solved = solver.Solve(b_r, b_d, c, extra, c_extra)
        _AssertKktSolution(solved, (A_r, A_d, G_q, glue), extra, (b_r, b_d, c, c_extra))
    assert not base.factorized  # the glue-only factorisation was never needed
    # The one-coordinate change: a low-rank update of the factorisation where it half-solves
    # (PARDISO's and CHOLMOD's Cholesky), GMRES where it does not (SuperLU).
    half = factorization in ("pardiso", "cholmod")
    assert solver.factorizations == 2
    assert (solver.low_rank_solves, solver.krylov_solves) == ((1, 0) if half else (0, 1))


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_a_nearby_contact_set_is_a_low_rank_update_of_the_last_factorised_one(factorization):
    """Issue 52: a contact set that differs from the last one factorised in place by a few
    coordinates pinned and a few released (a sole's labels in a Newton iteration) is solved by a
    Woodbury update of that factorisation (drakebots.fem.coupling._LowRank), not factorised
    again. The changed coordinates include whole vertices beside pinned ones, so the correction
    of their own block (X) is exercised. Reference: SciPy's spsolve of the KKT system of Eq. (2)
    assembled with every row. SuperLU, which has no half-solve, factorises instead; a change
    above max_low_rank is factorised too."""
    from drakebots.fem.coupling import FactorPool, PinnedCorrection

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(6)
    rng = np.random.default_rng(7)
    base = ReducedKkt(A_r, A_d, G_q, glue.dofs, factorization=factorization, lazy=True)
    solver = PinnedCorrection(
        base, max_new_columns=0, exact=False, pool=FactorPool(), max_low_rank=16
    )
    free_vertices = np.setdiff1d(np.arange(fem.num_vertices), glue.vertices)
    vertices = rng.choice(free_vertices, size=20, replace=False)

    def Whole(v):
        return (3 * np.atleast_1d(v)[:, None] + np.arange(3)).ravel()

    anchor = Whole(vertices[:6])  # six whole vertices pinned
    # Two of them released whole, the y of a third released (its x and z stay pinned), two
    # whole vertices pinned, and the z of another: 6 + 1 + 6 + 1 = 14 coordinates changed.
    nearby = np.setdiff1d(anchor, np.concatenate([Whole(vertices[:2]), [3 * vertices[2] + 1]]))
    nearby = np.concatenate([nearby, Whole(vertices[6:8]), [3 * vertices[8] + 2]])
    far = Whole(vertices[10:])  # a set of its own: 44 coordinates changed
    half = factorization in ("pardiso", "cholmod")
    for extra, low_rank in [(anchor, False), (nearby, half), (nearby, half), (far, False)]:
        done = solver.low_rank_solves
        c_extra = 1e-3 * rng.standard_normal(len(extra))
        solved = solver.Solve(b_r, b_d, c, extra, c_extra)
        assert solver.low_rank_solves - done == int(low_rank)
        _AssertKktSolution(solved, (A_r, A_d, G_q, glue), extra, (b_r, b_d, c, c_extra))
    assert len(np.setxor1d(anchor, nearby)) == 14 < 16 < len(np.setxor1d(nearby, far))
    # anchor and far factorised; nearby too where no half-solve (its repeat is not refactorised)
    assert solver.factorizations == (2 if half else 3)


def test_reduced_matrix_blocks_equal_scipys_slices_and_bmat(monkeypatch):
    """ReducedKkt reads its blocks through a plan of the skin block's pattern (_BlockPlan) and
    writes the reduced matrix column by column (_ReducedMatrix, issue 52) through a plan too
    (_ReducedPlan, issue 69). Reference: SciPy's fancy-indexed slices and sparse.bmat on the
    same blocks, entry for entry, for two Newton matrices of one pattern (each plan made once,
    used twice) and a skeleton-free system."""
    from drakebots.fem.coupling import _BlockPlan, _ReducedMatrix, _ReducedPlan

    monkeypatch.setattr(_ReducedPlan, "_cache", [])  # no plan of another test's pattern

    fem, A_r, A_d, glue, G_q, b_r, b_d, c = _Problem(8)
    A_d = sp.csr_matrix(A_d)
    rng = np.random.default_rng(9)
    order = rng.permutation(fem.num_dofs)
    free = order[~np.isin(order, glue.dofs)]
    for scale in (1.0, 2.5):  # the same pattern, other values: the cached plan
        A = A_d.copy()
        A.data = A.data * scale
        plan = _BlockPlan.For(A, glue.dofs, free)
        for name, rows, cols in [
            ("ff", free, free),
            ("fP", free, glue.dofs),
            ("Pf", glue.dofs, free),
            ("PP", glue.dofs, glue.dofs),
        ]:
            np.testing.assert_array_equal(
                plan.Block(name, A.data).toarray(), A[rows][:, cols].toarray()
            )
        A_ff = plan.Block("ff", A.data, "csc")
        for nr in (A_r.shape[0], 0):
            B = sp.csr_matrix(A[free][:, glue.dofs[:nr]] * 0.5)
            T = scale * A_r[:nr, :nr]
            plans = list(_ReducedPlan._cache)
            M = _ReducedMatrix(A_ff, B, T)
            assert (_ReducedPlan._cache == plans) == (scale != 1.0)  # made once per pattern
            reference = sp.bmat([[A[free][:, free], B], [B.T, sp.csr_matrix(T)]], format="csc")
            np.testing.assert_array_equal(M.toarray(), reference.toarray())
            assert M.has_sorted_indices
    assert _BlockPlan.For(A_d, glue.dofs, free) is plan
