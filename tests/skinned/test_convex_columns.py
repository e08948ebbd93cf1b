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


def _Kkt(backend, nr=4, nd=30, pinned=(0, 1, 2, 7), seed=0, scale=1.0, **options):
    """A small glued KKT system: (ReducedKkt, its dense matrix K with rows (v, u, λ)); `seed`
    draws its pattern and values, `scale` multiplies the skin's block."""
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nr, nr))
    A_r = B @ B.T + nr * np.eye(nr)
    C = sp.random(nd, nd, density=0.2, random_state=seed).toarray()
    A_d = scale * (C @ C.T + nd * np.eye(nd))
    G_q = rng.normal(size=(len(pinned), nr))
    kkt = ReducedKkt(A_r, sp.csr_matrix(A_d), G_q, list(pinned), factorization=backend, **options)
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


@pytest.mark.parametrize("backend", BACKENDS)
def test_w_with_the_skeletons_velocities_is_the_dense_kkt_solve(backend):
    """With collisions in the convex problem (CouplingConfig.convex_collisions) the skeleton's
    velocities join the candidates as coordinates nd + j: a unit impulse on velocity j, and W's
    rows there are the skeleton's velocity. Against K⁻¹ of the dense glued KKT matrix, for a new
    factorisation (forward half-solves where PARDISO has them) and for coordinates added later
    (full solves), and the applied columns for loads on skin and skeleton together."""
    kkt, K = _Kkt(backend)
    nr, nd = kkt.nr, kkt.nd
    first = np.array([3, 4, 5, nd + 0, nd + 2])
    factor, solves = _Factor(kkt, 0.005).With(first)
    assert solves == 5
    factor, solves = factor.With(np.array([20, 21, nd + 1, nd + 3, 4]))
    assert solves == 4
    dofs = np.array([nd + 1, 20, nd + 0, 3, nd + 3, 21])
    cols_v, cols_y, cols_l, W = factor.Columns(dofs)
    rows = np.where(dofs < nd, nr + dofs, dofs - nd)  # K's rows: (v, u, λ)
    S = np.zeros((len(K), len(dofs)))
    S[rows, np.arange(len(dofs))] = 1.0
    columns = np.linalg.solve(K, S)
    np.testing.assert_allclose(W, columns[rows], rtol=1e-9, atol=1e-14)
    f = np.random.default_rng(5).normal(size=len(dofs))
    expected = columns @ f
    np.testing.assert_allclose(cols_v @ f, expected[:nr], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(cols_y @ f, expected[nr : nr + nd], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(cols_l @ f, expected[nr + nd :], rtol=1e-9, atol=1e-12)
    # A glued coordinate is refused by name.
    with pytest.raises(ValueError, match="glued"):
        factor.With(np.array([1]))  # pinned=(0, 1, 2, 7)


@pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO not available")
def test_w_from_the_factorisations_schur_block_is_the_dense_kkt_solve():
    """CouplingConfig.convex_schur_margin: PARDISO's Cholesky bordered by the unit columns of a
    block of coordinates (skin and skeleton) gives that block of K⁻¹ in its numeric phase, and
    `With` takes W from it without a solve while every held coordinate is in the block; one
    outside it is solved alone, its column kept. Against K⁻¹ of the dense glued KKT matrix;
    the pool hands a bordered factorisation only to a matrix with the same block."""
    from drakebots.fem.coupling import FactorPool

    pool = FactorPool()
    nd = 30
    border = np.array([nd + 2, 3, 4, 5, 20, 21, 22, nd + 0, 12])  # sorted by ReducedKkt
    kkt, K = _Kkt("pardiso", schur_dofs=border, reuse=pool)
    nr = kkt.nr
    assert np.array_equal(kkt.schur_dofs, np.sort(border))

    def Dense(dofs):
        rows = np.where(dofs < nd, nr + dofs, dofs - nd)  # K's rows: (v, u, λ)
        S = np.zeros((len(K), len(dofs)))
        S[rows, np.arange(len(dofs))] = 1.0
        return np.linalg.solve(K, S)[rows]

    np.testing.assert_allclose(kkt.schur_complement, Dense(kkt.schur_dofs), rtol=1e-9, atol=1e-14)
    factor, solves = _Factor(kkt, 0.005).With(np.array([3, 4, 5, nd + 0, nd + 2]))
    assert solves == 0  # all in the block
    factor, solves = factor.With(np.array([20, 21, 22]))
    assert solves == 0
    dofs = np.array([nd + 2, 21, 3, nd + 0, 22])
    np.testing.assert_allclose(factor.Columns(dofs)[3], Dense(dofs), rtol=1e-9, atol=1e-14)
    # 13 is outside the block: its column solved, 12's from the block (convex_schur_spill);
    # then 14 outside too, 13's column kept.
    factor, solves = factor.With(np.array([13, 12]))
    assert solves == 1
    dofs = np.array([13, 12, nd + 2, 4])
    np.testing.assert_allclose(factor.Columns(dofs)[3], Dense(dofs), rtol=1e-9, atol=1e-14)
    factor, solves = factor.With(np.array([14, 13]))
    assert solves == 1
    dofs = np.array([14, 13, 12, nd + 0, 21])
    np.testing.assert_allclose(factor.Columns(dofs)[3], Dense(dofs), rtol=1e-9, atol=1e-14)
    # The pool: a matrix with another block (or none) gets a factorisation of its own, one with
    # the same block the released one, its analysis kept.
    bordered = kkt._lu.positive_definite_factor
    del kkt, factor
    other, _ = _Kkt("pardiso", seed=1, schur_dofs=border[:4], reuse=pool)
    plain, _ = _Kkt("pardiso", seed=1, reuse=pool)
    again, K = _Kkt("pardiso", seed=2, schur_dofs=border, reuse=pool)
    assert other._lu.positive_definite_factor is not bordered
    assert plain._lu.positive_definite_factor is not bordered
    assert plain.schur_complement is None
    assert again._lu.positive_definite_factor is bordered
    np.testing.assert_allclose(again.schur_complement, Dense(again.schur_dofs), rtol=1e-9)


@pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO not available")
def test_a_released_factorisation_hands_its_analysis_on_and_still_solves():
    """ReducedKkt.Release (the coupled step's carried factorisation, not reused): the next
    matrix with the same block takes its PARDISO handle, no second analysis, while the released
    one, still referenced, factorises again at its next use; both against the dense KKT solve."""
    from drakebots.fem.coupling import FactorPool

    pool, nd = FactorPool(), 30
    border = np.array([3, 4, 5, 20, nd + 1])
    kkt, K = _Kkt("pardiso", schur_dofs=border, reuse=pool)
    handle = kkt._lu.positive_definite_factor
    kkt.Release()
    other, K_other = _Kkt("pardiso", scale=3.0, schur_dofs=border, reuse=pool)
    assert other._lu.positive_definite_factor is handle
    assert handle._pardiso.analyses == 1
    b_r, b_d, c = np.ones(kkt.nr), np.linspace(-1.0, 1.0, nd), np.full(len(kkt.pinned), 0.1)
    rhs = np.concatenate([b_r, b_d, c])
    for system, dense in ((kkt, K), (other, K_other)):
        solution = np.concatenate(system.Solve(b_r, b_d, c))
        np.testing.assert_allclose(solution, np.linalg.solve(dense, rhs), rtol=1e-9, atol=1e-12)
    assert kkt._lu.positive_definite_factor is not handle  # factorised again, its own


@pytest.mark.skipif(not PardisoAvailable(), reason="MKL PARDISO not available")
def test_one_solve_gives_the_free_motion_the_response_and_the_update_of_the_dense_kkt():
    """_OneSolve: a modified-Newton iteration's free solve and the contact's response as one
    bordered solve. The free motion on the problem's coordinates (in the block, and one outside
    it whose column is kept), the response to forces on some of them (from the block and the
    kept column, without a solve) and the whole update K⁻¹ (b + Sᵀ g) against K⁻¹ of the dense
    glued KKT matrix; a problem coordinate outside the block without a kept column is refused
    (None: the two solves)."""
    from drakebots.skinned.convex_contact import _OneSolve

    nd = 30
    border = np.array([3, 4, 5, 20, 21, 22, nd + 0, nd + 2])
    kkt, K = _Kkt("pardiso", schur_dofs=border)
    nr = kkt.nr
    factor, solves = _Factor(kkt, 0.005).With(np.array([3, 13, nd + 0]))
    assert solves == 1  # 13 is outside the block: its column kept
    problem = np.array([3, 4, 13, 21, nd + 0, nd + 2])
    rng = np.random.default_rng(11)
    b_r, b_d, c = rng.normal(size=nr), rng.normal(size=nd), rng.normal(size=len(kkt.pinned))
    rows = np.where(problem < nd, nr + problem, problem - nd)  # K's rows: (v, u, λ)
    rhs = np.concatenate([b_r, b_d, c])
    one = _OneSolve.For(factor, problem, b_r, b_d, c)
    np.testing.assert_allclose(one.free, np.linalg.solve(K, rhs)[rows], rtol=1e-9, atol=1e-13)
    S = np.array([0, 2, 4])  # forces on 3, 13 (outside) and the skeleton's velocity 0
    g = rng.normal(size=len(S))
    load = np.zeros(len(K))
    load[rows[S]] = g
    change, forces = one.Response(S, g)
    np.testing.assert_allclose(change, np.linalg.solve(K, load)[rows], rtol=1e-9, atol=1e-13)
    refinements = kkt._lu.refinements
    dv, dy, dlam = one.Finish(forces)
    assert kkt._lu.refinements == refinements  # right without the check's refinement
    expected = np.linalg.solve(K, rhs + load)
    np.testing.assert_allclose(np.concatenate([dv, dy, dlam]), expected, rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="twice"):
        one.Finish(forces)
    # 14 is outside the block and its column was never solved: the two solves instead.
    assert _OneSolve.For(factor, np.array([3, 14]), b_r, b_d, c) is None


def test_the_block_diagonal_is_scipys():
    G = np.random.default_rng(4).normal(size=(5, 3, 3))
    assert np.array_equal(_BlockDiagonal(G), sla.block_diag(*G))


def _Penalties(nd, nr, vertices, h_seed):
    """Skin-skeleton penalties on `vertices` as Penalties carries them: per vertex a stiffness
    K_b = k n nᵀ and a (3, nr) Jacobian J_b of its box: stiffness Σ K_b, coupling Σ K_b J_b,
    skeleton_stiffness Σ J_bᵀ K_b J_b (so the (skin, skeleton) block is PSD)."""
    from types import SimpleNamespace

    rng = np.random.default_rng(h_seed)
    P = np.zeros((nd, nd))
    C = np.zeros((nd, nr))
    S = np.zeros((nr, nr))
    for vertex in vertices:
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        K_b = rng.uniform(500.0, 2000.0) * np.outer(n, n)
        J_b = rng.normal(size=(3, nr))
        rows = 3 * vertex + np.arange(3)
        P[np.ix_(rows, rows)] += K_b
        C[rows] += K_b @ J_b
        S += J_b.T @ K_b @ J_b
    return SimpleNamespace(
        stiffness=sp.csr_matrix(P), tangential=None, coupling=sp.csr_matrix(C), skeleton_stiffness=S
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_penalty_update_solves_the_refactorised_matrix(backend):
    """_PenaltyUpdate (Woodbury on the penalties' change since the factorisation, skin and
    skeleton parts together) against a factorisation of the matrix with the new penalties in it
    (ReducedKkt with A_d + P, A_r + h² S, A_dr - h C, Penalties.StepBlocks): the same solves,
    and W the same, where vertices entered and left the boxes."""
    from drakebots.skinned.convex_contact import _PenaltyUpdate

    h, nr, nd, pinned = 0.005, 4, 30, [0, 1, 2, 7]
    kkt0, _ = _Kkt(backend, nr, nd, tuple(pinned))
    before = _Penalties(nd, nr, [3, 5], 1)  # in the factorised matrix
    after = _Penalties(nd, nr, [5, 6, 8], 2)  # vertex 3 left, 6 and 8 entered, 5 moved
    rng = np.random.default_rng(0)
    B = rng.normal(size=(nr, nr))
    A_r = B @ B.T + nr * np.eye(nr)
    Cm = sp.random(nd, nd, density=0.2, random_state=0).toarray()
    A_d = Cm @ Cm.T + nd * np.eye(nd)
    G_q = rng.normal(size=(len(pinned), nr))

    def Kkt(p):
        return ReducedKkt(
            A_r + h**2 * p.skeleton_stiffness,
            sp.csr_matrix(A_d + p.stiffness.toarray()),
            G_q,
            pinned,
            A_dr=sp.csr_matrix(-h * p.coupling.toarray()),
            factorization=backend,
        )

    base, reference = Kkt(before), Kkt(after)
    update = _PenaltyUpdate(base, before, False, nr).Update(after, h)
    T, Z_r, Z_d, Z_l, M = update
    assert set(T.tolist()) == set(range(9, 12)) | set(range(15, 21)) | set(range(24, 27))
    b_r, b_d, c = rng.normal(size=nr), rng.normal(size=nd), rng.normal(size=len(pinned))
    a_r, a_d, a_l = base.Solve(b_r, b_d, c)
    w = M @ np.concatenate([a_d[T], a_r])
    expected = reference.Solve(b_r, b_d, c)
    for got, want in zip((a_r - Z_r @ w, a_d - Z_d @ w, a_l - Z_l @ w), expected):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
    # Nothing changed: no update.
    assert _PenaltyUpdate(base, before, False, nr).Update(before, h) is None
